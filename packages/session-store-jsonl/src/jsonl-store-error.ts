import { AgentLedgerError } from '@agent-ledger/session-events'

/** Why a session could not be created, opened, read or written. Branch on these, never on `message`. */
export const JsonlErrorCode = {
  /** The session id does not match the allowlist; rejected before any file-system call. */
  INVALID_SESSION_ID: 'INVALID_SESSION_ID',
  /** `create` found a session with that id already published. */
  SESSION_EXISTS: 'SESSION_EXISTS',
  /** No session file exists for that id. */
  SESSION_NOT_FOUND: 'SESSION_NOT_FOUND',
  /** Another writer (another process, or this process through another handle) holds the writer lock. */
  SESSION_LOCKED: 'SESSION_LOCKED',
  /** The writer lock this handle held was broken or replaced; the handle must stop writing. */
  LOCK_LOST: 'LOCK_LOST',
  /** A path the store would open is a symbolic link; it is never followed. */
  SYMLINK_REFUSED: 'SYMLINK_REFUSED',
  /** A line fails one of the per-line checks (checksum, JSON, object, UTF-8, depth, size). */
  CORRUPT_LINE: 'CORRUPT_LINE',
  /** A `seq` skips one or more numbers. */
  SEQ_GAP: 'SEQ_GAP',
  /** The same `seq` appears twice with identical bytes. */
  SEQ_DUPLICATE: 'SEQ_DUPLICATE',
  /** Two different events carry the same `seq`, as two unlocked writers would make. */
  SEQ_CONFLICT: 'SEQ_CONFLICT',
  /** A line is a checksummed JSON object but not a valid event. */
  INVALID_EVENT: 'INVALID_EVENT',
  /** An event type is neither known nor marked `ignorable`. */
  UNKNOWN_EVENT_TYPE: 'UNKNOWN_EVENT_TYPE',
  /** The header was written by a newer format version than this library reads. */
  VERSION_TOO_NEW: 'VERSION_TOO_NEW',
  /** A generation's file name says one format version and its header another (`details.nameVersion`, `details.headerVersion`). */
  GENERATION_VERSION_MISMATCH: 'GENERATION_VERSION_MISMATCH',
  /**
   * The generation the current one was migrated from changed after the migration (events
   * appended to it, or its bytes rewritten or truncated): `details.version`, `details.lastSeq`,
   * `details.migratedFromLastSeq`, `details.reason` ('appended' | 'rewritten' | 'truncated').
   * Never merged or ignored; writes are refused (RELIABILITY I7).
   */
  GENERATION_FORK: 'GENERATION_FORK',
  /** No migration leads from the source generation to v4: a newer, unreadable or zstd source (`details.from`, `details.to`, `details.reason`). */
  NO_MIGRATION_PATH: 'NO_MIGRATION_PATH',
  /**
   * Publishing a migrated generation failed at `details.step` with `details.cause` (an errno
   * code or an error code; a full disk is `DISK_FULL` instead). The temp file was removed and
   * nothing was published, unless `details.published` is true. `details.poisoned` is true
   * after a failed fsync (a name that appeared was withdrawn): stop writing and reopen.
   * The other operations that publish by link have codes of their own, with the same details:
   * `CREATE_FAILED`, `FORK_FAILED`, `SALVAGE_FAILED`, `COMPRESS_FAILED`.
   */
  MIGRATION_FAILED: 'MIGRATION_FAILED',
  /** Publishing a new session's log (`create`) failed at `details.step`; details as `MIGRATION_FAILED`. */
  CREATE_FAILED: 'CREATE_FAILED',
  /** Publishing a fork's log failed at `details.step`; details as `MIGRATION_FAILED`. */
  FORK_FAILED: 'FORK_FAILED',
  /** Publishing a salvaged session's log failed at `details.step`; the source untouched; details as `MIGRATION_FAILED`. */
  SALVAGE_FAILED: 'SALVAGE_FAILED',
  /** Publishing (or verifying) a compressed copy failed at `details.step`; the plain log kept; details as `MIGRATION_FAILED`. */
  COMPRESS_FAILED: 'COMPRESS_FAILED',
  /**
   * The target file already exists and does not begin with exactly the bytes this publish
   * would have written (`details.reason` 'different-bytes' with `details.firstDifferenceOffset`,
   * 'target-not-migrated-from-source', 'not-a-file', or 'exists' when any existing file is refused).
   */
  MIGRATION_CONFLICT: 'MIGRATION_CONFLICT',
  /**
   * A write failed because the disk or the file size limit is full (ENOSPC, EDQUOT, EFBIG),
   * wherever it happened: create, the writer lock, a quarantine copy, a flush, a publish
   * (migrate, compress, salvage: then with the publish's `details.step`, `published`,
   * `poisoned`). `file` names the file being written, `details.cause` the errno. Retryable
   * once space is freed; a writer's `close()` can be retried too.
   */
  DISK_FULL: 'DISK_FULL',
  /** A write failed for another reason; the file was rolled back to its durable size. */
  WRITE_FAILED: 'WRITE_FAILED',
  /** fsync/fdatasync failed; the writer is poisoned. */
  FSYNC_FAILED: 'FSYNC_FAILED',
  /** The writer was poisoned by an earlier failure; reopen the session to continue. */
  WRITER_FAILED: 'WRITER_FAILED',
  /** The log file was unlinked, renamed or hard-linked under an open writer. */
  FILE_REPLACED: 'FILE_REPLACED',
  /** Someone else appended to the log under an open writer (a bypassed or broken lock); the batch is not acknowledged. */
  CONCURRENT_WRITE: 'CONCURRENT_WRITE',
  /** The permission to open, create or list a path was refused (EACCES, EPERM, EROFS). */
  ACCESS_DENIED: 'ACCESS_DENIED',
  /** A line is longer than `maxLineBytes`; found while streaming, never buffered whole. */
  LINE_TOO_LARGE: 'LINE_TOO_LARGE',
  /** The header line is not a valid session header, or its version is older than this library writes. */
  INVALID_HEADER: 'INVALID_HEADER',
  /** The header names another session than the directory it is in (`details.expected`, `found`): a copied or renamed log. */
  HEADER_ID_MISMATCH: 'HEADER_ID_MISMATCH',
  /** The store root is group- or world-writable, owned by another user, or not a directory. */
  UNSAFE_ROOT: 'UNSAFE_ROOT',
  /** The log file has more than one hard link (and the other name is not our own temp twin). */
  HARDLINK_REFUSED: 'HARDLINK_REFUSED',
  /** An appended event, or a checksummed line of a file, nests deeper than `maxDepth`. */
  TOO_DEEP: 'TOO_DEEP',
  /** Reading the log failed with an I/O error (EIO...). */
  READ_FAILED: 'READ_FAILED',
  /**
   * A frame of a `.zstd` log is damaged (bad structure, a decoder failure, content not ending on a
   * line boundary, a line failing its checksum) and a valid frame follows it. `details.frameIndex`,
   * `details.compressedOffset`, `details.reason`; `lastGoodSeq`. Writes are refused.
   */
  CORRUPT_FRAME: 'CORRUPT_FRAME',
  /** A frame of a `.zstd` log decompresses (or declares, or can structurally produce) more than `maxFrameOutputBytes` (S4). */
  DECOMPRESSION_LIMIT: 'DECOMPRESSION_LIMIT',
  /** A frame of a `.zstd` log asks for a window larger than `maxWindowBytes`; refused before any allocation (S4). */
  WINDOW_TOO_LARGE: 'WINDOW_TOO_LARGE',
  /**
   * A session directory holds plain and `.zstd` logs that disagree: `session.v4.jsonl` and
   * `session.v4.jsonl.zstd` with different content (an interrupted compress never leaves that), or
   * generations of different versions in different encodings. `details.files` names both files.
   */
  MIXED_ENCODINGS: 'MIXED_ENCODINGS',
  /**
   * A write open (or compress) found a torn tail to quarantine while `limits.maxQuarantineFiles`
   * quarantine files of the log already exist. They are never deleted automatically:
   * `details.files` names them (relative to the root), `details.limit` the limit. Inspect and
   * remove them, then open again; nothing was changed.
   */
  QUARANTINE_FULL: 'QUARANTINE_FULL',
  /**
   * A path the store would open is not a regular file (a FIFO, a socket, a device, a
   * directory): refused without blocking, never read or written. `details.kind`, `details.which`.
   */
  NOT_REGULAR_FILE: 'NOT_REGULAR_FILE',
  /** A store option is out of range (a limit that is not a positive integer, `maxEventBytes` > `maxLineBytes`...). */
  INVALID_OPTION: 'INVALID_OPTION',
  /** The caller's `signal` aborted an operation (a streamed create between batches): nothing was published. */
  ABORTED: 'ABORTED',
} as const
export type JsonlErrorCode = (typeof JsonlErrorCode)[keyof typeof JsonlErrorCode]

