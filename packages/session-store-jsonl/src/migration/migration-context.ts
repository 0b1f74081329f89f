/*
 * What the steps of a migration share: its options and results, the resolved settings,
 * and throttled progress reporting.
 */

import type { EventRegistry, LoggedEvent, MigratedFrom, SessionHeader } from '@agent-ledger/session-events'

import type { FileHandleOps, FsOps } from '../fs-ops.ts'
import type { GenerationFile } from '../generations.ts'
import type { StoreLimits } from '../limits.ts'
import type { TornTail } from '../log-scanner.ts'
import type { PublishHooks, SourceIdentity } from '../publish-checks.ts'

/** What {@link MigrateSessionOptions.onProgress} receives. */
export interface MigrationProgress {
  /** `scan`: validating the source; `migrate`: writing (or, read mode, handing out) migrated events; `verify`: reading the staged file back; `publish`: linked into place. */
  readonly phase: 'scan' | 'migrate' | 'verify' | 'publish'
  /** Events processed in this phase so far. */
  readonly eventsDone: number
  /** Events the phase will process, once known (after the scan), else null. */
  readonly eventsTotal: number | null
  /** Source bytes read so far (staged bytes in `verify`). */
  readonly bytesRead: number
  /** Size of the source (of the staged file in `verify`). */
  readonly bytesTotal: number
}

/** Options shared by both modes of {@link migrateSession}. */
export interface MigrateSessionOptions {
  /** The file-system seam. Default: the real file system. */
  readonly fs?: FsOps
  /** The session directory (absolute). */
  readonly directory: string
  /** The session id; default the directory's name. Checked before any file-system call. */
  readonly sessionId?: string
  /** The generation to migrate; default the directory's current one ({@link pickCurrentGeneration}). */
  readonly source?: GenerationFile
  /** Known event types; default the core types. */
  readonly registry?: EventRegistry
  readonly limits?: Partial<StoreLimits>
  /** Progress, every `progressEvery` events and at the end of each phase (the CLI shows it). */
  readonly onProgress?: (progress: MigrationProgress) => void
  /** Events between two progress calls; default 10,000. */
  readonly progressEvery?: number
}

/** Read mode: migrate in memory, write nothing. */
export interface MigrateReadOptions extends MigrateSessionOptions {
  readonly mode: 'read'
}

/** Write mode: publish the new generation. */
export interface MigrateWriteOptions extends MigrateSessionOptions {
  readonly mode: 'write'
  /** Crash-test seam passed to {@link publishFile}. */
  readonly hooks?: PublishHooks
  /** Temp-name randomness seam passed to {@link publishFile}. */
  readonly randomHex?: (byteCount: number) => string
  /** The writer lock the caller holds; checked just before the link. */
  readonly lock?: { assertHeld(): Promise<void> }
  /** Return the read-write handle of the published file (outcome `published` only), for appends. */
  readonly keepHandle?: boolean
}

/** The source generation of a migration, as read. */
export interface MigrationSource {
  readonly generation: GenerationFile
  /** Relative to the store root (`<id>/<file>`). */
  readonly file: string
  /** Recorded in the new header. */
  readonly migratedFrom: MigratedFrom
  /** Identity when read (checked again before the link). */
  readonly identity: SourceIdentity & { readonly mode: number }
  /** Unacknowledged bytes at the source's end: left in the source (immutable), not migrated. */
  readonly tornTail: TornTail | null
  /** Events after the header. */
  readonly events: number
  /** Ignorable unknown events among them, carried verbatim. */
  readonly ignoredUnknown: number
}

/** What a read-mode migration returns. */
export interface MigrationReadResult {
  readonly mode: 'read'
  readonly source: MigrationSource
  /** The header the new generation would have. */
  readonly header: SessionHeader
  /** Seq of the last event in the new numbering (-1 when none). */
  readonly lastSeq: number
  /**
   * The migrated events, validated (`parseEvent`), streamed from the source (single use;
   * the source is opened when iteration starts and closed when it ends). Throws a typed
   * error naming the source line when an event cannot be migrated, or when the source
   * changed since the scan.
   */
  readonly events: AsyncIterable<LoggedEvent>
  /** The new generation's header line as it would be written (no `\n`). */
  readonly headerLine: string
  /**
   * The same migrated events as the new generation's exact lines (no `\n`), in batches:
   * what the JSONL backend hands the core for a v0 session. The same single-use stream as
   * `events`: iterate one of the two.
   */
  readonly lines: AsyncIterable<readonly string[]>
}

/** What a write-mode migration did. */
export interface MigrationWriteResult {
  readonly mode: 'write'
  /** `published`: we linked the new generation; `already-published`: another process published the same bytes first; `up-to-date`: nothing to do. */
  readonly outcome: 'published' | 'already-published' | 'up-to-date'
  /** The (new) current generation's file name. */
  readonly file: string
  /** Its absolute path. */
  readonly path: string
  /** Its header. */
  readonly header: SessionHeader
  /** Seq of its last event (-1 when none); for `up-to-date`, -1 unless known (the file is not scanned). */
  readonly lastSeq: number
  /** The migrated source; null when `up-to-date`. */
  readonly source: MigrationSource | null
  /** Bytes written (0 when `up-to-date`). */
  readonly size: number
  /** SHA-256 of the bytes written ('' when `up-to-date`). */
  readonly sha256: string
  /** The read-write handle of the published inode (with `keepHandle`, outcome `published`), else null. */
  readonly handle: FileHandleOps | null
}

export interface Settings {
  readonly fs: FsOps
  readonly directory: string
  readonly sessionId: string
  readonly registry: EventRegistry
  readonly limits: StoreLimits
  readonly progress: Progress
}

/** Throttled progress reporting. */
export class Progress {
  readonly #callback: ((progress: MigrationProgress) => void) | undefined
  readonly #every: number
  #next = 0

  constructor(options: MigrateSessionOptions) {
    this.#callback = options.onProgress
    this.#every = Math.max(1, options.progressEvery ?? 10_000)
  }

  report(progress: MigrationProgress, force = false): void {
    if (this.#callback === undefined) return
    if (!force && progress.eventsDone < this.#next) return
    this.#next = (Math.floor(progress.eventsDone / this.#every) + 1) * this.#every
    this.#callback(progress)
  }

  reset(): void {
    this.#next = 0
  }
}

export function display(settings: Settings, file: string): string {
  return `${settings.sessionId}/${file}`
}
