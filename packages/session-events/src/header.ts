import { z } from 'zod'

/** The on-disk format version this build writes. Adding an event type never changes it; structural changes do. */
export const SESSION_FORMAT_VERSION = 4

/** The `format` field of every v1+ header line. */
export const SESSION_FORMAT_NAME = 'agent-ledger.session'

/**
 * A Windows device name (`CON`, `PRN`, `AUX`, `NUL`, `COM0`-`COM9`, `LPT0`-`LPT9`) in any
 * case, alone or followed by `_` or `-`: such a name cannot be a file on Windows, so no
 * backend stores it (a session copied from a database to files would fail there).
 */
const DEVICE_NAME =
  '(?:[Cc][Oo][Nn]|[Pp][Rr][Nn]|[Aa][Uu][Xx]|[Nn][Uu][Ll]|[Cc][Oo][Mm][0-9]|[Ll][Pp][Tt][0-9])'

/**
 * Session ids, the one rule of every backend: letters, digits, `_` and `-`, 1 to 128
 * characters, not starting with `-`, and not a Windows device name (`CON`, `nul`, `COM1`,
 * `aux-2`...). Such an id is always exactly one path component and the same on every backend.
 */
export const SESSION_ID_PATTERN = new RegExp(`^(?!${DEVICE_NAME}(?:$|[_-]))[A-Za-z0-9_][A-Za-z0-9_-]{0,127}$`)

/** What {@link SESSION_ID_PATTERN} asks for, in words (for messages). */
export const SESSION_ID_RULE =
  '1-128 characters from [A-Za-z0-9_-], not starting with "-" and not a Windows device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9)'

/**
 * Whether `value` is an allowed session id ({@link SESSION_ID_PATTERN}).
 *
 * @param value - Anything.
 * @returns True for a string matching the pattern.
 */
export function isSessionId(value: unknown): value is string {
  return typeof value === 'string' && SESSION_ID_PATTERN.test(value)
}

/**
 * The id as it may appear in an error: JSON-escaped, every character outside printable
 * ASCII written as `\uXXXX` (so control characters, bidi overrides and lookalikes are
 * visible), truncated to 64 characters; a non-string as `(type)`.
 *
 * @param id - Any value passed as a session id.
 * @returns A printable, bounded rendering.
 */
export function describeSessionId(id: unknown): string {
  const text =
    typeof id === 'string'
      ? JSON.stringify(id).replace(
          /[^\x20-\x7e]/g,
          (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
        )
      : `(${typeof id})`
  return text.length > 64 ? `${text.slice(0, 61)}...` : text
}

/** Schema of a session id. */
export const sessionIdSchema = z.string().regex(SESSION_ID_PATTERN, `a session id (${SESSION_ID_RULE})`)

/** Where this generation came from when it was written by migration. */
export const migratedFromSchema = z.object({
  /** File name of the source generation, e.g. `session.jsonl`. */
  file: z.string(),
  version: z.number().int().nonnegative(),
  /** SHA-256 (hex) of the source file's bytes as read. */
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  /** Last seq of the source, in the source's numbering (-1 when it held no events). */
  lastSeq: z.number().int().min(-1),
  bytes: z.number().int().nonnegative(),
})
export type MigratedFrom = z.infer<typeof migratedFromSchema>

/**
 * The first line of a session file (v1 and later). It is not an event: events start on
 * the next line at seq 0.
 */
export const sessionHeaderSchema = z.object({
  format: z.literal(SESSION_FORMAT_NAME),
  version: z.number().int().nonnegative(),
  id: sessionIdSchema,
  createdAt: z.string().min(1),
  cwd: z.string().optional(),
  /** Id of the session this one was forked from. */
  parentSession: z.string().optional(),
  /** True when the session starts with inherited events ending in `session/end-seed`. */
  seeded: z.boolean().optional(),
  /** How many events (before `session/end-seed`) were inherited from the parent. */
  inheritedEventCount: z.number().int().nonnegative().optional(),
  /** 0 for a top-level session; a sub-agent's session is its parent's depth + 1. */
  delegationDepth: z.number().int().nonnegative().optional(),
  /** Integrity scheme of every line in this file, e.g. `crc32c`. */
  integrity: z.string().optional(),
  migratedFrom: migratedFromSchema.optional(),
  /**
   * Encryption at rest (FORMAT.md section 17): the scheme, the key-provider key the data key
   * was first wrapped under, and the data key's id in the key store. Absent: a plain session.
   */
  encryption: z
    .object({ scheme: z.string().min(1), keyId: z.string().min(1), dataKeyId: z.string().min(1) })
    .optional(),
  /**
   * Free metadata for the harness (model, title, tags...). Checked to be an object and kept
   * as is (not rebuilt like `z.record` would), so own `__proto__` keys stay data (RELIABILITY S3).
   */
  metadata: z
    .custom<Record<string, unknown>>(
      (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
      'a JSON object',
    )
    .optional(),
})
export type SessionHeader = z.infer<typeof sessionHeaderSchema>

/** Header fields a caller chooses; the store fills `format`, `version` and `integrity`. */
export type SessionHeaderInput = Omit<
  SessionHeader,
  'format' | 'version' | 'integrity' | 'migratedFrom' | 'encryption'
>
