import { parseFrameAt } from './frame-format.ts'
import type { ZstdBlockExtent, ZstdFrameInfo } from './frame-format.ts'
import { ZstdFrameError, ZstdFrameErrorCode } from './zstd-frame-error.ts'

/**
 * Default largest window a frame may ask for: 8 MiB (windowLog 23). It is the ceiling of
 * zstd-codec's fixed 16 MiB wasm heap (windowLog 24 aborts it), Firefox's `windowLogMax`, and
 * enough for every `zstd` CLI level from 1 to 19 (`--ultra` levels and `--long` need more).
 */
export const DEFAULT_MAX_WINDOW_BYTES = 8 * 1024 * 1024

/**
 * Default most bytes one frame may decompress to: 256 MiB. Frames this store writes hold one
 * flush batch or one sealed segment (a few MiB at most); the default leaves room for a plain
 * log compressed whole by the `zstd` CLI. A larger frame needs a larger limit, on purpose.
 */
export const DEFAULT_MAX_FRAME_OUTPUT_BYTES = 256 * 1024 * 1024

/** A frame that passed {@link inspectFrame}: its header facts and its block extents. */
export interface ZstdFramePlan {
  readonly info: ZstdFrameInfo
  readonly blocks: readonly ZstdBlockExtent[]
}

/**
 * Checks, before anything is allocated or decoded, that `frame` is exactly one complete frame
 * that may be decompressed within `limits`. The header's content-size field is never used to
 * size anything; it only lets a frame that announces more than the limit be refused early.
 *
 * Order of checks: structure (complete, single frame, valid fields), window size, dictionary,
 * declared content size, structural upper bound (raw and RLE block sizes are exact, each
 * compressed block counts as Block_Maximum_Size).
 *
 * @param frame - The bytes of one frame.
 * @param limits - `maxOutputBytes` and `maxWindowBytes`.
 * @returns The frame's facts and block extents (for block-aligned feeding).
 * @throws {@link ZstdFrameError} `TORN_FRAME` (cut short), `CORRUPT_FRAME` (bad structure,
 *   trailing bytes, dictionary needed), `WINDOW_TOO_LARGE`, `DECOMPRESSION_LIMIT` (`producedBytes` 0).
 */
export function inspectFrame(
  frame: Uint8Array,
  limits: { readonly maxOutputBytes: number; readonly maxWindowBytes: number },
): ZstdFramePlan {
  const parsed = parseFrameAt(frame, 0, { collectBlocks: true })
  if (parsed.status === 'incomplete') {
    throw new ZstdFrameError({
      code: ZstdFrameErrorCode.TORN_FRAME,
      message: `A frame of ${frame.length} bytes is cut short inside its ${parsed.part}: expected at least ${parsed.needed} bytes.`,
      part: parsed.part,
      compressedOffset: frame.length,
    })
  }
  if (parsed.status === 'invalid') {
    throw new ZstdFrameError({
      code: ZstdFrameErrorCode.CORRUPT_FRAME,
      message: `A frame of ${frame.length} bytes is not valid at byte ${parsed.at}: ${parsed.reason}.`,
      reason: parsed.reason,
      compressedOffset: parsed.at,
    })
  }
  const info = parsed.frame
  if (info.length !== frame.length) {
    throw new ZstdFrameError({
      code: ZstdFrameErrorCode.CORRUPT_FRAME,
      message: `Expected exactly one frame of ${frame.length} bytes, found a frame of ${info.length} bytes followed by ${frame.length - info.length} more.`,
      reason: 'trailing-bytes',
      compressedOffset: info.length,
    })
  }
  if (info.kind === 'zstd') checkLimits(info, limits)
  return { info, blocks: parsed.blocks ?? [] }
}

function checkLimits(
  info: ZstdFrameInfo,
  limits: { readonly maxOutputBytes: number; readonly maxWindowBytes: number },
): void {
  if (info.windowSize > limits.maxWindowBytes) {
    throw new ZstdFrameError({
      code: ZstdFrameErrorCode.WINDOW_TOO_LARGE,
      message: `A frame asks for a ${info.windowSize}-byte window: expected at most ${limits.maxWindowBytes} bytes.`,
      limit: limits.maxWindowBytes,
      windowSize: info.windowSize,
      compressedOffset: 4,
    })
  }
  if (info.dictionaryId !== 0) {
    throw new ZstdFrameError({
      code: ZstdFrameErrorCode.CORRUPT_FRAME,
      message: `A frame needs dictionary ${info.dictionaryId}: expected no dictionary, as this store never writes one.`,
      reason: 'dictionary-required',
      compressedOffset: 4,
    })
  }
  if (info.contentSize !== undefined && info.contentSize > limits.maxOutputBytes) {
    throw new ZstdFrameError({
      code: ZstdFrameErrorCode.DECOMPRESSION_LIMIT,
      message: `A frame declares ${info.contentSize} content bytes: expected at most the limit of ${limits.maxOutputBytes}; nothing was decoded.`,
      limit: limits.maxOutputBytes,
      producedBytes: 0,
    })
  }
  if (info.maxContentSize > limits.maxOutputBytes) {
    throw new ZstdFrameError({
      code: ZstdFrameErrorCode.DECOMPRESSION_LIMIT,
      message: `A frame of ${info.blockCount} blocks can decompress to ${info.maxContentSize} bytes: expected at most the limit of ${limits.maxOutputBytes}; nothing was decoded.`,
      limit: limits.maxOutputBytes,
      producedBytes: 0,
    })
  }
}

/** Most compressed bytes fed to a decoder in one call. */
const FEED_MAX_INPUT_BYTES = 128 * 1024
/** Most content the blocks of one feed may produce, so each call's output stays small. */
const FEED_MAX_OUTPUT_BYTES = 512 * 1024

/**
 * Splits a planned frame into block-aligned input ranges for a streaming decoder, so one
 * decoder call never receives more than 128 KiB of input nor blocks able to produce more
 * than 512 KiB (a single larger block is fed alone).
 *
 * @param plan - A frame that passed {@link inspectFrame}.
 * @returns `[start, end)` ranges covering the whole frame, in order.
 */
export function planFeeds(plan: ZstdFramePlan): { start: number; end: number }[] {
  const feeds: { start: number; end: number }[] = []
  let start = 0
  let output = 0
  let previousEnd = plan.info.headerLength
  for (const block of plan.blocks) {
    const wouldInput = block.end - start
    const wouldOutput = output + block.maxContent
    if (previousEnd > start && (wouldInput > FEED_MAX_INPUT_BYTES || wouldOutput > FEED_MAX_OUTPUT_BYTES)) {
      feeds.push({ start, end: previousEnd })
      start = previousEnd
      output = 0
    }
    output += block.maxContent
    previousEnd = block.end
  }
  if (plan.info.length > start) feeds.push({ start, end: plan.info.length })
  return feeds
}
