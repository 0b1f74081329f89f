import { randomBytes } from 'node:crypto'
import { constants } from 'node:fs'
import type { Stats } from 'node:fs'
import { dirname, join } from 'node:path'

import {
  assertJsonValue,
  coreEventRegistry,
  parseEvent,
  SESSION_FORMAT_NAME,
  SESSION_FORMAT_VERSION,
  sessionHeaderSchema,
  SessionEventsError,
} from '@agent-ledger/session-events'
import type {
  EventRegistry,
  LoggedEvent,
  SessionEvent,
  SessionHeader,
  SessionHeaderInput,
} from '@agent-ledger/session-events'
import { planRepairFromState } from '@agent-ledger/loop-repair'
import type { PendingToolCall, RepairAction } from '@agent-ledger/loop-repair'
import { createProjection, planFork, ProjectionError } from '@agent-ledger/session-projection'
import type { Projection, ProjectionStats } from '@agent-ledger/session-projection'

import { errnoOf, notRegularFile, toStoreError } from './fs-errors.ts'
import { fileKind, nodeFsOps } from './fs-ops.ts'
import type { FileHandleOps, FsOps } from './fs-ops.ts'
import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'
import { LOG_FILE_NAME, TEMP_PREFIX } from './layout.ts'
import { resolveFlushPolicy, resolveLimits } from './limits.ts'
import type { FlushPolicy, StoreLimits } from './limits.ts'
import { encodeEventLine, encodeJsonLine } from './line-codec.ts'
import { INTEGRITY_CRC32C, V4_FORMAT } from './log-format.ts'
import type { ScanOutcome, ScanStats, TornTail } from './log-scanner.ts'
import { quarantineTail } from './quarantine.ts'
import { readFileChunks, refineRepeatedSeq, scanLog, scanLogChunks } from './read-log.ts'
import type { ByteSource } from './read-log.ts'
import { snapshotJson } from './json-snapshot.ts'
import { DEFAULT_REDACTION_POLICY, redactJson } from './redaction.ts'
import type { RedactionPolicy } from './redaction.ts'
import { assertSessionId } from './session-id.ts'
import { SessionWriterImpl } from './session-writer.ts'
import type { SessionWriter, StoreLogger, WriterRecovery } from './session-writer.ts'
import { acquireWriterLock } from './writer-lock.ts'
import type { LockOptions, WriterLock } from './writer-lock.ts'
import { planReadFrom, scanWithCheckpoint } from './checkpoint-open.ts'
import type {
  CheckpointCarry,
  CheckpointContext,
  CheckpointUse,
  LastEventLine,
  SessionScan,
} from './checkpoint-open.ts'
import { resolveCheckpointOptions } from './checkpoint-options.ts'
import type { CheckpointOptions } from './checkpoint-options.ts'
import { CheckpointWriter, linesFacts } from './checkpoint-writer.ts'
import type { SeqIndexEntry } from './checkpoint-format.ts'
import { listGenerations } from './generations.ts'
import type { GenerationFile } from './generations.ts'
import { detectGenerationFork, migrateSession } from './migration/migrate-session.ts'
import type { MigrationProgress, MigrationWriteResult } from './migration/migrate-session.ts'
import { removeStaleTemps } from './publish.ts'
import {
  isOlderGeneration,
  readOlderGeneration,
  readOlderGenerationEvents,
  resolveCurrentGeneration,
  summarizeOlderGeneration,
  verifyOlderGeneration,
} from './store-generations.ts'
import type { GenerationStoreContext, MigrationReport } from './store-generations.ts'
import { compressSession } from './compress-session.ts'
import type { CompressOptions, CompressResult } from './compress-session.ts'
import { scanZstdLog, scanZstdLogChunks, zstdPlainRange, zstdPlainSource } from './zstd-log-reader.ts'
import type { ZstdLogStats, ZstdScanOptions } from './zstd-log-reader.ts'
import { encodeZstdLines, encodeZstdStream } from './zstd-log-writer.ts'
import type { LogEncoding } from './zstd-log-writer.ts'
import { locateSessionLog, sessionLog, zstdBatchEncoder, zstdCodecFor } from './zstd-session.ts'
import type { SessionLog } from './zstd-session.ts'
import type { ZstdCodec } from './zstd/zstd-codec.ts'
import { checkFollowOptions, followSession } from './follow-session.ts'
import type { FollowedLog, FollowOptions } from './follow-session.ts'
import { listSessionFiles } from './session-files.ts'
import type { SessionFiles, SessionHeaderRead } from './session-files.ts'

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
   * The file appears complete or not at all: written to a temp file, fsynced, `link()`ed
   * into place (never overwriting), then the directory is fsynced.
   *
   * @param request - The id, optional header fields, and seed events (seqs from 0) for forks and salvage.
   * @throws {@link JsonlStoreError} `INVALID_SESSION_ID`, `SESSION_EXISTS`, `SESSION_LOCKED`, `INVALID_HEADER`,
   *   `INVALID_EVENT`, `SYMLINK_REFUSED`, `ACCESS_DENIED`, `UNSAFE_ROOT`, `DISK_FULL`...
   */
  create(request: {
    readonly id: string
    readonly header?: Partial<SessionHeaderInput>
    readonly seed?: readonly LoggedEvent[]
    /** `plain` or `zstd`; default the store's `encoding` option. */
    readonly encoding?: LogEncoding
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
   * a `session/salvage` event naming what was dropped. The source is never modified.
   */
  salvage(id: string, request: { readonly to: string }): Promise<SalvageReport>
  /**
   * Forks a session at `atSeq` into a new session (seed = events 0..atSeq, closers for an
   * open turn, `session/end-seed`) and opens it for write. The parent is never modified.
   *
   * @throws {@link JsonlStoreError} `FORK_REFUSED` (bad boundary, or an open turn with `openTurn: 'refuse'`).
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
   *   `MIGRATION_FAILED` (nothing published; the plain log kept).
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

/** A summary before the version is filled in (internal: v4 logs leave it out). */
type LogSummary = Omit<SessionSummary, 'version'> & { readonly version?: number }

/** What a full scan of an open log gives (internal). */
interface OpenScan {
  readonly outcome: ScanOutcome
  readonly projection: Projection
  /** Frame facts, for a `.zstd` log. */
  readonly zstd?: ZstdLogStats
}

const defaultLogger: StoreLogger = {
  warn(message, details) {
    process.emitWarning(details === undefined ? message : `${message} ${JSON.stringify(details)}`, {
      code: 'AGENT_LEDGER_STORE',
    })
  },
}

const LIST_CONCURRENCY = 16
const HEADER_PEEK_CHUNK = 64 * 1024
const MAX_TEMP_ATTEMPTS = 16

function hexRandom(byteCount: number): string {
  return randomBytes(byteCount).toString('hex')
}

class SessionStoreImpl implements SessionStore {
  readonly root: string
  readonly #fs: FsOps
  readonly #clock: () => string
  readonly #registry: EventRegistry
  readonly #limits: StoreLimits
  readonly #flushPolicy: FlushPolicy
  readonly #lock: Partial<LockOptions>
  readonly #logger: StoreLogger
  readonly #randomHex: (byteCount: number) => string
  readonly #redaction: RedactionPolicy | null
  readonly #checkpoint: CheckpointOptions
  readonly #encoding: LogEncoding
  #rootChecked = false

  constructor(options: SessionStoreOptions) {
    this.root = options.root
    this.#fs = options.fs ?? nodeFsOps
    this.#clock = options.clock ?? (() => new Date().toISOString())
    this.#registry = options.registry ?? coreEventRegistry
    this.#limits = resolveLimits(options.limits)
    this.#flushPolicy = resolveFlushPolicy(options.flush)
    this.#randomHex = options.lock?.randomHex ?? hexRandom
    this.#lock = { ...options.lock, randomHex: this.#randomHex }
    this.#logger = options.logger ?? defaultLogger
    this.#redaction = options.redaction === undefined ? DEFAULT_REDACTION_POLICY : options.redaction
    this.#checkpoint = resolveCheckpointOptions(options.checkpoint)
    this.#encoding = checkedEncoding(options.encoding ?? 'plain')
  }

  /** What the checkpoint code needs to find, verify, use and write one session's checkpoint. */
  #checkpointContext(id: string, directory: string): CheckpointContext {
    return {
      fs: this.#fs,
      directory,
      id,
      file: `${id}/${LOG_FILE_NAME}`,
      generationFile: LOG_FILE_NAME,
      format: V4_FORMAT,
      limits: this.#limits,
      registry: this.#registry,
      logger: this.#logger,
      options: this.#checkpoint,
    }
  }

  /** The writer's checkpoint sink, or undefined when checkpoints are off. */
  #checkpointWriter(init: {
    readonly id: string
    readonly directory: string
    readonly handle: FileHandleOps
    readonly header: SessionHeader
    readonly lastLine: LastEventLine | null
    readonly seqIndex: readonly SeqIndexEntry[]
    readonly coveredSeq: number
    readonly carry?: CheckpointCarry | undefined
  }): CheckpointWriter | undefined {
    if (!this.#checkpoint.enabled) return undefined
    return new CheckpointWriter({
      context: this.#checkpointContext(init.id, init.directory),
      handle: init.handle,
      header: init.header,
      lastLine: init.lastLine,
      seqIndex: init.seqIndex,
      coveredSeq: init.coveredSeq,
      carry: init.carry,
      randomHex: this.#randomHex,
    })
  }

  sessionDirectory(id: string): string {
    return join(this.root, assertSessionId(id))
  }

  // ---------------------------------------------------------------- create

  async create(request: {
    readonly id: string
    readonly header?: Partial<SessionHeaderInput>
    readonly seed?: readonly LoggedEvent[]
    readonly encoding?: LogEncoding
  }): Promise<SessionWriter> {
    const id = assertSessionId(request.id)
    const log = sessionLog(id, checkedEncoding(request.encoding ?? this.#encoding))
    const header = this.#buildHeader(id, request.header ?? {})
    const projection = createProjection({ registry: this.#registry })
    const seedEvents: LoggedEvent[] = []
    const seedLines = this.#encodeSeed(id, request.seed ?? [], { projection, events: seedEvents })
    assertSeedMatchesHeader(id, header, seedEvents)
    const codec = log.encoding === 'zstd' ? await zstdCodecFor(log.file) : undefined
    await this.#ensureRoot(true)
    const directory = await this.#ensureSessionDirectory(id)
    const published = await this.#publish({
      id,
      directory,
      kind: 'create',
      header,
      body: seedLines,
      log,
      codec,
    })
    const writer = this.#newWriter({
      id,
      log,
      codec,
      header,
      directory,
      handle: published.handle,
      lock: published.lock,
      projection,
      durableOffset: published.size,
      recovery: { tornTail: null, quarantineFile: null, repairs: [], headerMissing: false },
      checkpoints: this.#checkpointWriter({
        id,
        directory,
        handle: published.handle,
        header,
        ...linesFacts(seedLines, published.size, 0),
        coveredSeq: -1,
      }),
    })
    return this.#repairAndReturn(writer)
  }

  #buildHeader(id: string, input: Partial<SessionHeaderInput>): SessionHeader {
    if (input.id !== undefined && input.id !== id) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.INVALID_HEADER,
        message: `Cannot create session ${id}: expected header.id to be absent or ${JSON.stringify(id)}, found ${JSON.stringify(input.id)}.`,
        file: `${id}/${LOG_FILE_NAME}`,
        details: { field: 'id' },
      })
    }
    const header: Record<string, unknown> = {
      format: SESSION_FORMAT_NAME,
      version: SESSION_FORMAT_VERSION,
      id,
      createdAt: input.createdAt ?? this.#clock(),
    }
    for (const key of [
      'cwd',
      'parentSession',
      'seeded',
      'inheritedEventCount',
      'delegationDepth',
      'metadata',
    ] as const) {
      if (input[key] !== undefined) header[key] = input[key]
    }
    if (this.#redaction !== null) header['redaction'] = { policyVersion: this.#redaction.policyVersion }
    header['integrity'] = INTEGRITY_CRC32C
    const file = `${id}/${LOG_FILE_NAME}`
    try {
      assertJsonValue(
        header,
        { maxDepth: this.#limits.maxDepth, maxEntries: this.#limits.maxEntries },
        'header',
      )
    } catch (error) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.INVALID_HEADER,
        message: `Cannot create session ${id}: the header is not plain JSON within the limits (${error instanceof Error ? error.message : String(error)}).`,
        file,
        details: { field: SessionEventsError.is(error) ? (error.field ?? '') : '' },
        cause: error,
      })
    }
    const parsed = sessionHeaderSchema.safeParse(header)
    if (!parsed.success) {
      const issue = parsed.error.issues[0]
      const field = issue === undefined ? '' : issue.path.map(String).join('.')
      throw new JsonlStoreError({
        code: JsonlErrorCode.INVALID_HEADER,
        message: `Cannot create session ${id}: header field "${field}": ${issue?.message ?? 'invalid value'}.`,
        file,
        details: { field },
      })
    }
    return header as SessionHeader
  }

  #encodeSeed(
    id: string,
    seed: readonly LoggedEvent[],
    into: { readonly projection: Projection; readonly events: LoggedEvent[] },
  ): Buffer[] {
    const { projection } = into
    const file = `${id}/${LOG_FILE_NAME}`
    const lines: Buffer[] = []
    for (const original of seed) {
      // Read once (accessors included): what is validated is what is written.
      let event = snapshotJson(original, this.#limits) as LoggedEvent
      try {
        assertJsonValue(
          event,
          { maxDepth: this.#limits.maxDepth, maxEntries: this.#limits.maxEntries },
          'event',
        )
        if (this.#redaction !== null) {
          const redaction = this.#redaction
          const data = redactJson(event.data, (text) => redaction.redact(text))
          if (data !== event.data) event = { ...event, data } as LoggedEvent
        }
        parseEvent(event, this.#registry)
        projection.apply(event)
      } catch (error) {
        throw new JsonlStoreError({
          code: JsonlErrorCode.INVALID_EVENT,
          message: `Cannot create session ${id}: seed event seq ${String(event.seq)} is refused (${error instanceof Error ? error.message : String(error)}).`,
          file,
          seq: typeof event.seq === 'number' ? event.seq : undefined,
          details: {
            projectionCode: ProjectionError.is(error) || SessionEventsError.is(error) ? error.code : null,
          },
          cause: error,
        })
      }
      into.events.push(event)
      const line = encodeEventLine(event)
      if (line.length - 1 > this.#limits.maxEventBytes) {
        throw new JsonlStoreError({
          code: JsonlErrorCode.EVENT_TOO_LARGE,
          message: `Cannot create session ${id}: seed event seq ${event.seq} is too large: expected at most ${this.#limits.maxEventBytes} bytes, found ${line.length - 1}.`,
          file,
          seq: event.seq,
          details: { bytes: line.length - 1, limit: this.#limits.maxEventBytes },
        })
      }
      lines.push(line)
    }
    return lines
  }

  /**
   * Publishes a new log: lock, temp file (O_EXCL|O_NOFOLLOW, 0600), header + body, fsync,
   * link() into place, fsync dir, unlink temp, fsync dir. Returns the open handle (the
   * published inode) and the held lock.
   */
  async #publish(request: {
    readonly id: string
    readonly directory: string
    readonly kind: string
    readonly header: SessionHeader
    readonly body: readonly Buffer[] | (() => ByteSource)
    /** The log to publish (its encoding decides the bytes). */
    readonly log: SessionLog
    /** The codec, for a `.zstd` log. */
    readonly codec: ZstdCodec | undefined
  }): Promise<{ handle: FileHandleOps; lock: WriterLock; size: number }> {
    const { id, directory, codec } = request
    const fs = this.#fs
    const logPath = join(directory, request.log.name)
    const file = request.log.file
    // A session has one log: neither encoding may exist yet.
    const otherPath = join(directory, sessionLog(id, request.log.encoding === 'zstd' ? 'plain' : 'zstd').name)
    await this.#assertAbsent(id, otherPath)
    await this.#assertAbsent(id, logPath)
    await this.#assertNoOtherGeneration(id, directory)
    const lock = await acquireWriterLock(fs, directory, this.#lock)
    let handle: FileHandleOps | undefined
    let tempPath: string | undefined
    let linked = false
    try {
      await this.#assertAbsent(id, otherPath)
      await this.#assertAbsent(id, logPath)
      await removeStaleTemps(this.#fs, directory)
      for (let attempt = 0; attempt < MAX_TEMP_ATTEMPTS && handle === undefined; attempt += 1) {
        tempPath = join(directory, `${TEMP_PREFIX}${request.kind}-${this.#randomHex(8)}`)
        try {
          handle = await fs.open(
            tempPath,
            constants.O_RDWR |
              constants.O_APPEND |
              constants.O_CREAT |
              constants.O_EXCL |
              constants.O_NOFOLLOW,
            0o600,
          )
        } catch (error) {
          // S7: a pre-created name (file or symlink) gives EEXIST: draw fresh randomness.
          if (errnoOf(error) === 'EEXIST') continue
          throw toStoreError(error, {
            op: 'create',
            file: `${id}/.tmp-*`,
            which: 'temp',
            fallback: JsonlErrorCode.WRITE_FAILED,
          })
        }
      }
      if (handle === undefined) {
        throw new JsonlStoreError({
          code: JsonlErrorCode.WRITE_FAILED,
          message: `Cannot create a temp file in ${id}: expected a free random name, found ${MAX_TEMP_ATTEMPTS} taken.`,
          file: `${id}/.tmp-*`,
          details: { op: 'create-temp', cause: 'EEXIST' },
        })
      }
      await this.#fixMode(handle, `${id}/${TEMP_PREFIX}${request.kind}`)
      let size = 0
      try {
        const headerLine = encodeJsonLine(JSON.stringify(request.header))
        // A .zstd log: the header in a frame of its own, then the body as frames of whole lines.
        const start = codec === undefined ? headerLine : encodeZstdLines(codec, headerLine)
        await handle.write(start, 0)
        size = start.length
        if (codec !== undefined && typeof request.body === 'function') {
          for await (const frame of encodeZstdStream(codec, request.body())) {
            await handle.write(frame, size)
            size += frame.length
          }
        } else if (codec !== undefined && request.body.length > 0) {
          const frames = encodeZstdLines(codec, Buffer.concat(request.body as readonly Buffer[]))
          await handle.write(frames, size)
          size += frames.length
        } else if (typeof request.body === 'function') {
          for await (const chunk of request.body()) {
            await handle.write(chunk, size)
            size += chunk.length
          }
        } else if (request.body.length > 0) {
          const body = Buffer.concat(request.body)
          await handle.write(body, size)
          size += body.length
        }
        await handle.sync()
      } catch (error) {
        throw toStoreError(error, { op: 'write', file, fallback: JsonlErrorCode.WRITE_FAILED })
      }
      try {
        await fs.link(tempPath!, logPath)
        linked = true
      } catch (error) {
        if (errnoOf(error) === 'EEXIST') {
          const existing = await fs.lstat(logPath).catch(() => undefined)
          if (existing?.isSymbolicLink() === true) {
            throw new JsonlStoreError({
              code: JsonlErrorCode.SYMLINK_REFUSED,
              message: `Cannot create session ${id}: expected no file at ${file}, found a symbolic link (never followed).`,
              file,
              details: { which: 'log' },
            })
          }
          throw this.#existsError(id)
        }
        throw toStoreError(error, { op: 'link', file, fallback: JsonlErrorCode.WRITE_FAILED })
      }
      await fs.fsyncDirectory(directory)
      await fs.unlink(tempPath!)
      tempPath = undefined
      await fs.fsyncDirectory(directory)
      return { handle, lock, size }
    } catch (error) {
      if (!linked) await handle?.close().catch(() => undefined)
      if (tempPath !== undefined) await fs.unlink(tempPath).catch(() => undefined)
      if (linked) await handle?.close().catch(() => undefined)
      await lock.release().catch(() => undefined)
      throw toStoreError(error, { op: 'create', file, fallback: JsonlErrorCode.WRITE_FAILED })
    }
  }

  async #assertAbsent(id: string, logPath: string): Promise<void> {
    try {
      const stats = await this.#fs.lstat(logPath)
      if (stats.isSymbolicLink()) {
        throw new JsonlStoreError({
          code: JsonlErrorCode.SYMLINK_REFUSED,
          message: `Cannot create session ${id}: expected no file at ${id}/${LOG_FILE_NAME}, found a symbolic link (never followed).`,
          file: `${id}/${LOG_FILE_NAME}`,
          details: { which: 'log' },
        })
      }
      throw this.#existsError(id)
    } catch (error) {
      if (JsonlStoreError.is(error)) throw error
      if (errnoOf(error) !== 'ENOENT') {
        throw toStoreError(error, {
          op: 'stat',
          file: `${id}/${LOG_FILE_NAME}`,
          fallback: JsonlErrorCode.READ_FAILED,
        })
      }
    }
  }

  #existsError(id: string): JsonlStoreError {
    return new JsonlStoreError({
      code: JsonlErrorCode.SESSION_EXISTS,
      message: `Cannot create session ${id}: expected no session with that id, found ${id}/${LOG_FILE_NAME}.`,
      file: `${id}/${LOG_FILE_NAME}`,
    })
  }

  /**
   * `create`, `salvage` and `fork` into an id whose directory holds a generation of another
   * version (an older `session.jsonl`, a newer `session.v5.jsonl`): SESSION_EXISTS. The v4
   * names are checked by {@link #assertAbsent}.
   */
  async #assertNoOtherGeneration(id: string, directory: string): Promise<void> {
    const other = (await listGenerations(this.#fs, directory)).find(
      (generation) => generation.version !== SESSION_FORMAT_VERSION,
    )
    if (other === undefined) return
    throw new JsonlStoreError({
      code: JsonlErrorCode.SESSION_EXISTS,
      message: `Cannot create session ${id}: expected no session with that id, found ${id}/${other.file}.`,
      file: `${id}/${other.file}`,
      details: { version: other.version },
    })
  }

  async #fixMode(handle: FileHandleOps, file: string): Promise<void> {
    const stats = await handle.stat()
    if ((stats.mode & 0o777) === 0o600) return
    await handle.chmod(0o600)
    const after = await handle.stat()
    if ((after.mode & 0o777) !== 0o600) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.ACCESS_DENIED,
        message: `Cannot set ${file} to mode 0600: found ${(after.mode & 0o777).toString(8)} after fchmod.`,
        file,
        details: { op: 'chmod', path: file, cause: 'EPERM' },
      })
    }
  }

  // ---------------------------------------------------------------- root and directories

  /** Checks the root (once per store, after a success): a directory, not group/world-writable, owned by us (S1). */
  async #ensureRoot(create: boolean): Promise<void> {
    if (this.#rootChecked) return
    await this.#checkRoot(create)
    this.#rootChecked = true
  }

  async #checkRoot(create: boolean): Promise<void> {
    const fs = this.#fs
    let stats: Stats
    try {
      stats = await fs.stat(this.root)
    } catch (error) {
      if (errnoOf(error) !== 'ENOENT' || !create) {
        if (errnoOf(error) === 'ENOENT') {
          throw new JsonlStoreError({
            code: JsonlErrorCode.SESSION_NOT_FOUND,
            message: `The store root ${this.root} does not exist: expected a directory of sessions.`,
            file: '',
            details: { root: this.root },
            cause: error,
          })
        }
        throw toStoreError(error, { op: 'stat', file: this.root, fallback: JsonlErrorCode.READ_FAILED })
      }
      await this.#mkdirs(this.root)
      stats = await fs.stat(this.root)
    }
    const uid = typeof process.getuid === 'function' ? process.getuid() : undefined
    const mode = stats.mode & 0o777
    if (!stats.isDirectory() || (mode & 0o022) !== 0 || (uid !== undefined && stats.uid !== uid)) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.UNSAFE_ROOT,
        message: `The store root ${this.root} is unsafe: expected a directory owned by uid ${String(uid)} and writable only by it, found ${stats.isDirectory() ? 'a directory' : 'not a directory'} with mode ${mode.toString(8)} owned by uid ${stats.uid}.`,
        file: '',
        details: {
          mode: mode.toString(8),
          owner: stats.uid,
          expectedOwner: uid ?? null,
          directory: stats.isDirectory(),
        },
      })
    }
  }

  async #mkdirs(path: string): Promise<void> {
    const fs = this.#fs
    try {
      await fs.mkdir(path, 0o700)
    } catch (error) {
      const code = errnoOf(error)
      if (code === 'EEXIST') return
      if (code !== 'ENOENT' || dirname(path) === path) {
        throw toStoreError(error, { op: 'mkdir', file: path, fallback: JsonlErrorCode.WRITE_FAILED })
      }
      await this.#mkdirs(dirname(path))
      await this.#mkdirs(path)
      return
    }
    await fs.chmod(path, 0o700)
    await fs.fsyncDirectory(dirname(path)).catch(() => undefined)
  }

  /** Creates (0700) or checks the session directory: never a symlink. */
  async #ensureSessionDirectory(id: string): Promise<string> {
    const fs = this.#fs
    const directory = join(this.root, id)
    try {
      await fs.mkdir(directory, 0o700)
      const created = await fs.lstat(directory)
      if (created.isDirectory() && (created.mode & 0o777) !== 0o700) await fs.chmod(directory, 0o700)
      await fs.fsyncDirectory(this.root)
      return directory
    } catch (error) {
      if (errnoOf(error) !== 'EEXIST') {
        throw toStoreError(error, {
          op: 'mkdir',
          file: id,
          which: 'session-directory',
          fallback: JsonlErrorCode.WRITE_FAILED,
        })
      }
    }
    await this.#checkSessionDirectory(id, { write: true })
    return directory
  }

  async #checkSessionDirectory(id: string, options: { readonly write: boolean }): Promise<string> {
    const directory = join(this.root, id)
    let stats: Stats
    try {
      stats = await this.#fs.lstat(directory)
    } catch (error) {
      if (errnoOf(error) === 'ENOENT') throw this.#notFound(id, error)
      throw toStoreError(error, { op: 'stat', file: id, fallback: JsonlErrorCode.READ_FAILED })
    }
    if (stats.isSymbolicLink()) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.SYMLINK_REFUSED,
        message: `The directory of session ${id} is a symbolic link: expected a real directory (never followed).`,
        file: id,
        details: { which: 'session-directory' },
      })
    }
    if (!stats.isDirectory()) throw this.#notFound(id, undefined)
    // Only ever narrow an existing mode (drop group/other bits): a deliberately read-only 0500 stays so.
    if (options.write && (stats.mode & 0o077) !== 0) {
      const narrowed = stats.mode & 0o700
      this.#logger.warn(
        `Session directory ${id} had mode ${(stats.mode & 0o777).toString(8)}; set to ${narrowed.toString(8)}.`,
        { id, mode: (stats.mode & 0o777).toString(8) },
      )
      await this.#fs.chmod(directory, narrowed)
    }
    return directory
  }

  #notFound(id: string, cause: unknown): JsonlStoreError {
    return new JsonlStoreError({
      code: JsonlErrorCode.SESSION_NOT_FOUND,
      message: `Session ${id} was not found: expected ${id}/${LOG_FILE_NAME} under the store root.`,
      file: `${id}/${LOG_FILE_NAME}`,
      cause,
    })
  }

  // ---------------------------------------------------------------- reading

  async #openLog(
    id: string,
    options: { readonly write: boolean },
  ): Promise<{ handle: FileHandleOps; directory: string; log: SessionLog }> {
    await this.#ensureRoot(false)
    const directory = await this.#checkSessionDirectory(id, { write: false })
    // session.v4.jsonl or session.v4.jsonl.zstd; a write open (under the lock) finishes an interrupted compress.
    const log = await locateSessionLog({
      fs: this.#fs,
      directory,
      id,
      mode: options.write ? 'write' : 'read',
      limits: this.#limits,
      logger: this.#logger,
    })
    const path = join(directory, log.name)
    const file = log.file
    let handle: FileHandleOps
    try {
      handle = await this.#fs.open(
        path,
        // O_APPEND: if two writers ever coexist (a bypassed or broken lock), both lines land and
        // the next open reports SEQ_CONFLICT, instead of one silently overwriting the other.
        (options.write ? constants.O_RDWR | constants.O_APPEND : constants.O_RDONLY) | constants.O_NOFOLLOW,
      )
    } catch (error) {
      if (errnoOf(error) === 'ENOENT') throw this.#notFound(id, error)
      throw toStoreError(error, {
        op: options.write ? 'open-append' : 'open',
        file,
        which: 'log',
        fallback: JsonlErrorCode.READ_FAILED,
      })
    }
    try {
      const stats = await handle.stat()
      // nodeFsOps already refuses these; a custom FsOps may not.
      if (!stats.isFile()) throw notRegularFile({ file, which: 'log', kind: fileKind(stats), op: 'open' })
    } catch (error) {
      await handle.close().catch(() => undefined)
      throw toStoreError(error, { op: 'stat', file, fallback: JsonlErrorCode.READ_FAILED })
    }
    return { handle, directory, log }
  }

  async #scan(
    id: string,
    handle: FileHandleOps,
    options: { readonly onEvent?: (event: LoggedEvent) => void; readonly log?: SessionLog },
  ): Promise<OpenScan> {
    if (options.log?.encoding === 'zstd') return this.#scanZstd(options.log, handle, options.onEvent)
    const projection = createProjection({ registry: this.#registry })
    const file = `${id}/${LOG_FILE_NAME}`
    const source = (): ByteSource => readFileChunks(handle, { chunkBytes: this.#limits.readChunkBytes })
    const onEvent = options.onEvent
    let outcome: ScanOutcome
    try {
      outcome = await scanLog(source(), {
        format: V4_FORMAT,
        limits: this.#limits,
        registry: this.#registry,
        file,
        sessionId: id,
        onEvent:
          onEvent === undefined
            ? (event) => {
                projection.apply(event)
              }
            : (event) => {
                projection.apply(event)
                onEvent(event)
              },
      })
      outcome = await refineRepeatedSeq(outcome, source, this.#limits.maxLineBytes)
    } catch (error) {
      throw toStoreError(error, { op: 'read', file, fallback: JsonlErrorCode.READ_FAILED })
    }
    return { outcome, projection }
  }

  /** Reads only the header line (bounded): for list() and the VERSION_TOO_NEW check before locking. */
  async #peekHeader(id: string, handle: FileHandleOps, log?: SessionLog): Promise<ScanOutcome> {
    const file = log?.file ?? `${id}/${LOG_FILE_NAME}`
    if (log?.encoding === 'zstd') {
      const options = { ...(await this.#zstdOptions(log, () => undefined)), sessionId: id }
      try {
        return await scanZstdLog(handle, { ...options, onHeader: () => true, stopBeforeLine: 2 })
      } catch (error) {
        throw toStoreError(error, { op: 'read', file, fallback: JsonlErrorCode.READ_FAILED })
      }
    }
    try {
      return await scanLog(readFileChunks(handle, { chunkBytes: HEADER_PEEK_CHUNK }), {
        format: V4_FORMAT,
        limits: this.#limits,
        registry: this.#registry,
        file,
        sessionId: id,
        onEvent: () => undefined,
        onHeader: () => true,
        stopBeforeLine: 2,
      })
    } catch (error) {
      throw toStoreError(error, { op: 'read', file, fallback: JsonlErrorCode.READ_FAILED })
    }
  }

  /** The `.zstd` reader's options for one log (loads the codec). */
  async #zstdOptions(log: SessionLog, onEvent: (event: LoggedEvent) => void): Promise<ZstdScanOptions> {
    return {
      codec: await zstdCodecFor(log.file),
      format: V4_FORMAT,
      limits: this.#limits,
      registry: this.#registry,
      file: log.file,
      // The id is the file's first path component (ids never hold a separator).
      sessionId: log.file.split('/')[0],
      onEvent,
    }
  }

  /** A full scan of a `.zstd` log into a fresh projection (no checkpoint: they bind plain offsets). */
  async #scanZstd(
    log: SessionLog,
    handle: FileHandleOps,
    onEvent?: (event: LoggedEvent) => void,
  ): Promise<SessionScan & { readonly zstd: ZstdLogStats }> {
    const projection = createProjection({ registry: this.#registry })
    const options = await this.#zstdOptions(
      log,
      onEvent === undefined
        ? (event) => {
            projection.apply(event)
          }
        : (event) => {
            projection.apply(event)
            onEvent(event)
          },
    )
    let outcome
    try {
      outcome = await scanZstdLog(handle, options)
    } catch (error) {
      throw toStoreError(error, { op: 'read', file: log.file, fallback: JsonlErrorCode.READ_FAILED })
    }
    return { outcome, projection, zstd: outcome.zstd, checkpoint: null, lastLine: null, seqIndex: [] }
  }

  /** `readEvents` over a `.zstd` log: events are handed out frame by frame, each frame checked whole first. */
  async *#readZstdEvents(
    log: SessionLog,
    handle: FileHandleOps,
    range: { readonly fromSeq: number; readonly toSeq: number },
  ): AsyncGenerator<LoggedEvent, void, undefined> {
    const projection = createProjection({ registry: this.#registry })
    const queue: LoggedEvent[] = []
    let reachedEnd = false
    const options = await this.#zstdOptions(log, (event) => {
      projection.apply(event)
      if (event.seq >= range.fromSeq && event.seq <= range.toSeq) queue.push(event)
      if (event.seq >= range.toSeq) reachedEnd = true
    })
    const chunks = scanZstdLogChunks(
      readFileChunks(handle, { chunkBytes: this.#limits.readChunkBytes }),
      options,
    )
    for (;;) {
      let step
      try {
        step = await chunks.next()
      } catch (error) {
        throw toStoreError(error, { op: 'read', file: log.file, fallback: JsonlErrorCode.READ_FAILED })
      }
      while (queue.length > 0) yield queue.shift()!
      if (reachedEnd) return
      if (step.done === true) {
        const outcome = step.value
        if (outcome.damage === null) return
        const refined = await refineRepeatedSeq(
          outcome,
          () => zstdPlainSource(handle, options),
          this.#limits.maxLineBytes,
        )
        throw refined.damage!
      }
    }
  }

  async compress(id: string, options: CompressOptions = {}): Promise<CompressResult> {
    assertSessionId(id)
    // V1: refuse a newer version before taking the lock or writing anything.
    {
      const { handle, log } = await this.#openLog(id, { write: false })
      try {
        const peek = await this.#peekHeader(id, handle, log)
        if (peek.damage !== null && isRefusal(peek.damage)) throw peek.damage
      } finally {
        await handle.close().catch(() => undefined)
      }
    }
    const directory = await this.#checkSessionDirectory(id, { write: true })
    return compressSession(
      {
        fs: this.#fs,
        directory,
        id,
        limits: this.#limits,
        registry: this.#registry,
        logger: this.#logger,
        lock: this.#lock,
        randomHex: this.#randomHex,
      },
      options,
    )
  }

  async openReader(
    id: string,
    options: { readonly allowDamaged?: boolean } = {},
  ): Promise<SessionReadResult> {
    assertSessionId(id)
    const older = await this.#olderGeneration(id)
    if (older !== null) return this.#readOlder(id, older)
    const { handle, directory, log } = await this.#openLog(id, { write: false })
    let scan: SessionScan
    let frames: ZstdLogStats | undefined
    try {
      if (log.encoding === 'zstd') {
        const zstdScan = await this.#scanZstd(log, handle)
        frames = zstdScan.zstd
        scan = zstdScan
      } else {
        scan = await scanWithCheckpoint(this.#checkpointContext(id, directory), handle)
      }
    } finally {
      await handle.close().catch(() => undefined)
    }
    const { outcome, projection } = scan
    const damage = outcome.damage
    if (damage !== null && (!options.allowDamaged || isRefusal(damage))) throw damage
    // I7: the generation this one was migrated from must be unchanged (a size check on reads).
    const fork =
      damage === null ? await this.#generationFork(outcome.header, { id, directory, mode: 'read' }) : null
    if (fork !== null && options.allowDamaged !== true) throw fork
    if (outcome.headerMissing) {
      this.#logger.warn(`Session ${id} has no valid header (a crash during creation?); read as empty.`, {
        id,
        file: log.file,
      })
    }
    return {
      header: outcome.header,
      headerMissing: outcome.headerMissing,
      projection,
      lastSeq: outcome.lastSeq,
      tornTail: outcome.tornTail,
      error: damage ?? fork,
      pendingToolCalls: projection.repairState.pendingCalls,
      stats: { ...outcome.stats, projection: projection.stats },
      file: log.file,
      bytes: outcome.bytesRead,
      checkpoint: scan.checkpoint,
      ...(frames === undefined ? {} : { frames }),
    }
  }

  readEvents(
    id: string,
    options: { readonly fromSeq?: number; readonly toSeq?: number } = {},
  ): AsyncIterable<LoggedEvent> {
    assertSessionId(id)
    assertSeqRange(id, options)
    return this.#readEvents(id, options)
  }

  async *#readEvents(
    id: string,
    options: { readonly fromSeq?: number; readonly toSeq?: number },
  ): AsyncGenerator<LoggedEvent, void, undefined> {
    const fromSeq = options.fromSeq ?? 0
    const toSeq = options.toSeq ?? Infinity
    const older = await this.#olderGeneration(id)
    if (older !== null) {
      yield* readOlderGenerationEvents(this.#generationContext(), { ...older, id, fromSeq, toSeq })
      return
    }
    const { handle, directory, log } = await this.#openLog(id, { write: false })
    const file = log.file
    try {
      if (log.encoding === 'zstd') {
        yield* this.#readZstdEvents(log, handle, { fromSeq, toSeq })
        return
      }
      // A checkpoint lets a late fromSeq seek instead of scanning from byte 0 (see planReadFrom).
      const start = await planReadFrom(this.#checkpointContext(id, directory), handle, fromSeq)
      const projection = start.projection
      const queue: LoggedEvent[] = []
      let reachedEnd = false
      const chunkBytes = this.#limits.readChunkBytes
      const source = readFileChunks(
        handle,
        start.resume === null ? { chunkBytes } : { chunkBytes, start: start.resume.offset },
      )
      const chunks = scanLogChunks(source, {
        format: V4_FORMAT,
        limits: this.#limits,
        registry: this.#registry,
        file,
        sessionId: id,
        onEvent: (event) => {
          if (event.seq > start.trustedThrough) projection.apply(event)
          if (event.seq >= fromSeq && event.seq <= toSeq) queue.push(event)
          if (event.seq >= toSeq) reachedEnd = true
        },
        ...(start.resume === null ? {} : { resume: start.resume }),
      })
      for (;;) {
        let step: IteratorResult<void, ScanOutcome>
        try {
          step = await chunks.next()
        } catch (error) {
          throw toStoreError(error, { op: 'read', file, fallback: JsonlErrorCode.READ_FAILED })
        }
        while (queue.length > 0) yield queue.shift()!
        if (reachedEnd) return
        if (step.done === true) {
          let outcome = step.value
          if (outcome.damage !== null) {
            outcome = await refineRepeatedSeq(
              outcome,
              () => readFileChunks(handle, { chunkBytes: this.#limits.readChunkBytes }),
              this.#limits.maxLineBytes,
            )
            throw outcome.damage!
          }
          return
        }
      }
    } finally {
      await handle.close().catch(() => undefined)
    }
  }

  async verify(id: string): Promise<VerifyReport> {
    assertSessionId(id)
    const older = await this.#olderGeneration(id)
    if (older !== null) {
      const report = await verifyOlderGeneration(this.#generationContext(), {
        directory: older.directory,
        id,
        generation: older.source,
      })
      if (report.damage !== null && isRefusal(report.damage)) throw report.damage
      return { id, ...report }
    }
    const { handle, log } = await this.#openLog(id, { write: false })
    let scan: OpenScan
    try {
      scan = await this.#scan(id, handle, { log })
    } finally {
      await handle.close().catch(() => undefined)
    }
    const { outcome } = scan
    if (outcome.damage !== null && isRefusal(outcome.damage)) throw outcome.damage
    return {
      id,
      file: log.file,
      status: outcome.damage !== null ? 'damaged' : outcome.tornTail !== null ? 'torn-tail' : 'ok',
      headerMissing: outcome.headerMissing,
      bytes: outcome.bytesRead,
      events: outcome.stats.events,
      lastSeq: outcome.lastSeq,
      tornTail: outcome.tornTail,
      damage: outcome.damage,
      version: SESSION_FORMAT_VERSION,
    }
  }

  async list(): Promise<{ sessions: SessionSummary[]; problems: { id: string; error: JsonlStoreError }[] }> {
    const sessions: SessionSummary[] = []
    const problems: { id: string; error: JsonlStoreError }[] = []
    let names: string[]
    try {
      await this.#ensureRoot(false)
      names = await this.#fs.readdir(this.root)
    } catch (error) {
      if (JsonlStoreError.is(error) && error.code === JsonlErrorCode.SESSION_NOT_FOUND)
        return { sessions, problems }
      throw toStoreError(error, { op: 'list', file: '', fallback: JsonlErrorCode.READ_FAILED })
    }
    const ids = names.filter((name) => isSessionId(name)).sort()
    for (let start = 0; start < ids.length; start += LIST_CONCURRENCY) {
      const batch = ids.slice(start, start + LIST_CONCURRENCY)
      const results = await Promise.all(batch.map((id) => this.#summarize(id)))
      for (const result of results) {
        if ('error' in result) problems.push(result)
        else sessions.push({ ...result, version: result.version ?? SESSION_FORMAT_VERSION })
      }
    }
    return { sessions, problems }
  }

  async #summarize(id: string): Promise<LogSummary | { id: string; error: JsonlStoreError }> {
    const file = `${id}/${LOG_FILE_NAME}`
    try {
      // The name's version only: a v4 header is read (and its version checked) below.
      const older = await this.#olderGeneration(id, { peek: false })
      if (older !== null) {
        const summary = await summarizeOlderGeneration(this.#generationContext(), {
          directory: older.directory,
          id,
          generation: older.source,
        })
        return { id, ...summary }
      }
      const { handle, log } = await this.#openLog(id, { write: false })
      try {
        const stats = await handle.stat()
        const outcome = await this.#peekHeader(id, handle, log)
        if (outcome.damage !== null) return { id, error: outcome.damage }
        if (outcome.header === null) {
          return {
            id,
            error: new JsonlStoreError({
              code: JsonlErrorCode.INVALID_HEADER,
              message: `${file} has no valid header line: expected a checksummed agent-ledger header, found ${stats.size === 0 ? 'an empty file' : 'a torn or damaged first line'}.`,
              file,
              line: 1,
              offset: 0,
              details: { headerMissing: true, bytes: stats.size },
            }),
          }
        }
        return {
          id,
          header: outcome.header,
          file: log.file,
          bytes: stats.size,
          modifiedAt: stats.mtime.toISOString(),
        }
      } finally {
        await handle.close().catch(() => undefined)
      }
    } catch (error) {
      return { id, error: toStoreError(error, { op: 'read', file, fallback: JsonlErrorCode.READ_FAILED }) }
    }
  }

  // ---------------------------------------------------------------- writing

  async openWriter(id: string): Promise<SessionWriter> {
    assertSessionId(id)
    let file = `${id}/${LOG_FILE_NAME}`
    // V1, and a file name whose version differs from its header: refused before the lock, touching nothing.
    const older = await this.#olderGeneration(id)
    // V1: refuse a newer version before taking the lock or writing anything.
    if (older === null) {
      const { handle, log } = await this.#openLog(id, { write: false })
      try {
        const peek = await this.#peekHeader(id, handle, log)
        if (peek.damage !== null && isRefusal(peek.damage)) throw peek.damage
      } finally {
        await handle.close().catch(() => undefined)
      }
    }
    const directory = await this.#checkSessionDirectory(id, { write: true })
    const lock = await acquireWriterLock(this.#fs, directory, this.#lock)
    let handle: FileHandleOps | undefined
    try {
      await removeStaleTemps(this.#fs, directory)
      // An older generation is first published as session.v4.jsonl (M1-M7); appends go there.
      if (older !== null) await this.#migrateUnderLock({ id, directory, source: older.source, lock })
      const opened = await this.#openLog(id, { write: true })
      handle = opened.handle
      const { log } = opened
      file = log.file
      const codec = log.encoding === 'zstd' ? await zstdCodecFor(log.file) : undefined
      const stats = await handle.stat()
      if (stats.nlink !== 1) {
        throw new JsonlStoreError({
          code: JsonlErrorCode.HARDLINK_REFUSED,
          message: `${file} has ${stats.nlink} hard links: expected exactly one (another name could be a victim file); nothing was written.`,
          file,
          details: { nlink: stats.nlink, ino: stats.ino },
        })
      }
      if ((stats.mode & 0o077) !== 0) {
        const narrowed = stats.mode & 0o700
        this.#logger.warn(
          `${file} had mode ${(stats.mode & 0o777).toString(8)}; set to ${narrowed.toString(8)}.`,
          {
            file,
            mode: (stats.mode & 0o777).toString(8),
          },
        )
        await handle.chmod(narrowed)
      }
      const scan =
        log.encoding === 'zstd'
          ? await this.#scanZstd(log, handle)
          : // A write open checks the line checksums of the prefix a checkpoint lets it skip.
            await scanWithCheckpoint(this.#checkpointContext(id, directory), handle, { verifyPrefix: true })
      const { outcome, projection } = scan
      if (outcome.damage !== null) throw outcome.damage
      // I7: the generation this one was migrated from must be unchanged (size and sha256), or writes are refused.
      const fork = await this.#generationFork(outcome.header, { id, directory, mode: 'write' })
      if (fork !== null) throw fork
      let quarantineFile: string | null = null
      let durableOffset = outcome.goodEndOffset
      if (outcome.tornTail !== null || (outcome.headerMissing && stats.size > 0)) {
        quarantineFile = await quarantineTail({
          fs: this.#fs,
          directory,
          id,
          logName: log.name,
          log: handle,
          offset: outcome.goodEndOffset,
          chunkBytes: this.#limits.readChunkBytes,
          keep: this.#limits.maxQuarantineFiles,
        })
        this.#logger.warn(`Quarantined the torn tail of ${file} into ${id}/${quarantineFile}.`, {
          file,
          offset: outcome.goodEndOffset,
          bytes: outcome.tornTail?.bytes ?? stats.size,
          reason: outcome.tornTail?.reason ?? 'tailGarbage',
        })
      } else {
        // What a crashed writer left in the page cache becomes durable before we build on it.
        await handle.datasync()
      }
      let header = outcome.header
      if (header === null) {
        // T4: no header (a crash during creation): nothing was ever acknowledged; re-initialise.
        header = this.#buildHeader(id, {})
        const headerLine = encodeJsonLine(JSON.stringify(header))
        const start = codec === undefined ? headerLine : encodeZstdLines(codec, headerLine)
        await handle.write(start, 0)
        await handle.datasync()
        durableOffset = start.length
      }
      const writer = this.#newWriter({
        id,
        log,
        codec,
        header,
        directory,
        handle,
        lock,
        projection,
        durableOffset,
        recovery: {
          tornTail: outcome.tornTail,
          quarantineFile,
          repairs: [],
          headerMissing: outcome.headerMissing,
          checkpoint: scan.checkpoint,
        },
        checkpoints: this.#checkpointWriter({
          id,
          directory,
          handle,
          header,
          lastLine: scan.lastLine,
          seqIndex: scan.seqIndex,
          coveredSeq: scan.checkpoint?.seq ?? -1,
          carry: scan.carry,
        }),
      })
      return await this.#repairAndReturn(writer)
    } catch (error) {
      await handle?.close().catch(() => undefined)
      await lock.release().catch(() => undefined)
      throw toStoreError(error, {
        op: 'open-append',
        file,
        which: 'log',
        fallback: JsonlErrorCode.WRITE_FAILED,
      })
    }
  }

  #newWriter(init: {
    readonly id: string
    readonly log: SessionLog
    readonly codec: ZstdCodec | undefined
    readonly header: SessionHeader
    readonly directory: string
    readonly handle: FileHandleOps
    readonly lock: WriterLock
    readonly projection: Projection
    readonly durableOffset: number
    readonly recovery: WriterRecovery
    readonly checkpoints: CheckpointWriter | undefined
  }): SessionWriterImpl {
    return new SessionWriterImpl({
      id: init.id,
      header: init.header,
      path: join(init.directory, init.log.name),
      file: init.log.file,
      fs: this.#fs,
      handle: init.handle,
      lock: init.lock,
      projection: init.projection,
      durableOffset: init.durableOffset,
      registry: this.#registry,
      limits: this.#limits,
      flushPolicy: this.#flushPolicy,
      clock: this.#clock,
      logger: this.#logger,
      recovery: init.recovery,
      redaction: this.#redaction,
      // Checkpoints bind plain byte offsets: a .zstd log has none (its opens replay every frame).
      checkpoints: init.log.encoding === 'zstd' ? undefined : init.checkpoints,
      encodeBatch: init.codec === undefined ? undefined : zstdBatchEncoder(init.codec, init.log.file),
    })
  }

  /** Appends loop-repair's closers (if any) and makes them durable before handing the writer out. */
  async #repairAndReturn(writer: SessionWriterImpl): Promise<SessionWriter> {
    try {
      const plan = planRepairFromState(writer.projection.repairState, {
        nextSeq: writer.projection.nextSeq,
        time: this.#clock(),
      })
      const repairs: RepairAction[] = []
      for (let index = 0; index < plan.events.length; index += 1) {
        const planned = plan.events[index]!
        writer.append({
          type: planned.type,
          data: planned.data,
          ...(planned.sourceEventSeqs === undefined ? {} : { sourceEventSeqs: planned.sourceEventSeqs }),
        } as never)
        repairs.push(plan.actions[index]!)
      }
      if (repairs.length > 0) {
        await writer.flush()
        writer.recordRepairs(repairs)
      }
      return writer
    } catch (error) {
      await writer.close().catch(() => undefined)
      throw error
    }
  }

  // ---------------------------------------------------------------- generations and migration

  #generationContext(): GenerationStoreContext {
    return { fs: this.#fs, registry: this.#registry, limits: this.#limits }
  }

  /**
   * The session's current generation when it is older than v4 (read through migration),
   * else null. Checks the versions first: VERSION_TOO_NEW (by name or header) and
   * GENERATION_VERSION_MISMATCH are thrown before anything is locked or written.
   */
  async #olderGeneration(
    id: string,
    options: { readonly peek?: boolean } = {},
  ): Promise<{ readonly directory: string; readonly source: GenerationFile } | null> {
    await this.#ensureRoot(false)
    const directory = await this.#checkSessionDirectory(id, { write: false })
    const picked = await resolveCurrentGeneration(this.#generationContext(), {
      directory,
      id,
      ...(options.peek === undefined ? {} : { peek: options.peek }),
    })
    return isOlderGeneration(picked.current) ? { directory, source: picked.current } : null
  }

  /** A read-only open of an older generation: migrated in memory, nothing written. */
  async #readOlder(
    id: string,
    older: { readonly directory: string; readonly source: GenerationFile },
  ): Promise<SessionReadResult> {
    const { migration, projection, events } = await readOlderGeneration(this.#generationContext(), {
      directory: older.directory,
      id,
      source: older.source,
    })
    const { source } = migration
    return {
      header: migration.header,
      headerMissing: false,
      projection,
      lastSeq: migration.lastSeq,
      tornTail: source.tornTail,
      error: null,
      pendingToolCalls: projection.repairState.pendingCalls,
      stats: {
        goodLines: events + 1,
        events,
        ignoredUnknown: source.ignoredUnknown,
        projection: projection.stats,
      },
      file: source.file,
      bytes: source.migratedFrom.bytes,
      checkpoint: null,
    }
  }

  /**
   * I7: checks the generation a migrated header names. `read` compares sizes (cheap on
   * every read), `write` sizes and sha256. Returns the GENERATION_FORK error, or null; a
   * missing source (deleted by hand) is a warning on write.
   */
  async #generationFork(
    header: SessionHeader | null,
    where: { readonly id: string; readonly directory: string; readonly mode: 'read' | 'write' },
  ): Promise<JsonlStoreError | null> {
    if (header?.migratedFrom === undefined) return null
    const { id, directory, mode } = where
    const check = await detectGenerationFork({
      fs: this.#fs,
      directory,
      sessionId: id,
      header,
      registry: this.#registry,
      limits: this.#limits,
      ...(mode === 'read' ? { check: 'size' as const } : {}),
    })
    if (check.status === 'missing' && mode === 'write') {
      this.#logger.warn(
        `${check.file}, the generation ${id} was migrated from, is gone: it cannot be checked for events appended after the migration.`,
        { id, file: check.file },
      )
    }
    return check.status === 'forked' ? check.error : null
  }

  /** Publishes the v4 generation of an older one, under the writer lock the caller holds. */
  async #migrateUnderLock(request: {
    readonly id: string
    readonly directory: string
    readonly source: GenerationFile
    readonly lock: WriterLock
    readonly onProgress?: ((progress: MigrationProgress) => void) | undefined
  }): Promise<MigrationWriteResult> {
    return migrateSession({
      mode: 'write',
      fs: this.#fs,
      directory: request.directory,
      sessionId: request.id,
      source: request.source,
      registry: this.#registry,
      limits: this.#limits,
      lock: request.lock,
      randomHex: this.#randomHex,
      ...(request.onProgress === undefined ? {} : { onProgress: request.onProgress }),
    })
  }

  async migrate(
    id: string,
    options: {
      readonly dryRun?: boolean
      readonly onProgress?: (progress: MigrationProgress) => void
    } = {},
  ): Promise<MigrationReport> {
    assertSessionId(id)
    const dryRun = options.dryRun === true
    const target = `${id}/${LOG_FILE_NAME}`
    const older = await this.#olderGeneration(id)
    if (older === null) return this.#upToDate(id, dryRun)
    if (dryRun) {
      const { migration, events } = await readOlderGeneration(this.#generationContext(), {
        directory: older.directory,
        id,
        source: older.source,
        onProgress: options.onProgress,
      })
      return {
        id,
        dryRun,
        outcome: 'dry-run',
        from: migration.source.file,
        fromVersion: older.source.version,
        to: target,
        toVersion: SESSION_FORMAT_VERSION,
        events,
        lastSeq: migration.lastSeq,
        ignoredUnknown: migration.source.ignoredUnknown,
        bytesWritten: 0,
        sha256: null,
        sourceTornTail: migration.source.tornTail,
        header: migration.header,
      }
    }
    const directory = await this.#checkSessionDirectory(id, { write: true })
    const lock = await acquireWriterLock(this.#fs, directory, this.#lock)
    let result
    try {
      await removeStaleTemps(this.#fs, directory)
      result = await this.#migrateUnderLock({
        id,
        directory,
        source: older.source,
        lock,
        onProgress: options.onProgress,
      })
    } catch (error) {
      throw toStoreError(error, {
        op: 'migrate',
        file: `${id}/${older.source.file}`,
        fallback: JsonlErrorCode.WRITE_FAILED,
      })
    } finally {
      await lock.release().catch(() => undefined)
    }
    const { source } = result
    return {
      id,
      dryRun,
      outcome: result.outcome === 'published' ? 'migrated' : result.outcome,
      from: source === null ? null : source.file,
      fromVersion: source === null ? null : source.generation.version,
      to: target,
      toVersion: SESSION_FORMAT_VERSION,
      events: source === null ? null : result.lastSeq + 1,
      lastSeq: source === null ? null : result.lastSeq,
      ignoredUnknown: source === null ? null : source.ignoredUnknown,
      bytesWritten: result.outcome === 'published' ? result.size : 0,
      sha256: result.outcome === 'published' ? result.sha256 : null,
      sourceTornTail: source === null ? null : source.tornTail,
      header: result.header,
    }
  }

  /** `migrate` of a session already in the current format: checked for a fork of its source, nothing written. */
  async #upToDate(id: string, dryRun: boolean): Promise<MigrationReport> {
    const { handle, directory, ...opened } = await this.#openLog(id, { write: false })
    let header: SessionHeader | null
    try {
      const peek = await this.#peekHeader(id, handle, opened.log)
      if (peek.damage !== null) throw peek.damage
      header = peek.header
    } finally {
      await handle.close().catch(() => undefined)
    }
    const fork = await this.#generationFork(header, { id, directory, mode: 'write' })
    if (fork !== null) throw fork
    return {
      id,
      dryRun,
      outcome: 'up-to-date',
      from: null,
      fromVersion: null,
      to: `${id}/${LOG_FILE_NAME}`,
      toVersion: SESSION_FORMAT_VERSION,
      events: null,
      lastSeq: null,
      ignoredUnknown: null,
      bytesWritten: 0,
      sha256: null,
      sourceTornTail: null,
      header,
    }
  }

  // ---------------------------------------------------------------- salvage and fork

  async salvage(id: string, request: { readonly to: string }): Promise<SalvageReport> {
    assertSessionId(id)
    const to = assertSessionId(request.to)
    if ((await this.#olderGeneration(id)) !== null) return this.#salvageOlder(id, to)
    const { handle, log } = await this.#openLog(id, { write: false })
    try {
      const { outcome, zstd } = await this.#scan(id, handle, { log })
      const sourceFile = log.file
      if (outcome.damage !== null && isRefusal(outcome.damage)) throw outcome.damage
      // A damaged header (CRLF line endings, a foreign file...): the new session starts empty,
      // its session/salvage event naming what was left behind; the source stays untouched.
      if (outcome.header === null && outcome.damage === null) {
        throw new JsonlStoreError({
          code: JsonlErrorCode.INVALID_HEADER,
          message: `Cannot salvage ${sourceFile}: expected a valid header line, found none.`,
          file: sourceFile,
          line: 1,
          offset: 0,
        })
      }
      const salvageSeq = outcome.lastSeq + 1
      const reason =
        outcome.damage !== null ? outcome.damage.code : outcome.tornTail !== null ? 'torn-tail' : 'none'
      const salvageEvent: SessionEvent<'session/salvage'> = {
        seq: salvageSeq,
        time: this.#clock(),
        type: 'session/salvage',
        data: {
          sourceSession: id,
          sourceFile,
          lastGoodSeq: outcome.lastSeq,
          droppedFromOffset: outcome.goodEndOffset,
          reason,
        },
      }
      parseEvent(salvageEvent, this.#registry)
      const source = outcome.header
      const header = this.#buildHeader(to, {
        ...(source?.cwd === undefined ? {} : { cwd: source.cwd }),
        ...(source?.delegationDepth === undefined ? {} : { delegationDepth: source.delegationDepth }),
        ...(source?.metadata === undefined ? {} : { metadata: source.metadata }),
      })
      await this.#ensureRoot(true)
      const directory = await this.#ensureSessionDirectory(to)
      const chunkBytes = this.#limits.readChunkBytes
      const target = sessionLog(to, this.#encoding)
      const codec =
        target.encoding === 'zstd' || log.encoding === 'zstd' ? await zstdCodecFor(log.file) : undefined
      const limits = this.#limits
      const published = await this.#publish({
        id: to,
        directory,
        kind: 'salvage',
        header,
        log: target,
        codec: target.encoding === 'zstd' ? codec : undefined,
        body: async function* copyGoodLines() {
          // The good lines after the header, byte for byte (a .zstd source: its plain content).
          yield* zstd === undefined || codec === undefined
            ? readFileChunks(handle, {
                chunkBytes,
                start: outcome.headerEndOffset,
                end: outcome.goodEndOffset,
              })
            : zstdPlainRange(handle, { codec, limits, start: zstd.plainHeaderEnd, end: zstd.plainGoodEnd })
          yield encodeEventLine(salvageEvent)
        },
      })
      await published.handle.close().catch(() => undefined)
      await published.lock.release()
      return {
        from: id,
        to,
        file: target.file,
        copiedEvents: outcome.lastSeq + 1,
        lastGoodSeq: outcome.lastSeq,
        salvageSeq,
        droppedFromOffset: outcome.goodEndOffset,
        droppedBytes: outcome.bytesRead - outcome.goodEndOffset,
        reason,
        sourceError: outcome.damage,
      }
    } finally {
      await handle.close().catch(() => undefined)
    }
  }

  /**
   * Salvage of an older generation (v0 `session.jsonl`), read through migration: its good
   * prefix is re-encoded as v4 lines (another format: no byte copy), then `session/salvage`.
   * Offsets and byte counts are the source file's.
   */
  async #salvageOlder(id: string, to: string): Promise<SalvageReport> {
    const report = await this.verify(id)
    let lastSeq = -1
    let damage: JsonlStoreError | null = null
    try {
      for await (const event of this.readEvents(id)) lastSeq = event.seq
    } catch (error) {
      if (!JsonlStoreError.is(error)) throw error
      damage = error
    }
    const { header: source } = await this.readHeader(id)
    const sourceFile = report.file
    const droppedFromOffset = report.damage?.offset ?? report.tornTail?.offset ?? report.bytes
    const reason = damage !== null ? damage.code : report.tornTail !== null ? 'torn-tail' : 'none'
    const salvageEvent: SessionEvent<'session/salvage'> = {
      seq: lastSeq + 1,
      time: this.#clock(),
      type: 'session/salvage',
      data: { sourceSession: id, sourceFile, lastGoodSeq: lastSeq, droppedFromOffset, reason },
    }
    parseEvent(salvageEvent, this.#registry)
    const header = this.#buildHeader(to, {
      ...(source?.cwd === undefined ? {} : { cwd: source.cwd }),
      ...(source?.delegationDepth === undefined ? {} : { delegationDepth: source.delegationDepth }),
      ...(source?.metadata === undefined ? {} : { metadata: source.metadata }),
    })
    await this.#ensureRoot(true)
    const directory = await this.#ensureSessionDirectory(to)
    const target = sessionLog(to, this.#encoding)
    const events = (): AsyncIterable<LoggedEvent> => this.readEvents(id, { toSeq: lastSeq })
    const published = await this.#publish({
      id: to,
      directory,
      kind: 'salvage',
      header,
      log: target,
      codec: target.encoding === 'zstd' ? await zstdCodecFor(target.file) : undefined,
      body: async function* reencodeGoodEvents() {
        if (lastSeq >= 0) for await (const event of events()) yield encodeEventLine(event)
        yield encodeEventLine(salvageEvent)
      },
    })
    await published.handle.close().catch(() => undefined)
    await published.lock.release()
    return {
      from: id,
      to,
      file: target.file,
      copiedEvents: lastSeq + 1,
      lastGoodSeq: lastSeq,
      salvageSeq: lastSeq + 1,
      droppedFromOffset,
      droppedBytes: report.bytes - droppedFromOffset,
      reason,
      sourceError: damage,
    }
  }

  async fork(
    id: string,
    request: { readonly to: string; readonly atSeq: number; readonly openTurn?: 'close' | 'refuse' },
  ): Promise<SessionWriter> {
    assertSessionId(id)
    const to = assertSessionId(request.to)
    const { header, prefix } = await this.#forkSource(id, request.atSeq)
    let seed: ReturnType<typeof planFork>
    try {
      seed = planFork(prefix, {
        boundarySeq: request.atSeq,
        parentSession: id,
        ...(request.openTurn === undefined ? {} : { openTurn: request.openTurn }),
      })
    } catch (error) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.FORK_REFUSED,
        message: `Cannot fork ${id} at seq ${String(request.atSeq)}: ${error instanceof Error ? error.message : String(error)}.`,
        file: `${id}/${LOG_FILE_NAME}`,
        seq: Number.isSafeInteger(request.atSeq) ? request.atSeq : undefined,
        details: { projectionCode: ProjectionError.is(error) ? error.code : null },
        cause: error,
      })
    }
    return this.create({
      id: to,
      header: {
        ...(header?.cwd === undefined ? {} : { cwd: header.cwd }),
        ...(header?.delegationDepth === undefined ? {} : { delegationDepth: header.delegationDepth }),
        ...(header?.metadata === undefined ? {} : { metadata: header.metadata }),
        parentSession: seed.header.parentSession,
        seeded: seed.header.seeded,
        inheritedEventCount: seed.header.inheritedEventCount,
      },
      seed: seed.events,
    })
  }

  /** The header and events 0..atSeq of a fork's parent, from whichever log a read opens. */
  async #forkSource(
    id: string,
    atSeq: number,
  ): Promise<{ header: SessionHeader | null; prefix: LoggedEvent[] }> {
    if ((await this.#olderGeneration(id)) !== null) {
      // An older generation (v0 session.jsonl) is read through migration, like every read.
      const prefix: LoggedEvent[] = []
      if (Number.isSafeInteger(atSeq) && atSeq >= 0) {
        for await (const event of this.readEvents(id, { toSeq: atSeq })) prefix.push(event)
      }
      return { header: (await this.readHeader(id)).header, prefix }
    }
    const { handle, log } = await this.#openLog(id, { write: false })
    let header: SessionHeader | null
    const prefix: LoggedEvent[] = []
    try {
      const file = log.file
      const scanOptions = {
        format: V4_FORMAT,
        limits: this.#limits,
        registry: this.#registry,
        file,
        sessionId: id,
        onEvent: (event: LoggedEvent) => {
          if (event.seq <= atSeq) prefix.push(event)
        },
        ...(Number.isSafeInteger(atSeq) ? { stopBeforeLine: atSeq + 3 } : {}),
      }
      const outcome =
        log.encoding === 'zstd'
          ? await scanZstdLog(handle, { ...scanOptions, codec: await zstdCodecFor(file) })
          : await scanLog(readFileChunks(handle, { chunkBytes: this.#limits.readChunkBytes }), scanOptions)
      if (outcome.damage !== null) throw outcome.damage
      header = outcome.header
    } catch (error) {
      throw toStoreError(error, {
        op: 'read',
        file: log.file,
        fallback: JsonlErrorCode.READ_FAILED,
      })
    } finally {
      await handle.close().catch(() => undefined)
    }
    return { header, prefix }
  }

  // ---------------------------------------------------------------- encoding-blind views

  /** The log a read opens now: an older generation, or the v4 log in whichever encoding it has. */
  async #currentLog(
    id: string,
  ): Promise<FollowedLog & { readonly directory: string; readonly name: string }> {
    const older = await this.#olderGeneration(id)
    if (older !== null) {
      const name = older.source.file
      return {
        directory: older.directory,
        name,
        path: join(older.directory, name),
        file: `${id}/${name}`,
        encoding: older.source.encoding,
        version: older.source.version,
      }
    }
    const directory = await this.#checkSessionDirectory(id, { write: false })
    const log = await locateSessionLog({
      fs: this.#fs,
      directory,
      id,
      mode: 'read',
      limits: this.#limits,
      logger: this.#logger,
    })
    return {
      directory,
      name: log.name,
      path: join(directory, log.name),
      file: log.file,
      encoding: log.encoding,
      version: SESSION_FORMAT_VERSION,
    }
  }

  async sessionFiles(id: string): Promise<SessionFiles> {
    assertSessionId(id)
    const log = await this.#currentLog(id)
    return listSessionFiles(this.#fs, {
      directory: log.directory,
      id,
      currentName: log.name,
      version: log.version,
      encoding: log.encoding,
    })
  }

  async readHeader(id: string): Promise<SessionHeaderRead> {
    assertSessionId(id)
    const older = await this.#olderGeneration(id)
    if (older !== null) {
      const summary = await summarizeOlderGeneration(this.#generationContext(), {
        directory: older.directory,
        id,
        generation: older.source,
      })
      return {
        id,
        header: summary.header,
        file: summary.file,
        version: summary.version,
        encoding: older.source.encoding,
      }
    }
    const { handle, log } = await this.#openLog(id, { write: false })
    try {
      const outcome = await this.#peekHeader(id, handle, log)
      if (outcome.damage !== null && isRefusal(outcome.damage)) throw outcome.damage
      return {
        id,
        header: outcome.header,
        file: log.file,
        version: SESSION_FORMAT_VERSION,
        encoding: log.encoding,
      }
    } finally {
      await handle.close().catch(() => undefined)
    }
  }

  follow(id: string, options: FollowOptions = {}): AsyncIterable<LoggedEvent> {
    assertSessionId(id)
    const checked = checkFollowOptions(options)
    return followSession(
      {
        fs: this.#fs,
        limits: this.#limits,
        registry: this.#registry,
        locate: () => this.#currentLog(id),
        readEvents: (fromSeq) => this.readEvents(id, { fromSeq }),
      },
      { ...checked, ...(options.signal === undefined ? {} : { signal: options.signal }) },
    )
  }
}

