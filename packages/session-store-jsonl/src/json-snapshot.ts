/**
 * A copy of caller data that reads every property exactly once (issue 10, item 7).
 *
 * `append` validates, redacts and serializes an event's data in several passes; an accessor
 * property (a getter, a Proxy) could answer each pass differently, so the value validated
 * would not be the value written, and an acknowledged line might not reopen. The store
 * therefore copies the data once, here, and every later pass reads only the copy.
 *
 * Written by hand because nothing built in fits: `structuredClone` recurses on the call
 * stack (a RangeError at depth 10^5, where the store must answer `TOO_DEEP`), turns class
 * instances into plain objects (the store must refuse them) and throws untyped errors on
 * functions; `JSON.parse(JSON.stringify())` silently drops or converts what the store must
 * refuse (undefined in arrays, NaN, `toJSON`).
 */

/** Bounds of the copy: the same as the JSON check that follows it. */
export interface SnapshotLimits {
  readonly maxDepth: number
  readonly maxEntries: number
}

function isCopyable(value: object): boolean {
  if (Array.isArray(value)) return true
  const prototype: unknown = Object.getPrototypeOf(value)
  return prototype === Object.prototype || prototype === null
}

/**
 * Copies plain JSON-like data without recursion, reading each array element and each own
 * enumerable property once. What the JSON check must refuse is left in place, uncopied, for
 * it to refuse with its typed error: a non-plain object (class instance, Date, Map...), a
 * value beyond `maxDepth` or `maxEntries`, a cycle (the original object is kept, so the
 * check still finds it). Primitives are copied as they are (a function, a BigInt or NaN is
 * then refused by the check). Own `__proto__` keys stay data.
 *
 * @param value - The caller's value.
 * @param limits - Depth and entry bounds (past them, copying stops).
 * @returns The copy.
 */
export function snapshotJson(value: unknown, limits: SnapshotLimits): unknown {
  if (typeof value !== 'object' || value === null || !isCopyable(value)) return value
  const ancestors = new Set<object>()
  let entries = 0
  const root: object = Array.isArray(value)
    ? []
    : (Object.create(Object.getPrototypeOf(value) as object | null) as object)
  type Frame =
    | { readonly kind: 'enter'; readonly source: object; readonly target: object; readonly depth: number }
    | { readonly kind: 'exit'; readonly source: object }
  const stack: Frame[] = [{ kind: 'enter', source: value, target: root, depth: 1 }]
  while (stack.length > 0) {
    const frame = stack.pop()!
    if (frame.kind === 'exit') {
      ancestors.delete(frame.source)
      continue
    }
    const { source, target, depth } = frame
    ancestors.add(source)
    stack.push({ kind: 'exit', source })
    const keys = Array.isArray(source) ? null : Object.keys(source)
    const length = Array.isArray(source) ? source.length : keys!.length
    entries += length
    for (let index = 0; index < length; index += 1) {
      const key = keys === null ? index : keys[index]!
      const child: unknown = (source as Record<string | number, unknown>)[key]
      let copy = child
      if (
        typeof child === 'object' &&
        child !== null &&
        isCopyable(child) &&
        !ancestors.has(child) &&
        depth < limits.maxDepth &&
        entries <= limits.maxEntries
      ) {
        copy = Array.isArray(child) ? [] : Object.create(Object.getPrototypeOf(child) as object | null)
        stack.push({ kind: 'enter', source: child, target: copy as object, depth: depth + 1 })
      }
      Object.defineProperty(target, key, {
        value: copy,
        enumerable: true,
        writable: true,
        configurable: true,
      })
    }
  }
  return root
}
