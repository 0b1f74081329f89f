/**
 * What a create writes and publishes, as a plain log's head: the bytes of its seed batches,
 * counted as they are written (the staged copy is then compared by sha256, not parsed), and
 * the head of a plain log this backend instance has just published, kept so the write open
 * that follows the create (the core's `create` acquires at once) need not scan the whole log
 * again: the create staged those bytes, read them back and compared their sha256 before the
 * link. The head is used once, and only while nothing can have written since: no lease was
 * ever granted on the session (a writer of any process takes one before its first append),
 * the file's identity and times are those seen under the create's lock, and its last line
 * still ends where it did with the checksum it had. Otherwise the acquire scans as always.
 */
import type { Stats } from 'node:fs'

import { lineCrc } from '@agent-ledger/session-store'

import { batchBytes, countNewlines } from './batch-bytes.ts'
import type { FileHandleOps, FsOps } from '../fs-ops.ts'
import type { ScanOutcome } from '../log-scanner.ts'
import type { ScannedHead } from './line-scan.ts'

/** What the create knew of the log it published. */
export interface PublishedHead {
  readonly log: string
  readonly dev: number
  readonly ino: number
  readonly size: number
  readonly mtimeMs: number
  readonly ctimeMs: number
  readonly nextSeq: number
  readonly lastCrc: string
  /** Byte offset where the last event line starts. */
  readonly lastOffset: number
}

/** The parts of a head the acquire's recovery reads: a scan's, or a published one's. */
export type RecoveredHead = Pick<ScannedHead, 'nextSeq' | 'lastCrc' | 'lastStart'> & {
  readonly outcome: Pick<ScanOutcome, 'damage' | 'tornTail' | 'headerMissing' | 'goodEndOffset'>
}

/** Most heads kept at once (a backend that creates sessions nobody opens keeps no more). */
const KEPT = 16

/**
 * Remembers the head of a log just published (call it under the create's writer lock).
 *
 * @param heads - The backend's map, by session id.
 * @param fs - The file-system seam.
 * @param published - The log's path and name, its event count and last event line.
 */
export async function rememberPublished(
  heads: Map<string, PublishedHead>,
  fs: FsOps,
  published: { id: string; path: string; log: string; nextSeq: number; lastLine: string | null | undefined },
): Promise<void> {
  heads.delete(published.id)
  const { lastLine } = published
  if (published.nextSeq === 0 || lastLine === null || lastLine === undefined) return
  const stats = await fs.lstat(published.path)
  const lastBytes = Buffer.byteLength(lastLine, 'utf8') + 1
  heads.set(published.id, {
    log: published.log,
    dev: stats.dev,
    ino: stats.ino,
    size: stats.size,
    mtimeMs: stats.mtimeMs,
    ctimeMs: stats.ctimeMs,
    nextSeq: published.nextSeq,
    lastCrc: lastLine.slice(-10, -2),
    lastOffset: stats.size - lastBytes,
  })
  if (heads.size > KEPT) heads.delete(heads.keys().next().value!)
}

/**
 * The published head, when the open log is still exactly what the create left.
 *
 * @param handle - The log, opened for write under the new lease.
 * @param stats - Its `fstat`.
 * @param head - What the create remembered, or undefined.
 * @returns The head to recover from without a scan, or null (scan the log).
 */
export async function reusePublished(
  handle: FileHandleOps,
  stats: Stats,
  head: PublishedHead | undefined,
): Promise<RecoveredHead | null> {
  if (
    head === undefined ||
    stats.dev !== head.dev ||
    stats.ino !== head.ino ||
    stats.size !== head.size ||
    stats.mtimeMs !== head.mtimeMs ||
    stats.ctimeMs !== head.ctimeMs
  )
    return null
  // The last line read again, with the newline before it (the header's at least): one line,
  // ended by its newline, with the checksum it had.
  const bytes = Buffer.alloc(head.size - head.lastOffset + 1)
  const count = await handle.read(bytes, 0, bytes.length, head.lastOffset - 1)
  if (
    count !== bytes.length ||
    bytes[0] !== 0x0a ||
    bytes.indexOf(0x0a, 1) !== bytes.length - 1 ||
    bytes.toString('latin1', bytes.length - 11, bytes.length - 3) !== head.lastCrc
  )
    return null
  return {
    nextSeq: head.nextSeq,
    lastCrc: head.lastCrc,
    lastStart: {
      log: head.log,
      fromSeq: head.nextSeq - 1,
      offset: head.lastOffset,
      plainOffset: head.lastOffset,
      firstCrc: head.lastCrc,
    },
    outcome: { damage: null, tornTail: null, headerMissing: false, goodEndOffset: head.size },
  }
}

/** What a create wrote after its header: the newlines (one per line, unless a line held one) and the last line. */
export interface Written {
  lines: number
  last: string | null
}

/** A streamed seed's batches as the plain bytes of their lines, one chunk per batch, counted. */
export async function* lineBytes(
  batches: AsyncIterable<readonly string[]>,
  written: Written,
): AsyncGenerator<Buffer, void, undefined> {
  for await (const batch of batches) yield counted(batch, written)
}

/** The plain bytes of `lines` (each ended by `\n`), their newlines and last line added to `written`. */
export function counted(lines: readonly string[], written: Written): Buffer {
  const bytes = batchBytes(lines)
  written.lines += countNewlines(bytes)
  written.last = lines.at(-1) ?? written.last
  return bytes
}

/**
 * The head of a plain log as written: what a scan of the staged copy finds once its sha256
 * is that of the bytes written (a header or seed line holding a newline counts wrong).
 */
export function writtenHead(
  headerLine: string,
  written: Written,
): Pick<ScannedHead, 'nextSeq' | 'lastCrc' | 'headerLine'> & {
  readonly outcome: { readonly damage: null; readonly tornTail: null }
} {
  return {
    nextSeq: written.lines,
    lastCrc: written.last === null ? null : lineCrc(written.last),
    headerLine: headerLine.includes('\n') ? null : headerLine,
    outcome: { damage: null, tornTail: null },
  }
}
