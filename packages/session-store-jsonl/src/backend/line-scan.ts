/**
 * Reading a log through the port: the store's streaming scanner in lines mode (per-line
 * checks and the torn-tail rule, nothing about events), over either encoding's adapter.
 */
import { SessionStoreErrorCode } from '@agent-ledger/session-store'
import type { AbortSignalLike, StoredLine, TornTailInfo } from '@agent-ledger/session-store'

import type { FileHandleOps } from '../fs-ops.ts'
import type { ScanOutcome, TornTail } from '../log-scanner.ts'
import type { LogAdapter } from '../log-adapter.ts'
import { drain } from '../read-log.ts'
import type { ZstdLogStats } from '../zstd-log-reader.ts'
import type { SeekPoint } from './seek-point.ts'
import { portError, throwIfAborted, toPortError } from './port-errors.ts'

/** The durable head a scan found. */
export interface ScannedHead {
  /** Event lines that passed the per-line checks, up to damage or a torn tail. */
  readonly nextSeq: number
  /** Checksum of the last of them, or null when there is none. */
  readonly lastCrc: string | null
  /** The header line (line 1) as text, or null when there is no whole one (or the scan started at a seek point). */
  readonly headerLine: string | null
  readonly outcome: ScanOutcome
  /**
   * Where a read of the last event can start (a plain log: the last line; a `.zstd` log: the
   * last frame holding events), or null when there is no event. Offsets of the scanned
   * source; for a staged copy they are those of the copy.
   */
  readonly lastStart: SeekPoint | null
}

/** The 8 hex digits of a line's `,"crc":"xxxxxxxx"}` suffix (the line passed its checksum). */
function crcOf(bytes: Buffer): string | null {
  return bytes.length < 18 ? null : bytes.toString('latin1', bytes.length - 10, bytes.length - 2)
}

type OnLine = NonNullable<Parameters<LogAdapter['scan']>[1]['onLine']>

/**
 * A lines-mode scan from byte 0 or from a seek point. From a seek point nothing reaches
 * `onLine` until the point's line is confirmed (its seq and checksum); when the line found
 * there is another, the scan stops and `state.missed` is set.
 */
function scanAt(
  adapter: LogAdapter,
  at: { readonly source: FileHandleOps | AsyncIterable<Buffer>; readonly seek: SeekPoint | null },
  onLine: OnLine,
): {
  readonly scan: AsyncGenerator<void, ScanOutcome, undefined>
  readonly state: { confirmed: boolean; missed: boolean }
} {
  const { source, seek } = at
  const state = { confirmed: seek === null, missed: false }
  const scan = adapter.scan(source, {
    ...(seek === null
      ? {}
      : { from: { offset: seek.offset, plainOffset: seek.plainOffset, lastSeq: seek.fromSeq - 1 } }),
    onLine: (location, value, text) => {
      if (location.line !== 1 && !state.confirmed) {
        if (location.line - 2 !== seek!.fromSeq || crcOf(location.bytes) !== seek!.firstCrc) {
          state.missed = true
          return true
        }
        state.confirmed = true
      }
      return onLine(location, value, text)
    },
  })
  return { scan, state }
}

/**
 * Scans a whole log (or a staged copy of one) for its head.
 *
 * @param adapter - The log's encoding.
 * @param source - The open log, or its bytes.
 * @returns The head and the scan outcome (damage and torn tail returned, not thrown).
 */
export async function scanHead(
  adapter: LogAdapter,
  source: FileHandleOps | AsyncIterable<Buffer>,
): Promise<ScannedHead> {
  return (await scanFrom(adapter, source, null))!
}

/**
 * Scans a log for its head from a stored checkpoint's seek point: the lines before it are
 * not read; the first line read must be line `seek.fromSeq` with checksum `seek.firstCrc`
 * (the checkpoint's binding), and every line from it on is checked as a whole scan checks it.
 *
 * @param adapter - The log's encoding.
 * @param handle - The open log.
 * @param seek - The checkpoint's seek point into this log.
 * @returns The head (its `headerLine` null: line 1 is not read), or null when the line at
 *   the seek point is not the one it names (the log was cut or rewritten below it; scan it whole).
 */
