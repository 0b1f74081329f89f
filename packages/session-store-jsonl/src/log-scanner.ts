import type { EventRegistry, LoggedEvent, SessionHeader } from '@agent-ledger/session-events'
import { DEFAULT_LIMITS, SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type { StoredLine } from '@agent-ledger/session-store'
import { decodeEventLine, parseHeaderLine } from '@agent-ledger/session-store/line-codec'
import type { DecodeContext } from '@agent-ledger/session-store/line-codec'

import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'
import { decodeLine, findEmbeddedValidLine, nativeCrc32c } from './line-codec.ts'
import type { LineFailureReason, LineLimits } from './line-codec.ts'
import type { LineSink, UnterminatedTail } from './line-splitter.ts'

/** Where a line is: its 1-based number, the byte offset of its first byte and its bytes (without `\n`). */
export interface LineLocation {
  readonly line: number
  readonly offset: number
  /** The line as read; a view that may be reused after the callback returns: copy it to keep it. */
  readonly bytes: Buffer
}

/**
 * Bytes at the end of a log that were never acknowledged: the bytes after the last `\n`,
 * trailing lines that fail the per-line checks and are followed by no valid line, or
 * everything from the first line whose seq repeats an earlier one. `reason` is
 * `unterminated` for bytes after the last `\n` that start like a line (`{`, no NUL: a write
 * cut short), `fenced-writer` for a repeated seq (a writer that lost its lease appended with
 * a stale view of the end: its write, and every write after it, failed its size check and
 * was never acknowledged; see docs/decisions/2026-12-02-repeated-seq-ends-the-prefix.md),
 * `tailGarbage` for everything else (failed lines, zeros, noise).
 */
export interface TornTail {
  /** Byte offset where the torn bytes start (the end of the last good line). */
  readonly offset: number
  /** How many bytes are torn (to the end of what was read). */
  readonly bytes: number
  readonly reason: 'unterminated' | 'tailGarbage' | 'fenced-writer'
  /** 1-based line number of the first torn line. */
  readonly line: number
}

/** Counters of one scan. */
export interface ScanStats {
  /** Lines that passed every check, header included. */
  goodLines: number
  /** Events read (known and ignorable unknown). */
  events: number
  /** Events of an unknown type skipped because they carried `ignorable: true` (RELIABILITY V5). */
  ignoredUnknown: number
}

/** What a finished scan found. */
export interface ScanOutcome {
  /** The header, or null when the log has none (empty file or torn header). */
  readonly header: SessionHeader | null
  /** True when no valid header line was found (RELIABILITY T4). */
  readonly headerMissing: boolean
  /** Seq of the last good event, -1 when none. */
  readonly lastSeq: number
  /** Byte offset just after the `\n` of the last good line (0 when there is none). */
  readonly goodEndOffset: number
  /** Byte offset just after the header's `\n` (0 when there is no header). */
  readonly headerEndOffset: number
  /** Bytes read in all. */
  readonly bytesRead: number
  readonly tornTail: TornTail | null
  /** Damage in the middle of the log (or a refused header): the events before it were delivered. */
  readonly damage: JsonlStoreError | null
  readonly stats: ScanStats
}

/** What the scanner needs besides the lines. */
export interface ScannerOptions {
  readonly limits: LineLimits
  readonly registry: EventRegistry
  /** The file, as errors name it (relative to the store root). */
  readonly file: string
  /** The session directory's name: the header's `id` must equal it (`HEADER_ID_MISMATCH` otherwise). */
  readonly sessionId?: string | undefined
  /**
   * Called with every event that passed the line, seq and type checks, in order (not with the
   * sealed lines of an encrypted session, whose form alone is checked); it applies
   * the projection rules. Throwing marks the event as damage (`INVALID_EVENT`, with the
   * thrown error as `cause` and its `code` in `details.projectionCode`).
   */
  readonly onEvent: (event: LoggedEvent, location: LineLocation) => void
  /** Called once with the header; stops the scan when it returns true (header-only reads). */
  readonly onHeader?: (header: SessionHeader, location: LineLocation) => boolean
  /** Stops the scan before reading the line with this number, e.g. to read a known prefix. */
  readonly stopBeforeLine?: number
  /**
   * Resumes after a verified prefix (a seek point): the source starts at
   * `resume.offset`, the line after event `resume.lastSeq`; header, seq and counters continue
   * from there. Every check of the lines read is unchanged.
   */
  readonly resume?: ScanResume
  /**
   * Lines mode, for the backend port's reader (`src/backend`): only the per-line checks and
   * the torn-tail rule run. Every good line is handed here (the header as line 1, also one
   * this library would refuse, such as a newer version) and each event line counts as the
   * next position (`lastSeq` is then the last position); only the repeated-seq rule runs on
   * `seq` (a line whose seq is below its position ends the prefix: see {@link TornTail});
   * no other `seq`, type or projection check runs (the session core makes those) and `onEvent`/`onHeader` are not called. Returns
   * true to stop the scan. An event line comes with its parsed object (`crc` removed) and its
   * text, so the core need not decode or parse it again.
   */
  readonly onLine?: (location: LineLocation, value?: Record<string, unknown>, text?: string) => boolean
}

/** Where a scan resumes: the prefix's header and the state after its last event (see {@link ScannerOptions.resume}). */
export interface ScanResume {
  /** The prefix's header; null in lines mode (the header is the core's to judge). */
  readonly header: SessionHeader | null
  /** Byte offset just after the header's `\n`. */
  readonly headerEndOffset: number
  /** Seq of the prefix's last event (its line is line `lastSeq + 2`). */
  readonly lastSeq: number
  /** Byte offset just after that event's `\n`: where the source starts. */
  readonly offset: number
  /** The counters of the prefix. */
  readonly stats: Readonly<ScanStats>
}

/**
 * The lines-mode resume after a seek point: event `lastSeq` ends at plain offset `offset`
 * (the header is the core's, so none is carried).
 *
 * @param from - The seek point's last seq and plain offset.
 * @returns The scanner's {@link ScannerOptions.resume}.
 */
export function resumeAfter(from: { readonly lastSeq: number; readonly plainOffset: number }): ScanResume {
  const { lastSeq } = from
  const stats = { goodLines: lastSeq + 2, events: lastSeq + 1, ignoredUnknown: 0 }
  return { header: null, headerEndOffset: 0, lastSeq, offset: from.plainOffset, stats }
}

/** A line failing a per-line check, damage once a valid line follows it (every line format). */
export interface Suspect {
  readonly reason: LineFailureReason
  readonly line: number
  readonly offset: number
  readonly seq?: number | undefined
  readonly glued?: number
}

/** `CORRUPT_LINE` for a suspect line followed by valid data (or with a valid line glued on). */
export function corruptLineError(file: string, suspect: Suspect, lastGoodSeq: number): JsonlStoreError {
  const what = suspect.line === 1 ? 'header line' : `line ${suspect.line}`
  const glued =
    suspect.glued === undefined
      ? ''
      : `, with a valid event line glued on at byte ${suspect.glued} (an append after an unrepaired torn tail)`
  return new JsonlStoreError({
    code: JsonlErrorCode.CORRUPT_LINE,
    message: `The ${what} of ${file} (byte offset ${suspect.offset}) is damaged: expected a line passing the ${suspect.reason} check, found one failing it${glued}, followed by valid data.`,
    file,
    line: suspect.line,
    offset: suspect.offset,
    seq: suspect.seq,
    lastGoodSeq,
    details:
      suspect.glued === undefined
        ? { reason: suspect.reason }
        : { reason: suspect.reason, gluedAt: suspect.glued },
  })
}

/** `CORRUPT_LINE` for a complete header line failing a check: damage, never a torn tail (every line format). */
export function damagedHeaderError(
  file: string,
  header: {
    readonly line: number
    readonly offset: number
    readonly reason: LineFailureReason
    readonly glued?: number
  },
): JsonlStoreError {
  const { offset, reason, glued = -1 } = header
  return new JsonlStoreError({
    code: JsonlErrorCode.CORRUPT_LINE,
    message: `The header line of ${file} (byte offset ${offset}) is damaged: expected a complete header line passing the ${reason} check, found one failing it. A header is durable before its log is visible, so no crash leaves a complete, failing one (CRLF line endings, changed checksums, or a file that is not a session log?); nothing was moved or repaired.`,
    file,
    line: header.line,
    offset,
    lastGoodSeq: -1,
    details: { reason, complete: true, ...(glued === -1 ? {} : { gluedAt: glued }) },
  })
}

/**
 * Names the bytes after the last `\n`: `unterminated` when they start like a line (`{`, no
 * NUL byte), as a write cut short leaves them; `tailGarbage` otherwise (zeros or noise from a
 * size that reached the disk before the data).
 */
function tailReason(tail: UnterminatedTail): TornTail['reason'] {
  if (tail.firstByte !== 0x7b) return 'tailGarbage'
  return tail.bytes === null || tail.bytes.indexOf(0) === -1 ? 'unterminated' : 'tailGarbage'
}

/**
 * The torn-tail rule shared by every line format (v4 here, v0 in `src/v0`): a suspect line
 * with no good line after it makes everything from it a torn tail (`tailGarbage`); otherwise
 * the unterminated bytes after the last `\n`, if any, are the tail.
 */
export function classifyTornTail(scan: {
  readonly suspect: { readonly offset: number; readonly line: number } | null
  readonly tail: UnterminatedTail | null
  readonly bytesRead: number
  readonly nextLine: number
}): TornTail | null {
  if (scan.suspect !== null) {
    return {
      offset: scan.suspect.offset,
      bytes: scan.bytesRead - scan.suspect.offset,
      reason: 'tailGarbage',
      line: scan.suspect.line,
    }
  }
  if (scan.tail === null) return null
  return {
    offset: scan.tail.offset,
    bytes: scan.tail.length,
    reason: tailReason(scan.tail),
    line: scan.nextLine,
  }
}

/**
 * Lines to events: runs the per-line checks, then the core's header and event checks
 * (`@agent-ledger/session-store/line-codec`: `seq` density, the known/ignorable type rule) and
 * the caller's projection rules, and classifies what
 * fails into a torn tail (repairable) or damage (refused).
 *
 * **Torn tail vs damage.** A line that fails a per-line check (UTF-8, depth, JSON, object,
 * checksum) is only *suspect*: if no later line passes those checks, it and everything
 * after it is a torn tail. If a later line passes (or a valid event line is glued onto the
 * failed one), the failed line is damage in the middle: `CORRUPT_LINE`. A line that passes
 * the checksum but breaks `seq`, type or projection rules is always damage: it was written
 * whole, so it is not a crash artefact, except a seq below the expected one: that line and
 * everything after it is a `fenced-writer` tail (never acknowledged; see {@link TornTail}).
 * A terminated line longer than `maxLineBytes` is
 * always `LINE_TOO_LARGE` (it may be a valid line from a writer with a larger limit).
 *
 * Memory: keeps no line after its callback returns.
 */
export class LogScanner implements LineSink {
  readonly #options: ScannerOptions
  #lineNumber = 0
  #header: SessionHeader | null = null
  #lastSeq = -1
  #goodEnd = 0
  #headerEnd = 0
  #suspect: Suspect | null = null
  #damage: JsonlStoreError | null = null
  /** The first line whose seq repeats an earlier one: it and every later byte are a tail. */
  #fenced: { readonly offset: number; readonly line: number } | null = null
  /** Lines mode: a header line passed the per-line checks (it may still be one the core refuses). */
  #rawHeader = false
  #done = false
  readonly #stats: ScanStats = { goodLines: 0, events: 0, ignoredUnknown: 0 }

  /** @param options - Format, limits, registry, file name and the event callback. */
  constructor(options: ScannerOptions) {
    this.#options = options
    const resume = options.resume
    if (resume !== undefined) {
      this.#lineNumber = resume.lastSeq + 2
      this.#header = resume.header
      this.#rawHeader = resume.header === null
      this.#lastSeq = resume.lastSeq
      this.#goodEnd = resume.offset
      this.#headerEnd = resume.headerEndOffset
      this.#stats.goodLines = resume.stats.goodLines
      this.#stats.events = resume.stats.events
      this.#stats.ignoredUnknown = resume.stats.ignoredUnknown
    }
  }

  /** Seq of the last good event so far (-1 when none). */
  get lastSeq(): number {
    return this.#lastSeq
  }

  /** The first line whose seq repeats an earlier one (its plain offset and number), or null. */
  get fencedAt(): { readonly offset: number; readonly line: number } | null {
    return this.#fenced
  }

  /** The header, once read. */
  get header(): SessionHeader | null {
    return this.#header
  }

  /** True once the scan stopped (damage, a stop request, or a refused header). */
  get done(): boolean {
    return this.#done
  }

  /** @inheritDoc */
  line(bytes: Buffer, offset: number): boolean {
    if (this.#done) return true
    // After a repeated seq every line is part of the tail: read on only to count its bytes.
    if (this.#fenced !== null) return false
    const number = this.#lineNumber + 1
    if (this.#options.stopBeforeLine !== undefined && number >= this.#options.stopBeforeLine) {
      this.#done = true
      return true
    }
    this.#lineNumber = number
    const location: LineLocation = { line: number, offset, bytes }
    if (this.#suspect !== null) {
      // Only the per-line checks matter now: does any valid line follow the suspect?
      const decoded = decodeLine(bytes, this.#options.limits)
      if (decoded.ok || decoded.checksumValid || this.#gluedAt(bytes) !== -1) return this.#confirmSuspect()
      return false
    }
    if (number === 1) return this.#headerLine(location)
    return this.#eventLine(location)
  }

  /** @inheritDoc */
  oversizeLine(offset: number, length: number): boolean {
    if (this.#done) return true
    if (this.#fenced !== null) return false
    const number = this.#lineNumber + 1
    if (this.#options.stopBeforeLine !== undefined && number >= this.#options.stopBeforeLine) {
      this.#done = true
      return true
    }
    this.#lineNumber = number
    if (this.#suspect !== null) return this.#confirmSuspect()
    return this.#fail(
      new JsonlStoreError({
        code: JsonlErrorCode.LINE_TOO_LARGE,
        message: `Line ${number} of ${this.#options.file} is too large: expected at most ${this.#options.limits.maxLineBytes} bytes, found ${length}.`,
        file: this.#options.file,
        line: number,
        offset,
        lastGoodSeq: this.#lastSeq,
        details: { reason: 'too-large', bytes: length, limit: this.#options.limits.maxLineBytes },
      }),
    )
  }

  /**
   * Ends the scan.
   *
   * @param tail - The unterminated bytes after the last `\n`, from the splitter.
   * @param bytesRead - Total bytes read.
   * @returns What the scan found.
   */
  finish(tail: UnterminatedTail | null, bytesRead: number): ScanOutcome {
    const fenced = this.#fenced
    const tornTail =
      this.#damage !== null || this.#done
        ? null
        : fenced !== null
          ? {
              offset: fenced.offset,
              bytes: bytesRead - fenced.offset,
              reason: 'fenced-writer' as const,
              line: fenced.line,
            }
          : classifyTornTail({ suspect: this.#suspect, tail, bytesRead, nextLine: this.#lineNumber + 1 })
    return {
      header: this.#header,
      headerMissing: this.#header === null && !this.#rawHeader && this.#damage === null,
      lastSeq: this.#lastSeq,
      goodEndOffset: this.#goodEnd,
      headerEndOffset: this.#headerEnd,
      bytesRead,
      tornTail,
      damage: this.#damage,
      stats: { ...this.#stats },
    }
  }

  #gluedAt(bytes: Buffer): number {
    return findEmbeddedValidLine(bytes, this.#options.limits)
  }

  #headerLine(location: LineLocation): boolean {
    const { limits, file, sessionId, onLine } = this.#options
    const decoded = decodeLine(location.bytes, limits)
    // A complete first line failing its checks is never a torn tail: the header is durable
    // before a log becomes visible, so no crash leaves one (CRLF line endings, upper-case
    // checksums, a file that is not a session log). Damage: writes refused, nothing moved.
    if (!decoded.ok) {
      if (decoded.checksumValid) return this.#failedLine(location, decoded)
      return this.#fail(
        damagedHeaderError(this.#options.file, {
          ...location,
          reason: decoded.reason,
          glued: this.#gluedAt(location.bytes),
        }),
      )
    }
    if (onLine === undefined) {
      // The core's header checks (FORMAT.md section 8, after the per-line checks above).
      const ownId = decoded.value['id']
      try {
        this.#header = parseHeaderLine(decoded.text ?? location.bytes.toString('utf8'), {
          expectedId: sessionId ?? (typeof ownId === 'string' ? ownId : ''),
          location: { file, line: 1, offset: location.offset },
          maxDepth: limits.maxDepth,
          crc32c: nativeCrc32c,
        })
      } catch (error) {
        if (!SessionStoreError.is(error)) throw error
        return this.#fail(fromCoreError(error, file))
      }
    } else {
      // Lines mode: a whole header line, refused or not, is the core's to judge.
      this.#rawHeader = true
    }
    this.#goodEnd = location.offset + location.bytes.length + 1
    this.#headerEnd = this.#goodEnd
    this.#stats.goodLines += 1
    const stop = onLine === undefined ? this.#options.onHeader?.(this.#header!, location) : onLine(location)
    if (stop === true) {
      this.#done = true
      return true
    }
    return false
  }

  #failedLine(
    location: LineLocation,
    failure: {
      readonly reason: LineFailureReason
      readonly checksumValid: boolean
      readonly seq?: number | undefined
    },
  ): boolean {
    const suspect: Suspect = {
      reason: failure.reason,
      line: location.line,
      offset: location.offset,
      seq: failure.seq,
    }
    // A checksummed line beyond our depth limit was written whole: never a torn tail.
    if (failure.checksumValid) {
      if (failure.reason !== 'too-deep')
        return this.#fail(corruptLineError(this.#options.file, suspect, this.#lastSeq))
      const { file, limits } = this.#options
      return this.#fail(
        new JsonlStoreError({
          code: JsonlErrorCode.TOO_DEEP,
          message: `Line ${location.line} of ${file} nests too deeply: expected at most ${limits.maxDepth} levels, found more.`,
          file,
          line: location.line,
          offset: location.offset,
          lastGoodSeq: this.#lastSeq,
          details: { reason: 'too-deep', depthAtLeast: limits.maxDepth + 1, limit: limits.maxDepth },
        }),
      )
    }
    const glued = this.#gluedAt(location.bytes)
    if (glued !== -1)
      return this.#fail(corruptLineError(this.#options.file, { ...suspect, glued }, this.#lastSeq))
    this.#suspect = suspect
    return false
  }

  #confirmSuspect(): boolean {
    return this.#fail(corruptLineError(this.#options.file, this.#suspect!, this.#lastSeq))
  }

  #fail(error: JsonlStoreError): true {
    this.#damage = error
    this.#done = true
    return true
  }

  /** Lines mode: a line that passed the per-line checks is the next position. */
  #rawEventLine(
    location: LineLocation,
    decoded: { readonly value: Record<string, unknown>; readonly text?: string | undefined },
    onLine: (location: LineLocation, value?: Record<string, unknown>, text?: string) => boolean,
  ): boolean {
    if (this.#repeatsSeq(location, decoded.value['seq'])) return false
    this.#lastSeq += 1
    this.#goodEnd = location.offset + location.bytes.length + 1
    this.#stats.goodLines += 1
    this.#stats.events += 1
    if (onLine(location, decoded.value, decoded.text)) {
      this.#done = true
      return true
    }
    return false
  }

  /**
   * The repeated-seq rule, in both modes: a whole line whose seq is below the next one was
   * appended by a writer with a stale view of the end (fenced off its lease), so neither it
   * nor any later line was acknowledged. It starts the tail; the lines after it are skipped.
   */
  #repeatsSeq(location: LineLocation, seq: unknown): boolean {
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0 || seq > this.#lastSeq) return false
    this.#fenced = { offset: location.offset, line: location.line }
    return true
  }

  #eventLine(location: LineLocation): boolean {
    const options = this.#options
    const decoded = decodeLine(location.bytes, options.limits)
    if (!decoded.ok) return this.#failedLine(location, decoded)
    if (options.onLine !== undefined) return this.#rawEventLine(location, decoded, options.onLine)
    const value = decoded.value
    const seq = Object.hasOwn(value, 'seq') ? value['seq'] : undefined
    if (this.#repeatsSeq(location, seq)) return false
    const { file } = options
    const stored = {
      seq: this.#lastSeq + 1,
      line: decoded.text ?? location.bytes.toString('utf8'),
      location: { file, line: location.line, offset: location.offset },
      checked: { value, maxDepth: options.limits.maxDepth },
    }
    const context = {
      sessionId: options.sessionId ?? file,
      registry: options.registry,
      limits: {
        ...DEFAULT_LIMITS,
        maxDepth: options.limits.maxDepth,
        maxLineLength: options.limits.maxLineBytes,
      },
      crc32c: nativeCrc32c,
      expectedSeq: stored.seq,
      lastGoodSeq: this.#lastSeq,
    }
    let event: LoggedEvent
    // An encrypted session's line (FORMAT.md section 17): only its form is checked here, and
    // it is not handed to `onEvent` (its data is sealed); the core opens and checks the event.
    const sealed = this.#header?.encryption !== undefined
    try {
      event = sealed ? sealedEvent(stored, context) : decodeEventLine(stored, context)
    } catch (error) {
      if (!SessionStoreError.is(error)) throw error
      return this.#fail(fromCoreError(error, file))
    }
    try {
      if (!sealed) options.onEvent(event, location)
    } catch (error) {
      if (JsonlStoreError.is(error) && error.code !== JsonlErrorCode.INVALID_EVENT) throw error
      const code = (error as { code?: unknown } | null)?.code
      return this.#fail(
        new JsonlStoreError({
          code: JsonlErrorCode.INVALID_EVENT,
          message: `Line ${location.line} of ${file} breaks the session rules: ${error instanceof Error ? error.message : String(error)}`,
          file,
          line: location.line,
          offset: location.offset,
          lastGoodSeq: this.#lastSeq,
          seq: event.seq,
          details: { projectionCode: typeof code === 'string' ? code : null, type: event.type },
          cause: error,
        }),
      )
    }
    if (event.ignorable === true && !options.registry.has(event.type)) this.#stats.ignoredUnknown += 1
    this.#lastSeq = event.seq
    this.#goodEnd = location.offset + location.bytes.length + 1
    this.#stats.goodLines += 1
    this.#stats.events += 1
    return false
  }
}

