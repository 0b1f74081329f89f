/**
 * The JSONL backend's errors: every failure leaves the backend as a `SessionStoreError` with
 * one of the port's backend codes; the store's own `JsonlStoreError` stays the `cause`.
 */
import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type { AbortSignalLike, LineLocation } from '@agent-ledger/session-store'

import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'

/** JSONL codes that keep their meaning on the port; every other code is `BACKEND_FAILED`. */
const SAME: Readonly<Partial<Record<string, SessionStoreErrorCode>>> = {
  [JsonlErrorCode.SESSION_EXISTS]: SessionStoreErrorCode.SESSION_EXISTS,
  [JsonlErrorCode.SESSION_NOT_FOUND]: SessionStoreErrorCode.SESSION_NOT_FOUND,
  [JsonlErrorCode.SESSION_LOCKED]: SessionStoreErrorCode.SESSION_LOCKED,
  [JsonlErrorCode.LOCK_LOST]: SessionStoreErrorCode.FENCED,
  [JsonlErrorCode.DISK_FULL]: SessionStoreErrorCode.DISK_FULL,
  [JsonlErrorCode.CORRUPT_LINE]: SessionStoreErrorCode.CORRUPT_LINE,
  [JsonlErrorCode.CORRUPT_FRAME]: SessionStoreErrorCode.CORRUPT_LINE,
  [JsonlErrorCode.TOO_DEEP]: SessionStoreErrorCode.CORRUPT_LINE,
  [JsonlErrorCode.DECOMPRESSION_LIMIT]: SessionStoreErrorCode.CORRUPT_LINE,
  [JsonlErrorCode.WINDOW_TOO_LARGE]: SessionStoreErrorCode.CORRUPT_LINE,
  [JsonlErrorCode.LINE_TOO_LARGE]: SessionStoreErrorCode.LINE_TOO_LARGE,
  [JsonlErrorCode.INVALID_OPTION]: SessionStoreErrorCode.INVALID_OPTION,
  [JsonlErrorCode.ABORTED]: SessionStoreErrorCode.ABORTED,
}

const DISK_FULL_CAUSES = new Set(['ENOSPC', 'EDQUOT', 'EFBIG'])

/** A failed publish (of any operation) or write: its `details.cause` may be a full disk. */
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

/**
 * Any failure inside the backend as a port error. A `SessionStoreError` passes through; a
 * `JsonlStoreError` keeps its meaning where the port has one (`LOCK_LOST` is `FENCED`, a
 * publish that failed for lack of space is `DISK_FULL`, one that found the target is
 * `SESSION_EXISTS`) and is `BACKEND_FAILED` otherwise, with `details.jsonlCode`.
 *
 * @param error - What was thrown.
 * @param context - The session and what the backend was doing (a verb phrase: `append to session x`).
 * @returns The port error.
 */
export function toPortError(
  error: unknown,
  context: { readonly sessionId?: string | undefined; readonly action: string },
): SessionStoreError {
  if (SessionStoreError.is(error)) return error
  if (!JsonlStoreError.is(error)) {
    const cause = errnoCause(error)
    return new SessionStoreError({
      code: DISK_FULL_CAUSES.has(cause)
        ? SessionStoreErrorCode.DISK_FULL
        : SessionStoreErrorCode.BACKEND_FAILED,
      sessionId: context.sessionId,
      message: `Cannot ${context.action}: ${error instanceof Error ? error.message : String(error)} (${cause}).`,
      details: { cause },
      cause: error,
    })
  }
  const inner = error.details['cause']
  const published = PUBLISH_OR_WRITE_FAILURES.has(error.code)
  let code = SAME[error.code] ?? SessionStoreErrorCode.BACKEND_FAILED
  if (published && typeof inner === 'string' && DISK_FULL_CAUSES.has(inner))
    code = SessionStoreErrorCode.DISK_FULL
  if (error.code === JsonlErrorCode.MIGRATION_CONFLICT && error.details['reason'] === 'exists') {
    code = SessionStoreErrorCode.SESSION_EXISTS
  }
  return new SessionStoreError({
    code,
    sessionId: context.sessionId,
    seq: error.seq,
    lastGoodSeq: error.lastGoodSeq,
    location: locationOf(error),
    message: `Cannot ${context.action}: ${error.message}`,
    details: { ...error.details, jsonlCode: error.code },
    cause: error,
  })
}

function errnoCause(error: unknown): string {
  if (typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string') {
    return error.code
  }
  return 'unknown'
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
 * @param code - The port code.
 * @param parts - Session, message, details.
 * @returns The error.
 */
export function portError(
  code: SessionStoreErrorCode,
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