export async function scanHeadFrom(
  adapter: LogAdapter,
  handle: FileHandleOps,
  seek: SeekPoint,
): Promise<ScannedHead | null> {
  return seek.log === adapter.log.name && seek.fromSeq > 0 ? scanFrom(adapter, handle, seek) : null
}

async function scanFrom(
  adapter: LogAdapter,
  source: FileHandleOps | AsyncIterable<Buffer>,
  seek: SeekPoint | null,
): Promise<ScannedHead | null> {
  let lastCrc: string | null = null
  let lastOffset = -1
  let headerLine: string | null = null
  const { scan, state } = scanAt(adapter, { source, seek }, (location) => {
    if (location.line === 1) {
      headerLine = location.bytes.toString('utf8')
      return false
    }
    lastCrc = crcOf(location.bytes)
    lastOffset = location.offset
    return false
  })
  let outcome: ScanOutcome
  try {
    outcome = await drain(scan)
  } catch (error) {
    // A read that fails before the seek point's line is confirmed: the whole scan decides.
    if (!state.confirmed) return null
    throw error
  }
  if (state.missed || !state.confirmed) return null
  const nextSeq = outcome.lastSeq + 1
  let lastStart: SeekPoint | null = null
  const log = adapter.log.name
  if (adapter.encoding === 'plain') {
    if (lastCrc !== null && lastOffset >= 0) {
      lastStart = {
        log,
        fromSeq: nextSeq - 1,
        offset: lastOffset,
        plainOffset: lastOffset,
        firstCrc: lastCrc,
      }
    }
  } else {
    const frame = (outcome as { zstd?: ZstdLogStats }).zstd?.lastEventFrame ?? null
    if (frame !== null && frame.firstLine - 2 < nextSeq) {
      lastStart = {
        log,
        fromSeq: frame.firstLine - 2,
        offset: frame.offset,
        plainOffset: frame.plainOffset,
        firstCrc: frame.firstCrc,
      }
    }
  }
  return { nextSeq, lastCrc, headerLine, outcome, lastStart }
}

/**
 * The torn tail of a scan as the port reports it.
 *
 * @param adapter - The log's encoding (names the file).
 * @param tail - The scanner's torn tail.
 * @returns The port's view.
 */
export function tornTailInfo(adapter: LogAdapter, tail: TornTail): TornTailInfo {
  return {
    reason: tail.reason,
    bytes: tail.bytes,
    location: { file: adapter.log.file, line: tail.line, offset: tail.offset },
  }
}

/**
 * Reads the header line (line 1) without reading further.
 *
 * @param adapter - The log's encoding.
 * @param handle - The open log.
 * @param sessionId - For messages.
 * @returns The exact header line.
 * @throws {@link SessionStoreError} `CORRUPT_LINE` (no whole header line), `LINE_TOO_LARGE`, `BACKEND_FAILED`.
 */
export async function readHeaderLine(
  adapter: LogAdapter,
  handle: FileHandleOps,
  sessionId: string,
): Promise<StoredLine & { readonly seq: -1 }> {
  let header: string | null = null
  let outcome: ScanOutcome
  try {
    outcome = await drain(
      adapter.scan(handle, {
        onLine: (location) => {
          header = location.bytes.toString('utf8')
          return true
        },
        stopBeforeLine: 2,
      }),
    )
  } catch (error) {
    throw toPortError(error, { sessionId, action: `read the header of session ${sessionId}` })
  }
  if (header !== null)
    return { seq: -1, line: header, location: { file: adapter.log.file, line: 1, offset: 0 } }
  if (outcome.damage !== null) {
    throw toPortError(outcome.damage, { sessionId, action: `read the header of session ${sessionId}` })
  }
  const tail = outcome.tornTail
  throw portError(SessionStoreErrorCode.CORRUPT_LINE, {
    sessionId,
    message: `Session ${sessionId} has no header line: expected a whole checksummed first line in ${adapter.log.file}, found ${tail === null ? 'an empty log' : `${tail.bytes} unacknowledged bytes (${tail.reason})`}.`,
    location: { file: adapter.log.file, line: 1, offset: 0 },
    details: { reason: tail?.reason ?? 'empty' },
  })
}

