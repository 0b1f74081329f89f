/*
 * Writing a `.zstd` log (issue 5, Zstandard): what bytes a create, a flush and a compress put
 * on disk. The durability protocol (one write + one fdatasync per flush, ack after fsync,
 * rollback, poison, inode check) is the plain writer's, unchanged: only the bytes differ.
 *
 *   - the header line in a frame of its own (a reader can read it without the events);
 *   - each flush batch as whole frames that each end on a line boundary (Z4), level 3,
 *     at most {@link ZSTD_FRAME_BYTES} of content per frame;
 *   - `compress` (and a reseal) writes frames of {@link ZSTD_FRAME_BYTES} at level
 *     {@link ZSTD_SEAL_LEVEL}: measured at 1.02x the size of `zstd -3` of the whole plain file.
 */
import { encodeFrames } from './zstd/encode-frames.ts'
import type { ZstdCodec } from './zstd/zstd-codec.ts'

/** The encodings a session's current log can have. */
export type LogEncoding = 'plain' | 'zstd'

/** Compression level of live flushes (the `zstd` CLI's default). */
export const ZSTD_FLUSH_LEVEL = 3

/** Compression level of sealed frames (`compress`, reseal): zstd-codec's level 6 has the CLI's level-3 window (2 MiB). */
export const ZSTD_SEAL_LEVEL = 6

/** Plain bytes per frame aimed at by `compress` and the most one flush frame holds: 4 MiB. */
export const ZSTD_FRAME_BYTES = 4 * 1024 * 1024

/**
 * Encodes whole lines as independent frames, each ending on a line boundary.
 *
 * @param codec - The codec.
 * @param plain - Whole lines (empty, or ending with `\n`).
 * @param options - `level` (default {@link ZSTD_FLUSH_LEVEL}) and `targetFrameBytes` (default {@link ZSTD_FRAME_BYTES}).
 * @returns The frames back to back (empty for empty input), as one Buffer for one write.
 * @throws {@link ZstdFrameError} `INVALID_ARGUMENT` (a line without `\n`), `CODEC_FAILED`.
 */
export function encodeZstdLines(
  codec: ZstdCodec,
  plain: Uint8Array,
  options: { readonly level?: number; readonly targetFrameBytes?: number } = {},
): Buffer {
  if (plain.length === 0) return Buffer.alloc(0)
  const { bytes } = encodeFrames(plain, {
    codec,
    level: options.level ?? ZSTD_FLUSH_LEVEL,
    targetFrameBytes: options.targetFrameBytes ?? ZSTD_FRAME_BYTES,
  })
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

/**
 * The start of a new `.zstd` log: the header line in a frame of its own, then the seed lines
 * (forks, salvage) as flush-sized frames.
 *
 * @param codec - The codec.
 * @param headerLine - The checksummed header line, `\n` included.
 * @param body - Seed event lines, each ending with `\n`.
 * @returns The bytes to write at offset 0.
 */
export function encodeZstdLogStart(
  codec: ZstdCodec,
  headerLine: Uint8Array,
  body: readonly Uint8Array[],
): Buffer {
  const header = encodeZstdLines(codec, headerLine)
  if (body.length === 0) return header
  return Buffer.concat([header, encodeZstdLines(codec, Buffer.concat(body))])
}

/**
 * The one cutter of a stream of whole lines into frame contents (for {@link encodeZstdStream}
 * and compress): the first line alone when `headerFirst`, then pieces closed before the line
 * that would pass `target` (a longer line alone); the caller checks the last ends with `\n`.
 */
export async function* lineFrames(
  plain: AsyncIterable<Uint8Array>,
  target: number,
  headerFirst = false,
): AsyncGenerator<Buffer, void, undefined> {
  let pending: Buffer = Buffer.alloc(0)
  let headerPending = headerFirst
  for await (const chunk of plain) {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    pending = pending.length === 0 ? bytes : Buffer.concat([pending, bytes])
    if (headerPending) {
      const newline = pending.indexOf(0x0a)
      if (newline === -1) continue
      yield pending.subarray(0, newline + 1)
      pending = pending.subarray(newline + 1)
      headerPending = false
    }
    while (pending.length >= target) {
      const last = pending.lastIndexOf(0x0a, target - 1)
      const cut = last !== -1 ? last + 1 : pending.indexOf(0x0a, target) + 1
      if (cut === 0) break
      yield pending.subarray(0, cut)
      pending = pending.subarray(cut)
    }
  }
  if (pending.length > 0) yield pending
}

/**
 * Frames a stream of whole lines as it arrives ({@link lineFrames}): memory is one frame plus one read chunk.
 *
 * @param codec - The codec.
 * @param plain - Whole lines in chunks of any size; the stream must end with `\n`.
 * @param options - `level` (default {@link ZSTD_FLUSH_LEVEL}) and `targetFrameBytes` (default {@link ZSTD_FRAME_BYTES}).
 * @returns The frames, one Buffer each.
 * @throws {@link ZstdFrameError} `INVALID_ARGUMENT` when the stream does not end with `\n`; `CODEC_FAILED`.
 */
export async function* encodeZstdStream(
  codec: ZstdCodec,
  plain: AsyncIterable<Uint8Array>,
  options: { readonly level?: number; readonly targetFrameBytes?: number } = {},
): AsyncGenerator<Buffer, void, undefined> {
  const level = options.level ?? ZSTD_FLUSH_LEVEL
  for await (const piece of lineFrames(plain, options.targetFrameBytes ?? ZSTD_FRAME_BYTES))
    yield encodeZstdLines(codec, piece, { level, targetFrameBytes: Infinity })
}