/**
 * The one translation of the core's line errors into the JSONL store's: the same code,
 * message, seq and details, with the core's `location` as the top-level `file`, `line` and
 * `offset` callers of this package read.
 *
 * @param error - A `SessionStoreError` from the core's codec.
 * @param file - The file, when the error names none.
 * @returns The `JsonlStoreError`, the core's error as its `cause`.
 */
function fromCoreError(error: SessionStoreError, file: string): JsonlStoreError {
  return new JsonlStoreError({
    code: error.code as JsonlErrorCode,
    message: error.message,
    file: error.location?.file ?? file,
    line: error.location?.line,
    offset: error.location?.offset,
    seq: error.seq,
    lastGoodSeq: error.lastGoodSeq,
    details: error.details,
    cause: error.cause ?? error,
  })
}

/** An encrypted line in its form (seq, time, type, enc) as an event; the core opens it later. */
function sealedEvent(stored: StoredLine, context: DecodeContext): LoggedEvent {
  const value = stored.checked!.value
  const keys = Object.keys(value)
  const form =
    typeof value['enc'] === 'string' &&
    typeof value['type'] === 'string' &&
    keys.length === 4 &&
    Number.isSafeInteger(value['seq'])
  if (form && value['seq'] === context.expectedSeq) return value as unknown as LoggedEvent
  throw new SessionStoreError({
    code: form ? SessionStoreErrorCode.SEQ_GAP : SessionStoreErrorCode.INVALID_EVENT,
    seq: typeof value['seq'] === 'number' ? value['seq'] : undefined,
    lastGoodSeq: context.lastGoodSeq,
    location: stored.location,
    message: `${stored.location?.file} line ${stored.location?.line} is not the encrypted event ${context.expectedSeq}: expected the members seq, time, type and enc with "seq": ${context.expectedSeq}, found ${form ? `"seq": ${String(value['seq'])}` : keys.join(', ')}.`,
    details: form ? { expected: context.expectedSeq, found: value['seq'] } : { field: 'enc' },
  })
}
