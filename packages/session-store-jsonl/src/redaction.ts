/**
 * Secret redaction for the JSONL writer (RELIABILITY S8). The policy and its default patterns
 * are the session core's (`@agent-ledger/session-store`), so both stores record the same
 * `policyVersion` and redact the same shapes; this module keeps only the copy-on-write walk
 * the JSONL append path uses.
 */

export { DEFAULT_REDACTION_POLICY, DEFAULT_SECRET_PATTERNS } from '@agent-ledger/session-store'
export type { RedactionPolicy } from '@agent-ledger/session-store'

interface Frame {
  readonly source: Record<string, unknown> | unknown[]
  readonly keys: readonly string[] | null
  readonly length: number
  index: number
  copy: Record<string, unknown> | unknown[] | null
  readonly parent: Frame | null
  readonly parentKey: string | number
}

function frameOf(source: object, parent: Frame | null, parentKey: string | number): Frame {
  if (Array.isArray(source)) {
    return { source, keys: null, length: source.length, index: 0, copy: null, parent, parentKey }
  }
  const keys = Object.keys(source)
  return {
    source: source as Record<string, unknown>,
    keys,
    length: keys.length,
    index: 0,
    copy: null,
    parent,
    parentKey,
  }
}

/** Sets an own data property (an own `__proto__` key stays a key, never a prototype). */
function define(target: Record<string, unknown> | unknown[], key: string | number, value: unknown): void {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true })
}

function setChild(frame: Frame, key: string | number, value: unknown): void {
  if (frame.copy === null) {
    if (Array.isArray(frame.source)) {
      frame.copy = frame.source.slice()
    } else {
      const copy: Record<string, unknown> = {}
      for (const name of frame.keys!) define(copy, name, frame.source[name])
      frame.copy = copy
    }
  }
  define(frame.copy, key, value)
}

/** The hook's answer for one string (a module function: no closure per event on the hot path). */
function apply(redact: (text: string) => string, text: string): string {
  const result: unknown = redact(text)
  if (typeof result !== 'string') {
    throw new TypeError(
      `the redaction hook returned ${result === null ? 'null' : typeof result}, expected a string`,
    )
  }
  return result
}

/**
 * Applies `redact` to every string inside a JSON value, copy-on-write and without
 * recursion: unchanged subtrees are shared, changed ones are fresh plain objects with the
 * same key order (own `__proto__` keys stay data). Object keys are not redacted.
 *
 * @param value - A plain JSON value (already checked).
 * @param redact - Called once per string; must return a string.
 * @returns `value` itself when nothing changed, else a redacted copy.
 * @throws The hook's error, or a TypeError when it returns a non-string.
 */
export function redactJson(value: unknown, redact: (text: string) => string): unknown {
  if (typeof value === 'string') return apply(redact, value)
  if (typeof value !== 'object' || value === null) return value
  const root = frameOf(value, null, '')
  const stack: Frame[] = [root]
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!
    if (frame.index < frame.length) {
      const key: string | number = frame.keys === null ? frame.index : frame.keys[frame.index]!
      frame.index += 1
      const child: unknown = (frame.source as Record<string | number, unknown>)[key]
      if (typeof child === 'string') {
        const redacted = apply(redact, child)
        if (redacted !== child) setChild(frame, key, redacted)
      } else if (typeof child === 'object' && child !== null) {
        stack.push(frameOf(child, frame, key))
      }
      continue
    }
    stack.pop()
    if (frame.copy !== null && frame.parent !== null) setChild(frame.parent, frame.parentKey, frame.copy)
  }
  return root.copy ?? value
}
