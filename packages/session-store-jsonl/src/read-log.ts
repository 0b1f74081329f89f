import type { FileHandleOps } from './fs-ops.ts'
import { LineSplitter } from './line-splitter.ts'
import { LogScanner } from './log-scanner.ts'
import type { ScannerOptions, ScanOutcome } from './log-scanner.ts'

const FIRST_CHUNK_BYTES = 64 * 1024

/** A source of log bytes, in order, in chunks of any size: a plain file, or decompressed frames. */
export type ByteSource = AsyncIterable<Buffer>

/**
 * Reads a file through its handle in fresh chunks (never one big string or Buffer): 64 KiB
 * first, doubling up to `chunkBytes`.
 *
 * Reads until `end` or until a read returns 0 bytes, so a reader racing a live writer sees
 * a prefix of what was written.
 *
 * @param handle - An open file.
 * @param options - `chunkBytes`: bytes per read; `start`/`end`: the byte range (default: all).
 * @returns The chunks, in order.
 */
export async function* readFileChunks(
  handle: FileHandleOps,
  options: { readonly chunkBytes: number; readonly start?: number; readonly end?: number },
): AsyncGenerator<Buffer, void, undefined> {
  let position = options.start ?? 0
  const end = options.end ?? Infinity
  // Start small and double: a small file costs a small buffer, a large one reads in full chunks.
  let chunkBytes = Math.min(options.chunkBytes, FIRST_CHUNK_BYTES)
  while (position < end) {
    const size = Math.min(chunkBytes, end - position)
    chunkBytes = Math.min(options.chunkBytes, chunkBytes * 2)
    const buffer = Buffer.allocUnsafe(size)
    const count = await handle.read(buffer, 0, size, position)
    if (count === 0) return
    position += count
    yield count === size ? buffer : buffer.subarray(0, count)
  }
}

/**
 * A byte source passed through unchanged, `onChunk` seeing each chunk before it is handed on
 * (the one way a scan counts progress or hashes what it reads).
 *
 * @param source - The bytes.
 * @param onChunk - Called with every chunk, in order.
 * @returns The same chunks.
 */
export async function* tapped(
  source: ByteSource,
  onChunk: (chunk: Buffer) => void,
): AsyncGenerator<Buffer, void, undefined> {
  for await (const chunk of source) {
    onChunk(chunk)
    yield chunk
  }
}

/** Options of {@link scanLog}: the scanner's, plus the longest line the splitter hands out whole. */
export type ScanLogOptions = ScannerOptions

/**
 * Scans a byte source chunk by chunk: yields after each chunk (so a caller can hand out the
 * events its `onEvent` collected), and returns the outcome.
 *
 * @param source - The log's bytes.
 * @param options - Format, limits, registry, file name and callbacks.
 * @returns A generator whose return value is the {@link ScanOutcome}.
 */
export async function* scanLogChunks(
  source: ByteSource,
  options: ScanLogOptions,
): AsyncGenerator<void, ScanOutcome, undefined> {
  const splitter = new LineSplitter({
    maxLineBytes: options.limits.maxLineBytes,
    startOffset: options.resume?.offset ?? 0,
  })
  const scanner = new LogScanner(options)
  for await (const chunk of source) {
    const stopped = splitter.push(chunk, scanner)
    yield
    if (stopped) break
  }
  return scanner.finish(splitter.finish(), splitter.offset)
}

/**
 * Scans a whole byte source: per-line checks, seq, types, projection rules (through
 * `onEvent`), torn-tail classification.
 *
 * @param source - The log's bytes.
 * @param options - Format, limits, registry, file name and callbacks.
 * @returns What the scan found; damage is returned, not thrown.
 */
export async function scanLog(source: ByteSource, options: ScanLogOptions): Promise<ScanOutcome> {
  return drain(scanLogChunks(source, options))
}

/**
 * Runs a chunk-by-chunk scan to its end.
 *
 * @param scan - A scan generator (`scanLogChunks`, `scanZstdLogChunks`, an adapter's `scan`).
 * @returns Its outcome.
 */
export async function drain<T>(scan: AsyncGenerator<void, T, undefined>): Promise<T> {
  for (;;) {
    const step = await scan.next()
    if (step.done === true) return step.value
  }
}
