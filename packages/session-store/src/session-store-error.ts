import { AgentLedgerError } from '@agent-ledger/session-events'

/**
 * Why a session operation failed. Branch on these, never on `message`.
 *
 * Codes marked **backend** are the ones a {@link SessionBackend} throws (always as a
 * {@link SessionStoreError}); the core adds the others. The table is stable: codes are
 * added, never renamed or reused.
 */
export const SessionStoreErrorCode = {
  // --- backend codes (a backend throws exactly these) ---
  /** **backend** `create` (or a fork/salvage target) found a session with that id already. */
  SESSION_EXISTS: 'SESSION_EXISTS',
  /** **backend** No session with that id. */
  SESSION_NOT_FOUND: 'SESSION_NOT_FOUND',
  /**
   * **backend** `acquire`: another owner holds a live lease. `details.holder` (owner) and
   * `details.expiresAt` (ISO, when known). The BACKENDS.md sketch calls this `LEASE_HELD`.
   */
  SESSION_LOCKED: 'SESSION_LOCKED',
  /**
   * **backend** The lease's epoch is no longer the session's: another writer took over.
   * Nothing of the refused batch was written. The writer must stop; reopen to continue.
   */
  FENCED: 'FENCED',
  /**
   * **backend** `append`: the session's next seq is not the batch's `expectedSeq` (same epoch):
   * `details.expected`, `details.found`. Nothing was written.
   */
  CONFLICT: 'CONFLICT',
  /**
   * **backend** `append`: the backend cannot tell whether the batch landed (connection lost
   * around COMMIT, a timeout). Resolve with `head(id).lastBatchId === batchId`.
   */
  UNKNOWN_OUTCOME: 'UNKNOWN_OUTCOME',
  /** **backend** No space (ENOSPC, EDQUOT, EFBIG, a full tablespace); nothing was written; retryable. */
  DISK_FULL: 'DISK_FULL',
  /**
   * **backend** (and core) A stored line is damaged: not a whole line, not valid UTF-8, a
   * failed checksum, not JSON, not an object. Carries `location` and `lastGoodSeq`.
   */
  CORRUPT_LINE: 'CORRUPT_LINE',
  /** **backend** (and core) A stored line is longer than the reader's limit. */
  LINE_TOO_LARGE: 'LINE_TOO_LARGE',
  /** **backend** (and core) An `AbortSignal` fired; nothing was published. `cause` is the signal's reason. */
  ABORTED: 'ABORTED',
  /** **backend** The storage failed for another reason (I/O error, connection refused); `details.cause`. */
  BACKEND_FAILED: 'BACKEND_FAILED',
  /** **backend** A call on a backend after its `close()`. */
  BACKEND_CLOSED: 'BACKEND_CLOSED',
  /** **backend** (and core) The backend lacks an optional capability the call needs (`details.capability`). */
  UNSUPPORTED: 'UNSUPPORTED',
  /** **backend** (and core) An argument is out of range (a bad `fromSeq`, `limit`, cursor...): `details.option`. */
  INVALID_OPTION: 'INVALID_OPTION',

  // --- core codes ---
  /** The session id does not match `SESSION_ID_PATTERN`; refused before the backend is called. */
  INVALID_SESSION_ID: 'INVALID_SESSION_ID',
  /** The header is not a valid session header (schema, format name, integrity), or its line is damaged. */
  INVALID_HEADER: 'INVALID_HEADER',
  /** The stored header names another session id than the one asked for. */
  HEADER_ID_MISMATCH: 'HEADER_ID_MISMATCH',
  /** The header was written by a newer format version than this library reads; nothing was touched. */
  VERSION_TOO_NEW: 'VERSION_TOO_NEW',
  /**
   * A create request with a seed that is not a valid seed: a `seeded` header whose seed does
   * not end with `session/end-seed`, seed events whose seqs are not dense from 0, an
   * `inheritedEventCount` that disagrees with the marker.
   */
  INVALID_SEED: 'INVALID_SEED',
  /** A `seq` skips one or more numbers (`details.expected`, `details.found`). */
  SEQ_GAP: 'SEQ_GAP',
  /** The same `seq` appears twice. */
  SEQ_DUPLICATE: 'SEQ_DUPLICATE',
  /** A stored line's own `seq` differs from the position the backend gave it. */
  SEQ_CONFLICT: 'SEQ_CONFLICT',
  /** An event (appended, or stored) is not valid: envelope, schema, or a surface rule. */
  INVALID_EVENT: 'INVALID_EVENT',
  /** An event type is neither known to the registry nor marked `ignorable`. */
  UNKNOWN_EVENT_TYPE: 'UNKNOWN_EVENT_TYPE',
  /** An event nests deeper than the JSON limits allow. */
  TOO_DEEP: 'TOO_DEEP',
  /** An event serializes to more than `maxEventBytes` (or more than the JSON limits allow). */
  EVENT_TOO_LARGE: 'EVENT_TOO_LARGE',
  /** An appended event cannot be written as JSON (cycle, BigInt, function, non-finite number). */
  UNSERIALIZABLE_EVENT: 'UNSERIALIZABLE_EVENT',
  /** The redaction hook threw or returned a non-string; nothing was buffered (fail closed). */
  REDACTION_FAILED: 'REDACTION_FAILED',
  /** The writer's buffer already holds `maxBufferedBytes`; flush first. */
  BUFFER_FULL: 'BUFFER_FULL',
  /** The writer was closed; open the session again to write. */
  WRITER_CLOSED: 'WRITER_CLOSED',
  /**
   * The writer is poisoned: an append may or may not have landed and could not be resolved,
   * or the backend failed in a way no retry can fix. Reopen the session (`cause` is the first failure).
   */
  WRITER_FAILED: 'WRITER_FAILED',
  /** A fork was refused: the boundary is out of range, or inside an open turn with `openTurn: 'refuse'`. */
  FORK_REFUSED: 'FORK_REFUSED',
  /** A call on a store after its `close()`. */
  STORE_CLOSED: 'STORE_CLOSED',
  /**
   * An encrypted session's data key cannot be had: erased from the key store, its wrapping
   * key not in the key provider, no `encryption` option, or the provider failed.
   * `details.keyId`, `details.dataKeyId`, `details.reason`. Nothing was decrypted.
   */
  KEY_UNAVAILABLE: 'KEY_UNAVAILABLE',
} as const
export type SessionStoreErrorCode = (typeof SessionStoreErrorCode)[keyof typeof SessionStoreErrorCode]

