/** The codec contract of the zstd layer (see `zstd-codec.ts` and `zlib-zstd-codec.ts` for the two implementations). */

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
