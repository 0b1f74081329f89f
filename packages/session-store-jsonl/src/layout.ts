import { SESSION_FORMAT_VERSION } from '@agent-ledger/session-events'

/** File name of the current-format log inside a session directory: `session.v4.jsonl`. */
export const LOG_FILE_NAME = `session.v${SESSION_FORMAT_VERSION}.jsonl`

/** Canonical log file names (every generation and encoding); anything else is never taken for a log. */
export const LOG_FILE_PATTERN = /^session(\.v([1-9][0-9]*))?\.jsonl(\.zstd)?$/

/**
 * File name of the session core's checkpoint (`CheckpointRecord` in a JSON envelope line,
 * FORMAT.md section 15): `core.checkpoint`.
 */
export const CORE_CHECKPOINT_FILE_NAME = 'core.checkpoint'

/**
 * File name of the search index beside a plain v4 log (`search.index`: trigram signatures of
 * blocks of its lines, derived from the log, rebuilt when stale; see `backend/search-index.ts`).
 */
export const SEARCH_INDEX_FILE_NAME = 'search.index'

/** Prefix of the store's temp files (`.tmp-<kind>-<16 hex>`); never a log name. */
export const TEMP_PREFIX = '.tmp-'

/** Temp files of the writer lock's own protocol (`.tmp-lock-*`, `.tmp-lockbreak-*`), left to the lock. */
export const LOCK_TEMP_PREFIX = '.tmp-lock'

/**
 * Name of the quarantine file for torn bytes found at `offset` of `logName`.
 *
 * @param logName - The log file name.
 * @param offset - Byte offset where the torn bytes started.
 * @param attempt - 0 for the plain name, n > 0 for the `-n` variant used when the name exists.
 * @returns `<log>.torn-<offset>` or `<log>.torn-<offset>-<n>`.
 */
export function quarantineFileName(logName: string, offset: number, attempt: number): string {
  return attempt === 0 ? `${logName}.torn-${offset}` : `${logName}.torn-${offset}-${attempt}`
}

/**
 * True when `name` is a quarantine file of `logName`.
 *
 * @param logName - The log file name.
 * @param name - A directory entry.
 */
export function isQuarantineFileName(logName: string, name: string): boolean {
  return name.startsWith(`${logName}.torn-`) && /^[0-9]+(-[0-9]+)?$/.test(name.slice(logName.length + 6))
}
