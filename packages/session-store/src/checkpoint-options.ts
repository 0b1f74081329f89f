/**
 * Projection checkpoints in the core: the `checkpoint` store option, what an open reports
 * about the checkpoint it used or ignored, and the warnings a caller receives.
 */
import { invalidOption } from './checks.ts'

/**
 * The `checkpoint` option of `createSessionStore`: the same amortisation rules as the JSONL
 * store (its README, "Projection checkpoints"; FORMAT.md section 15.3). Used only when the
 * backend offers the `checkpoints` capability.
 */
export interface CheckpointOptions {
  /** Writers write checkpoints and opens use them. Default true (`false`: every open replays everything). */
  readonly enabled?: boolean | undefined
  /** A checkpoint after a flush once this many events became durable since the last one. Default 1,000. */
  readonly everyEvents?: number | undefined
  /** ...and at least this long after the last one, by the store's clock (`turn/end` ignores `everyEvents` only). Default 5,000. */
  readonly minIntervalMs?: number | undefined
  /**
   * No checkpoint while the log is smaller (replaying it is cheaper than storing one). The
   * log's size is its lines with their `\n`, in UTF-16 code units (bytes for ASCII). Default 1 MiB.
   */
  readonly minLogBytes?: number | undefined
  /**
   * The log must grow by this x (last checkpoint's body size + 4 KiB) before the next one:
   * checkpoints then add at most about 1/ratio to what a writer writes. 0 turns the rule off. Default 16.
   */
  readonly minGrowthRatio?: number | undefined
  /** A larger stored checkpoint body is ignored with a warning (`too-large`). Default 1 GiB. */
  readonly maxBytes?: number | undefined
}

/** {@link CheckpointOptions} with every default filled in (internal). */
export interface ResolvedCheckpointOptions {
  readonly enabled: boolean
  readonly everyEvents: number
  readonly minIntervalMs: number
  readonly minLogBytes: number
  readonly minGrowthRatio: number
  readonly maxBytes: number
}

/** The defaults of {@link CheckpointOptions} (the JSONL store's). */
export const DEFAULT_CHECKPOINT_OPTIONS: ResolvedCheckpointOptions = Object.freeze({
  enabled: true,
  everyEvents: 1000,
  minIntervalMs: 5000,
  minLogBytes: 1024 * 1024,
  minGrowthRatio: 16,
  maxBytes: 1024 * 1024 * 1024,
})

/** Why an open did not use a checkpoint. */
export type CheckpointSkipReason =
  /** The backend has no `checkpoints` capability. */
  | 'unsupported'
  /** `checkpoint.enabled` is false. */
  | 'disabled'
  /** The backend holds none for this session. */
  | 'missing'
  /** `getCheckpoint` failed (the open replays instead). */
  | 'backend'
  /** What is stored under the checkpoint's name cannot be read as one (the backend says what: a symbolic link, a special file, a damaged envelope). */
  | 'unreadable'
  /** Bound to another header line. */
  | 'header'
  /** Built with another event registry. */
  | 'registry'
  /** Built by a store with larger line limits than this one's. */
  | 'limits'
  /** Its seq is at or past the session's head. */
  | 'past-head'
  /** Event `seq` is not there, fails its checks, or has another checksum. */
  | 'event'
  /** Its body is larger than `checkpoint.maxBytes`. */
  | 'too-large'
  /** Its body is not a core checkpoint, or does not decode. */
  | 'decode'
  /** Its body fails its own checksum. */
  | 'checksum'
  /** An older checkpoint version (this build never trusts one). */
  | 'old-version'
  /** A newer checkpoint version than this build reads. */
  | 'newer-version'
  /** The body decodes but does not fit the binding (`nextSeq`, counters). */
  | 'schema'
  /** The projection does not restore from it. */
  | 'snapshot'
  /** The events after it are damaged, missing (a gap) or torn: the full replay reports exactly where. */
  | 'tail'

/** What an open did with the session's checkpoint (`SessionReadResult.checkpoint`, `WriterRecovery.checkpoint`). */
export type CheckpointUse =
  | {
      readonly used: true
      /** The last event the checkpoint covered. */
      readonly seq: number
      /** Events read and folded after it. */
      readonly replayedEvents: number
    }
  | {
      readonly used: false
      readonly reason: CheckpointSkipReason
      /** What was expected and found (empty for `unsupported`, `disabled`, `missing`). */
      readonly message: string
      /** Events the full replay read. */
      readonly replayedEvents: number
    }

/** A problem the store handled on its own (the operation succeeded), for `onWarning`. */
export interface SessionStoreWarning {
  /**
   * `CHECKPOINT_IGNORED`: an open found a checkpoint it could not trust and replayed every
   * event (`details.reason` is a {@link CheckpointSkipReason}); `CHECKPOINT_WRITE_FAILED`: a
   * writer could not store a checkpoint (the log is unaffected).
   */
  readonly code: 'CHECKPOINT_IGNORED' | 'CHECKPOINT_WRITE_FAILED'
  readonly sessionId: string
  readonly message: string
  readonly details: Readonly<Record<string, unknown>>
  readonly cause?: unknown
}

function count(value: unknown, name: keyof CheckpointOptions, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw invalidOption(`checkpoint.${name}`, 'a non-negative integer', value)
  }
  return value
}

function positive(value: unknown, name: keyof CheckpointOptions, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw invalidOption(`checkpoint.${name}`, 'a positive integer', value)
  }
  return value
}

/** Largest `minGrowthRatio` (a larger one would all but turn checkpoints off: say `enabled: false`). */
const MAX_GROWTH_RATIO = 1024

/**
 * Fills in the defaults of the `checkpoint` option.
 *
 * @param options - The caller's option, or undefined.
 * @returns Every member set.
 * @throws {@link SessionStoreError} `INVALID_OPTION` naming the member: `enabled` not a boolean,
 *   `everyEvents` or `maxBytes` not a positive integer, `minIntervalMs` or `minLogBytes` not a
 *   non-negative integer, `minGrowthRatio` not a finite number from 0 to 1024.
 */
export function resolveCheckpointOptions(options: CheckpointOptions | undefined): ResolvedCheckpointOptions {
  if (options === undefined) return DEFAULT_CHECKPOINT_OPTIONS
  if (typeof options !== 'object' || options === null) throw invalidOption('checkpoint', 'an object', options)
  const enabled = options.enabled ?? true
  if (typeof enabled !== 'boolean') throw invalidOption('checkpoint.enabled', 'a boolean', enabled)
  const defaults = DEFAULT_CHECKPOINT_OPTIONS
  const maxBytes = positive(options.maxBytes, 'maxBytes', defaults.maxBytes)
  const ratio = options.minGrowthRatio ?? defaults.minGrowthRatio
  if (typeof ratio !== 'number' || !Number.isFinite(ratio) || ratio < 0 || ratio > MAX_GROWTH_RATIO) {
    throw invalidOption('checkpoint.minGrowthRatio', `a finite number from 0 to ${MAX_GROWTH_RATIO}`, ratio)
  }
  return Object.freeze({
    enabled,
    everyEvents: positive(options.everyEvents, 'everyEvents', defaults.everyEvents),
    minIntervalMs: count(options.minIntervalMs, 'minIntervalMs', defaults.minIntervalMs),
    minLogBytes: count(options.minLogBytes, 'minLogBytes', defaults.minLogBytes),
    minGrowthRatio: ratio,
    maxBytes,
  })
}
