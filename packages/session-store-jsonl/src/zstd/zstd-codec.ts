import { createRequire } from 'node:module'

import { inspectFrame, planFeeds } from './inspect-frame.ts'
import { compressOnWorker } from './wasm-compress-worker.ts'
import { ZlibZstdCodec, zlibZstd } from './zlib-zstd-codec.ts'
import { checkedFrame, checkLevel, codecFailed } from './codec.ts'
import type { ZstdCodec, ZstdDecompressLimits } from './codec.ts'
import { ZstdFrameError, ZstdFrameErrorCode } from './zstd-frame-error.ts'

export type { ZstdCodec, ZstdDecompressLimits } from './codec.ts'

/** The streaming classes of the zstd-codec emscripten binding that this module uses. */
interface StreamBinding {
  begin(level?: number): boolean
  transform(chunk: Uint8Array, callback: (output: Uint8Array) => void): boolean
  end(callback: (output: Uint8Array) => void): boolean
  delete(): void
}

interface ZstdCodecModule {
  ZstdCompressStreamBinding: new () => StreamBinding
  ZstdDecompressStreamBinding: new () => StreamBinding
}

type BindingFactory = (module: Record<string, unknown>) => unknown

/** Compressor input slice: the binding copies each `transform` input into its fixed 16 MiB heap. */
const COMPRESS_SLICE_BYTES = 128 * 1024

/**
 * Window ceiling of zstd-codec 0.1.5: its wasm heap is fixed at 16 MiB (the module declares a
 * 256-page maximum). Measured: windowLog 23 (8 MiB) decodes, windowLog 24 aborts with OOM.
 * This is also Firefox's `windowLogMax=23`, and covers `zstd -1..-19` (not `--ultra`/`--long`).
 */
const ZSTD_CODEC_MAX_WINDOW_BYTES = 8 * 1024 * 1024

/** Levels measured to fit zstd-codec's 16 MiB heap when streaming (10 and above abort with OOM). */
const ZSTD_CODEC_LEVELS = { min: -5, max: 9 } as const

/** The wasm codec as `CODEC_FAILED` messages name it. */
const WASM = 'zstd-codec'

let loading: { readonly promise: Promise<ZstdCodec>; readonly state: CodecState } | undefined
let nativeLoading: Promise<ZstdCodec> | undefined

/**
 * The codec of this runtime: `node:zlib`'s Zstandard (native libzstd, Node 22.15+ / 23.8+)
 * when the runtime has it, else the zstd-codec 0.1.5 WebAssembly build
 * ({@link loadWasmZstdCodec}). Both honour the same contract, window ceiling (8 MiB) and
 * levels (-5..9), so files and options carry over between runtimes. The native codec keeps
 * the wasm one for frames over 8 MiB (decoded in bounded pieces), so both are loaded.
 *
 * @returns The shared codec.
 * @throws {@link ZstdFrameError} with code `CODEC_FAILED` when no codec can be loaded.
 */
export function loadZstdCodec(): Promise<ZstdCodec> {
  const api = zlibZstd()
  if (api === null) return loadWasmZstdCodec()
  // The wasm codec still decodes frames larger than 8 MiB, in bounded pieces (see ZlibZstdCodec).
  nativeLoading ??= loadWasmZstdCodec().then(
    (streaming) => new ZlibZstdCodec(api, streaming),
    (error: unknown) => {
      nativeLoading = undefined
      throw error
    },
  )
  return nativeLoading
}

/**
 * Loads the zstd-codec 0.1.5 WebAssembly build once and returns a codec that uses only its
 * streaming API (its simple API fails above a few MB: fixed 16 MiB heap). The codec of Node
 * 20; on newer runtimes {@link loadZstdCodec} prefers `node:zlib`, and tests use this one to
 * hold both to the same contract.
 *
 * **Details**: the instance is cached; concurrent callers share it. Inputs are fed in
 * 128 KiB slices (compression) or block-aligned groups (decompression), so the wasm heap
 * never holds more than a slice plus the compressor or decoder state and window.
 * `compressFrameAsync` runs a second instance on a worker thread.
 *
 * **Gotchas**: if the wasm module ever aborts (it cannot grow its heap), that instance is
 * marked dead: its calls throw `CODEC_FAILED` and the next `loadWasmZstdCodec()` builds a fresh one.
 *
 * @returns The shared wasm codec.
 * @throws {@link ZstdFrameError} with code `CODEC_FAILED` when the module cannot be loaded.
 */
