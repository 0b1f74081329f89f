/**
 * The JSONL backend's errors: every failure leaves the backend as a `SessionStoreError`
 * carrying the JSONL store's own code unchanged (`SYMLINK_REFUSED`, `ACCESS_DENIED`,
 * `CORRUPT_FRAME`...; declared to the port through `BackendErrorCodeMap`), with the store's
 * `JsonlStoreError` as `cause`. Only two JSONL codes are renamed, because the port has a word
 * for the same failure that the core acts on: `LOCK_LOST` is `FENCED`, and a publish that
 * found the target already there (`MIGRATION_CONFLICT`, reason `exists`) is
 * `SESSION_EXISTS`; `details.jsonlCode` keeps the JSONL code either way.
 */
import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type { AbortSignalLike, LineLocation } from '@agent-ledger/session-store'

import { errnoOf, hasStoreCode, toStoreError } from '../fs-errors.ts'
import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import { assertSessionId } from '../session-id.ts'

declare module '@agent-ledger/session-store' {
  /** The JSONL store's codes reach the callers of `createSessionStore` unchanged. */
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- a declaration-merging hook: the members come from the extends
  interface BackendErrorCodeMap extends Record<JsonlErrorCode, true> {}
}

/** JSONL codes of damage the port has no word for: a scan records them like `CORRUPT_LINE`. */
export const JSONL_DAMAGE_CODES: readonly string[] = [
  JsonlErrorCode.CORRUPT_FRAME,
  JsonlErrorCode.DECOMPRESSION_LIMIT,
  JsonlErrorCode.WINDOW_TOO_LARGE,
]

/** A publish of any operation, or a write: a full disk among its causes is `DISK_FULL`. */
const PUBLISH_OR_WRITE_FAILURES: ReadonlySet<string> = new Set([
  JsonlErrorCode.MIGRATION_FAILED,
  JsonlErrorCode.CREATE_FAILED,
  JsonlErrorCode.FORK_FAILED,
  JsonlErrorCode.SALVAGE_FAILED,
  JsonlErrorCode.COMPRESS_FAILED,
  JsonlErrorCode.WRITE_FAILED,
])

/**
 * Where a JSONL error points, as the port's location.
 *
 * @param error - A store error.
 * @returns Its file, line and offset, or undefined when it has none.
 */
function locationOf(error: JsonlStoreError): LineLocation | undefined {
  if (error.file === '' && error.line === undefined && error.offset === undefined) return undefined
  return {
    file: error.file,
    ...(error.line === undefined ? {} : { line: error.line }),
    ...(error.offset === undefined ? {} : { offset: error.offset }),
  }
}

/** The port's word for a JSONL error, when the port has one under another name. */
function renamed(error: JsonlStoreError): SessionStoreErrorCode | undefined {
  if (error.code === JsonlErrorCode.LOCK_LOST) return SessionStoreErrorCode.FENCED
  if (error.code === JsonlErrorCode.MIGRATION_CONFLICT && error.details['reason'] === 'exists')
    return SessionStoreErrorCode.SESSION_EXISTS
  const inner = error.details['cause']
  if (
    PUBLISH_OR_WRITE_FAILURES.has(error.code) &&
    typeof inner === 'string' &&
    /^E(NOSPC|DQUOT|FBIG)$/.test(inner)
  )
    return SessionStoreErrorCode.DISK_FULL
  return undefined
}

/**
 * Any failure inside the backend as a port error. A `SessionStoreError` passes through; a
 * `JsonlStoreError` keeps its code (two renamed, see the module comment), its details,
 * seq, `lastGoodSeq` and location; a file-system error is first typed as the JSONL store
 * types it (ELOOP `SYMLINK_REFUSED`, EACCES `ACCESS_DENIED`, ENOSPC `DISK_FULL`...);
 * anything else is `BACKEND_FAILED` with `details.cause` (the errno, or `unknown`).
 *
 * @param error - What was thrown.
 * @param context - The session, what the backend was doing (a verb phrase: `append to session x`)
 *   and the file it was working on (relative to the root), named by a file-system error that names none.
 * @returns The port error.
 */
export function toPortError(
  error: unknown,
  context: { readonly sessionId?: string | undefined; readonly action: string; readonly file?: string },
): SessionStoreError {
  if (SessionStoreError.is(error)) return error
  const errno = errnoOf(error)
  if (!JsonlStoreError.is(error) && (errno === undefined || !hasStoreCode(errno))) {
    const cause = errno ?? 'unknown'
    return new SessionStoreError({
      code: SessionStoreErrorCode.BACKEND_FAILED,
      sessionId: context.sessionId,
      message: `Cannot ${context.action}: ${error instanceof Error ? error.message : String(error)} (${cause}).`,
      details: { cause },
      cause: error,
    })
  }
  const typed = JsonlStoreError.is(error)
    ? error
    : toStoreError(error, {
        op: context.action,
        file: context.file ?? pathOf(error),
        fallback: JsonlErrorCode.READ_FAILED,
      })
  return new SessionStoreError({
    code: renamed(typed) ?? typed.code,
    sessionId: context.sessionId,
    seq: typed.seq,
    lastGoodSeq: typed.lastGoodSeq,
    location: locationOf(typed),
    message: `Cannot ${context.action}: ${typed.message}`,
    details: { ...typed.details, jsonlCode: typed.code },
    cause: typed,
  })
}

/** The path a Node file-system error names, or `(unknown path)`. */
function pathOf(error: unknown): string {
  const path = (error as { path?: unknown } | null)?.path
  return typeof path === 'string' ? path : '(unknown path)'
}

/**
 * A session id checked against the one id rule before any file-system call (S2).
 *
 * @param id - The caller's id.
 * @returns The same id.
 * @throws {@link SessionStoreError} `INVALID_SESSION_ID`, the code of every backend and of the core.
 */
export function checkedSessionId(id: string): string {
  try {
    return assertSessionId(id)
  } catch (error) {
    throw toPortError(error, { sessionId: undefined, action: 'use that session id' })
  }
}

/**
 * Throws `ABORTED` when `signal` fired.
 *
 * @param signal - The caller's signal, if any.
 * @param what - What stops, for the message (`Creating session x`).
 * @param sessionId - The session concerned.
 */
export function throwIfAborted(signal: AbortSignalLike | undefined, what: string, sessionId?: string): void {
  if (signal?.aborted !== true) return
  throw new SessionStoreError({
    code: SessionStoreErrorCode.ABORTED,
    sessionId,
    message: `${what} was aborted; nothing was changed.`,
    cause: signal.reason,
  })
}

/**
 * A port error built here (not mapped from a JSONL error).
 *
 * @param code - The port code, or the JSONL store's own code for a failure the port has no word for.
 * @param parts - Session, message, details.
 * @returns The error.
 */
export function portError(
  code: SessionStoreErrorCode | JsonlErrorCode,
  parts: {
    readonly sessionId?: string | undefined
    readonly message: string
    readonly details?: Readonly<Record<string, unknown>>
    readonly location?: LineLocation | undefined
    readonly cause?: unknown
  },
): SessionStoreError {
  return new SessionStoreError({ code, ...parts })
}

/**
 * A read option that must be a non-negative integer seq.
 *
 * @param value - The option's value.
 * @param option - Its name, for the message.
 * @returns The seq.
 * @throws {@link SessionStoreError} `INVALID_OPTION`.
 */
export function seqOption(value: unknown, option: string): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value
  throw portError(SessionStoreErrorCode.INVALID_OPTION, {
    message: `Read option ${option} must be a non-negative integer, found ${JSON.stringify(value) ?? String(value)}.`,
    details: { option },
  })
}
