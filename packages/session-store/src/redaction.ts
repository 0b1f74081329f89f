/**
 * Secret redaction (RELIABILITY S8), once for every backend: every string of an appended
 * (or seed) event's `data`, and of a new header's `cwd` and `metadata` (header.ts), goes
 * through the policy before it is checked, encoded and checksummed, so the redacted text is
 * what is stored, projected and returned. Fails closed: a hook that throws or returns a
 * non-string refuses the append (or the create, fork, salvage).
 */

/** A redaction policy: a version recorded in the header, and the function applied to each string. */
export interface RedactionPolicy {
  /** Recorded in each new session's header as `redaction: {policyVersion}`. */
  readonly policyVersion: string
  /** Returns the text to store for one string value; must return a string. */
  redact(text: string): string
}

/**
 * The secret shapes the default policy replaces, each with the label it leaves behind. A
 * pattern with a capture group keeps that group (the text naming the secret: `Bearer `,
 * `aws_secret_access_key=`, `postgres://user:`) and replaces only what follows.
 *
 * - `anthropic-key`: `sk-ant-` then 8 or more key characters (Anthropic's `sk-ant-api03-`,
 *   `sk-ant-admin01-`, `sk-ant-oat01-` keys are about 108 characters).
 * - `sk-key`: any other `sk-` key of 16 or more characters after the dash: OpenAI's legacy
 *   (`sk-` + 48), `sk-proj-`, `sk-svcacct-`, `sk-admin-` keys (about 165), and the same shape
 *   other providers hand out (`sk-or-v1-` + 64 hex, `sk-` + 32 hex). Not after a letter or
 *   digit (`task-...`, `desk-...` are words); a 16-character floor keeps words like
 *   `sk-learn` out.
 * - `aws-secret-access-key`: 40 characters of `[A-Za-z0-9/+]` after a
 *   `secret_access_key`-like name (`AWS_SECRET_ACCESS_KEY=`, `aws_secret_access_key = `,
 *   `"SecretAccessKey": "`), any case; the name is kept.
 * - `url-password`: the password of a URL with userinfo, any scheme (`postgres://user:pass@host`,
 *   `redis://:pass@host`); scheme, user and host are kept. User and password up to 256
 *   characters each; the password runs to the last `@` before a character no userinfo holds
 *   (white space, `/`, `?`, `#`, `"`, `<`, `>`, `\`, `^`, a backtick, `{`, `|`, `}`), so a
 *   `p@ss` password goes whole.
 */
export const DEFAULT_SECRET_PATTERNS: readonly { readonly label: string; readonly pattern: RegExp }[] = [
  {
    label: 'private-key',
    pattern: /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g,
  },
  { label: 'anthropic-key', pattern: /(?<![A-Za-z0-9])sk-ant-[A-Za-z0-9_-]{8,}/g },
  { label: 'sk-key', pattern: /(?<![A-Za-z0-9])sk-[A-Za-z0-9][A-Za-z0-9_-]{15,}/g },
  { label: 'aws-access-key-id', pattern: /\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b/g },
  {
    label: 'aws-secret-access-key',
    pattern:
      /(secret[_-]?access[_-]?key["']?[ \t]{0,8}[:=]>?[ \t]{0,8}["']?)[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])/gi,
  },
  {
    label: 'url-password',
    pattern: /(:\/\/[^\s:/?#@"<>\\^`{|}]{0,256}:)[^\s/?#"<>\\^`{|}]{1,256}(?=@)/g,
  },
  { label: 'github-token', pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})/g },
  { label: 'slack-token', pattern: /\bxox[abprs]-[A-Za-z0-9-]{10,}/g },
  { label: 'bearer-token', pattern: /(\bBearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi },
]

/**
 * One pass that finds every place a {@link DEFAULT_SECRET_PATTERNS} match can start: each
 * pattern's literal trigger, one capture group per kind (`-----BEGIN `, `sk-`, the AWS key
 * prefixes, `secret` + `access` in any case, `://`, `gh?_` or `github_pat_`, `xox?-`,
 * `bearer` + whitespace in any case). Every full-pattern match contains its trigger, so a
 * string this does not match holds no secret, and only the patterns whose trigger occurs
 * run: most strings (tool outputs, code) pay one regex scan, a string with a URL two. Kept
 * a superset of the patterns by a property test.
 */
const SECRET_TRIGGERS =
  /(-----BEGIN )|(sk-)|(A(?:KIA|SIA|GPA|IDA|ROA))|([Ss][Ee][Cc][Rr][Ee][Tt][_-]?[Aa][Cc][Cc][Ee][Ss][Ss])|(:\/\/)|(gh[pousr]_|github_pat_)|(xox[abprs]-)|([Bb][Ee][Aa][Rr][Ee][Rr]\s)/g

/** For each capture group of {@link SECRET_TRIGGERS} (index 1 on), the patterns it can start. */
const TRIGGERED_LABELS: readonly (readonly string[])[] = [
  [],
  ['private-key'],
  ['anthropic-key', 'sk-key'],
  ['aws-access-key-id'],
  ['aws-secret-access-key'],
  ['url-password'],
  ['github-token'],
  ['slack-token'],
  ['bearer-token'],
]

/** {@link TRIGGERED_LABELS} as bit masks over the indexes of {@link DEFAULT_SECRET_PATTERNS}. */
const TRIGGER_MASKS: readonly number[] = TRIGGERED_LABELS.map((labels) =>
  labels.reduce(
    (mask, label) => mask | (1 << DEFAULT_SECRET_PATTERNS.findIndex((entry) => entry.label === label)),
    0,
  ),
)
const ALL_PATTERNS = (1 << DEFAULT_SECRET_PATTERNS.length) - 1

/** The patterns whose trigger occurs in `text`, as a bit mask (0: none can match). */
function triggeredPatterns(text: string): number {
  let mask = 0
  SECRET_TRIGGERS.lastIndex = 0
  for (let match = SECRET_TRIGGERS.exec(text); match !== null; match = SECRET_TRIGGERS.exec(text)) {
    let group = 1
    while (match[group] === undefined) group += 1
    mask |= TRIGGER_MASKS[group]!
    if (mask === ALL_PATTERNS) break
    // Triggers overlap ("sk-----BEGIN "): search again from the next character, not past the match.
    SECRET_TRIGGERS.lastIndex = match.index + 1
  }
  return mask
}

/**
 * The default policy (the JSONL store re-exports it, so headers agree):
 * {@link DEFAULT_SECRET_PATTERNS}, each match replaced by `[REDACTED:<label>]` (after the
 * kept prefix of a pattern with a capture group). A string is first scanned once for the
 * patterns' triggers; only the patterns whose trigger occurs run, in their order.
 */
export const DEFAULT_REDACTION_POLICY: RedactionPolicy = Object.freeze({
  policyVersion: 'agent-ledger.default-secrets.2',
  redact(text: string): string {
    const triggered = triggeredPatterns(text)
    if (triggered === 0) return text
    let result = text
    DEFAULT_SECRET_PATTERNS.forEach(({ label, pattern }, index) => {
      if ((triggered & (1 << index)) === 0) return
      // The second argument is the kept prefix for a pattern with a group, else the offset.
      result = result.replace(pattern, (_match: string, prefix: unknown) =>
        typeof prefix === 'string' ? `${prefix}[REDACTED:${label}]` : `[REDACTED:${label}]`,
      )
    })
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
