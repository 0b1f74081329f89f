/**
 * Secret redaction (RELIABILITY S8), once for every backend: every string of an appended
 * (or seed) event's `data` goes through the policy before the event is checked, encoded and
 * checksummed, so the redacted text is what is stored, projected and returned. Fails
 * closed: a hook that throws or returns a non-string refuses the append.
 */

/** A redaction policy: a version recorded in the header, and the function applied to each string. */
export interface RedactionPolicy {
  /** Recorded in each new session's header as `redaction: {policyVersion}`. */
  readonly policyVersion: string
  /** Returns the text to store for one string value; must return a string. */
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

/**
 * One pass that finds every place a {@link DEFAULT_SECRET_PATTERNS} match can start: each
 * pattern's literal trigger (`-----BEGIN `, `sk-`, the AWS key prefixes, `gh?_`,
 * `github_pat_`, `xox?-`, `bearer` + whitespace in any case). Every full-pattern match
 * contains one, so a string this does not match holds no secret and the seven full patterns
 * are skipped: most strings (tool outputs, code) pay one regex scan instead of seven. Kept a
 * superset of the patterns by a property test.
 */
const SECRET_TRIGGERS =
  /-----BEGIN |sk-|A(?:KIA|SIA|GPA|IDA|ROA)|gh[pousr]_|github_pat_|xox[abprs]-|[Bb][Ee][Aa][Rr][Ee][Rr]\s/

/**
 * The default policy (the JSONL store re-exports it, so headers agree):
 * {@link DEFAULT_SECRET_PATTERNS}, each match replaced by `[REDACTED:<label>]`. A string is
 * first checked for any pattern's trigger in one combined pass; the full patterns run only
 * on a hit.
 */
export const DEFAULT_REDACTION_POLICY: RedactionPolicy = Object.freeze({
  policyVersion: 'agent-ledger.default-secrets.1',
  redact(text: string): string {
    if (!SECRET_TRIGGERS.test(text)) return text
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

/** One string through the hook, which must return a string. */
function redactString(policy: RedactionPolicy, text: string): string {
  const result: unknown = policy.redact(text)
  if (typeof result !== 'string') {
    throw new TypeError(
      `the redaction hook returned ${result === null ? 'null' : typeof result}, expected a string`,
    )
  }
  return result
}

/**
 * Applies `policy.redact` to every string inside `value`, IN PLACE, iteratively. Only for a fresh
 * copy the caller owns (the append pipeline's snapshot). Each object is visited once, so a
 * shared subtree is redacted once. Object keys are not redacted.
 *
 * @param value - The snapshot's `data`.
 * @param policy - Its `redact` is called once per string (as a method) and must return a string.
 * @param tree - True when no object is reached twice (a plain snapshot): no visited set is kept.
 * @returns The value to store (a new string when `value` itself is a string).
 * @throws The hook's error, or a TypeError when it returns a non-string.
 */
export function redactInPlace(value: unknown, policy: RedactionPolicy, tree = false): unknown {
  if (typeof value === 'string') return redactString(policy, value)
  if (typeof value !== 'object' || value === null) return value
  // A tree (no object reached twice) needs no visited set: each object is stacked once anyway.
  const seen = tree ? null : new Set<object>([value])
  const stack: object[] = [value]
  const walk: Walk = { stack, seen, policy }
  while (stack.length > 0) {
    const target = stack.pop() as Record<string | number, unknown>
    if (Array.isArray(target)) {
      for (let index = 0; index < target.length; index += 1) visit(walk, target, index)
      continue
    }
    for (const key of Object.keys(target)) visit(walk, target, key)
  }
  return value
}

/** The state of one {@link redactInPlace} walk. */
interface Walk {
  readonly stack: object[]
  /** Objects already stacked; null for a tree (none is reached twice). */
  readonly seen: Set<object> | null
  readonly policy: RedactionPolicy
}

/** One member of {@link redactInPlace}'s walk: a string redacted in place, an object stacked once. */
function visit(walk: Walk, target: Record<string | number, unknown>, key: string | number): void {
  const { stack, seen, policy } = walk
  const child = target[key]
  if (typeof child === 'string') {
    const redacted = redactString(policy, child)
    if (redacted !== child) {
      Object.defineProperty(target, key, {
        value: redacted,
        writable: true,
        enumerable: true,
        configurable: true,
      })
    }
  } else if (typeof child === 'object' && child !== null) {
    if (seen !== null) {
      if (seen.has(child)) return
      seen.add(child)
    }
    stack.push(child)
  }
}

/**
 * The header members that record a policy (`redaction: {policyVersion}`), or undefined for none.
 *
 * @param policy - The store's policy, or null.
 * @returns Extra header members.
 */
export function redactionHeader(
  policy: RedactionPolicy | null,
): Readonly<Record<string, unknown>> | undefined {
  return policy === null ? undefined : { redaction: { policyVersion: policy.policyVersion } }
}
