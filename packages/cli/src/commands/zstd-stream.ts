import { once } from 'node:events'
import { createReadStream } from 'node:fs'
import * as zlib from 'node:zlib'
import type { Transform } from 'node:stream'

import { DEFAULT_STORE_LIMITS } from '@agent-ledger/session-store-jsonl'
import { ZstdFrameError, ZstdFrameErrorCode } from '@agent-ledger/session-store-jsonl/format'
import { Decompress } from 'fzstd'

import { CliError, CliErrorCode } from '../cli-error.ts'

/** Decodes the blocks of one Zstandard frame as they arrive. */
interface FrameDecoder {
  /** Compressed bytes of the frame (header, blocks, checksum), in order; returns what they decoded to. */
  push(bytes: Uint8Array): Promise<Uint8Array[]>
  /** The frame is complete: the rest of its content. */
  end(): Promise<Uint8Array[]>
}

/** What decodes frames here: `node:zlib`'s native Zstandard where the runtime has it, else fzstd. */
export type ZstdDecoderName = 'node:zlib' | 'fzstd'

type CreateZstdDecompress = () => Transform

function nativeZstd(): CreateZstdDecompress | undefined {
  const create = (zlib as unknown as { createZstdDecompress?: CreateZstdDecompress }).createZstdDecompress
  return typeof create === 'function' ? create : undefined
}

/** The decoder {@link zstdText} uses on this runtime. */
export function zstdDecoderName(): ZstdDecoderName {
  return nativeZstd() === undefined ? 'fzstd' : 'node:zlib'
}

/** Counts what one frame decodes to and refuses more than the store's limit (`DECOMPRESSION_LIMIT`). */
type FrameBudget = (bytes: number) => void

function fzstdFrame(budget: FrameBudget): FrameDecoder {
  let out: Uint8Array[] = []
  const decoder = new Decompress((chunk) => {
    budget(chunk.length)
    if (chunk.length > 0) out.push(chunk)
  })
  const take = (): Uint8Array[] => {
    const taken = out
    out = []
    return taken
  }
  return {
    push: (bytes) => {
      decoder.push(bytes, false)
      return Promise.resolve(take())
    },
    end: () => {
      decoder.push(new Uint8Array(0), true)
      return Promise.resolve(take())
    },
  }
}

function nativeFrame(create: CreateZstdDecompress, budget: FrameBudget): FrameDecoder {
  const stream = create()
  let out: Uint8Array[] = []
  let failure: unknown
  stream.on('data', (chunk: Buffer) => {
    try {
      budget(chunk.length)
    } catch (error) {
      // Stops decoding at once: the rest of a bomb is never produced.
      failure ??= error
      out = []
      stream.destroy(error as Error)
      return
    }
    out.push(chunk)
  })
  stream.on('error', (error) => {
    failure ??= error
  })
  const take = (): Uint8Array[] => {
    if (failure !== undefined) throw failure as Error
    const taken = out
    out = []
    return taken
  }
  return {
    push: async (bytes) => {
      if (!stream.write(bytes))
        await Promise.race([once(stream, 'drain'), once(stream, 'error')]).catch(() => 0)
      return take()
    },
    end: async () => {
      stream.end()
      await once(stream, 'end').catch(() => 0)
      return take()
    },
  }
}

const ZSTD_MAGIC = 0xfd2fb528
const MAX_BLOCK_BYTES = 128 * 1024

/**
 * Walks the frame structure of a Zstandard stream as its bytes arrive (RFC 8878: frame header,
 * block headers, checksum; skippable frames), so a file is decoded frame by frame without
 * holding a frame, and a damaged one is refused with the offset where it breaks.
 */
class FrameWalker {
  /** Offset of the next byte given to {@link FrameWalker.feed}. */
  #offset = 0
  /** Bytes of a header being gathered (frame magic and header, block header, skippable size). */
  #pending: number[] = []
  #state:
    'magic' | 'frame-header' | 'header-rest' | 'block-header' | 'block' | 'checksum' | 'skip-size' | 'skip' =
    'magic'
  #need = 4
  #frameStart = 0
  #lastBlock = false
  #checksum = false
  /** Bytes left in the current block, checksum or skippable frame. */
  #left = 0
  readonly #path: string

