/**
 * The Zstandard codec of `node:zlib` (Node 22.15 and later, and 23.8 and later: libzstd
 * compiled into the runtime), behind the same {@link ZstdCodec} contract as the zstd-codec
 * wasm build that Node 20 uses. Same window ceiling and level range as the wasm codec, so
 * every file one runtime writes, the other reads, and an option one accepts, the other does.
 */
import * as zlib from 'node:zlib'

import { inspectFrame } from './inspect-frame.ts'
import { checkedFrame, checkLevel, codecFailed } from './codec.ts'
import type { ZstdCodec, ZstdDecompressLimits } from './codec.ts'
import { ZstdFrameError, ZstdFrameErrorCode } from './zstd-frame-error.ts'

/** The part of `node:zlib` this codec uses (absent from Node 20 and from its typings). */
interface ZlibZstd {
  zstdCompressSync(input: Uint8Array, options: { params: Record<number, number> }): Buffer
  zstdCompress(
    input: Uint8Array,
    options: { params: Record<number, number> },
    callback: (error: Error | null, result: Buffer) => void,
  ): void
  zstdDecompressSync(
    input: Uint8Array,
    options: { maxOutputLength: number; params: Record<number, number> },
  ): Buffer
  readonly constants: {
    readonly ZSTD_c_compressionLevel: number
    readonly ZSTD_c_checksumFlag: number
    readonly ZSTD_c_contentSizeFlag: number
    readonly ZSTD_d_windowLogMax: number
  }
}

/** The same ceiling as the wasm codec (8 MiB): files stay readable on every runtime. */
const MAX_WINDOW_BYTES = 8 * 1024 * 1024
/** The same levels as the wasm codec, so an option valid on one runtime is valid on the other. */
const LEVELS = { min: -5, max: 9 } as const
/** Content is handed to `onChunk` in pieces of this size. */
const CHUNK_BYTES = 256 * 1024
/**
 * Frames whose structure allows more content than this are decoded by the streaming codec
 * (`node:zlib` has no synchronous streaming decoder: its one-shot call returns all or nothing).
 * Every frame the store writes is below it (4 MiB sealed frames, flush batches) unless it
 * holds one longer line.
 */
const ONE_SHOT_MAX_BYTES = 8 * 1024 * 1024

/**
 * `node:zlib`'s Zstandard API when this runtime has it, else null.
 *
 * @returns The API, or null on runtimes without it (Node 20).
 */
export function zlibZstd(): ZlibZstd | null {
  const candidate = zlib as unknown as Partial<ZlibZstd>
  const constants = candidate.constants as Partial<ZlibZstd['constants']> | undefined
  if (
    typeof candidate.zstdCompressSync !== 'function' ||
    typeof candidate.zstdCompress !== 'function' ||
    typeof candidate.zstdDecompressSync !== 'function' ||
    constants?.ZSTD_c_compressionLevel === undefined ||
    constants.ZSTD_d_windowLogMax === undefined
  ) {
    return null
  }
  return candidate as ZlibZstd
}

/** A {@link ZstdCodec} over `node:zlib` (see the module comment). */
export class ZlibZstdCodec implements ZstdCodec {
  readonly name: string
  readonly maxWindowBytes = MAX_WINDOW_BYTES
  readonly levels = LEVELS
  readonly #zlib: ZlibZstd
  readonly #streaming: ZstdCodec

  /**
   * @param api - `node:zlib`'s Zstandard API (see {@link zlibZstd}).
   * @param streaming - The streaming codec (wasm) that decodes frames larger than 8 MiB in bounded pieces.
   */
  constructor(api: ZlibZstd, streaming: ZstdCodec) {
    this.#zlib = api
    this.#streaming = streaming
    this.name = `node:zlib zstd (Node ${process.versions.node}, libzstd ${process.versions['zstd'] ?? 'unknown'}; frames over 8 MiB: ${streaming.name})`
  }

  compressFrame(content: Uint8Array, level: number): Uint8Array {
    const params = this.#compressParams(level)
    let frame: Buffer
    try {
      frame = this.#zlib.zstdCompressSync(content, { params })
    } catch (error) {
      throw codecFailed(this.name, `compressing ${content.length} bytes at level ${level} threw`, error)
    }
    return checkedFrame(this.name, frame, content.length)
  }

