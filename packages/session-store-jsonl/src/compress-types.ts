/**
 * The types of compress and reseal: options, progress, result, context and one run.
 */
import type { EventRegistry } from '@agent-ledger/session-events'

import type { FsOps } from './fs-ops.ts'
import type { StoreLimits } from './limits.ts'
import type { StoreLogger } from './store-logger.ts'
import type { LockOptions, WriterLock } from './writer-lock.ts'
import type { ZstdCodec } from './zstd/zstd-codec.ts'

/** What `compress` reports while it runs (the CLI shows it). */
export interface CompressProgress {
  /** `scan`: checking the source; `compress`: writing frames; `verify`: reading the staged file back; `publish`: linked or renamed into place. */
  readonly phase: 'scan' | 'compress' | 'verify' | 'publish'
  /** Plain bytes processed so far in this phase (compressed bytes in `verify`). */
  readonly bytesRead: number
  /** Bytes the phase will process. */
  readonly bytesTotal: number
  /** Events checked so far (`scan`, `verify`), when known. */
  readonly eventsDone?: number
  /** Events in the session, once known. */
  readonly eventsTotal?: number | null
}

/** Options of {@link compressSession}. */
export interface CompressOptions {
  /** Progress, at least once per phase and every few MiB. */
  readonly onProgress?: (progress: CompressProgress) => void
  /** Compression level of the sealed frames (default 6; zstd-codec accepts -5..9). */
  readonly level?: number
  /** Plain bytes per sealed frame (default 4 MiB). */
  readonly frameBytes?: number
  /** Crash-test seam: called at the publish points and at `plain-unlinked` / `renamed`. */
  readonly hooks?: { at(point: string): Promise<void> | void }
}

/** What `capabilities.compress.compress` did: its `details`. */
export interface CompressResult {
  readonly id: string
  /** `compressed`: plain -> zstd; `resealed`: small frames re-encoded; `up-to-date`: nothing to do. */
  readonly outcome: 'compressed' | 'resealed' | 'up-to-date'
  /** The `.zstd` log, relative to the store root. */
  readonly file: string
  /** The plain log that was removed (relative to the root), or null. */
  readonly removedFile: string | null
  /** Plain bytes of the log. */
  readonly plainBytes: number
  /** Bytes of the `.zstd` log before (0 when there was none) and after. */
  readonly compressedBytesBefore: number
  readonly compressedBytes: number
  /** `plainBytes / compressedBytes`. */
  readonly ratio: number
  /** Zstandard frames in the result. */
  readonly frames: number
  readonly events: number
  readonly lastSeq: number
  /** A torn tail quarantined before compressing (its file name), or null. */
  readonly quarantineFile: string | null
}

/** What {@link compressSession} needs from the store. */
export interface CompressContext {
  readonly fs: FsOps
  /** The session directory (absolute; checked by the caller). */
  readonly directory: string
  readonly id: string
  readonly limits: StoreLimits
  readonly registry: EventRegistry
  readonly logger: StoreLogger
  readonly lock: Partial<LockOptions>
  readonly randomHex: (byteCount: number) => string
}

/** One compress or reseal in progress: its session, options, lock, codec and progress sink. */
export interface Run {
  readonly context: CompressContext
  readonly options: CompressOptions
  readonly lock: WriterLock
  readonly codec: ZstdCodec
  readonly progress: (progress: CompressProgress, force?: boolean) => void
}
