import type {
  EventRegistry,
  LoggedEvent,
  SessionHeader,
  SessionHeaderInput,
} from '@agent-ledger/session-events'
import type { PendingToolCall } from '@agent-ledger/loop-repair'
import type { Projection, ProjectionStats } from '@agent-ledger/session-projection'

import type { FsOps } from '../fs-ops.ts'
import type { JsonlStoreError } from '../jsonl-store-error.ts'
import type { FlushPolicy, StoreLimits } from '../limits.ts'
import type { ScanStats, TornTail } from '../log-scanner.ts'
import type { RedactionPolicy } from '../redaction.ts'
import type { SessionWriter, StoreLogger } from '../session-writer.ts'
import type { LockOptions } from '../writer-lock.ts'
import type { CheckpointUse } from '../checkpoint-open.ts'
import type { CheckpointOptions } from '../checkpoint-options.ts'
import type { MigrationProgress } from '../migration/migrate-session.ts'
import type { MigrationReport } from '../store-generations.ts'
import type { CompressOptions, CompressResult } from '../compress-session.ts'
import type { ZstdLogStats } from '../zstd-log-reader.ts'
import type { LogEncoding } from '../zstd-log-writer.ts'
import type { FollowOptions } from '../follow-session.ts'
import type { SessionFiles, SessionHeaderRead } from '../session-files.ts'

/** Options of {@link createSessionStore}. */
export interface SessionStoreOptions {
  /** The store root: one directory per session inside it. Created (0700) on the first `create`. */
  readonly root: string
  /** The file-system seam; every file-system call goes through it. Default: the real file system. */
  readonly fs?: FsOps
  /** The writer's clock, an ISO-8601 string per call. Default `new Date().toISOString()`. */
  readonly clock?: () => string
  /** The known event types. Default: the core types only. */
  readonly registry?: EventRegistry
  /** Resource limits; see {@link StoreLimits} for the defaults. */
  readonly limits?: Partial<StoreLimits>
  /** The automatic flush policy; see {@link FlushPolicy} for the defaults. */
  readonly flush?: Partial<FlushPolicy>
  /** Writer-lock settings (`timeoutMs`, `staleMs`, `heartbeatMs`, `randomHex`). */
  readonly lock?: Partial<LockOptions>
  /** Receives warnings. Default: `process.emitWarning`. */
  readonly logger?: StoreLogger
  /**
   * Secret redaction applied to every string of appended (and seed) event data before it is
   * serialized; recorded in new headers. Default {@link DEFAULT_REDACTION_POLICY}; `null` disables it.
   */
  readonly redaction?: RedactionPolicy | null
  /**
   * Projection checkpoints (`projection.checkpoint.msgpack`): when writers write them and
   * whether opens use them; see {@link CheckpointOptions} for the defaults (on).
   */
  readonly checkpoint?: Partial<CheckpointOptions>
  /**
   * Encoding of the sessions `create`, `salvage` and `fork` make: `plain` (default,
   * `session.v4.jsonl`) or `zstd` (`session.v4.jsonl.zstd`: the header in its own frame, each
   * flush appends whole frames). Opens follow whichever file a session has.
   */
  readonly encoding?: LogEncoding
}

/** A summary of one session, from its header only. */
export interface SessionSummary {
  readonly id: string
  readonly header: SessionHeader
  /** The log file, relative to the root. */
  readonly file: string
  /** The log's size in bytes. */
  readonly bytes: number
  /** The log's mtime, ISO-8601. */
  readonly modifiedAt: string
  /**
   * Format version of the session's current generation: 4, or an older one read through
   * migration (0 for the seed chapter's `session.jsonl`); `header` is then the header its
   * migration would write, without `migratedFrom` (known only after a full read).
   */
  readonly version: number
}

/** Counters of a read: the scan's and the projection's. */
export interface SessionReadStats extends ScanStats {
  readonly projection: Readonly<ProjectionStats>
}