  /**
   * {@link compressFrame} on the libuv thread pool, off the event loop.
   *
   * @param content - Whole lines.
   * @param level - A level in {@link levels}.
   * @returns Exactly one complete frame.
   */
  async compressFrameAsync(content: Uint8Array, level: number): Promise<Uint8Array> {
    const params = this.#compressParams(level)
    return await new Promise((resolve, reject) => {
      this.#zlib.zstdCompress(content, { params }, (error, frame) => {
        if (error !== null) {
          reject(
            codecFailed(this.name, `compressing ${content.length} bytes at level ${level} failed`, error),
          )
          return
        }
        try {
          resolve(checkedFrame(this.name, frame, content.length))
        } catch (failure) {
          reject(failure instanceof Error ? failure : new Error(String(failure)))
        }
      })
    })
  }

  decompressFrame(frame: Uint8Array, limits: ZstdDecompressLimits): Uint8Array {
    return this.#decode(frame, limits) ?? new Uint8Array(0)
  }

  /**
   * A frame whose structure allows at most 8 MiB is decoded whole (natively), then handed out
   * in 256 KiB pieces; a larger one goes to the streaming codec, so memory stays bounded by
   * its pieces whatever the frame's size (and `onChunk` can stop it early).
   *
   * @inheritDoc
   */
  decompressFrameChunks(
    frame: Uint8Array,
    limits: ZstdDecompressLimits,
    onChunk: (chunk: Uint8Array) => void,
  ): number {
    const maxWindowBytes = Math.min(limits.maxWindowBytes ?? this.maxWindowBytes, this.maxWindowBytes)
    const plan = inspectFrame(frame, { maxOutputBytes: limits.maxOutputBytes, maxWindowBytes })
    if (plan.info.kind === 'skippable') return 0
    if (plan.info.maxContentSize > ONE_SHOT_MAX_BYTES) {
      return this.#streaming.decompressFrameChunks(frame, limits, onChunk)
    }
    const content = this.#decode(frame, limits)
    if (content === null) return 0
    for (let at = 0; at < content.length; at += CHUNK_BYTES) {
      onChunk(content.subarray(at, Math.min(content.length, at + CHUNK_BYTES)))
    }
    return content.length
  }

  #compressParams(level: number): Record<number, number> {
    checkLevel(this, level)
    const { constants } = this.#zlib
    // As the wasm codec writes them: no content checksum, no declared content size.
    return {
      [constants.ZSTD_c_compressionLevel]: level,
      [constants.ZSTD_c_checksumFlag]: 0,
      [constants.ZSTD_c_contentSizeFlag]: 0,
    }
  }

  /** The frame's content, or null for a skippable frame. */
  #decode(frame: Uint8Array, limits: ZstdDecompressLimits): Buffer | null {
    const maxWindowBytes = Math.min(limits.maxWindowBytes ?? this.maxWindowBytes, this.maxWindowBytes)
    const plan = inspectFrame(frame, { maxOutputBytes: limits.maxOutputBytes, maxWindowBytes })
    if (plan.info.kind === 'skippable') return null
    const declared = plan.info.contentSize
    // inspectFrame refused any frame whose structure allows more than maxOutputBytes.
    const bound = Math.min(plan.info.maxContentSize, limits.maxOutputBytes)
    let content: Buffer
    try {
      content = this.#zlib.zstdDecompressSync(frame, {
        // One byte more than allowed, so that "more than the bound" is told apart from "exactly".
        maxOutputLength: Math.max(1, bound + 1),
        params: { [this.#zlib.constants.ZSTD_d_windowLogMax]: Math.ceil(Math.log2(maxWindowBytes)) },
      })
    } catch (error) {
      throw new ZstdFrameError({
        code: ZstdFrameErrorCode.CORRUPT_FRAME,
        message: `A frame of ${frame.length} compressed bytes failed to decode: expected valid compressed blocks, found data the decoder rejects (${error instanceof Error ? error.message : String(error)}).`,
        reason: 'decode-failed',
        compressedOffset: 0,
        producedBytes: 0,
      })
    }
    if (content.length > limits.maxOutputBytes) {
      throw new ZstdFrameError({
        code: ZstdFrameErrorCode.DECOMPRESSION_LIMIT,
        message: `A frame of ${frame.length} compressed bytes produced more than the limit of ${limits.maxOutputBytes} bytes: stopped after ${limits.maxOutputBytes} bytes.`,
        limit: limits.maxOutputBytes,
        producedBytes: limits.maxOutputBytes,
      })
    }
    if (declared !== undefined && content.length !== declared) {
      throw new ZstdFrameError({
        code: ZstdFrameErrorCode.CORRUPT_FRAME,
        message: `A frame declaring ${declared} content bytes decoded to ${content.length} bytes: expected exactly the declared size.`,
        reason: 'content-size-mismatch',
        compressedOffset: 0,
        producedBytes: content.length,
      })
    }
    return content
  }
}
