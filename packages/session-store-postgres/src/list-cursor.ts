import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'

/** The keyset of a listing page: the last entry's `updated_at` (exact microseconds) and id. */
export interface ListCursor {
  /** Microseconds since 1970, as decimal text (exact; a JS number would round). */
  readonly updatedUs: string
  readonly id: string
}

const PREFIX = 'pg1.'

/** Encodes a cursor as opaque URL-safe text. */
export function encodeListCursor(cursor: ListCursor): string {
  return PREFIX + Buffer.from(JSON.stringify([cursor.updatedUs, cursor.id]), 'utf8').toString('base64url')
}

/**
 * Decodes a cursor made by {@link encodeListCursor}.
 *
 * @throws SessionStoreError `INVALID_OPTION` for anything else.
 */
export function decodeListCursor(text: string): ListCursor {
  const invalid = (): SessionStoreError =>
    new SessionStoreError({
      code: SessionStoreErrorCode.INVALID_OPTION,
      message: `list sessions: cursor ${JSON.stringify(text.slice(0, 80))} was not made by the PostgreSQL backend (expected "${PREFIX}..." from a previous page)`,
      details: { option: 'cursor' },
    })
  if (!text.startsWith(PREFIX)) throw invalid()
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(text.slice(PREFIX.length), 'base64url').toString('utf8'))
  } catch {
    throw invalid()
  }
  if (
    !Array.isArray(value) ||
    value.length !== 2 ||
    typeof value[0] !== 'string' ||
    !/^-?\d{1,19}$/.test(value[0]) ||
    typeof value[1] !== 'string'
  ) {
    throw invalid()
  }
  return { updatedUs: value[0], id: value[1] }
}