function isRefusal(error: JsonlStoreError): boolean {
  return (
    error.code === JsonlErrorCode.VERSION_TOO_NEW ||
    error.code === JsonlErrorCode.GENERATION_VERSION_MISMATCH ||
    (error.code === JsonlErrorCode.INVALID_HEADER && error.line === 1)
  )
}

/**
 * A seeded header and its seed agree (FORMAT.md section 3): `seeded: true` needs a seed that
 * holds exactly one `session/end-seed` marker (events after it are the new session's own, as
 * an importer's fork publishes them in one create), naming the header's
 * `parentSession` and, with `inheritedEventCount`, the matching boundary; a marker without
 * `seeded: true` is refused too. Nothing is published otherwise.
 */
function assertSeedMatchesHeader(id: string, header: SessionHeader, seed: readonly LoggedEvent[]): void {
  const markers = seed.filter((event) => event.type === 'session/end-seed')
  const refuse = (expected: string, found: string): never => {
    throw new JsonlStoreError({
      code: JsonlErrorCode.INVALID_HEADER,
      message: `Cannot create session ${id}: expected ${expected}, found ${found}; nothing was published.`,
      file: `${id}/${LOG_FILE_NAME}`,
      details: { field: 'seeded', seeded: header.seeded ?? null, markers: markers.length },
    })
  }
  if (header.seeded !== true) {
    if (markers.length > 0)
      refuse(
        'no session/end-seed event in the seed of a header without "seeded": true',
        `one at seq ${markers[0]!.seq}`,
      )
    return
  }
  if (markers.length !== 1) {
    refuse(
      'a seed holding its one session/end-seed marker (the header says "seeded": true)',
      markers.length === 0 ? `${seed.length} seed event(s) and no marker` : `${markers.length} markers`,
    )
  }
  const data = markers[0]!.data as { readonly parentSession?: unknown; readonly boundarySeq?: unknown }
  if (header.parentSession !== undefined && data.parentSession !== header.parentSession) {
    refuse(
      `the marker to name parentSession ${JSON.stringify(header.parentSession)}`,
      JSON.stringify(data.parentSession) ?? 'nothing',
    )
  }
  if (
    header.inheritedEventCount !== undefined &&
    typeof data.boundarySeq === 'number' &&
    data.boundarySeq + 1 !== header.inheritedEventCount
  ) {
    refuse(
      `inheritedEventCount ${header.inheritedEventCount} to match the marker's boundarySeq + 1`,
      String(data.boundarySeq + 1),
    )
  }
}

