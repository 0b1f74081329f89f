/**
 * Compression with the zstd-codec wasm build on a worker thread (Node 20, where `node:zlib`
 * has no Zstandard): `compress` and reseals compress megabytes per frame, which would
 * otherwise hold the event loop for the whole run.
 *
 * The worker's code is a CommonJS string evaluated by `new Worker(..., { eval: true })`, so
 * it runs the same from the TypeScript sources (tests, `tsx`) and from `dist/`; it loads the
 * same wasm binding the main thread uses (resolved here, passed as `workerData`) and uses
 * only its streaming API, as {@link loadZstdCodec}'s codec does. One worker per process,
 * started on first use, `unref`'d (it never keeps a process alive), restarted after a crash.
 */
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'

/** Compressor input slice, as on the main thread (the binding copies each input into its 16 MiB heap). */
const COMPRESS_SLICE_BYTES = 128 * 1024

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const factory = require(workerData.binding)
let ready = false
let aborted = null
const queue = []
const wasm = {
  print() {},
  printErr() {},
  onAbort(what) { aborted = String(what); drain() },
  onRuntimeInitialized() { ready = true; drain() },
}
factory(wasm)
parentPort.on('message', (job) => { queue.push(job); drain() })
function drain() {
  if (!ready && aborted === null) return
  while (queue.length > 0) {
    const { id, content, level } = queue.shift()
    if (aborted !== null) { parentPort.postMessage({ id, error: 'the wasm module aborted (' + aborted + ')' }); continue }
    const pieces = []
    let total = 0
    const collect = (chunk) => { if (chunk.length > 0) { pieces.push(chunk.slice()); total += chunk.length } }
    let stream
    try {
      stream = new wasm.ZstdCompressStreamBinding()
      let ok = stream.begin(level)
      for (let at = 0; ok && at < content.length; at += workerData.slice) {
        ok = stream.transform(content.subarray(at, at + workerData.slice), collect)
      }
      ok = ok && stream.end(collect)
      if (!ok) throw new Error('the compressor returned an error')
      const frame = new Uint8Array(total)
      let at = 0
      for (const piece of pieces) { frame.set(piece, at); at += piece.length }
      parentPort.postMessage({ id, frame }, [frame.buffer])
    } catch (error) {
      parentPort.postMessage({ id, error: String((error && error.message) || error) })
    } finally {
      try { if (stream) stream.delete() } catch {}
    }
  }
}
`

interface Pending {
  readonly resolve: (frame: Uint8Array) => void
  readonly reject: (error: Error) => void
}

type Reply =
  { readonly id: number; readonly frame: Uint8Array } | { readonly id: number; readonly error: string }

let current: { readonly worker: Worker; readonly pending: Map<number, Pending> } | undefined
let nextId = 0

function start(): { readonly worker: Worker; readonly pending: Map<number, Pending> } {
  const binding = createRequire(import.meta.url).resolve('zstd-codec/lib/zstd-codec-binding-wasm.js')
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { binding, slice: COMPRESS_SLICE_BYTES },
  })
  const state = { worker, pending: new Map<number, Pending>() }
  const failAll = (error: Error): void => {
    if (current === state) current = undefined
    for (const entry of state.pending.values()) entry.reject(error)
    state.pending.clear()
  }
  worker.on('message', (reply: Reply) => {
    const entry = state.pending.get(reply.id)
    if (entry === undefined) return
    state.pending.delete(reply.id)
    if ('error' in reply) entry.reject(new Error(reply.error))
    else entry.resolve(reply.frame)
    if (state.pending.size === 0) worker.unref()
  })
  worker.on('error', (error) => failAll(error))
  worker.on('exit', (code) => failAll(new Error(`the compression worker exited with code ${code}`)))
  worker.unref()
  return state
}

/**
 * Compresses `content` into one frame at `level` on the worker thread.
 *
 * @param content - The bytes (copied: the caller keeps its buffer).
 * @param level - A level the wasm codec accepts (checked by the caller).
 * @returns The frame, unchecked (the caller parses it).
 * @throws Error when the worker fails, exits or cannot start (the next call starts a fresh one).
 */
export function compressOnWorker(content: Uint8Array, level: number): Promise<Uint8Array> {
  current ??= start()
  const state = current
  const id = nextId
  nextId += 1
  // A fresh copy, transferred: the caller's buffer may be a view of a larger one it still uses.
  const copy = new Uint8Array(content)
  return new Promise<Uint8Array>((resolve, reject) => {
    state.pending.set(id, { resolve, reject })
    // Referenced while work is pending, so a process awaiting the frame does not exit early.
    state.worker.ref()
    state.worker.postMessage({ id, content: copy, level }, [copy.buffer])
  })
}