export function loadWasmZstdCodec(): Promise<ZstdCodec> {
  if (loading !== undefined && !loading.state.dead) return loading.promise
  const state: CodecState = { dead: false, abortMessage: '' }
  const current = {
    state,
    promise: instantiate(state).catch((error: unknown) => {
      if (loading === current) loading = undefined
      throw error
    }),
  }
  loading = current
  return current.promise
}

function instantiate(state: CodecState): Promise<ZstdCodec> {
  const require = createRequire(import.meta.url)
  let factory: BindingFactory
  try {
    factory = require('zstd-codec/lib/zstd-codec-binding-wasm.js') as BindingFactory
  } catch (error) {
    return Promise.reject(
      codecFailed(WASM, 'could not load zstd-codec/lib/zstd-codec-binding-wasm.js', error),
    )
  }
  return new Promise<ZstdCodec>((resolve, reject) => {
    const module: Record<string, unknown> = {
      print: () => {},
      printErr: () => {},
      onAbort: (what: unknown) => {
        state.dead = true
        state.abortMessage = String(what)
        reject(codecFailed(WASM, `the zstd-codec wasm module aborted while loading (${String(what)})`))
      },
      // The emscripten module object is a thenable: resolving a promise with it would loop,
      // so hand back a plain wrapper.
      onRuntimeInitialized: () => resolve(new WasmZstdCodec(module as unknown as ZstdCodecModule, state)),
    }
    try {
      factory(module)
    } catch (error) {
      reject(codecFailed(WASM, 'the zstd-codec wasm module threw while loading', error))
    }
  })
}

interface CodecState {
  dead: boolean
  abortMessage: string
}

class WasmZstdCodec implements ZstdCodec {
  readonly name = 'zstd-codec@0.1.5 (wasm, streaming)'
  readonly maxWindowBytes = ZSTD_CODEC_MAX_WINDOW_BYTES
  readonly levels = ZSTD_CODEC_LEVELS
  readonly #module: ZstdCodecModule
  readonly #state: CodecState

  constructor(module: ZstdCodecModule, state: CodecState) {
    this.#module = module
    this.#state = state
  }

