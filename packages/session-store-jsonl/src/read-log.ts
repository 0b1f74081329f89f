import type { FileHandleOps } from './fs-ops.ts'
import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'
import { LineSplitter } from './line-splitter.ts'
import type { LineSink } from './line-splitter.ts'
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
  const chunks = scanLogChunks(source, options)
  for (;;) {
    const step = await chunks.next()
    if (step.done === true) return step.value
  }
}

/**
 * Returns the bytes (without `\n`) and offset of line `lineNumber` (1-based) of a source, or null.
 *
 * @param source - The log's bytes.
 * @param request - The line number and the longest line to buffer.
 */
async function readLineAt(
  source: ByteSource,
  request: { readonly lineNumber: number; readonly maxLineBytes: number },
): Promise<{ readonly bytes: Buffer; readonly offset: number } | null> {
  const splitter = new LineSplitter({ maxLineBytes: request.maxLineBytes })
  let current = 0
  let found: { bytes: Buffer; offset: number } | null = null
  const sink: LineSink = {
    line(bytes, offset) {
      current += 1
      if (current !== request.lineNumber) return false
      found = { bytes: Buffer.from(bytes), offset }
      return true
    },
    oversizeLine() {
      current += 1
      return current === request.lineNumber
    },
  }
  for await (const chunk of source) {
    if (splitter.push(chunk, sink)) break
  }
  return found
}

/**
 * Turns a provisional `SEQ_CONFLICT` (an earlier seq seen again) into `SEQ_DUPLICATE` when
 * the repeating line is byte-identical to the first line with that seq. Reads the source
 * again; only runs on that error path.
 *
 * @param outcome - A scan outcome.
 * @param openSource - Opens the same log from its start.
 * @param maxLineBytes - Longest line to buffer.
 * @returns The outcome, with its damage refined.
 */
export async function refineRepeatedSeq(
  outcome: ScanOutcome,
  openSource: () => ByteSource,
  maxLineBytes: number,
): Promise<ScanOutcome> {
  const damage = outcome.damage
  const repeated = outcome.repeatedLine
  if (damage?.code !== JsonlErrorCode.SEQ_CONFLICT || repeated === null) return outcome
  // Seqs are dense from 0 on line 2 up to the damage, so seq k was on line k + 2.
  const original = await readLineAt(openSource(), { lineNumber: repeated.seq + 2, maxLineBytes })
  const identical = original !== null && original.bytes.equals(repeated.bytes)
  const firstLine = repeated.seq + 2
  const refined = new JsonlStoreError({
    code: identical ? JsonlErrorCode.SEQ_DUPLICATE : JsonlErrorCode.SEQ_CONFLICT,
    message: identical
      ? `Line ${damage.line ?? '?'} of ${damage.file} repeats line ${firstLine} byte for byte: expected "seq" to be ${damage.lastGoodSeq! + 1}, found ${repeated.seq} again.`
      : `Line ${damage.line ?? '?'} of ${damage.file} holds a different event with the same seq as line ${firstLine}, as two writers without a lock would write: expected "seq" to be ${damage.lastGoodSeq! + 1}, found ${repeated.seq}.`,
    file: damage.file,
    line: damage.line,
    offset: damage.offset,
    seq: damage.seq,
    lastGoodSeq: damage.lastGoodSeq,
    details: {
      ...damage.details,
      firstLine,
      offsets: [original?.offset ?? null, damage.offset ?? null],
      identical,
      reason: identical ? 'duplicate' : 'two writers',
      ...(identical ? {} : { hint: 'two writers' }),
    },
  })
  return { ...outcome, damage: refined }
}