const brand = Symbol.for('@agent-ledger/session-store-jsonl/JsonlStoreError')

/** Thrown by the JSONL store. Carries the file, line, byte offset and seq so the message is never the only clue. */
export class JsonlStoreError extends AgentLedgerError<JsonlErrorCode> {
  override readonly name = 'JsonlStoreError'
  /** The file concerned, relative to the store root when possible. */
  readonly file: string
  /** 1-based line number, when the error concerns one line. */
  readonly line: number | undefined
  /** Byte offset of the line start (or of the failing write), when known. */
  readonly offset: number | undefined
  /** The offending event's `seq`, when parseable. */
  readonly seq: number | undefined
  /** The last `seq` that passed every check before the error, when known. */
  readonly lastGoodSeq: number | undefined
  readonly [brand] = true

  constructor(options: {
    code: JsonlErrorCode
    message: string
    file: string
    line?: number | undefined
    offset?: number | undefined
    seq?: number | undefined
    lastGoodSeq?: number | undefined
    details?: Readonly<Record<string, unknown>> | undefined
    cause?: unknown
  }) {
    super({ code: options.code, message: options.message, details: options.details, cause: options.cause })
    this.file = options.file
    this.line = options.line
    this.offset = options.offset
    this.seq = options.seq
    this.lastGoodSeq = options.lastGoodSeq
  }

  /** True for a `JsonlStoreError` from any copy of this package. */
  static override is(value: unknown): value is JsonlStoreError {
    return typeof value === 'object' && value !== null && brand in value
  }
}
