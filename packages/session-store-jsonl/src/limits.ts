import { DEFAULT_JSON_LIMITS } from '@agent-ledger/session-events'

import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'

function invalidOption(message: string, option: string): JsonlStoreError {
  return new JsonlStoreError({ code: JsonlErrorCode.INVALID_OPTION, message, file: '', details: { option } })
}

/** Resource bounds the store enforces on what it reads and writes (RELIABILITY decision 3). */
export interface StoreLimits {
  /** Longest line a reader accepts, in bytes without its `\n`; longer lines give `LINE_TOO_LARGE`. Default 64 MiB. */
  maxLineBytes: number
  /** Deepest nesting of arrays and objects in a line (the line's object is depth 1). Default 256. */
  maxDepth: number
  /** Most array elements plus object keys in one appended event. Default 5,000,000. */
  maxEntries: number
  /** Longest line a writer produces, in bytes without its `\n`; must be <= `maxLineBytes`. Default 64 MiB. */
  maxEventBytes: number
  /** Most bytes a writer buffers before `append` throws `BUFFER_FULL`. Default 64 MiB. */
  maxBufferedBytes: number
  /** Size of the chunks a reader reads the file in. Default 1 MiB. */
  readChunkBytes: number
  /**
   * Quarantine files (`<log>.torn-<offset>`) allowed per log. They are never deleted
   * automatically: a write open that would add one more refuses with `QUARANTINE_FULL`. Default 8.
   */
  maxQuarantineFiles: number
  /**
   * Most plain bytes one Zstandard frame of a `.zstd` log may decompress to (RELIABILITY S4);
   * more gives `DECOMPRESSION_LIMIT`. Default 256 MiB: frames this store writes hold at most 4 MiB.
   */
  maxFrameOutputBytes: number
  /**
   * Largest window a Zstandard frame may ask for; more gives `WINDOW_TOO_LARGE` before anything is
   * allocated. Default 8 MiB (windowLog 23), which is also the ceiling of the bundled codec.
   */
  maxWindowBytes: number
}

/** The documented default {@link StoreLimits}. */
export const DEFAULT_STORE_LIMITS: Readonly<StoreLimits> = Object.freeze({
  maxLineBytes: 64 * 1024 * 1024,
  maxDepth: DEFAULT_JSON_LIMITS.maxDepth,
  maxEntries: DEFAULT_JSON_LIMITS.maxEntries,
  maxEventBytes: 64 * 1024 * 1024,
  maxBufferedBytes: 64 * 1024 * 1024,
  readChunkBytes: 1024 * 1024,
  maxQuarantineFiles: 8,
  maxFrameOutputBytes: 256 * 1024 * 1024,
  maxWindowBytes: 8 * 1024 * 1024,
})

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw invalidOption(`Store option ${name} must be a positive integer, found ${String(value)}.`, name)
  }
  return value
}

/**
 * Fills in the defaults of partial limits and checks them.
 *
 * @param partial - Caller overrides.
 * @returns Complete limits.
 * @throws {@link JsonlStoreError} `INVALID_OPTION` when a limit is not a positive integer or `maxEventBytes` exceeds `maxLineBytes`.
 */
export function resolveLimits(partial: Partial<StoreLimits> = {}): StoreLimits {
  // A writer that is only told maxLineBytes keeps its events within that line bound.
  const defaults: StoreLimits = {
    ...DEFAULT_STORE_LIMITS,
    maxEventBytes: Math.min(DEFAULT_STORE_LIMITS.maxEventBytes, partial.maxLineBytes ?? Infinity),
  }
  const limits = { ...defaults }
  for (const name of Object.keys(defaults) as (keyof StoreLimits)[]) {
    limits[name] = positiveInteger(name, partial[name] ?? defaults[name])
  }
  if (limits.maxEventBytes > limits.maxLineBytes) {
    throw invalidOption(
      `Store option maxEventBytes (${limits.maxEventBytes}) must not exceed maxLineBytes (${limits.maxLineBytes}): a writer would produce lines its own reader refuses.`,
      'maxEventBytes',
    )
  }
  return limits
}
