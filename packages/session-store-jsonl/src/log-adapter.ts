/**
 * The one place where the JSONL backend chooses between a plain and a `.zstd` log. Each
 * adapter says how a new log starts (whole, or streamed for a publish), how one flush batch
 * is encoded, and how the log is scanned (lines mode for reads, events mode for the header
 * peek of the file views and maintenance); no operation branches on the encoding.
 */
import { coreEventRegistry } from '@agent-ledger/session-events'

import type { FileHandleOps } from './fs-ops.ts'
import type { StoreLimits } from './limits.ts'
import { resumeAfter } from './log-scanner.ts'
import type { LineLocation, ScannerOptions, ScanOutcome } from './log-scanner.ts'
import { readFileChunks, scanLog, scanLogChunks } from './read-log.ts'
import { scanZstdLog, scanZstdLogChunks } from './zstd-log-reader.ts'
import type { ZstdLogStats } from './zstd-log-reader.ts'
import { encodeZstdLines, encodeZstdLogStart, encodeZstdStream } from './zstd-log-writer.ts'
import type { LogEncoding } from './zstd-log-writer.ts'
import { sessionLog, zstdBatchEncoder, zstdCodecFor } from './zstd-session.ts'
import type { SessionLog } from './zstd-session.ts'

/** How the lines of a log are scanned in lines mode (see `ScannerOptions.onLine`). */
interface LineScan {
  /** Every line that passed the per-line checks (header = line 1); return true to stop. */
  readonly onLine: (location: LineLocation, value?: Record<string, unknown>, text?: string) => boolean
  /** Stop before this 1-based line number. */
  readonly stopBeforeLine?: number | undefined
  /**
   * Start at a known line instead of byte 0 (a handle source only): the line after event
   * `lastSeq` begins at file offset `offset` (for a `.zstd` log, a frame's first line) and at
   * `plainOffset` of the plain content. The lines before it are not read or checked.
   */
  readonly from?: LineScanStart | undefined
}

/** Where a lines-mode scan starts (see `LineScan.from`). */
interface LineScanStart {
  readonly offset: number
  readonly plainOffset: number
  readonly lastSeq: number
}

/** Options of an events-mode scan: the scanner's, without the limits (the adapter's) or lines mode. */
type EventScanOptions = Omit<ScannerOptions, 'limits' | 'resume' | 'onLine'> & {
  /** Read chunk size (default the limits' `readChunkBytes`; a header peek reads less). */
  readonly chunkBytes?: number | undefined
}

/** What an events-mode scan found; `zstd` holds the frame counts of a `.zstd` log. */
type EventScanOutcome = ScanOutcome & { readonly zstd?: ZstdLogStats | undefined }

/** A log encoding: the bytes a create and a flush write, and the scanner that reads them back. */
export interface LogAdapter {
  readonly encoding: LogEncoding
  /** The log's name in the session directory and its path relative to the root. */
  readonly log: SessionLog
  /**
   * The bytes of a new log, streamed (create, fork and salvage publish through this):
   * the header, then the body's lines (a `.zstd` log: the header frame, then frames of whole
   * lines as the body arrives).
   *
   * @param headerLine - The header line, `\n` included.
   * @param body - Whole lines, each with its `\n`, in chunks of any size.
   */
  stream(headerLine: Buffer, body: AsyncIterable<Buffer>): AsyncGenerator<Buffer, void, undefined>
  /**
   * Scans the whole log (or up to `stopBeforeLine`) with every check, in events mode.
   */
  scanEvents(handle: FileHandleOps, options: EventScanOptions): Promise<EventScanOutcome>
  /**
   * The bytes of a new log.
   *
   * @param headerLine - The header line, `\n` included.
   * @param lines - The seed lines, each with its `\n` (may be empty).
   */
  start(headerLine: Buffer, lines: Buffer): Buffer
  /** The bytes one flush writes for `lines` (whole lines, each with its `\n`). */
  batch(lines: Buffer): Buffer
  /**
   * Scans the log from its start (or a staged copy), yielding after each chunk read so a
   * caller can hand out the lines collected so far; returns the outcome (its byte offsets are
   * file offsets; line locations are plain-content offsets).
   */
  scan(
    source: FileHandleOps | AsyncIterable<Buffer>,
    scan: LineScan,
  ): AsyncGenerator<void, ScanOutcome, undefined>
}

function isHandle(source: FileHandleOps | AsyncIterable<Buffer>): source is FileHandleOps {
  return typeof (source as FileHandleOps).read === 'function'
}

function scannerOptions(log: SessionLog, limits: StoreLimits, scan: LineScan) {
  const from = scan.from
  return {
    ...(from === undefined ? {} : { resume: resumeAfter(from) }),
    limits,
    // Unused in lines mode (no type check); the scanner's options require one.
    registry: coreEventRegistry,
    file: log.file,
    onEvent: () => undefined,
    onLine: scan.onLine,
    ...(scan.stopBeforeLine === undefined ? {} : { stopBeforeLine: scan.stopBeforeLine }),
  }
}

/**
 * The adapter of one session's log in one encoding (loads the zstd codec when needed).
 *
 * @param id - The session id (checked).
 * @param encoding - `plain` or `zstd`.
 * @param limits - The read limits.
 * @returns The adapter.
 * @throws {@link JsonlStoreError} `READ_FAILED` when the zstd codec cannot load.
 */
export async function logAdapter(
  id: string,
  encoding: LogEncoding,
  limits: StoreLimits,
): Promise<LogAdapter> {
  const log = sessionLog(id, encoding)
  const chunks = (source: FileHandleOps | AsyncIterable<Buffer>, start?: number): AsyncIterable<Buffer> =>
    isHandle(source)
      ? readFileChunks(source, {
          chunkBytes: limits.readChunkBytes,
          ...(start === undefined ? {} : { start }),
        })
      : source
  const sized = (options: EventScanOptions): { readonly chunkBytes: number } => ({
    chunkBytes: options.chunkBytes ?? limits.readChunkBytes,
  })
  if (encoding === 'plain') {
    const adapter: LogAdapter = {
      encoding,
      log,
      start: (headerLine, lines) => (lines.length === 0 ? headerLine : Buffer.concat([headerLine, lines])),
      batch: (lines) => lines,
      async *stream(headerLine, body) {
        yield headerLine
        yield* body
      },
      scan: (source, scan) =>
        scanLogChunks(chunks(source, scan.from?.offset), scannerOptions(log, limits, scan)),
      scanEvents: async (handle, options) =>
        scanLog(readFileChunks(handle, sized(options)), { ...options, limits }),
    }
    return adapter
  }
  const codec = await zstdCodecFor(log.file)
  const encodeBatch = zstdBatchEncoder(codec, log.file)
  const adapter: LogAdapter = {
    encoding,
    log,
    // The header in a frame of its own, then the seed as flush-sized frames (as the store writes it).
    start: (headerLine, lines) => encodeZstdLogStart(codec, headerLine, lines.length === 0 ? [] : [lines]),
    batch: encodeBatch,
    async *stream(headerLine, body) {
      yield encodeZstdLines(codec, headerLine)
      yield* encodeZstdStream(codec, body)
    },
    scan: (source, scan) => {
      const { resume: _resume, ...options } = scannerOptions(log, limits, scan)
      return scanZstdLogChunks(chunks(source, scan.from?.offset), {
        ...options,
        codec,
        ...(scan.from === undefined ? {} : { from: scan.from }),
      })
    },
    // The zstd reader refines a repeated seq itself.
    scanEvents: (handle, options) => scanZstdLog(handle, { ...options, limits, codec }),
  }
  return adapter
}
