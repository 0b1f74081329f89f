import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import { decodeLine } from '../line-codec.ts'
import { LineSplitter } from '../line-splitter.ts'
import type { LineSink, UnterminatedTail } from '../line-splitter.ts'
import { classifyTornTail, corruptLineError, damagedHeaderError } from '../log-scanner.ts'
import type { Suspect } from '../log-scanner.ts'
import type { ByteSource } from '../read-log.ts'
import type {
  GenerationChunks,
  GenerationReadOptions,
  SourceRecord,
  SourceScan,
} from '../migration/source-record.ts'
import { V0_EVENT_TYPES, V0_FILE_NAME, V0_FORMAT_VERSION, V0_HEADER_TYPE } from './v0-format.ts'
import { describeFound } from '../found.ts'
import { own } from '../migration/raw-line.ts'

/**
 * Lines to v0 records (the header line apart): the per-line checks of v4 but the checksum (`decodeLine` with no
 * CRC function), then the header rule
 * (line 1 is a `session/header` event with seq 0 and `data.version` 0), dense seqs from 1,
 * and the known/ignorable type rule. Same torn-tail rule as the v4 scanner: a line failing
 * a per-line check is only suspect until a later line passes them (then it is
 * `CORRUPT_LINE`); a line that parses but breaks the envelope, seq or type rules is always
 * damage. Without checksums, a parsable line is taken as written whole.
 *
 * Memory: keeps only the previous line (to tell a duplicated line from a conflicting one).
 */
class V0LogReader implements LineSink {
  readonly #options: GenerationReadOptions
  /** The records read since the last {@link take}. */
  #batch: SourceRecord[] = []
  #lineNumber = 0
  #header: Record<string, unknown> | null = null
  #headerBytes: Buffer | null = null
  #lastSeq = -1
  #goodEnd = 0
  #previous: Buffer | null = null
  #suspect: Suspect | null = null
  #damage: JsonlStoreError | null = null
  #done = false
  #events = 0
  #ignoredUnknown = 0

  /** @param options - File name, limits and registry. */
  constructor(options: GenerationReadOptions) {
    this.#options = options
  }

  /** @returns The records read since the last call. */
  take(): SourceRecord[] {
    const batch = this.#batch
    this.#batch = []
    return batch
  }

