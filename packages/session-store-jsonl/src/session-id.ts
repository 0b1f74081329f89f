import { describeSessionId, isSessionId, SESSION_ID_RULE } from '@agent-ledger/session-events'

import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'

/**
 * Checks a session id before any file-system call (RELIABILITY S2) against the one rule of
 * every backend, `SESSION_ID_PATTERN` of `@agent-ledger/session-events` (letters, digits,
 * `_`, `-`; 1-128 characters; not starting with `-`; not a Windows device name such as
 * `CON`, `nul`, `COM1`).
 *
 * Because the allowlist has no `.`, `/`, `\`, NUL or non-ASCII character, an accepted id
 * is always exactly one path component inside the store root.
 *
 * @param id - The id to check.
 * @returns The same id, typed as a string.
 * @throws {@link JsonlStoreError} `INVALID_SESSION_ID` with `details.id` (escaped, at most 64 characters).
 */
export function assertSessionId(id: unknown): string {
  if (isSessionId(id)) return id
  const shown = describeSessionId(id)
  throw new JsonlStoreError({
    code: JsonlErrorCode.INVALID_SESSION_ID,
    message: `Session id ${shown} is not allowed: expected ${SESSION_ID_RULE}.`,
    file: '',
    details: { id: shown },
  })
}
