import { ZstdFrameError, ZstdFrameErrorCode } from './zstd-frame-error.ts'

const NEWLINE = 0x0a

/** Options of {@link createFrameLineSplitter} and {@link splitFrameLines}. */
export interface FrameLineOptions {
  /** Longest line accepted, in bytes, not counting its `\n`. Longer lines are never held whole. */
  readonly maxLineBytes: number
  /**
   * Receives each line, WITHOUT its `\n`, and the offset of its first byte in the frame's
   * content. `line` is a view valid only during the call: copy it to keep it. Splits only on
   * 0x0A; never decodes UTF-8.
   */
  readonly onLine: (line: Uint8Array, contentOffset: number) => void
  /** Frame index for error context. */
  readonly frameIndex?: number
  /** Compressed offset of the frame, for error context. */
  readonly compressedOffset?: number
}

/** Splits a frame's decompressed content, arriving in chunks, into lines. */
export interface FrameLineSplitter {
  /**
   * Feeds the next piece of decompressed content; complete lines are handed to `onLine` now.
   *
   * @throws {@link ZstdFrameError} `LINE_TOO_LARGE` as soon as an unfinished line passes `maxLineBytes`.
   */
  push(chunk: Uint8Array): void
  /**
   * Declares the end of the frame's content.
   *
   * @returns The number of lines handed out.
   * @throws {@link ZstdFrameError} `CORRUPT_FRAME` with reason `frame-not-line-aligned` when the content does not end with `\n` (Z4).
   */
  end(): number
}

/**
 * Creates a line splitter for ONE frame's content. It enforces the writer invariant "one
 * frame = whole lines": the content must end with `\n`, and an unfinished line is never
 * carried into the next frame. Memory is bounded by `maxLineBytes` plus the current chunk.
 *
 * @param options - Limit, callback and error context.
 * @returns The splitter.
 */
export function createFrameLineSplitter(options: FrameLineOptions): FrameLineSplitter {
  const { maxLineBytes, onLine } = options
  const context = {
    ...(options.frameIndex === undefined ? {} : { frameIndex: options.frameIndex }),
    ...(options.compressedOffset === undefined ? {} : { compressedOffset: options.compressedOffset }),
  }
  const where = options.frameIndex === undefined ? 'a frame' : `frame ${options.frameIndex}`
  let carry: Uint8Array[] = []
  let carryBytes = 0
  let consumed = 0
  let lines = 0
  let ended = false

  const tooLarge = (lineStart: number): ZstdFrameError =>
    new ZstdFrameError({
      code: ZstdFrameErrorCode.LINE_TOO_LARGE,
      message: `The line at content offset ${lineStart} of ${where} is longer than the limit of ${maxLineBytes} bytes.`,
      limit: maxLineBytes,
      ...context,
    })

  return {
    push(chunk) {
      if (ended) {
        throw new ZstdFrameError({
          code: ZstdFrameErrorCode.INVALID_ARGUMENT,
          message: `The line splitter of ${where} was fed after end(): expected no more content.`,
          ...context,
        })
      }
      let at = 0
      while (at < chunk.length) {
        const newline = chunk.indexOf(NEWLINE, at)
        if (newline === -1) {
          const rest = chunk.length - at
          if (carryBytes + rest > maxLineBytes) throw tooLarge(consumed - carryBytes)
          carry.push(chunk.slice(at))
          carryBytes += rest
          consumed += rest
          break
        }
        const piece = newline - at
        const lineStart = consumed - carryBytes
        if (carryBytes + piece > maxLineBytes) throw tooLarge(lineStart)
        if (carryBytes === 0) {
          onLine(chunk.subarray(at, newline), lineStart)
        } else {
          const line = new Uint8Array(carryBytes + piece)
          let offset = 0
          for (const part of carry) {
            line.set(part, offset)
            offset += part.length
          }
          line.set(chunk.subarray(at, newline), offset)
          carry = []
          carryBytes = 0
          onLine(line, lineStart)
        }
        lines += 1
        consumed += piece + 1
        at = newline + 1
      }
    },
    end() {
      ended = true
      if (carryBytes > 0) {
        throw new ZstdFrameError({
          code: ZstdFrameErrorCode.CORRUPT_FRAME,
          message: `The content of ${where} ends with ${carryBytes} bytes after its last newline: expected every frame to end with "\\n".`,
          reason: 'frame-not-line-aligned',
          ...context,
        })
      }
      return lines
    },
  }
}

/**
 * Hands the lines of one frame's whole decompressed content to `options.onLine`.
 *
 * @param content - The frame's content.
 * @param options - Limit, callback and error context.
 * @returns The number of lines.
 * @throws {@link ZstdFrameError} `CORRUPT_FRAME` (`frame-not-line-aligned`) when `content`
 *   does not end with `\n`; `LINE_TOO_LARGE`.
 */
export function splitFrameLines(content: Uint8Array, options: FrameLineOptions): number {
  const splitter = createFrameLineSplitter(options)
  splitter.push(content)
  return splitter.end()
}
