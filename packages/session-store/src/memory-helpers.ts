/**
 * The memory backend's small helpers: promise wrapping, option checks and list cursors.
 */
import { SessionStoreError, SessionStoreErrorCode } from './session-store-error.ts'

/** Runs `run`, turning a synchronous throw into a rejection (the port's methods never throw synchronously). */
export function attempt<T>(run: () => T): Promise<T> {
  try {
    return Promise.resolve(run())
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)))
  }
}

/** Milliseconds since the epoch as an ISO-8601 string. */
export function isoOf(ms: number): string {
  return new Date(ms).toISOString()
}

/** A read option's seq: a non-negative safe integer, else `INVALID_OPTION`. */
export function checkedSeq(value: unknown, option: string): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value
  throw new SessionStoreError({
    code: SessionStoreErrorCode.INVALID_OPTION,
    message: `Read option ${option} must be a non-negative integer, found ${JSON.stringify(value) ?? String(value)}.`,
    details: { option },
  })
}

/** Where a listing page ends: the last entry's update time and id. */
export interface Cursor {
  readonly u: number
  readonly i: string
}

/** A list cursor this backend made (else `INVALID_OPTION`). */
export function parseCursor(cursor: string): Cursor {
  try {
    const value = JSON.parse(cursor) as unknown
    if (
      typeof value === 'object' &&
      value !== null &&
      typeof (value as Cursor).u === 'number' &&
      typeof (value as Cursor).i === 'string'
    ) {
      return value as Cursor
    }
  } catch {
    // fall through
  }
  throw new SessionStoreError({
    code: SessionStoreErrorCode.INVALID_OPTION,
    message: `List cursor ${JSON.stringify(cursor)} was not made by this memory backend: expected the cursor of a previous page.`,
    details: { option: 'cursor' },
  })
}

/** Order of a listing: most recently updated first, then by id. */
export function before(a: { updatedAt: number; id: string }, b: { u: number; i: string }): boolean {
  return a.updatedAt > b.u || (a.updatedAt === b.u && a.id < b.i)
}

/** The UTF-8 byte length of `text` (a lone surrogate counts as the 3 bytes of U+FFFD). */
export function utf8Length(text: string): number {
  let bytes = 0
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index)
    if (code < 0x80) bytes += 1
    else if (code < 0x800) bytes += 2
    else if (code >= 0xd800 && code <= 0xdbff && index + 1 < text.length) {
      const next = text.charCodeAt(index + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4
        index += 1
      } else bytes += 3
    } else bytes += 3
  }
  return bytes
}