  /** @inheritDoc */
  line(bytes: Buffer, offset: number): boolean {
    if (this.#done) return true
    const number = this.#lineNumber + 1
    this.#lineNumber = number
    // The v4 per-line checks minus the checksum (v0 lines have none).
    const decoded = decodeLine(bytes, this.#options.limits, null)
    if (this.#suspect !== null) {
      if (decoded.ok) return this.#fail(corruptLineError(this.#options.file, this.#suspect, this.#lastSeq))
      return false
    }
    if (!decoded.ok) {
      // A complete first line that fails is damage, never a torn tail: a crash while the
      // header was written leaves it unterminated (FORMAT.md sections 7 and 14.2).
      if (number === 1)
        return this.#fail(
          damagedHeaderError(this.#options.file, { reason: decoded.reason, line: number, offset }),
        )
      this.#suspect = { reason: decoded.reason, line: number, offset }
      return false
    }
    if (number === 1) return this.#headerLine(decoded.value, { bytes, offset })
    return this.#eventLine(decoded.value, { bytes, offset, line: number })
  }

  /** @inheritDoc */
  oversizeLine(offset: number, length: number): boolean {
    if (this.#done) return true
    const number = this.#lineNumber + 1
    this.#lineNumber = number
    if (this.#suspect !== null)
      return this.#fail(corruptLineError(this.#options.file, this.#suspect, this.#lastSeq))
    const { file, limits } = this.#options
    return this.#invalid(
      { line: number, offset },
      {
        code: JsonlErrorCode.LINE_TOO_LARGE,
        message: `Line ${number} of ${file} is too large: expected at most ${limits.maxLineBytes} bytes, found ${length}.`,
        details: { reason: 'too-large', bytes: length, limit: limits.maxLineBytes },
      },
    )
  }

  /**
   * Ends the scan.
   *
   * @param tail - The unterminated bytes after the last `\n`, from the splitter.
   * @param bytesRead - Total bytes read.
   * @returns What the scan found.
   */
  finish(tail: UnterminatedTail | null, bytesRead: number): SourceScan {
    // Stopped (damage): the tail is not this scan's to classify.
    const tornTail =
      this.#damage === null && !this.#done
        ? classifyTornTail({ suspect: this.#suspect, tail, bytesRead, nextLine: this.#lineNumber + 1 })
        : null
    return {
      version: V0_FORMAT_VERSION,
      header: this.#header,
      headerLine: this.#headerBytes,
      headerMissing: this.#header === null && this.#damage === null,
      lastSeq: this.#lastSeq,
      goodEndOffset: this.#goodEnd,
      bytesRead,
      tornTail,
      damage: this.#damage,
      events: this.#events,
      ignoredUnknown: this.#ignoredUnknown,
    }
  }

  #fail(error: JsonlStoreError): true {
    this.#damage = error
    this.#done = true
    return true
  }

  #invalid(
    where: { readonly line: number; readonly offset: number; readonly seq?: number | undefined },
    parts: {
      readonly code: JsonlErrorCode
      readonly message: string
      readonly details: Record<string, unknown>
    },
  ): true {
    return this.#fail(
      new JsonlStoreError({
        code: parts.code,
        message: parts.message,
        file: this.#options.file,
        line: where.line,
        offset: where.offset,
        seq: where.seq,
        lastGoodSeq: this.#lastSeq,
        details: parts.details,
      }),
    )
  }

  #headerLine(
    value: Record<string, unknown>,
    where: { readonly bytes: Buffer; readonly offset: number },
  ): boolean {
    const { file } = this.#options
    const type = own(value, 'type')
    const data = own(value, 'data')
    const location = { line: 1, offset: where.offset }
    if (type !== V0_HEADER_TYPE) {
      const version = own(value, 'version')
      // A v1+ header (a format/version object) in a file named as v0.
      if (version !== undefined) return this.#mismatch(version, where.offset)
      return this.#invalid(location, {
        code: JsonlErrorCode.INVALID_HEADER,
        message: `The header line of ${file} is not a v0 header: expected a "${V0_HEADER_TYPE}" event, found ${type === undefined ? 'no "type" member' : `type ${JSON.stringify(type)}`}.`,
        details: { field: 'type', expected: V0_HEADER_TYPE, found: type ?? null },
      })
    }
    if (typeof data !== 'object' || data === null || Array.isArray(data)) {
      return this.#invalid(location, {
        code: JsonlErrorCode.INVALID_HEADER,
        message: `The header line of ${file} is invalid: expected "data" to be an object, found ${describeFound(data, 'data')}.`,
        details: { field: 'data' },
      })
    }
    const version = own(data as Record<string, unknown>, 'version')
    if (version !== V0_FORMAT_VERSION) return this.#mismatch(version, where.offset)
    const seq = own(value, 'seq')
    if (seq !== 0) {
      return this.#invalid(location, {
        code: JsonlErrorCode.INVALID_HEADER,
        message: `The header line of ${file} is invalid: expected "seq" to be 0, found ${describeFound(seq, 'seq')}.`,
        details: { field: 'seq', expected: 0, found: seq ?? null },
      })
    }
    if (typeof own(value, 'time') !== 'string') {
      return this.#invalid(location, {
        code: JsonlErrorCode.INVALID_HEADER,
        message: `The header line of ${file} is invalid: expected "time" to be a string, found ${describeFound(own(value, 'time'), 'time')}.`,
        details: { field: 'time' },
      })
    }
    this.#header = value
    this.#headerBytes = Buffer.from(where.bytes)
    this.#accept(where.bytes, where.offset, 0)
    return false
  }

  #mismatch(headerVersion: unknown, offset: number): true {
    return this.#invalid(
      { line: 1, offset },
      {
        code: JsonlErrorCode.GENERATION_VERSION_MISMATCH,
        message: `The header of ${this.#options.file} has the wrong format version: expected ${V0_FORMAT_VERSION} (from the file name ${V0_FILE_NAME}), found ${describeFound(headerVersion, 'version')}.`,
        details: { nameVersion: V0_FORMAT_VERSION, headerVersion: headerVersion ?? null },
      },
    )
  }

  #eventLine(
    value: Record<string, unknown>,
    where: { readonly bytes: Buffer; readonly offset: number; readonly line: number },
  ): boolean {
    const { file, registry } = this.#options
    const seq = own(value, 'seq')
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0) {
      return this.#invalid(where, {
        code: JsonlErrorCode.INVALID_EVENT,
        message: `Line ${where.line} of ${file} is not a valid event: expected "seq" to be a non-negative integer, found ${describeFound(seq, 'seq')}.`,
        details: { field: 'seq' },
      })
    }
    const expected = this.#lastSeq + 1
    const at = { line: where.line, offset: where.offset, seq }
    if (seq !== expected) {
      if (seq > expected) {
        return this.#invalid(at, {
          code: JsonlErrorCode.SEQ_GAP,
          message: `Line ${where.line} of ${file} skips events: expected "seq" to be ${expected}, found ${seq}.`,
          details: { expected, found: seq },
        })
      }
      const identical = seq === this.#lastSeq && this.#previous !== null && this.#previous.equals(where.bytes)
      return this.#invalid(at, {
        code: identical ? JsonlErrorCode.SEQ_DUPLICATE : JsonlErrorCode.SEQ_CONFLICT,
        message: identical
          ? `Line ${where.line} of ${file} repeats the previous line byte for byte: expected "seq" to be ${expected}, found ${seq} again.`
          : `Line ${where.line} of ${file} repeats an earlier seq: expected "seq" to be ${expected}, found ${seq}.`,
        details: { expected, found: seq, reason: identical ? 'duplicate' : 'two writers' },
      })
    }
    const type = own(value, 'type')
    if (typeof type !== 'string' || type.length === 0) {
      return this.#invalid(at, {
        code: JsonlErrorCode.INVALID_EVENT,
        message: `Line ${where.line} of ${file} is not a valid event: expected "type" to be a non-empty string, found ${describeFound(type, 'type')}.`,
        details: { field: 'type' },
      })
    }
    if (type === V0_HEADER_TYPE) {
      return this.#invalid(at, {
        code: JsonlErrorCode.INVALID_EVENT,
        message: `Line ${where.line} of ${file} is a second header: expected "${V0_HEADER_TYPE}" only on line 1, found it again.`,
        details: { field: 'type', type },
      })
    }
    let kind: SourceRecord['kind']
    if (V0_EVENT_TYPES.has(type) || registry.has(type)) kind = 'known'
    else if (own(value, 'ignorable') === true) kind = 'ignorable'
    else {
      // RELIABILITY V6: migrating would drop meaning.
      return this.#invalid(at, {
        code: JsonlErrorCode.UNKNOWN_EVENT_TYPE,
        message: `Line ${where.line} of ${file} has event type ${JSON.stringify(type)}: expected a known type or "ignorable": true, found neither.`,
        details: { type },
      })
    }
    if (kind === 'ignorable') this.#ignoredUnknown += 1
    this.#events += 1
    this.#batch.push({ event: value, line: where.bytes, kind, origin: { file, ...at } })
    this.#accept(where.bytes, where.offset, seq)
    return false
  }

  #accept(bytes: Buffer, offset: number, seq: number): void {
    this.#lastSeq = seq
    this.#previous = bytes
    this.#goodEnd = offset + bytes.length + 1
  }
}

/**
 * Reads a v0 log chunk by chunk: yields the event records of each chunk (a batch, possibly
 * empty; the header line is in the outcome), and returns the outcome.
 *
 * @param source - The log's bytes.
 * @param options - File name, limits, registry.
 * @returns A generator of record batches whose return value is the {@link SourceScan}.
 */
export async function* readV0Chunks(source: ByteSource, options: GenerationReadOptions): GenerationChunks {
  const reader = new V0LogReader(options)
  const splitter = new LineSplitter({ maxLineBytes: options.limits.maxLineBytes })
  let stopped = false
  let bytesRead = 0
  for await (const chunk of source) {
    bytesRead += chunk.length
    // After a stop the source is still drained, so a hashing source sees every byte.
    if (!stopped) stopped = splitter.push(chunk, reader)
    yield reader.take()
  }
  const tail = stopped ? null : splitter.finish()
  return reader.finish(tail, bytesRead)
}
