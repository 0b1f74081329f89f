/**
 * A policy that removes secrets from every string in an event's `data` before it is
 * serialized (RELIABILITY S8). The redacted text is what is checksummed, written, projected
 * and returned: the model never sees what the log does not hold.
 */
export interface RedactionPolicy {
  /** Recorded in each new session's header as `redaction: {policyVersion}`. */
  readonly policyVersion: string
  /**
   * Returns the text to store for one string value. Must return a string; throwing or
   * returning anything else makes `append` fail closed with `REDACTION_FAILED`.
   */
  redact(text: string): string
}

/** The secret shapes the default policy replaces, each with the label it leaves behind. */
export const DEFAULT_SECRET_PATTERNS: readonly { readonly label: string; readonly pattern: RegExp }[] = [
  {
    label: 'private-key',
    pattern: /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g,
  },
  { label: 'anthropic-key', pattern: /\bsk-ant-[A-Za-z0-9_-]{8,}/g },
  { label: 'openai-key', pattern: /\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,}/g },
  { label: 'aws-access-key-id', pattern: /\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b/g },
  { label: 'github-token', pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})/g },
  { label: 'slack-token', pattern: /\bxox[abprs]-[A-Za-z0-9-]{10,}/g },
  { label: 'bearer-token', pattern: /(\bBearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi },
]

/** The default policy: {@link DEFAULT_SECRET_PATTERNS}, each match replaced by `[REDACTED:<label>]`. */
export const DEFAULT_REDACTION_POLICY: RedactionPolicy = Object.freeze({
  policyVersion: 'agent-ledger.default-secrets.1',
  redact(text: string): string {
    let result = text
    for (const { label, pattern } of DEFAULT_SECRET_PATTERNS) {
      pattern.lastIndex = 0
      if (!pattern.test(result)) continue
      pattern.lastIndex = 0
      result = result.replace(pattern, (_match: string, prefix: unknown) =>
        label === 'bearer-token' && typeof prefix === 'string'
          ? `${prefix}[REDACTED:${label}]`
          : `[REDACTED:${label}]`,
      )
    }
    return result
  },
})

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
  const apply = (text: string): string => {
    const result: unknown = redact(text)
    if (typeof result !== 'string') {
      throw new TypeError(
        `the redaction hook returned ${result === null ? 'null' : typeof result}, expected a string`,
      )
    }
    return result
  }
  if (typeof value === 'string') return apply(value)
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
        const redacted = apply(child)
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
