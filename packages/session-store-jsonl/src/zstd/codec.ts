/** The codec contract of the zstd layer (see `zstd-codec.ts` and `zlib-zstd-codec.ts` for the two implementations) and the checks both make. */
import { parseFrameAt } from './frame-format.ts'
import { ZstdFrameError, ZstdFrameErrorCode } from './zstd-frame-error.ts'

/** Limits every decompression obeys. */
export interface ZstdDecompressLimits {
  /** Most bytes one frame may produce; checked against the frame's structure before decoding and while decoding. */
  readonly maxOutputBytes: number
  /** Largest window a frame may ask for (default and ceiling: the codec's {@link ZstdCodec.maxWindowBytes}). */
  readonly maxWindowBytes?: number
}

/**
 * A Zstandard codec behind the smallest interface the store needs, so a faster one (native,
 * or `node:zlib` on newer Node) can be swapped in by measurement.
 *
 * Contract for implementations: `compressFrame` returns exactly one complete frame;
 * `decompressFrame*` accept exactly one complete frame (else `TORN_FRAME` / `CORRUPT_FRAME`
 * `trailing-bytes`), refuse before allocating when {@link inspectFrame} refuses (window,
 * declared size, structural bound), and stop with `DECOMPRESSION_LIMIT` as soon as the output
 * would pass `maxOutputBytes`.
 */
export interface ZstdCodec {
  /** Name and version, for benchmarks and error messages. */
  readonly name: string
  /** Largest window this codec can decode (a frame asking for more is refused with `WINDOW_TOO_LARGE`). */
  readonly maxWindowBytes: number
  /** Compression levels this codec accepts, inclusive. */
  readonly levels: { readonly min: number; readonly max: number }
  /**
   * Compresses `content` into exactly one complete frame (no content checksum, no declared size).
   *
   * @throws {@link ZstdFrameError} `INVALID_ARGUMENT` for a level outside {@link levels}; `CODEC_FAILED`.
   */
  compressFrame(content: Uint8Array, level: number): Uint8Array
  /**
   * {@link compressFrame} off the event loop (`node:zlib`: the libuv thread pool; zstd-codec:
   * a worker thread), for bulk work such as `compress`. Several calls may be in flight;
   * each resolves with exactly one complete frame.
   *
   * @throws {@link ZstdFrameError} as {@link compressFrame}.
   */
  compressFrameAsync(content: Uint8Array, level: number): Promise<Uint8Array>
  /**
   * Decompresses exactly one complete frame into one buffer, bounded by `limits`.
   *
   * @throws {@link ZstdFrameError} `TORN_FRAME`, `CORRUPT_FRAME`, `WINDOW_TOO_LARGE`, `DECOMPRESSION_LIMIT`, `CODEC_FAILED`.
   */
  decompressFrame(frame: Uint8Array, limits: ZstdDecompressLimits): Uint8Array
  /**
   * Decompresses exactly one complete frame, handing the content to `onChunk` in pieces of at
   * most a few hundred KiB as it is produced (memory stays bounded whatever the frame's size).
   * An exception thrown by `onChunk` stops decoding and propagates.
   *
   * @returns The number of content bytes produced.
   * @throws {@link ZstdFrameError} as {@link decompressFrame}.
   */
  decompressFrameChunks(
    frame: Uint8Array,
    limits: ZstdDecompressLimits,
    onChunk: (chunk: Uint8Array) => void,
  ): number
}

/** A `CODEC_FAILED` error naming the codec and what failed. */
export function codecFailed(name: string, what: string, cause?: unknown): ZstdFrameError {
  return new ZstdFrameError({
    code: ZstdFrameErrorCode.CODEC_FAILED,
    message: `Zstandard codec ${name} failed: ${what}.`,
    ...(cause === undefined ? {} : { cause }),
  })
}

/** Refuses a compression level outside the codec's range (`INVALID_ARGUMENT`). */
export function checkLevel(codec: Pick<ZstdCodec, 'name' | 'levels'>, level: number): void {
  if (!Number.isInteger(level) || level < codec.levels.min || level > codec.levels.max) {
    throw new ZstdFrameError({
      code: ZstdFrameErrorCode.INVALID_ARGUMENT,
      message: `Compression level ${level} is not usable with ${codec.name}: expected an integer from ${codec.levels.min} to ${codec.levels.max}.`,
    })
  }
}

/** A compressor's output, checked to be exactly one complete zstd frame (`CODEC_FAILED` otherwise). */
export function checkedFrame(name: string, frame: Uint8Array, contentBytes: number): Uint8Array {
  const parsed = parseFrameAt(frame, 0)
  if (parsed.status !== 'complete' || parsed.frame.kind !== 'zstd' || parsed.frame.length !== frame.length) {
    throw codecFailed(name, `compressing ${contentBytes} bytes did not produce exactly one complete frame`)
  }
  return frame
}
