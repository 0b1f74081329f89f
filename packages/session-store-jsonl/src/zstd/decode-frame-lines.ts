import { createFrameLineSplitter } from './frame-lines.ts'
import { DEFAULT_MAX_FRAME_OUTPUT_BYTES } from './inspect-frame.ts'
import type { ZstdScannedFrame } from './scan-frames.ts'
import type { ZstdCodec } from './zstd-codec.ts'
import { withFrameContext } from './zstd-frame-error.ts'

/** Options of {@link decodeFrameLines}. */
export interface DecodeFrameLinesOptions {
  /** Most bytes the frame may decompress to (default {@link DEFAULT_MAX_FRAME_OUTPUT_BYTES}). */
  readonly maxOutputBytes?: number
  /** Largest window accepted (default and ceiling: the codec's `maxWindowBytes`). */
  readonly maxWindowBytes?: number
  /** Longest line, not counting its `\n`. */
  readonly maxLineBytes: number
  /** Receives each line without its `\n` (a view valid only during the call) and its offset in the frame's content. */
  readonly onLine: (line: Uint8Array, contentOffset: number) => void
}

/**
 * Decodes one scanned frame and hands its lines to `options.onLine`, streaming: memory stays
 * bounded by the longest line plus one decoder chunk, whatever the frame's size. Skippable
 * frames hold no lines.
 *
 * @param codec - The codec (see `loadZstdCodec`).
 * @param frame - A frame from the scanner: its info (index, offset) and bytes.
 * @param options - Limits and the line callback.
 * @returns The frame's content size and line count.
 * @throws {@link ZstdFrameError} `CORRUPT_FRAME` (decode failure, size mismatch,
 *   `frame-not-line-aligned`), `WINDOW_TOO_LARGE`, `DECOMPRESSION_LIMIT`, `LINE_TOO_LARGE`,
 *   `CODEC_FAILED`, all with `frameIndex` and the file's `compressedOffset`. Exceptions thrown
 *   by `onLine` propagate unchanged.
 */
export function decodeFrameLines(
  codec: ZstdCodec,
  frame: ZstdScannedFrame,
  options: DecodeFrameLinesOptions,
): { readonly contentBytes: number; readonly lineCount: number } {
  if (frame.info.kind === 'skippable') return { contentBytes: 0, lineCount: 0 }
  const context = { frameIndex: frame.info.index, compressedOffset: frame.info.offset }
  const splitter = createFrameLineSplitter({
    maxLineBytes: options.maxLineBytes,
    onLine: options.onLine,
    ...context,
  })
  try {
    const limits = {
      maxOutputBytes: options.maxOutputBytes ?? DEFAULT_MAX_FRAME_OUTPUT_BYTES,
      ...(options.maxWindowBytes === undefined ? {} : { maxWindowBytes: options.maxWindowBytes }),
    }
    const contentBytes = codec.decompressFrameChunks(frame.bytes, limits, (chunk) => splitter.push(chunk))
    return { contentBytes, lineCount: splitter.end() }
  } catch (error) {
    throw withFrameContext(error, context)
  }
}