/**
 * The codes backends add to the port's: a backend's own typed error keeps its code on the
 * way through the port (a JSONL log behind a symbolic link is `SYMLINK_REFUSED` from
 * `createSessionStore` too, never `BACKEND_FAILED`). A backend package declares its codes by
 * augmenting this interface from the package root:
 *
 * ```ts
 * declare module '@agent-ledger/session-store' {
 *   interface BackendErrorCodeMap extends Record<JsonlErrorCode, true> {}
 * }
 * ```
 *
 * The core acts on the port codes above only; a backend code is a failure of the call,
 * rethrown with its code, `details` and `cause` unchanged. A backend code that means damage
 * of a stored line (a `.zstd` frame that will not decode) is listed in
 * {@link SessionBackend.damageCodes} so a scan records it like `CORRUPT_LINE`.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- a declaration-merging hook
export interface BackendErrorCodeMap {}

/** A code a backend added through {@link BackendErrorCodeMap}. */
export type BackendErrorCode = Extract<keyof BackendErrorCodeMap, string>

/** Every code a {@link SessionStoreError} may carry: the table above and the backends' own. */
// eslint-disable-next-line @typescript-eslint/no-redundant-type-constituents -- BackendErrorCode is `never` until a backend augments the map
export type AnySessionStoreErrorCode = SessionStoreErrorCode | BackendErrorCode

/**
 * Where a stored line lives, as the backend knows it: a file backend gives the file, the
 * 1-based line number and the byte offset of the line's first byte; a database backend
 * may give only a table name or nothing.
 */
export interface LineLocation {
  /** The file (relative to the store root) or another container name (`ledger_events`). */
  readonly file?: string | undefined
  /** 1-based line number within `file` (the header is line 1). */
  readonly line?: number | undefined
  /** Byte offset of the line's first byte within `file`. */
  readonly offset?: number | undefined
}

const brand = Symbol.for('@agent-ledger/session-store/SessionStoreError')

/** Everything a {@link SessionStoreError} carries besides its code and message. */
export interface SessionStoreErrorOptions {
  /** A port or core code, or a backend's own code ({@link BackendErrorCode}) kept unchanged. */
  readonly code: AnySessionStoreErrorCode
  readonly message: string
  /** The session concerned, when there is one. */
  readonly sessionId?: string | undefined
  /** The offending event's `seq`, when known. */
  readonly seq?: number | undefined
  /** The last `seq` that passed every check before the error, when known. */
  readonly lastGoodSeq?: number | undefined
  /** Where the offending line is stored, when the backend knows. */
  readonly location?: LineLocation | undefined
  /** Row-specific context (expected, found, option, holder, capability, cause code...). */
  readonly details?: Readonly<Record<string, unknown>> | undefined
  readonly cause?: unknown
}

/**
 * The one error type of the session core and of every backend. Carries the session, seq
 * and location so the message is never the only clue. Its `code` is one of
 * {@link SessionStoreErrorCode} or a backend's own ({@link BackendErrorCode}).
 */
export class SessionStoreError extends AgentLedgerError<AnySessionStoreErrorCode> {
  override readonly name = 'SessionStoreError'
  readonly sessionId: string | undefined
  readonly seq: number | undefined
  readonly lastGoodSeq: number | undefined
  readonly location: LineLocation | undefined
  readonly [brand] = true

  /** @param options - Code, message and context. */
  constructor(options: SessionStoreErrorOptions) {
    super({ code: options.code, message: options.message, details: options.details, cause: options.cause })
    this.sessionId = options.sessionId
    this.seq = options.seq
    this.lastGoodSeq = options.lastGoodSeq
    this.location = options.location
  }

  /**
   * True for a `SessionStoreError` from any copy of this package, optionally with one of `codes`.
   *
   * @param value - Anything caught.
   * @param codes - When given, the error's code must be one of them.
   * @returns Whether `value` is such an error.
   */
  static override is(
    value: unknown,
    ...codes: readonly AnySessionStoreErrorCode[]
  ): value is SessionStoreError {
    if (typeof value !== 'object' || value === null || !(brand in value)) return false
    return codes.length === 0 || (codes as readonly string[]).includes((value as SessionStoreError).code)
  }
}