/** What {@link readLines} reads. */
export interface LineRange {
  readonly sessionId: string
  readonly fromSeq: number
  readonly toSeq?: number | undefined
  readonly signal?: AbortSignalLike | undefined
  readonly onTornTail?: ((tail: TornTailInfo) => void) | undefined
  /** Where line `seek.fromSeq` starts (from the stored checkpoint), used when `seek.fromSeq <= fromSeq`. */
  readonly seek?: SeekPoint | null | undefined
  /** The depth limit the scanner checks lines against (handed to the core with each parsed line). */
  readonly maxDepth: number
}

/**
 * Streams event lines `fromSeq..toSeq`: the lines of each chunk are yielded as soon as the
 * chunk is scanned (a `.zstd` frame's only after the whole frame passed its checks). Damage
 * is thrown after every good line before it; a torn tail ends the read and is reported.
 * Each line comes with the object the scanner parsed and checked (`StoredLine.checked`), so
 * the core decodes it only once.
 *
 * With a usable seek point the scan starts there; when the line found there is not the one
 * the point recorded (its checksum differs, or there is none), the read starts over at byte 0.
 *
 * @param adapter - The log's encoding.
 * @param handle - The open log (closed by the caller).
 * @param range - Seqs, signal, the torn-tail callback and the seek point.
 * @returns The lines.
 */
export async function* readLines(
  adapter: LogAdapter,
  handle: FileHandleOps,
  range: LineRange,
): AsyncGenerator<StoredLine, void, undefined> {
  const seek = range.seek
  if (
    seek !== null &&
    seek !== undefined &&
    seek.log === adapter.log.name &&
    seek.fromSeq > 0 &&
    seek.fromSeq <= range.fromSeq
  ) {
    const resumed = yield* readFrom(adapter, handle, { ...range, seek })
    if (resumed === 'found') return
  }
  yield* readFrom(adapter, handle, { ...range, seek: null })
}

/**
 * One scan from byte 0 or from a seek point; returns `missed` (nothing yielded) when the
 * seek point's line is not there.
 */
async function* readFrom(
  adapter: LogAdapter,
  handle: FileHandleOps,
  range: LineRange & { readonly seek: SeekPoint | null },
): AsyncGenerator<StoredLine, 'found' | 'missed', undefined> {
  const { sessionId, fromSeq, toSeq, seek } = range
  const file = adapter.log.file
  const maxDepth = range.maxDepth
  const queue: StoredLine[] = []
  // Until the seek point's line is confirmed, nothing is yielded (a wrong point starts over).
  const { scan, state } = scanAt(adapter, { source: handle, seek }, (location, value, text) => {
    if (location.line === 1) return false
    const seq = location.line - 2
    if (seq >= fromSeq && (toSeq === undefined || seq <= toSeq)) {
      queue.push({
        seq,
        line: text ?? location.bytes.toString('utf8'),
        location: { file, line: location.line, offset: location.offset },
        ...(value === undefined ? {} : { checked: { value, maxDepth } }),
      })
    }
    return toSeq !== undefined && seq >= toSeq
  })
  const action = `read session ${sessionId}`
  for (;;) {
    throwIfAborted(range.signal, `Reading session ${sessionId}`, sessionId)
    let step
    try {
      step = await scan.next()
    } catch (error) {
      if (!state.confirmed) return 'missed'
      throw toPortError(error, { sessionId, action })
    }
    if (state.missed) return 'missed'
    while (queue.length > 0) yield queue.shift()!
    if (step.done !== true) continue
    if (!state.confirmed) return 'missed'
    const outcome = step.value
    if (outcome.damage !== null) throw toPortError(outcome.damage, { sessionId, action })
    if (outcome.tornTail !== null) range.onTornTail?.(tornTailInfo(adapter, outcome.tornTail))
    return 'found'
  }
}