  constructor(path: string) {
    this.#path = path
  }

  /** True between frames (a file may end here). */
  get atBoundary(): boolean {
    return this.#state === 'magic' && this.#pending.length === 0
  }

  get frameStart(): number {
    return this.#frameStart
  }

  /**
   * Splits a chunk into the pieces of zstd frames (to decode) and frame ends.
   *
   * @param chunk - The next bytes of the file.
   * @returns Pieces of zstd frames in order: `start` on a frame's first piece, `end` on its last.
   */
  *feed(chunk: Uint8Array): Generator<{ bytes: Uint8Array; start: boolean; end: boolean }> {
    let at = 0
    while (at < chunk.length) {
      if (this.#state === 'block' || this.#state === 'checksum' || this.#state === 'skip') {
        const take = Math.min(this.#left, chunk.length - at)
        const bytes = chunk.subarray(at, at + take)
        at += take
        this.#offset += take
        this.#left -= take
        const done = this.#left === 0
        if (this.#state === 'skip') {
          if (done) this.#state = 'magic'
          continue
        }
        const end = done && (this.#state === 'checksum' || (this.#lastBlock && !this.#checksum))
        yield { bytes, start: false, end }
        if (done) this.#afterBody(end)
        continue
      }
      this.#pending.push(chunk[at]!)
      at += 1
      this.#offset += 1
      if (this.#pending.length < this.#need) continue
      const header = Uint8Array.from(this.#pending)
      this.#pending = []
      const result = this.#header(header)
      if (result !== undefined) yield result
    }
  }

  #afterBody(frameEnded: boolean): void {
    if (frameEnded) {
      this.#state = 'magic'
      this.#need = 4
    } else if (this.#state === 'block' && this.#lastBlock) {
      this.#state = 'checksum'
      this.#left = 4
    } else {
      this.#state = 'block-header'
      this.#need = 3
    }
  }

  #header(header: Uint8Array): { bytes: Uint8Array; start: boolean; end: boolean } | undefined {
    const view = new DataView(header.buffer, header.byteOffset, header.byteLength)
    if (this.#state === 'magic') {
      this.#frameStart = this.#offset - 4
      const magic = view.getUint32(0, true)
      if (magic === ZSTD_MAGIC) {
        this.#state = 'frame-header'
        this.#need = 1
        return { bytes: header, start: true, end: false }
      }
      if (magic >>> 4 === 0x184d2a5) {
        this.#state = 'skip-size'
        this.#need = 4
        return undefined
      }
      throw this.#error('bytes that are not a frame', this.#frameStart)
    }
    if (this.#state === 'skip-size') {
      this.#left = view.getUint32(0, true)
      this.#state = this.#left === 0 ? 'magic' : 'skip'
      this.#need = 4
      return undefined
    }
    if (this.#state === 'frame-header') {
      const descriptor = header[0]!
      if ((descriptor & 0x08) !== 0)
        throw this.#error('a frame header with its reserved bit set', this.#offset - 1)
      const single = (descriptor & 0x20) !== 0
      this.#checksum = (descriptor & 0x04) !== 0
      const dictBytes = [0, 1, 2, 4][descriptor & 0x03]!
      const fcsFlag = descriptor >> 6
      const fcsBytes = fcsFlag === 0 ? (single ? 1 : 0) : [0, 2, 4, 8][fcsFlag]!
      const rest = (single ? 0 : 1) + dictBytes + fcsBytes
      this.#state = rest > 0 ? 'header-rest' : 'block-header'
      this.#need = rest > 0 ? rest : 3
      return { bytes: header, start: false, end: false }
    }
    if (this.#state === 'header-rest') {
      this.#state = 'block-header'
      this.#need = 3
      return { bytes: header, start: false, end: false }
    }
    // A block header: last flag, type, size.
    const value = header[0]! | (header[1]! << 8) | (header[2]! << 16)
    this.#lastBlock = (value & 1) === 1
    const type = (value >> 1) & 3
    const size = value >>> 3
    if (type === 3) throw this.#error('a block of the reserved type', this.#offset - 3)
    if (size > MAX_BLOCK_BYTES)
      throw this.#error(`a block of ${size} bytes (at most 131072)`, this.#offset - 3)
    const body = type === 1 ? 1 : size
    if (body > 0) {
      this.#state = 'block'
      this.#left = body
      return { bytes: header, start: false, end: false }
    }
    const end = this.#lastBlock && !this.#checksum
    if (this.#lastBlock && this.#checksum) {
      this.#state = 'checksum'
      this.#left = 4
    } else if (end) {
      this.#state = 'magic'
      this.#need = 4
    } else this.#need = 3
    return { bytes: header, start: false, end }
  }

  #error(found: string, offset: number): CliError {
    return new CliError({
      code: CliErrorCode.IO_ERROR,
      path: this.#path,
      message: `${this.#path}: expected Zstandard frames, found ${found} at offset ${offset}`,
    })
  }

  /** The error for a file that ends here. */
  cutShort(): CliError {
    return this.#error('a frame cut short', this.#frameStart)
  }
}

/**
 * The text of a `.zst` file, decoded as a stream: the compressed bytes are read in chunks,
 * hashed as they are read (`hash`), counted (`onBytes`), split into frames by their headers and
 * decoded frame by frame (`node:zlib` on Node 22.15+, else fzstd), so memory holds one read
 * chunk, the decoder's window and what one chunk decodes to (at most the store's
 * `maxFrameOutputBytes` per frame), whatever the file's size. Skippable frames are skipped.
 *
 * @throws {@link CliError} `IO_ERROR` naming the file and offset for bytes that are not a frame,
 *   a damaged frame (reserved bits or block type, an oversized block, data the decoder refuses)
 *   or a frame cut short; {@link ZstdFrameError} `DECOMPRESSION_LIMIT` for a frame that decodes to more
 *   than the store's `maxFrameOutputBytes` (256 MiB: a decompression bomb), stopped there.
 */
export async function* zstdText(
  path: string,
  hash: { update(bytes: Uint8Array): unknown },
  onBytes: (bytes: number) => void,
): AsyncGenerator<string> {
  const native = nativeZstd()
  const walker = new FrameWalker(path)
  const text = new TextDecoder('utf-8')
  let frame: FrameDecoder | undefined
  const limit = DEFAULT_STORE_LIMITS.maxFrameOutputBytes
  let frameIndex = -1
  let produced = 0
  const budget: FrameBudget = (bytes) => {
    produced += bytes
    if (produced <= limit) return
    throw new ZstdFrameError({
      code: ZstdFrameErrorCode.DECOMPRESSION_LIMIT,
      message: `${path}: expected each Zstandard frame to decompress to at most the store's limit of ${limit} bytes, found frame ${frameIndex} (at offset ${walker.frameStart}) producing more: stopped there`,
      frameIndex,
      compressedOffset: walker.frameStart,
      limit,
      producedBytes: limit,
    })
  }
  const refuse = (error: unknown): CliError =>
    new CliError({
      code: CliErrorCode.IO_ERROR,
      path,
      message: `${path}: expected Zstandard frames, found a frame its decoder refuses at offset ${walker.frameStart} (${error instanceof Error ? error.message : String(error)})`,
    })
  for await (const chunk of createReadStream(path, { highWaterMark: 256 * 1024 })) {
    const bytes = chunk as Buffer
    hash.update(bytes)
    onBytes(bytes.length)
    for (const piece of walker.feed(bytes)) {
      let out: Uint8Array[]
      try {
        if (piece.start) {
          frameIndex += 1
          produced = 0
          frame = native === undefined ? fzstdFrame(budget) : nativeFrame(native, budget)
        }
        out = await frame!.push(piece.bytes)
        if (piece.end) {
          out = [...out, ...(await frame!.end())]
          frame = undefined
        }
      } catch (error) {
        throw CliError.is(error) || ZstdFrameError.is(error) ? error : refuse(error)
      }
      // Each decoded piece is handed on alone: never joined into one string.
      for (const chunk of out) {
        const decoded = text.decode(chunk, { stream: true })
        if (decoded !== '') yield decoded
      }
    }
  }
  if (!walker.atBoundary) throw walker.cutShort()
  const rest = text.decode()
  if (rest !== '') yield rest
}
