/**
 * Reading a caller's event input exactly once: a structural copy that calls every getter
 * (and every Proxy trap) one time, so what is validated, written and returned cannot
 * differ because an accessor answered differently the second time. The same walk redacts
 * the strings of the event's `data` as it copies them and freezes a plain copy, so the
 * append pipeline visits the caller's data once (no second walk to redact, none to freeze).
 */
import type { RedactionPolicy } from './redaction.ts'

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

/** Options of {@link snapshotInput}. */
export interface SnapshotOptions {
  /**
   * True when the value is a plain object the caller just built (the append pipeline's
   * canonical event): its members are copied into it in place, the object itself is not
   * copied again.
   */
  readonly ownRoot?: boolean | undefined
  /**
   * Applied to every string under the root's `data` member (and to `data` itself when it is
   * a string) as it is copied; null or absent for none. A hook that throws or returns a
   * non-string is not called again; its failure is {@link InputSnapshot.redactionError}.
   */
  readonly redaction?: RedactionPolicy | null | undefined
  /** Freeze every copied object when the copy is plain (the event the projection keeps). */
  readonly freeze?: boolean | undefined
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
  /**
   * What the redaction hook threw (or the `TypeError` for a non-string it returned), when it
   * failed; the copy then holds unredacted strings and must not be used. Undefined otherwise.
   */
  readonly redactionError?: unknown
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
 * Objects up to this level are filled as they are met (a bounded recursion, the fast path
 * for usual events); deeper ones are queued and filled by a loop, so a deep input (any
 * `maxDepth`) never grows the call stack past this many frames.
 */
const RECURSE_DEPTH = 32

/**
 * Copies plain arrays and plain objects (own enumerable string keys, each read once).
 * Everything else (primitives, class instances, functions, BigInt) is kept as is, for the
 * JSON validator to refuse with its precise code. A repeated object maps to the same copy,
 * so a cycle stays a cycle (and is refused as one). Past `maxDepth` levels or `maxEntries`
 * values, the original is kept and the validator reports the excess. The same walk says
 * whether the copy is certainly plain JSON data ({@link InputSnapshot.plain}), so the append
 * pipeline can skip the checks and the parse-back that cannot fail on such data; with
 * `redaction` it replaces each string under `data` by the hook's answer as it copies it
 * (each copied object is visited once, so a shared subtree is redacted once), and with
 * `freeze` it freezes every copied object of a plain copy.
 *
 * @param value - The caller's input.
 * @param limits - Depth and size bounds.
 * @param options - Own root, redaction and freezing ({@link SnapshotOptions}).
 * @returns The copy, its plain flag and a redaction failure.
 */
export function snapshotInput(
  value: unknown,
  limits: SnapshotLimits,
  options: SnapshotOptions = {},
): InputSnapshot {
  if (typeof value !== 'object' || value === null) return { copy: value, plain: isPlainLeaf(value) }
  if (!Array.isArray(value) && !isPlainObject(value)) return { copy: value, plain: false }
  const root: object = options.ownRoot === true ? value : Array.isArray(value) ? [] : {}
  const walk = new SnapshotWalk(value, root, { limits, policy: options.redaction ?? null })
  walk.fill(value, root, 1)
  // Objects met deeper than RECURSE_DEPTH, in the order met: no recursion past that level.
  const queue = walk.queue
  for (let cursor = 0; cursor < queue.length; cursor += 4) {
    walk.redacting = queue[cursor + 3] as boolean
    walk.fill(queue[cursor] as object, queue[cursor + 1] as object, queue[cursor + 2] as number)
  }
  const plain = walk.plain && walk.entries <= limits.maxEntries
  if (plain && options.freeze === true) {
    const copies = walk.copies
    for (let index = 0; index < copies.length; index += 1) Object.freeze(copies[index])
  }
  return walk.redactionFailed
    ? { copy: root, plain, redactionError: walk.redactionError }
    : { copy: root, plain }
}

/** The state of one {@link snapshotInput} walk. */
class SnapshotWalk {
  /** Every object met that is copied, and its copy (the value and its root first). */
  readonly originals: object[]
  readonly copies: object[]
  /** Objects met past {@link RECURSE_DEPTH}, to fill: original, copy, level, redacting (flat). */
  readonly queue: unknown[] = []
  readonly #maxDepth: number
  readonly #maxEntries: number
  /** Original -> copy, once more than {@link SCAN_LIMIT} objects were copied. */
  #table: Map<object, object> | null = null
  readonly #policy: RedactionPolicy | null
  entries = 0
  /**
   * Whether the strings met now are redacted: under the root's `data` member (every object
   * below one root member shares its answer; set per root member and per queued object;
   * false for a root array).
   */
  redacting = false
  plain: boolean
  redactionFailed = false
  redactionError: unknown = undefined

  constructor(
    value: object,
    root: object,
    settings: { readonly limits: SnapshotLimits; readonly policy: RedactionPolicy | null },
  ) {
    const { limits, policy } = settings
    this.originals = [value]
    this.copies = [root]
    this.#maxDepth = limits.maxDepth
    this.#maxEntries = limits.maxEntries
    this.#policy = policy
    this.plain = limits.maxDepth >= 1
  }

  /** Copies the members of `original` (at level `depth`) into `copy`. */
  fill(original: object, copy: object, depth: number): void {
    if (Array.isArray(original)) {
      const target = copy as unknown[]
      const length = original.length
      for (let index = 0; index < length; index += 1) {
        // An index is never `__proto__`: set directly.
        target[index] = this.child((original as unknown[])[index], depth)
      }
      return
    }
    const source = original as Record<string, unknown>
    const target = copy as Record<string, unknown>
    const keys = Object.keys(source)
    for (let index = 0; index < keys.length; index += 1) {
      const key = keys[index]!
      // Strings are redacted under the root's `data` member only (the root is level 1).
      if (depth === 1) this.redacting = key === 'data'
      define(target, key, this.child(source[key], depth))
    }
  }

  /**
   * What the copy of a member read at `depth` holds: the value (a string redacted when
   * {@link redacting}), a new copy (filled now, or queued past {@link RECURSE_DEPTH}), or a
   * repeat's copy.
   */
  child(child: unknown, depth: number): unknown {
    this.entries += 1
    if (typeof child === 'string') return this.redacting ? this.#redact(child) : child
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
    this.#table?.set(child, copy)
    if (depth < RECURSE_DEPTH) this.fill(child, copy, depth + 1)
    else this.queue.push(child, copy, depth + 1, this.redacting)
    return copy
  }

  /** One string through the hook (as a method), which must return a string; a failure stops redacting. */
  #redact(text: string): string {
    const policy = this.#policy
    if (policy === null || this.redactionFailed) return text
    try {
      const result: unknown = policy.redact(text)
      if (typeof result === 'string') return result
      throw new TypeError(
        `the redaction hook returned ${result === null ? 'null' : typeof result}, expected a string`,
      )
    } catch (error) {
      this.redactionFailed = true
      this.redactionError = error
      return text
    }
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