  compressFrame(content: Uint8Array, level: number): Uint8Array {
    checkLevel(this, level)
    const output: Uint8Array[] = []
    let outputBytes = 0
    const collect = (chunk: Uint8Array): void => {
      if (chunk.length === 0) return
      output.push(chunk)
      outputBytes += chunk.length
    }
    const ok = this.#withStream('compress', (stream) => {
      if (!stream.begin(level)) return false
      for (let at = 0; at < content.length; at += COMPRESS_SLICE_BYTES) {
        if (!stream.transform(content.subarray(at, at + COMPRESS_SLICE_BYTES), collect)) return false
      }
      return stream.end(collect)
    })
    if (!ok)
      throw codecFailed(WASM, `compressing ${content.length} bytes at level ${level} returned an error`)
    return checkedFrame(WASM, concat(output, outputBytes), content.length)
  }

  async compressFrameAsync(content: Uint8Array, level: number): Promise<Uint8Array> {
    checkLevel(this, level)
    let frame: Uint8Array
    try {
      frame = await compressOnWorker(content, level)
    } catch (error) {
      throw codecFailed(
        WASM,
        `compressing ${content.length} bytes at level ${level} on the worker thread failed (${error instanceof Error ? error.message : String(error)})`,
        error,
      )
    }
    return checkedFrame(WASM, frame, content.length)
  }

  decompressFrame(frame: Uint8Array, limits: ZstdDecompressLimits): Uint8Array {
    const chunks: Uint8Array[] = []
    const total = this.decompressFrameChunks(frame, limits, (chunk) => chunks.push(chunk))
    return concat(chunks, total)
  }

  decompressFrameChunks(
    frame: Uint8Array,
    limits: ZstdDecompressLimits,
    onChunk: (chunk: Uint8Array) => void,
  ): number {
    const maxWindowBytes = Math.min(limits.maxWindowBytes ?? this.maxWindowBytes, this.maxWindowBytes)
    const plan = inspectFrame(frame, { maxOutputBytes: limits.maxOutputBytes, maxWindowBytes })
    if (plan.info.kind === 'skippable') return 0
    const limit = limits.maxOutputBytes
    let produced = 0
    let pending: Uint8Array[] = []
    let pendingBytes = 0
    const collect = (chunk: Uint8Array): void => {
      if (chunk.length === 0) return
      pending.push(chunk)
      pendingBytes += chunk.length
    }
    // Deliver outside the wasm call: an exception from onChunk must not unwind through wasm frames.
    const declared = plan.info.contentSize
    const deliver = (): void => {
      if (declared !== undefined && produced + pendingBytes > declared) throw sizeMismatch(declared, '>')
      if (produced + pendingBytes > limit) {
        throw new ZstdFrameError({
          code: ZstdFrameErrorCode.DECOMPRESSION_LIMIT,
          message: `A frame of ${frame.length} compressed bytes produced more than the limit of ${limit} bytes: stopped after ${produced} bytes.`,
          limit,
          producedBytes: produced,
        })
      }
      const chunks = pending
      pending = []
      pendingBytes = 0
      for (const chunk of chunks) {
        produced += chunk.length
        onChunk(chunk)
      }
    }
    const sizeMismatch = (size: number, found: string): ZstdFrameError =>
      new ZstdFrameError({
        code: ZstdFrameErrorCode.CORRUPT_FRAME,
        message: `A frame declaring ${size} content bytes decoded to ${found === '>' ? 'more' : found} bytes: expected exactly the declared size.`,
        reason: 'content-size-mismatch',
        compressedOffset: 0,
        producedBytes: produced,
      })
    let failure: 'decode' | undefined
    this.#withStream('decompress', (stream) => {
      if (!stream.begin()) {
        failure = 'decode'
        return false
      }
      for (const feed of planFeeds(plan)) {
        if (!stream.transform(frame.subarray(feed.start, feed.end), collect)) {
          failure = 'decode'
          return false
        }
        deliver()
      }
      if (!stream.end(collect)) failure = 'decode'
      else deliver()
      return true
    })
    if (failure === 'decode') {
      throw new ZstdFrameError({
        code: ZstdFrameErrorCode.CORRUPT_FRAME,
        message: `A frame of ${frame.length} compressed bytes failed to decode after ${produced} content bytes: expected valid compressed blocks, found data the decoder rejects.`,
        reason: 'decode-failed',
        compressedOffset: 0,
        producedBytes: produced,
      })
    }
    if (declared !== undefined && produced !== declared) throw sizeMismatch(declared, `${produced}`)
    return produced
  }

  /** Runs `body` with a fresh stream object, always freeing it; turns a wasm abort into `CODEC_FAILED`. */
  #withStream(kind: 'compress' | 'decompress', body: (stream: StreamBinding) => boolean): boolean {
    if (this.#state.dead) {
      throw codecFailed(
        WASM,
        `this instance aborted earlier (${this.#state.abortMessage}); call loadWasmZstdCodec() again`,
      )
    }
    let stream: StreamBinding | undefined
    try {
      stream =
        kind === 'compress'
          ? new this.#module.ZstdCompressStreamBinding()
          : new this.#module.ZstdDecompressStreamBinding()
      return body(stream)
    } catch (error) {
      if (ZstdFrameError.is(error) && !this.#state.dead) throw error
      if (this.#state.dead || (typeof error === 'string' && error.startsWith('abort('))) {
        this.#state.dead = true
        throw codecFailed(WASM, `the wasm module aborted during ${kind} (${String(error)})`, error)
      }
      throw error
    } finally {
      try {
        stream?.delete()
      } catch {
        // a dead module cannot free; the instance is discarded anyway
      }
    }
  }
}

function concat(chunks: readonly Uint8Array[], total: number): Uint8Array {
  if (chunks.length === 1 && chunks[0] !== undefined && chunks[0].length === total) return chunks[0]
  const out = new Uint8Array(total)
  let at = 0
  for (const chunk of chunks) {
    out.set(chunk, at)
    at += chunk.length
  }
  return out
}