/** What a read-only open returns. Never the whole event array: memory stays bounded by the projection. */
export interface SessionReadResult {
  /** The header, or null when the file has none (RELIABILITY T4: an empty session with a warning). */
  readonly header: SessionHeader | null
  readonly headerMissing: boolean
  readonly events?: never
  /** The projection of the good prefix. */
  readonly projection: Projection
  /** Seq of the last good event (-1 when none). */
  readonly lastSeq: number
  /** Unacknowledged bytes at the end (a torn tail, or a live writer's line in progress), reported, never repaired. */
  readonly tornTail: TornTail | null
  /** Damage in the middle (only with `allowDamaged`): the projection holds the good prefix before it. */
  readonly error: JsonlStoreError | null
  /** Assistant tool calls with no result yet (what a write open would repair). */
  readonly pendingToolCalls: readonly PendingToolCall[]
  readonly stats: SessionReadStats
  /** The log, relative to the root. */
  readonly file: string
  /** Bytes read. */
  readonly bytes: number
  /**
   * The projection checkpoint the open started from, or null after a full replay. With one,
   * only the bytes after `checkpoint.offset` were read (`bytes` is still where reading ended)
   * and every other field equals a full replay's.
   */
  readonly checkpoint: CheckpointUse | null
  /** For a `.zstd` log: its frame counts (good frames, skippable frames ignored, plain bytes...); absent for a plain log. */
  readonly frames?: ZstdLogStats
}

/** The outcome of {@link SessionStore.verify}. */
export interface VerifyReport {
  readonly id: string
  readonly file: string
  /** `ok`: every byte is a good line; `torn-tail`: good lines then an unacknowledged tail; `damaged`: damage in the middle. */
  readonly status: 'ok' | 'torn-tail' | 'damaged'
  readonly headerMissing: boolean
  readonly bytes: number
  readonly events: number
  readonly lastSeq: number
  readonly tornTail: TornTail | null
  /** The damage, as a typed error (code, line, offset, seq, lastGoodSeq), or null. */
  readonly damage: JsonlStoreError | null
  /**
   * Format version of the file verified: 4, or 0 for a v0 `session.jsonl`, scanned with the
   * v0 reader (its seqs, `lastSeq` included, are then in its own numbering: the header event is seq 0).
   */
  readonly version: number
}

/** The outcome of {@link SessionStore.salvage}. */
export interface SalvageReport {
  /** The damaged session (left untouched). */
  readonly from: string
  /** The new session. */
  readonly to: string
  /** The new session's log, relative to the root. */
  readonly file: string
  /** Events copied byte for byte (seqs 0..lastGoodSeq). */
  readonly copiedEvents: number
  readonly lastGoodSeq: number
  /** Seq of the `session/salvage` event appended after the copy. */
  readonly salvageSeq: number
  /** Byte offset in the source where the dropped bytes start. */
  readonly droppedFromOffset: number
  /** Bytes of the source not carried over. */
  readonly droppedBytes: number
  /** Why bytes were dropped: the damage code, `torn-tail`, or `none`. */
  readonly reason: string
  /** The source's damage, if any. */
  readonly sourceError: JsonlStoreError | null
}

