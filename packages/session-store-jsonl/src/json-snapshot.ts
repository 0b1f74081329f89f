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

/** One object still to copy: its source, where its copy goes, and its depth. */
interface Pending {
  readonly source: object
  readonly parent: Record<string, unknown> | unknown[]
  readonly key: string | number
  readonly depth: number
}

/** Marks the end of an object's children on the stack (it stops being an ancestor; its copy is complete). */
interface Exit {
  readonly exit: object
  readonly copy: object
}

/**
 * A shallow copy of `source` (an array or a plain object) with the same prototype, reading
 * each element or own enumerable string-keyed property once. A plain object without symbol
 * keys is copied with a spread (own data properties, `__proto__` included, as
 * `Object.defineProperty` makes them: no setter of a prototype is called, and a frozen
 * `Object.prototype` is no obstacle); other objects property by property.
 */
function shallowCopy(source: object): Record<string, unknown> | unknown[] {
  if (Array.isArray(source)) {
    const length = source.length
    const copy: unknown[] = []
    for (let index = 0; index < length; index += 1) copy.push((source as unknown[])[index])
    return copy
  }
  const prototype = Object.getPrototypeOf(source) as object | null
  if (prototype === Object.prototype && Object.getOwnPropertySymbols(source).length === 0) {
    return { ...(source as Record<string, unknown>) }
  }
  const copy = Object.create(prototype) as Record<string, unknown>
  for (const key of Object.keys(source)) {
    Object.defineProperty(copy, key, {
      value: (source as Record<string, unknown>)[key],
      enumerable: true,
      writable: true,
      configurable: true,
    })
  }
  return copy
}

/**
 * Copies plain JSON-like data without recursion, reading each array element and each own
 * enumerable property once. What the JSON check must refuse is left in place, uncopied, for
 * it to refuse with its typed error: a non-plain object (class instance, Date, Map...), a
 * value beyond `maxDepth` or `maxEntries`, a cycle (the original object is kept, so the
 * check still finds it). Primitives are copied as they are (a function, a BigInt or NaN is
 * then refused by the check). Own `__proto__` keys stay data.
 *
 * Each object is copied shallowly once (a spread for the usual plain object), then its
 * copyable children are copied in their turn and put in place of the originals in the copy:
 * only the copy is written, and the caller's value is read once, in the same order as a
 * walk that copies property by property. Each copy is frozen once its children are in place,
 * so a copy is frozen only when everything copied below it is: the projection's deep freeze
 * of an accepted event (whose data is all copies, or the check would have refused it) then
 * stops at the copy instead of walking it again. The caller's objects are never frozen.
 *
 * @param value - The caller's value.
 * @param limits - Depth and entry bounds (past them, copying stops).
 * @returns The copy (frozen, each copied object in it too).
 */
export function snapshotJson(value: unknown, limits: SnapshotLimits): unknown {
  if (typeof value !== 'object' || value === null || !isCopyable(value)) return value
  const ancestors = new Set<object>()
  let entries = 0
  const holder: unknown[] = [undefined]
  const stack: (Pending | Exit)[] = [{ source: value, parent: holder, key: 0, depth: 1 }]
  while (stack.length > 0) {
    const frame = stack.pop()!
    if ('exit' in frame) {
      ancestors.delete(frame.exit)
      Object.freeze(frame.copy)
      continue
    }
    const { source, depth } = frame
    const copy = shallowCopy(source)
    ;(frame.parent as Record<string | number, unknown>)[frame.key] = copy
    ancestors.add(source)
    stack.push({ exit: source, copy })
    if (Array.isArray(copy)) {
      const length = copy.length
      entries += length
      for (let index = 0; index < length; index += 1) {
        const child: unknown = copy[index]
        if (
          typeof child === 'object' &&
          child !== null &&
          isCopyable(child) &&
          !ancestors.has(child) &&
          depth < limits.maxDepth &&
          entries <= limits.maxEntries
        ) {
          stack.push({ source: child, parent: copy, key: index, depth: depth + 1 })
        }
      }
      continue
    }
    const keys = Object.keys(copy)
    entries += keys.length
    for (const key of keys) {
      const child = copy[key]
      if (
        typeof child === 'object' &&
        child !== null &&
        isCopyable(child) &&
        !ancestors.has(child) &&
        depth < limits.maxDepth &&
        entries <= limits.maxEntries
      ) {
        stack.push({ source: child, parent: copy, key, depth: depth + 1 })
      }
    }
  }
  return holder[0]
}
