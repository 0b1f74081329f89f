import { DEFAULT_CHECKPOINT_OPTIONS as CORE_CHECKPOINT_DEFAULTS } from '@agent-ledger/session-store'

import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'

/**
 * When projection checkpoints are written and whether they are used (the store's
 * `checkpoint` option). A checkpoint is a cache: turning it off changes no result, only
 * the cost of a cold open.
 */
export interface CheckpointOptions {
  /** Writers write checkpoints and opens use them. Default true. When false, every open replays the whole log. */
  enabled: boolean
  /**
   * Throttle: a writer also writes a checkpoint after a flush once at least this many events
   * became durable since its last checkpoint... Default 1000.
   */
  everyEvents: number
  /**
   * ...and at least this many milliseconds (monotonic clock) passed since its last checkpoint.
   * Default 5000. A flush that makes a `turn/end` durable writes one regardless of
   * `everyEvents` but not of this interval (a fast agent ends many turns a second); `close()`
   * writes one regardless of both (when the log moved since the last one).
   */
  minIntervalMs: number
  /**
   * Writers write no checkpoint while the log is smaller than this many bytes: replaying a
   * small log costs less than writing and fsyncing a checkpoint at every turn. Default 1 MiB.
   */
  minLogBytes: number
  /**
   * Amortisation: a writer writes a checkpoint (for any reason, `turn/end` and `close()`
   * included) only once the log grew since its last checkpoint by at least this many times
   * that checkpoint's size plus 4 KiB. Checkpoints then add at most about 1 / this ratio to
   * the bytes a writer writes however long the session, and a cold open replays at most that
   * much of the tail. Default 16; 0 turns the rule off (a checkpoint at every `turn/end`).
   */
  minGrowthRatio: number
  /** Largest checkpoint file an open reads; a larger one is ignored with a warning. Default 1 GiB. */
  maxBytes: number
}

/** The documented default {@link CheckpointOptions}: the session core's, one set of rules for both stores. */
export const DEFAULT_CHECKPOINT_OPTIONS: Readonly<CheckpointOptions> = CORE_CHECKPOINT_DEFAULTS

/**
 * Fills in the defaults of partial checkpoint options and checks them.
 *
 * @param partial - Caller overrides.
 * @returns Complete options.
 * @throws {@link JsonlStoreError} `INVALID_OPTION` when `enabled` is not a boolean, `everyEvents` or `maxBytes`
 *   is not a positive integer, `minIntervalMs` or `minLogBytes` is not a non-negative integer, or
 *   `minGrowthRatio` is not a finite number from 0 to 1024.
 */
export function resolveCheckpointOptions(partial: Partial<CheckpointOptions> = {}): CheckpointOptions {
  const options: CheckpointOptions = { ...DEFAULT_CHECKPOINT_OPTIONS, ...partial }
  const invalid = (name: string, expected: string, found: unknown): JsonlStoreError =>
    new JsonlStoreError({
      code: JsonlErrorCode.INVALID_OPTION,
      message: `Checkpoint option ${name} must be ${expected}, found ${String(found)}.`,
      file: '',
      details: { option: `checkpoint.${name}` },
    })
  if (typeof options.enabled !== 'boolean') throw invalid('enabled', 'a boolean', options.enabled)
  for (const name of ['everyEvents', 'maxBytes'] as const) {
    const value = options[name]
    if (!Number.isSafeInteger(value) || value <= 0) throw invalid(name, 'a positive integer', value)
  }
  for (const name of ['minIntervalMs', 'minLogBytes'] as const) {
    const value = options[name]
    if (!Number.isSafeInteger(value) || value < 0) throw invalid(name, 'a non-negative integer', value)
  }
  const ratio = options.minGrowthRatio
  if (typeof ratio !== 'number' || !Number.isFinite(ratio) || ratio < 0 || ratio > 1024) {
    throw invalid('minGrowthRatio', 'a finite number from 0 to 1024', ratio)
  }
  return options
}
