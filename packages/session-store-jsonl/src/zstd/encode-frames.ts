import type { ZstdCodec } from './zstd-codec.ts'
import { ZstdFrameError, ZstdFrameErrorCode } from './zstd-frame-error.ts'

const NEWLINE = 0x0a

/** Default compression level: the `zstd` CLI's default. */
export const DEFAULT_COMPRESSION_LEVEL = 3

/** Options of {@link encodeFrames}. */
export interface EncodeFramesOptions {
  readonly codec: ZstdCodec
  /** Compression level (default {@link DEFAULT_COMPRESSION_LEVEL}); must be in `codec.levels`. */
  readonly level?: number
  /**
   * Plain bytes per frame to aim for. Lines are never split: a frame closes before the line
   * that would take it past the target, and a single longer line gets a frame of its own.
   * `Infinity` puts everything in one frame.
   */
  readonly targetFrameBytes: number
}

/** One frame written by {@link encodeFrames}. */
export interface EncodedFrame {
  /** Offset of the frame in `bytes`. */
  readonly offset: number
  readonly length: number
  /** Plain bytes (whole lines, `\n` included) the frame holds. */
  readonly contentBytes: number
  readonly lineCount: number
}

/** Output of {@link encodeFrames}: the frames back to back, ready for one write. */
export interface EncodedFrames {
  readonly bytes: Uint8Array
  readonly frames: readonly EncodedFrame[]
  /** Plain bytes encoded. */
  readonly contentBytes: number
}

/**
 * Packs whole lines into complete, independent Zstandard frames (writer invariant Z4: every
 * frame's content ends with `\n` and no line spans two frames), so a store can write "the
 * header in its own frame, then whole frames per flush batch" and a torn write only ever
 * loses the frames of the unacknowledged batch.
 *
 * @param lines - Either one buffer per line (each ending with `\n`) or one buffer of whole
 *   lines (empty, or ending with `\n`).
 * @param options - Codec, level and target frame size.
 * @returns The concatenated frames and where each one is.
 * @throws {@link ZstdFrameError} `INVALID_ARGUMENT` when a line does not end with `\n`, or for
 *   a bad level or target; `CODEC_FAILED` from the codec.
 */
export function encodeFrames(
  lines: readonly Uint8Array[] | Uint8Array,
  options: EncodeFramesOptions,
): EncodedFrames {
  const level = options.level ?? DEFAULT_COMPRESSION_LEVEL
  const target = options.targetFrameBytes
  if (!(target > 0)) {
    throw invalid(`targetFrameBytes must be a positive number of bytes, found ${String(target)}`)
  }
  const groups = lines instanceof Uint8Array ? groupBuffer(lines, target) : groupLines(lines, target)
  const compressed: Uint8Array[] = []
  const frames: EncodedFrame[] = []
  let offset = 0
  let contentBytes = 0
  for (const group of groups) {
    const frame = options.codec.compressFrame(group.content, level)
    compressed.push(frame)
    frames.push({
      offset,
      length: frame.length,
      contentBytes: group.content.length,
      lineCount: group.lineCount,
    })
    offset += frame.length
    contentBytes += group.content.length
  }
  const bytes = new Uint8Array(offset)
  let at = 0
  for (const frame of compressed) {
    bytes.set(frame, at)
    at += frame.length
  }
  return { bytes, frames, contentBytes }
}

interface Group {
  readonly content: Uint8Array
  readonly lineCount: number
}

function invalid(what: string): ZstdFrameError {
  return new ZstdFrameError({
    code: ZstdFrameErrorCode.INVALID_ARGUMENT,
    message: `encodeFrames cannot encode its input: ${what}.`,
  })
}

function groupLines(lines: readonly Uint8Array[], target: number): Group[] {
  const groups: Group[] = []
  let current: Uint8Array[] = []
  let currentBytes = 0
  const close = (): void => {
    if (current.length === 0) return
    const content = new Uint8Array(currentBytes)
    let at = 0
    for (const line of current) {
      content.set(line, at)
      at += line.length
    }
    groups.push({ content, lineCount: current.length })
    current = []
    currentBytes = 0
  }
  lines.forEach((line, index) => {
    if (line.length === 0 || line[line.length - 1] !== NEWLINE) {
      throw invalid(`line ${index} does not end with "\\n"`)
    }
    if (currentBytes > 0 && currentBytes + line.length > target) close()
    current.push(line)
    currentBytes += line.length
  })
  close()
  return groups
}

function groupBuffer(content: Uint8Array, target: number): Group[] {
  if (content.length === 0) return []
  if (content[content.length - 1] !== NEWLINE) throw invalid('the buffer does not end with "\\n"')
  const groups: Group[] = []
  let start = 0
  while (start < content.length) {
    let end: number
    if (content.length - start <= target) {
      end = content.length
    } else {
      const last = content.lastIndexOf(NEWLINE, start + target - 1)
      end = last >= start ? last + 1 : content.indexOf(NEWLINE, start + target) + 1
    }
    const piece = content.subarray(start, end)
    groups.push({ content: piece, lineCount: countNewlines(piece) })
    start = end
  }
  return groups
}

function countNewlines(bytes: Uint8Array): number {
  let count = 0
  for (let at = bytes.indexOf(NEWLINE); at !== -1; at = bytes.indexOf(NEWLINE, at + 1)) count += 1
  return count
}