/**
 * `readEvents` bounds: each a non-negative safe integer when given, and `fromSeq <= toSeq`
 * (an inverted range is a caller's mistake, not an empty read).
 */
function describeOption(value: unknown): string {
  return typeof value === 'number' ? String(value) : (JSON.stringify(value) ?? typeof value)
}

function assertSeqRange(id: string, options: { readonly fromSeq?: number; readonly toSeq?: number }): void {
  for (const name of ['fromSeq', 'toSeq'] as const) {
    const value: unknown = options[name]
    if (value === undefined) continue
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.INVALID_OPTION,
        message: `Cannot read the events of ${id}: expected ${name} to be a non-negative integer seq, found ${describeOption(value)}.`,
        file: `${id}/${LOG_FILE_NAME}`,
        details: { option: name, found: typeof value === 'number' ? value : describeOption(value) },
      })
    }
  }
  const { fromSeq, toSeq } = options
  if (fromSeq !== undefined && toSeq !== undefined && fromSeq > toSeq) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.INVALID_OPTION,
      message: `Cannot read the events of ${id}: expected fromSeq <= toSeq, found fromSeq ${fromSeq} > toSeq ${toSeq}.`,
      file: `${id}/${LOG_FILE_NAME}`,
      details: { option: 'fromSeq', fromSeq, toSeq },
    })
  }
}

function checkedEncoding(encoding: unknown): LogEncoding {
  if (encoding === 'plain' || encoding === 'zstd') return encoding
  throw new JsonlStoreError({
    code: JsonlErrorCode.INVALID_OPTION,
    message: `Store option encoding must be "plain" or "zstd", found ${JSON.stringify(encoding) ?? String(encoding)}.`,
    file: '',
    details: { option: 'encoding' },
  })
}

function isSessionId(name: string): boolean {
  try {
    assertSessionId(name)
    return true
  } catch {
    return false
  }
}

/**
 * Creates a session store over a root directory. Nothing touches the disk until a method
 * is called.
 *
 * @param options - The root and optional seams (fs, clock), registry, limits, flush policy, lock settings, logger.
 * @returns The store.
 * @throws {@link JsonlStoreError} `INVALID_OPTION` when a limit or flush option is out of range.
 */
export function createSessionStore(options: SessionStoreOptions): SessionStore {
  return new SessionStoreImpl(options)
}
