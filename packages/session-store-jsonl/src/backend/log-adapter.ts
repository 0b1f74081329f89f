/**
 * The one place where the JSONL backend chooses between a plain and a `.zstd` log. Each
 * adapter says how a new log starts, how one flush batch is encoded, and how the log is
 * scanned; no backend operation branches on the encoding.
 */
import { coreEventRegistry } from '@agent-ledger/session-events'

import type { FileHandleOps } from '../fs-ops.ts'
import type { StoreLimits } from '../limits.ts'
import { V4_FORMAT } from '../log-format.ts'
import type { LineLocation, ScanOutcome } from '../log-scanner.ts'
import { readFileChunks, scanLogChunks } from '../read-log.ts'
import { scanZstdLogChunks } from '../zstd-log-reader.ts'
import { encodeZstdLogStart } from '../zstd-log-writer.ts'
import type { LogEncoding } from '../zstd-log-writer.ts'
import { sessionLog, zstdBatchEncoder, zstdCodecFor } from '../zstd-session.ts'
import type { SessionLog } from '../zstd-session.ts'

/** How the lines of a log are scanned in lines mode (see `ScannerOptions.onLine`). */
interface LineScan {
  /** Every line that passed the per-line checks (header = line 1); return true to stop. */
  readonly onLine: (location: LineLocation) => boolean
  /** Stop before this 1-based line number. */
  readonly stopBeforeLine?: number | undefined
}

/** A log encoding: the bytes a create and a flush write, and the scanner that reads them back. */
export interface LogAdapter {
  readonly encoding: LogEncoding
  /** The log's name in the session directory and its path relative to the root. */
  readonly log: SessionLog
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
  return {
    format: V4_FORMAT,
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
  const chunks = (source: FileHandleOps | AsyncIterable<Buffer>): AsyncIterable<Buffer> =>
    isHandle(source) ? readFileChunks(source, { chunkBytes: limits.readChunkBytes }) : source
  if (encoding === 'plain') {
    return {
      encoding,
      log,
      start: (headerLine, lines) => (lines.length === 0 ? headerLine : Buffer.concat([headerLine, lines])),
      batch: (lines) => lines,
      scan: (source, scan) => scanLogChunks(chunks(source), scannerOptions(log, limits, scan)),
    }
  }
  const codec = await zstdCodecFor(log.file)
  const encodeBatch = zstdBatchEncoder(codec, log.file)
  return {
    encoding,
    log,
    // The header in a frame of its own, then the seed as flush-sized frames (as the store writes it).
    start: (headerLine, lines) => encodeZstdLogStart(codec, headerLine, lines.length === 0 ? [] : [lines]),
    batch: encodeBatch,
    scan: (source, scan) =>
      scanZstdLogChunks(chunks(source), { ...scannerOptions(log, limits, scan), codec }),
  }
}
