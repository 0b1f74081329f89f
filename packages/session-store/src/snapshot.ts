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
 * Up to this many copied objects, a repeated object is found by a linear scan of the copied
 * ones; past it, by a Map (most events hold a handful of objects: no Map is built for them).
 */
const SCAN_LIMIT = 16

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
 * @param ownRoot - True when `value` is a plain object the caller just built (the append
 *   pipeline's canonical event): its members are copied into it in place, the object itself
 *   is not copied again.
 * @returns The copy and its plain flag.
 */
export function snapshotInput(value: unknown, limits: SnapshotLimits, ownRoot = false): InputSnapshot {
  if (typeof value !== 'object' || value === null) return { copy: value, plain: isPlainLeaf(value) }
  if (!Array.isArray(value) && !isPlainObject(value)) return { copy: value, plain: false }
  const root: object = ownRoot ? value : Array.isArray(value) ? [] : {}
  const walk = new SnapshotWalk(value, root, limits)
  // The copied objects are the work queue, in the order met: no recursion, no stack entries.
  for (let cursor = 0; cursor < walk.originals.length; cursor += 1) {
    const original = walk.originals[cursor] as Record<string | number, unknown>
    const copy = walk.copies[cursor] as Record<string | number, unknown>
    const depth = walk.depths[cursor]!
    if (Array.isArray(original)) {
      const length = original.length
      for (let index = 0; index < length; index += 1) {
        define(copy, index, walk.child(original[index], depth))
      }
    } else {
      const keys = Object.keys(original)
      for (let index = 0; index < keys.length; index += 1) {
        const key = keys[index]!
        define(copy, key, walk.child(original[key], depth))
      }
    }
  }
  return { copy: root, plain: walk.plain && walk.entries <= limits.maxEntries }
}

/** The state of one {@link snapshotInput} walk. */
class SnapshotWalk {
  /** Every object met that is copied, its copy, and its level (the value is level 1). */
  readonly originals: object[]
  readonly copies: object[]
  readonly depths: number[]
  readonly #maxDepth: number
  readonly #maxEntries: number
  /** Original -> copy, once more than {@link SCAN_LIMIT} objects were copied. */
  #table: Map<object, object> | null = null
  entries = 0
  plain: boolean

  constructor(value: object, root: object, limits: SnapshotLimits) {
    this.originals = [value]
    this.copies = [root]
    this.depths = [1]
    this.#maxDepth = limits.maxDepth
    this.#maxEntries = limits.maxEntries
    this.plain = limits.maxDepth >= 1
  }

  /** What the copy of a member read at `depth` holds: the value, a new copy, or a repeat's copy. */
  child(child: unknown, depth: number): unknown {
    this.entries += 1
    if (
      typeof child !== 'object' ||
      child === null ||
      (!Array.isArray(child) && !isPlainObject(child)) ||
      depth >= this.#maxDepth ||
      this.entries > this.#maxEntries
    ) {
      if (this.plain && !isPlainLeaf(child)) this.plain = false
      return child
    }
    const seen = this.#seen(child)
    if (seen !== undefined) {
      this.plain = false
      return seen
    }
    const copy: object = Array.isArray(child) ? [] : {}
    this.originals.push(child)
    this.copies.push(copy)
    this.depths.push(depth + 1)
    this.#table?.set(child, copy)
    return copy
  }

  #seen(child: object): object | undefined {
    if (this.#table !== null) return this.#table.get(child)
    const at = this.originals.indexOf(child)
    if (at !== -1) return this.copies[at]
    if (this.originals.length >= SCAN_LIMIT) {
      this.#table = new Map()
      for (let index = 0; index < this.originals.length; index += 1) {
        this.#table.set(this.originals[index]!, this.copies[index]!)
      }
    }
    return undefined
  }
}
