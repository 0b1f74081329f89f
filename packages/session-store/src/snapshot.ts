/**
 * Reading a caller's event input exactly once: a structural copy that calls every getter
 * (and every Proxy trap) one time, so what is validated, written and returned cannot
 * differ because an accessor answered differently the second time.
 */

/** Bounds of {@link snapshotInput}: past them the copy stops and the validator reports the excess. */
export interface SnapshotLimits {
  readonly maxDepth: number
  readonly maxEntries: number
}

function isPlainObject(value: object): boolean {
  const prototype = Object.getPrototypeOf(value) as unknown
  return prototype === Object.prototype || prototype === null
}

function define(target: Record<string, unknown> | unknown[], key: string | number, value: unknown): void {
  if (key === '__proto__') {
    // An own "__proto__" key is data (RELIABILITY S3), never the prototype.
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
  } else {
    ;(target as Record<string | number, unknown>)[key] = value
  }
}

/** What {@link snapshotInput} made: the copy, and whether it is certainly plain JSON data. */
export interface InputSnapshot {
  readonly copy: unknown
  /**
   * True only when the copy is a tree of plain objects and arrays whose leaves are strings,
   * booleans, `null` and finite numbers other than `-0`, with no `undefined` member or array
   * element, no object reached twice, within `maxDepth` levels and `maxEntries` values: then
   * `assertJsonValue` accepts it and `JSON.parse(JSON.stringify(copy))` equals it member for
   * member, in the same order. False answers nothing: the full checks decide.
   */
  readonly plain: boolean
}

/** `[0, 1, ..., length - 1]` (the keys of an array, read by index). */
function indexes(length: number): number[] {
  const keys = new Array<number>(length)
  for (let index = 0; index < length; index += 1) keys[index] = index
  return keys
}

function isPlainLeaf(value: unknown): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true
    case 'number':
      return Number.isFinite(value) && !Object.is(value, -0)
    default:
      return value === null
  }
}

/**
 * Copies plain arrays and plain objects (own enumerable string keys, each read once),
 * iteratively. Everything else (primitives, class instances, functions, BigInt) is kept as
 * is, for the JSON validator to refuse with its precise code. A repeated object maps to the
 * same copy, so a cycle stays a cycle (and is refused as one). Past `maxDepth` levels or
 * `maxEntries` values, the original is kept and the validator reports the excess. The same
 * walk says whether the copy is certainly plain JSON data ({@link InputSnapshot.plain}), so
 * the append pipeline can skip the checks and the parse-back that cannot fail on such data.
 *
 * @param value - The caller's input.
 * @param limits - Depth and size bounds.
 * @returns The copy and its plain flag.
 */
export function snapshotInput(value: unknown, limits: SnapshotLimits): InputSnapshot {
  if (typeof value !== 'object' || value === null) return { copy: value, plain: isPlainLeaf(value) }
  if (!Array.isArray(value) && !isPlainObject(value)) return { copy: value, plain: false }
  const copies = new Map<object, unknown>()
  let entries = 0
  let plain = limits.maxDepth >= 1
  const root: object = Array.isArray(value) ? [] : {}
  copies.set(value, root)
  const stack: { readonly original: object; readonly copy: object; readonly depth: number }[] = [
    { original: value, copy: root, depth: 1 },
  ]
  while (stack.length > 0) {
    const { original, copy, depth } = stack.pop()!
    const keys: readonly (string | number)[] = Array.isArray(original)
      ? indexes(original.length)
      : Object.keys(original)
    for (const key of keys) {
      entries += 1
      const child = (original as Record<string | number, unknown>)[key]
      if (
        typeof child !== 'object' ||
        child === null ||
        (!Array.isArray(child) && !isPlainObject(child)) ||
        depth >= limits.maxDepth ||
        entries > limits.maxEntries
      ) {
        if (plain && !isPlainLeaf(child)) plain = false
        define(copy as Record<string, unknown>, key, child)
        continue
      }
      const seen = copies.get(child)
      if (seen !== undefined) {
        plain = false
        define(copy as Record<string, unknown>, key, seen)
        continue
      }
      const childCopy: object = Array.isArray(child) ? [] : {}
      copies.set(child, childCopy)
      define(copy as Record<string, unknown>, key, childCopy)
      stack.push({ original: child, copy: childCopy, depth: depth + 1 })
    }
  }
  return { copy: root, plain: plain && entries <= limits.maxEntries }
}
