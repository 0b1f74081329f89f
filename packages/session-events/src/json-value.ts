import { SessionEventsError, SessionEventsErrorCode } from './session-events-error.ts'

/** Bounds on a JSON value before it is serialized. */
export interface JsonLimits {
  /** Deepest allowed nesting of arrays and objects (the top level is depth 1). */
  readonly maxDepth: number
  /** Most array elements plus object keys allowed in one value, summed over all levels. */
  readonly maxEntries: number
}

/** Defaults: deep enough for any real tool output, far below where recursive walkers overflow the stack. */
export const DEFAULT_JSON_LIMITS: JsonLimits = { maxDepth: 256, maxEntries: 5_000_000 }

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'object') {
    const prototype = Object.getPrototypeOf(value) as { constructor?: { name?: string } } | null
    return `an instance of ${prototype?.constructor?.name ?? 'an unknown class'}`
  }
  return `a ${typeof value}`
}

/**
 * Checks that `value` is plain JSON data within `limits`, without recursion (so a hostile
 * depth cannot overflow the stack).
 *
 * Plain data is: `null`, booleans, finite numbers, strings, arrays and objects whose
 * prototype is `Object.prototype` or `null`. Object properties whose value is `undefined`
 * are allowed (JSON omits them); `undefined` inside an array is not (JSON would turn it into
 * `null`). Own `__proto__` keys are data and are accepted.
 *
 * @param value - The value to check.
 * @param limits - Depth and entry bounds; defaults to {@link DEFAULT_JSON_LIMITS}.
 * @param path - Name of the value in error messages (default `data`).
 * @throws {@link SessionEventsError} `TOO_DEEP`, `EVENT_TOO_LARGE` or `UNSERIALIZABLE_EVENT`.
 */
export function assertJsonValue(
  value: unknown,
  limits: JsonLimits = DEFAULT_JSON_LIMITS,
  path = 'data',
): void {
  const ancestors = new Set<object>()
  // A frame's path is built only for an error message: its parent frame and key are kept instead.
  const stack: CheckFrame[] = [{ value, depth: 0, parent: null, key: path, exit: false }]
  let entries = 0
  while (stack.length > 0) {
    const frame = stack.pop()!
    const current = frame.value
    if (frame.exit) {
      ancestors.delete(current as object)
      continue
    }
    switch (typeof current) {
      case 'string':
      case 'boolean':
        continue
      case 'number':
        if (!Number.isFinite(current)) {
          const at = pathOf(frame)
          throw new SessionEventsError({
            code: SessionEventsErrorCode.UNSERIALIZABLE_EVENT,
            field: at,
            message: `${at} cannot be written as JSON: expected a finite number, found ${String(current)}`,
          })
        }
        continue
      case 'object':
        break
      default: {
        const at = pathOf(frame)
        throw new SessionEventsError({
          code: SessionEventsErrorCode.UNSERIALIZABLE_EVENT,
          field: at,
          message: `${at} cannot be written as JSON: expected plain JSON data, found a ${typeof current}`,
        })
      }
    }
    if (current === null) continue
    const depth = frame.depth + 1
    if (depth > limits.maxDepth) {
      const at = pathOf(frame)
      throw new SessionEventsError({
        code: SessionEventsErrorCode.TOO_DEEP,
        field: at,
        message: `${path} nests too deeply: expected at most ${limits.maxDepth} levels, found more at ${at}`,
      })
    }
    if (ancestors.has(current)) {
      const at = pathOf(frame)
      throw new SessionEventsError({
        code: SessionEventsErrorCode.UNSERIALIZABLE_EVENT,
        field: at,
        message: `${at} cannot be written as JSON: expected a tree, found a cycle back to an enclosing value`,
      })
    }
    ancestors.add(current)
    stack.push({ value: current, depth: frame.depth, parent: null, key: '', exit: true })
    if (Array.isArray(current)) {
      entries += current.length
      if (entries > limits.maxEntries) throw tooLarge(path, limits)
      for (let index = current.length - 1; index >= 0; index -= 1) {
        const element: unknown = current[index]
        if (element === undefined) {
          const at = `${pathOf(frame)}[${index}]`
          throw new SessionEventsError({
            code: SessionEventsErrorCode.UNSERIALIZABLE_EVENT,
            field: at,
            message: `${at} cannot be written as JSON: expected a value, found undefined in an array`,
          })
        }
        // A valid string, boolean or finite number can throw nothing when its turn comes: not stacked.
        if (isPlainScalar(element)) continue
        stack.push({ value: element, depth, parent: frame, key: index, exit: false })
      }
      continue
    }
    const prototype: unknown = Object.getPrototypeOf(current)
    if (prototype !== Object.prototype && prototype !== null) {
      const at = pathOf(frame)
      throw new SessionEventsError({
        code: SessionEventsErrorCode.UNSERIALIZABLE_EVENT,
        field: at,
        message: `${at} cannot be written as JSON: expected a plain object, found ${describe(current)}`,
      })
    }
    const keys = Object.keys(current)
    entries += keys.length
    if (entries > limits.maxEntries) throw tooLarge(path, limits)
    for (let index = keys.length - 1; index >= 0; index -= 1) {
      const key = keys[index]!
      const child: unknown = (current as Record<string, unknown>)[key]
      if (child === undefined || isPlainScalar(child)) continue
      stack.push({ value: child, depth, parent: frame, key, exit: false })
    }
  }
}

/** One value still to check by {@link assertJsonValue}: its parent frame and its key or index there. */
interface CheckFrame {
  readonly value: unknown
  readonly depth: number
  readonly parent: CheckFrame | null
  /** The index in an array parent, the key in an object parent, the root's name for the root. */
  readonly key: string | number
  readonly exit: boolean
}

function isPlainScalar(value: unknown): boolean {
  return (
    typeof value === 'string' ||
    typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isFinite(value))
  )
}

/** The path of a frame as error messages name it: `data.a[2].b`. */
function pathOf(frame: CheckFrame): string {
  const parts: string[] = []
  for (let at: CheckFrame | null = frame; at !== null; at = at.parent) {
    parts.push(
      at.parent === null ? String(at.key) : typeof at.key === 'number' ? `[${at.key}]` : `.${at.key}`,
    )
  }
  return parts.reverse().join('')
}

function tooLarge(path: string, limits: JsonLimits): SessionEventsError {
  return new SessionEventsError({
    code: SessionEventsErrorCode.EVENT_TOO_LARGE,
    field: path,
    message: `${path} is too large: expected at most ${limits.maxEntries} array elements and object keys, found more`,
  })
}

/**
 * Recursively freezes a JSON value in place, without recursion on the call stack.
 * Already-frozen subtrees are skipped, so freezing shared data twice costs nothing.
 *
 * @returns The same value, now deeply frozen.
 */
export function deepFreeze<TValue>(value: TValue): TValue {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value
  // Only unfrozen objects are stacked (strings and numbers, most of a JSON value, are not).
  const stack: object[] = [value]
  while (stack.length > 0) {
    const current = stack.pop()!
    // Stacked twice (one object under two keys): walked once.
    if (Object.isFrozen(current)) continue
    Object.freeze(current)
    for (const key of Object.keys(current)) {
      const child: unknown = (current as Record<string, unknown>)[key]
      if (typeof child === 'object' && child !== null && !Object.isFrozen(child)) stack.push(child)
    }
  }
  return value
}
