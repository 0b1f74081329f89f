import { SESSION_ID_PATTERN } from '@agent-ledger/session-events'

import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'

/** Windows device names, refused case-insensitively with or without an extension-like suffix. */
const DEVICE_NAME = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])(?:$|[._-])/i

/**
 * The id as it may appear in an error: JSON-escaped, every character outside printable
 * ASCII written as `\uXXXX` (so control characters, bidi overrides and lookalikes are
 * visible), and truncated to 64 characters.
 *
 * @param id - Any value passed as a session id.
 * @returns A printable, bounded rendering.
 */
function describeSessionId(id: unknown): string {
  const text =
    typeof id === 'string'
      ? JSON.stringify(id).replace(
          /[^\x20-\x7e]/g,
          (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
        )
      : `(${typeof id})`
  return text.length > 64 ? `${text.slice(0, 61)}...` : text
}

/**
 * Checks a session id against the allowlist before any file-system call (RELIABILITY S2):
 * {@link SESSION_ID_PATTERN} (letters, digits, `_`, `-`; 1-128 characters; not starting
 * with `-`), and not a Windows device name (`CON`, `nul`, `COM1`...).
 *
 * Because the allowlist has no `.`, `/`, `\`, NUL or non-ASCII character, an accepted id
 * is always exactly one path component inside the store root.
 *
 * @param id - The id to check.
 * @returns The same id, typed as a string.
 * @throws {@link JsonlStoreError} `INVALID_SESSION_ID` with `details.id` (escaped, at most 64 characters).
 */
export function assertSessionId(id: unknown): string {
  if (typeof id !== 'string' || !SESSION_ID_PATTERN.test(id) || DEVICE_NAME.test(id)) {
    const shown = describeSessionId(id)
    throw new JsonlStoreError({
      code: JsonlErrorCode.INVALID_SESSION_ID,
      message: `Session id ${shown} is not allowed: expected 1-128 characters from [A-Za-z0-9_-], not starting with "-" and not a device name.`,
      file: '',
      details: { id: shown },
    })
  }
  return id
}