/** A directory of sessions. Create it with {@link createSessionStore}. */
export interface SessionStore {
  /** The root directory, as given. */
  readonly root: string
  /**
   * Publishes a new session (header plus optional seed events) and opens it for write.
   *
   * The file appears complete or not at all (publish by link, FORMAT.md section 14.4): written
   * to a temp file, fsynced, read back and verified, `link()`ed into place (never
   * overwriting), then the directory is fsynced; a failed directory fsync withdraws the name.
   *
   * @param request - The id, optional header fields, and seed events (seqs from 0) for forks and salvage.
   * @throws {@link JsonlStoreError} `INVALID_SESSION_ID`, `SESSION_EXISTS`, `SESSION_LOCKED`, `INVALID_HEADER`,
   *   `INVALID_EVENT`, `SYMLINK_REFUSED`, `ACCESS_DENIED`, `UNSAFE_ROOT`, `DISK_FULL`, `CREATE_FAILED`
   *   (a publish step failed: `details.step`, `poisoned`; nothing published)...
   */
  create(request: {
    readonly id: string
    readonly header?: Partial<SessionHeaderInput>
    /**
     * Seed events (seqs from 0): an array, or an async iterable of event batches (an
     * import, a copy), each batch checked, encoded and folded as it comes and written to the
     * temp file; the log is linked once, after the last batch (nothing published on an
     * error of the iterable, rethrown unchanged, on an abort or on a crash midway).
     */
    readonly seed?: readonly LoggedEvent[] | AsyncIterable<readonly LoggedEvent[]>
    /** `plain` or `zstd`; default the store's `encoding` option. */
    readonly encoding?: LogEncoding
    /** Checked between streamed seed batches: `ABORTED`, nothing published. */
    readonly signal?: { readonly aborted: boolean; readonly reason?: unknown } | undefined
  }): Promise<SessionWriter>
  /**
   * Opens a session for appending: takes the writer lock, scans the log, quarantines and
   * truncates a torn tail, appends and flushes loop-repair's closing events, then returns.
   * A session whose current generation is older (v0 `session.jsonl`) is first migrated:
   * `session.v4.jsonl` is published by link (the old file is never modified), then opened.
   * A migrated generation whose source changed since is refused (`GENERATION_FORK`, I7).
   *
   * @throws {@link JsonlStoreError} `SESSION_NOT_FOUND`, `SESSION_LOCKED`, `VERSION_TOO_NEW` (touching nothing),
   *   damage codes (`CORRUPT_LINE`, `SEQ_GAP`, ...: writes refused), `SYMLINK_REFUSED`, `HARDLINK_REFUSED`...
   */
  openWriter(id: string): Promise<SessionWriter>
  /**
   * Reads a session without writing anything (no lock, no repair, no chmod).
   *
   * @param options - `allowDamaged`: return the good prefix with the damage instead of throwing.
   * @throws {@link JsonlStoreError} `SESSION_NOT_FOUND`, `VERSION_TOO_NEW`, `INVALID_HEADER`, and damage codes unless `allowDamaged`.
   */
  openReader(id: string, options?: { readonly allowDamaged?: boolean }): Promise<SessionReadResult>
  /**
   * Streams a session's events (read-only), checked like an open. A torn tail ends the
   * stream quietly (a live writer's line in progress); damage throws after the good prefix.
   *
   * @param options - `fromSeq`/`toSeq`: the inclusive range to yield.
   */
  readEvents(
    id: string,
    options?: { readonly fromSeq?: number; readonly toSeq?: number },
  ): AsyncIterable<LoggedEvent>
  /** Scans a whole session (read-only) and reports its state instead of throwing on damage. */
  verify(id: string): Promise<VerifyReport>
  /** Lists sessions from their headers only; a broken session is reported in `problems`, never fails the listing. */
  list(): Promise<{ sessions: SessionSummary[]; problems: { id: string; error: JsonlStoreError }[] }>
  /**
   * Copies the good prefix of a (damaged) session into a NEW session, byte for byte, plus
   * a `session/salvage` event naming what was dropped. The source is never modified. The copy
   * publishes by link like `create`; a failed publish step is `SALVAGE_FAILED`.
   */
  salvage(id: string, request: { readonly to: string }): Promise<SalvageReport>
  /**
   * Forks a session at `atSeq` into a new session (seed = events 0..atSeq, closers for an
   * open turn, `session/end-seed`) and opens it for write. The parent is never modified.
   *
   * @throws {@link JsonlStoreError} `FORK_REFUSED` (bad boundary, or an open turn with `openTurn: 'refuse'`),
   *   `FORK_FAILED` (publishing the child failed; nothing published).
   */
  fork(
    id: string,
    request: { readonly to: string; readonly atSeq: number; readonly openTurn?: 'close' | 'refuse' },
  ): Promise<SessionWriter>
  /**
   * Converts a cold session's plain log to `session.v4.jsonl.zstd` (4 MiB frames at level 6,
   * published by link after reading it back, then the plain log is removed), or reseals a
   * `.zstd` log whose tail is small flush frames (verified, then renamed over itself). Takes
   * the writer lock; a torn tail is quarantined first, as a write open does. See FORMAT.md.
   *
   * @param options - `onProgress` (phase, bytesRead, bytesTotal, eventsDone), level, frame size.
   * @returns What was done (`compressed`, `resealed` or `up-to-date`), sizes and ratio.
   * @throws {@link JsonlStoreError} `SESSION_LOCKED`, `SESSION_NOT_FOUND`, `VERSION_TOO_NEW` (touching nothing),
   *   `MIXED_ENCODINGS` (older plain generations, or both encodings with different content), damage codes,
   *   `COMPRESS_FAILED` (nothing published; the plain log kept).
   */
  compress(id: string, options?: CompressOptions): Promise<CompressResult>
  /**
   * Brings a session's current generation to the current format (v4): publishes
   * `session.v4.jsonl` by link under the writer lock (temp file, fsync, read back and
   * validated, source unchanged, `link()`, directory fsync), then releases the lock. The
   * old generation is never modified. With `dryRun`, migrates in memory, validates every
   * event and the session rules, and writes nothing. A session already in the current
   * format is `up-to-date` (a migrated one is first checked for a fork of its source).
   *
   * @param options - `dryRun`; `onProgress` (phase `scan`, `migrate`, `verify`, `publish`; events and bytes).
   * @returns What was written, or with `dryRun` what would be.
   * @throws {@link JsonlStoreError} `SESSION_NOT_FOUND`, `SESSION_LOCKED`, `VERSION_TOO_NEW`,
   *   `GENERATION_VERSION_MISMATCH`, `MIXED_ENCODINGS`, `GENERATION_FORK`, `NO_MIGRATION_PATH`, the
   *   source's damage codes, `UNKNOWN_EVENT_TYPE`, `INVALID_EVENT`, `MIGRATION_FAILED`, `MIGRATION_CONFLICT`.
   */
  migrate(
    id: string,
    options?: {
      readonly dryRun?: boolean
      readonly onProgress?: (progress: MigrationProgress) => void
    },
  ): Promise<MigrationReport>
  /**
   * The absolute directory of a session.
   *
   * @throws {@link JsonlStoreError} `INVALID_SESSION_ID`.
   */
  sessionDirectory(id: string): string
  /**
   * Reads a session's header line only (bounded; the log is not scanned), from whichever
   * log the store reads: `session.v4.jsonl`, `session.v4.jsonl.zstd`, or an older generation
   * (then the v4 header its migration would write, without `migratedFrom`).
   *
   * @returns The header (null when the log has no valid header line), and the log's name, version and encoding.
   * @throws {@link JsonlStoreError} `SESSION_NOT_FOUND`, `VERSION_TOO_NEW`, `INVALID_HEADER`, `MIXED_ENCODINGS`, read errors.
   */
  readHeader(id: string): Promise<SessionHeaderRead>
  /**
   * Lists a session's directory, read-only, each entry classified (log generations and
   * encodings, quarantined torn tails, the writer lock, temp files, the projection
   * checkpoint), with the log the store reads marked `current` and the lock's record.
   *
   * @throws {@link JsonlStoreError} `SESSION_NOT_FOUND`, `VERSION_TOO_NEW`, `MIXED_ENCODINGS`, read errors.
   */
  sessionFiles(id: string): Promise<SessionFiles>
  /**
   * Follows a live session read-only (no lock, no repair): yields its events from
   * `fromSeq`, then each event appended later as its line lands, until `signal` aborts (the
   * iteration then ends normally). Works on every encoding and generation; when the log
   * changes file under the follower (compress, migrate), reading continues in the new file
   * from the next seq. A torn tail is a write in progress, never an error.
   *
   * @param options - `fromSeq` (default 0), `signal`, `intervalMs` (polling, default 250).
   * @throws {@link JsonlStoreError} `INVALID_OPTION` (at the call), then while iterating: damage codes
   *   once a damaging line lands, `SESSION_NOT_FOUND` when the log is removed, read errors.
   */
  follow(id: string, options?: FollowOptions): AsyncIterable<LoggedEvent>
}
