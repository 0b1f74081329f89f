import { assertJsonValue, DEFAULT_JSON_LIMITS } from '@agent-ledger/session-events'

import { ImportError, ImportErrorCode } from './import-error.ts'
import { addDiagnostic } from './report.ts'
import type { ImportReport } from './report.ts'

/** One source line: a JSON object, or (lenient mode) a line that was not one. */
export type ParsedLine =
  | { readonly line: number; readonly value: Record<string, unknown> }
  | { readonly line: number; readonly malformed: string }

/** A line longer than the limit {@link splitLines} was given: its length, never its text (it was not held). */
export interface TooLongLine {
  readonly tooLong: number
  /** The limit it is over (characters). */
  readonly limit: number
}

/** What the importer reads: a line without its terminator, or a line too long to hold. */
export type SourceLine = string | TooLongLine

/** The longest line {@link splitLines} holds by default, in characters: the store's line limit (64 MiB). */
export const DEFAULT_MAX_LINE_LENGTH = 64 * 1024 * 1024

/**
 * Where each record number (`ParsedLine.line`) is in the source. Record numbers are the
 * 1-based lines, except after a line holding several records (a writer that left out a
 * newline): each of those records has a number of its own, and the lines after it are
 * shifted by the extra records. Filled by the first pass; empty for almost every source.
 */
export class LinePositions {
  /** Spliced lines in order: the number of their first record, their line, their record count. */
  readonly #splices: { readonly first: number; readonly line: number; readonly parts: number }[] = []

  /** True when some line held several records. */
  get spliced(): boolean {
    return this.#splices.length > 0
  }

  /** Notes that `line` holds `parts` records, numbered from `first`. */
  add(first: number, line: number, parts: number): void {
    this.#splices.push({ first, line, parts })
  }

  /** The line of record number `record`, and its place on that line when the line held several. */
  position(record: number): { readonly line: number; readonly part?: number } {
    let extra = 0
    for (const splice of this.#splices) {
      if (record < splice.first) break
      if (record < splice.first + splice.parts) return { line: splice.line, part: record - splice.first + 1 }
      extra += splice.parts - 1
    }
    return { line: record - extra }
  }
}

/** How lines are read: the file name for messages, lenient or strict, the report to count into. */
export interface LineContext {
  readonly file: string
  readonly lenient: boolean
  readonly report: ImportReport
  /** Filled with the lines that held several records (the first pass only). */
  readonly positions?: LinePositions | undefined
}

/** The source text of each parsed record (see {@link sourceText}). */
const sourceTexts = new WeakMap<object, string>()

/**
 * Notes `text` as the source text of `record` (parsed from it). Nothing is compared here: a
 * record is parsed on every pass over the source (and every fork's re-read), but only the
 * records that get a verbatim copy need to know whether they serialize back to their line.
 */
export function keepSourceText(record: Record<string, unknown>, text: string): void {
  sourceTexts.set(record, text)
}

/**
 * The source text of a record parsed from a line, when `JSON.stringify(record)` would not give
 * those bytes back: a number written `19.0` (Codex), `", "` and `": "` separators or `\u00e9`
 * escapes (Python's `json.dumps`). A record whose line is `JSON.stringify`'s form has none:
 * the record is its text. The verbatim copy of such a record keeps the text instead of the
 * record (see `SessionBuilder.record`).
 */
export function sourceText(record: object): string | undefined {
  const text = sourceTexts.get(record)
  return text === undefined || JSON.stringify(record) === text ? undefined : text
}

function describeValue(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value
}

function parseObject(text: string): Record<string, unknown> | string {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return `expected a JSON object, found ${describeValue(value)}`
  }
  return value as Record<string, unknown>
}

/**
 * The records of a line holding several JSON objects with nothing but spaces between them
 * (`{...}{...}`: a writer that left out a newline), or undefined when the line is not that.
 * A string/escape/depth scan finds where each top-level object ends; `JSON.parse` parses each.
 */
function splitConcatenated(text: string): Record<string, unknown>[] | undefined {
  const pieces: string[] = []
  let depth = 0
  let inString = false
  let escaped = false
  let start = -1
  for (let at = 0; at < text.length; at += 1) {
    const code = text.charCodeAt(at)
    if (inString) {
      if (escaped) escaped = false
      else if (code === BACKSLASH) escaped = true
      else if (code === QUOTE) inString = false
      continue
    }
    if (depth === 0) {
      if (isSpace(code)) continue
      if (code !== OPEN_BRACE) return undefined
      start = at
    }
    if (code === QUOTE) inString = true
    else if (code === OPEN_BRACE || code === OPEN_BRACKET) depth += 1
    else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
      depth -= 1
      if (depth === 0) pieces.push(text.slice(start, at + 1))
    }
  }
  if (depth !== 0 || inString || pieces.length < 2) return undefined
  const records: Record<string, unknown>[] = []
  for (const piece of pieces) {
    const parsed = parseObject(piece)
    if (typeof parsed === 'string' || unstorable(parsed) !== undefined) return undefined
    keepSourceText(parsed, piece)
    records.push(parsed)
  }
  return records
}

/**
 * The store's bounds on a record kept verbatim: its line is `{seq, ..., data: {..., record}}`,
 * so the record may nest two levels less deep than a line (the store's `maxDepth`).
 */
const RECORD_LIMITS = {
  maxDepth: DEFAULT_JSON_LIMITS.maxDepth - 2,
  maxEntries: DEFAULT_JSON_LIMITS.maxEntries,
}

/**
 * Why the store could not hold `record` (nested deeper than its limit, a number JSON cannot
 * write such as `1e400`, too many entries), or undefined when it can. The walk is iterative:
 * a hostile depth cannot overflow the stack.
 */
export function unstorable(record: Record<string, unknown>): string | undefined {
  try {
    assertJsonValue(record, RECORD_LIMITS, 'record')
    return undefined
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
}

function preview(text: string): string {
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text)
}

/** `LINE_TOO_LARGE` for a line over the limit {@link splitLines} was given. */
function tooLong(file: string, line: number, found: TooLongLine): ImportError {
  return new ImportError({
    code: ImportErrorCode.LINE_TOO_LARGE,
    file,
    line,
    message: tooLongMessage(`${file} line ${line}`, found),
  })
}

/**
 * The message of a `LINE_TOO_LARGE`: where, the limit expected, the length found.
 *
 * @param where - The file and line.
 * @param found - The too-long line's length and the limit.
 * @returns The message.
 */
export function tooLongMessage(where: string, found: TooLongLine): string {
  return `${where}: expected a line of at most ${found.limit} characters (the store's line limit), found one of ${found.tooLong} characters or more (not read into memory)`
}

/**
 * Parses a stream of lines (without terminators) into JSON objects, numbering them from 1.
 * Blank lines are counted and skipped. A line holding several JSON objects with no newline
 * between them (a writer bug) gives each of them, with a `SPLICED_LINE` diagnostic (see
 * {@link LinePositions} for their numbers). A line that is not a JSON object is
 * `MALFORMED_LINE`, or `TORN_LINE` when it is the last one and no newline ends it (a writer cut
 * short: {@link splitLines} ends a source that ends with a newline with an empty line); a
 * {@link TooLongLine} is `LINE_TOO_LARGE`. In lenient mode those are counted and listed in the
 * report instead of thrown, a bad line yielded as `malformed`, a too-long one skipped.
 *
 * @param lines - The source's lines, in order; read once.
 * @param context - File name, mode and report.
 */
export async function* parseLines(
  lines: AsyncIterable<SourceLine>,
  context: LineContext,
): AsyncGenerator<ParsedLine> {
  let number = 0
  /** Extra records of spliced lines so far: record numbers run ahead of line numbers by this. */
  let extra = 0
  let held: { line: number; record: number; text: string; reason: string; known: boolean } | null = null
  /** The held line is the last thing read (nothing, not even an empty line, came after it). */
  let heldLast = false
  let lastEmpty = false
  const skip = (code: ImportErrorCode, line: number, what: string): void => {
    context.report.malformedLines += 1
    addDiagnostic(context.report, { code, line, message: `${context.file} line ${line}: ${what}; skipped` })
  }
  const release = (torn: boolean): ParsedLine => {
    const bad = held!
    held = null
    const code = torn ? ImportErrorCode.TORN_LINE : ImportErrorCode.MALFORMED_LINE
    // Before the first record, the file may be no session at all (a symlink to some other
    // file): its content is never echoed (nor JSON.parse's reason, which quotes it).
    const reason = bad.known ? ` (${bad.reason})` : ''
    const found = bad.known
      ? preview(bad.text)
      : `a line of ${bad.text.length} characters that is not JSON (not shown: no line before it is a record)`
    const what = torn
      ? `the last line is not complete JSON${reason} and no newline ends it: the writer was cut short or is still writing`
      : `expected a JSON object, found ${found}${reason}`
    if (!context.lenient) {
      throw new ImportError({
        code,
        file: context.file,
        line: bad.line,
        message: `${context.file} line ${bad.line}: ${what}; use lenient mode (--lenient) to skip and count such lines`,
      })
    }
    skip(code, bad.line, what)
    return { line: bad.record, malformed: bad.text }
  }
  for await (const raw of lines) {
    number += 1
    context.report.lines = number
    heldLast = false
    if (typeof raw !== 'string') {
      lastEmpty = false
      if (held !== null) yield release(false)
      if (!context.lenient) throw tooLong(context.file, number, raw)
      skip(
        ImportErrorCode.LINE_TOO_LARGE,
        number,
        `a line of ${raw.tooLong} characters or more, over the store's line limit of ${raw.limit}`,
      )
      continue
    }
    lastEmpty = raw === ''
    let text = raw.endsWith('\r') ? raw.slice(0, -1) : raw
    if (number === 1 && text.charCodeAt(0) === 0xfeff) text = text.slice(1)
    if (text.trim() === '') continue
    if (held !== null) yield release(false)
    const record = number + extra
    const parsed = parseObject(text)
    if (typeof parsed !== 'string') {
      const problem = unstorable(parsed)
      if (problem !== undefined) {
        const what = `expected a record the store can hold, found one it cannot (${problem})`
        if (!context.lenient) {
          throw new ImportError({
            code: ImportErrorCode.UNSTORABLE_RECORD,
            file: context.file,
            line: number,
            message: `${context.file} line ${number}: ${what}; use lenient mode (--lenient) to skip and count such records`,
          })
        }
        // Kept as the text it is (a string the store can hold), like a line that is not JSON.
        skip(ImportErrorCode.UNSTORABLE_RECORD, number, what)
        yield { line: record, malformed: text }
        continue
      }
      keepSourceText(parsed, text)
      context.report.records += 1
      yield { line: record, value: parsed }
      continue
    }
    const records = splitConcatenated(text)
    if (records === undefined) {
      held = { line: number, record, text, reason: parsed, known: context.report.records > 0 }
      heldLast = true
      continue
    }
    context.positions?.add(record, number, records.length)
    addDiagnostic(context.report, {
      code: 'SPLICED_LINE',
      line: number,
      message: `${context.file} line ${number}: expected one JSON object, found ${records.length} with no newline between them (a writer bug); each imported as a record of its own`,
    })
    extra += records.length - 1
    for (const [index, value] of records.entries()) {
      context.report.records += 1
      yield { line: record + index, value }
    }
  }
  // The empty line after a source's last newline is its terminator, not a line.
  if (lastEmpty) context.report.lines = number - 1
  if (held !== null) yield release(heldLast)
}

/**
 * Splits text chunks (a decoded file stream) into lines without their terminators, as
 * `text.split('\n')` would: the text after the last newline is the last line, so a source
 * that ends with a newline ends with an empty line (a reader knows the last line was
 * complete) and one that does not ends with its torn tail. Each chunk is searched once: the
 * work is linear in the text. A line longer than `maxLineLength` characters is never held:
 * its parts are dropped as soon as it is too long, and a {@link TooLongLine} is yielded
 * instead of it, so memory stays bounded by one chunk plus the limit.
 *
 * @param chunks - Text in order, cut anywhere.
 * @param options - `maxLineLength`: the longest line held (default {@link DEFAULT_MAX_LINE_LENGTH}, the store's line limit).
 */
export async function* splitLines(
  chunks: AsyncIterable<string>,
  options: { readonly maxLineLength?: number } = {},
): AsyncGenerator<SourceLine> {
  const max = options.maxLineLength ?? DEFAULT_MAX_LINE_LENGTH
  /** The pieces of the line being read (from earlier chunks), and their length. */
  let parts: string[] = []
  let length = 0
  /** The line being read is over the limit (its parts were dropped). */
  let over = false
  for await (const chunk of chunks) {
    let start = 0
    for (let index = chunk.indexOf('\n'); index !== -1; index = chunk.indexOf('\n', start)) {
      const total = length + index - start
      if (over || total > max) yield { tooLong: total, limit: max }
      else if (parts.length === 0) yield chunk.slice(start, index)
      else {
        parts.push(chunk.slice(start, index))
        yield parts.join('')
      }
      parts = []
      length = 0
      over = false
      start = index + 1
    }
    if (start < chunk.length) {
      length += chunk.length - start
      if (over || length > max) {
        over = true
        parts = []
      } else parts.push(start === 0 ? chunk : chunk.slice(start))
    }
  }
  yield over ? { tooLong: length, limit: max } : parts.join('')
}

/**
 * Reads the records of the given lines again, in any order the caller asks for them, from a
 * fresh pass over the source: a record met before it is asked for is held until then (only if
 * it is one of `wanted`), so a walk that mostly follows file order holds only what it reads
 * ahead. Used by the tree formats' second pass.
 */
export class LineFetcher {
  readonly #wanted: Int32Array
  readonly #held = new Map<number, Record<string, unknown>>()
  readonly #records: AsyncIterator<ParsedLine>

  /**
   * @param records - A fresh pass over the source (`FormatInput.replay()`).
   * @param wanted - Every line that will be asked for (4 bytes each).
   */
  constructor(records: AsyncIterable<ParsedLine>, wanted: Iterable<number>) {
    this.#wanted = Int32Array.from(wanted).sort()
    this.#records = records[Symbol.asyncIterator]()
  }

  #isWanted(line: number): boolean {
    return sortedHas(this.#wanted, line)
  }

  /** The record at `line` (each wanted line is asked for once). */
  async get(line: number): Promise<Record<string, unknown>> {
    while (!this.#held.has(line)) {
      const next = await this.#records.next()
      if (next.done === true) throw new Error(`line ${line} was not read again`)
      if ('value' in next.value && this.#isWanted(next.value.line))
        this.#held.set(next.value.line, next.value.value)
    }
    const record = this.#held.get(line)!
    this.#held.delete(line)
    return record
  }

  /** Ends the pass (closes the source). */
  async close(): Promise<void> {
    await this.#records.return?.()
  }
}

const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const QUOTE = 0x22
const COMMA = 0x2c
const BACKSLASH = 0x5c

function isSpace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0d || code === 0x0a
}

/**
 * Parses a stream of lines holding one JSON array (an OpenHands trajectory) element by
 * element: a small splitter tracks strings, escapes and nesting depth to find where each
 * top-level element ends, and `JSON.parse` parses that element alone, so memory holds one
 * element, never the array. Elements are numbered from 1 (the `line` of the records they
 * give). Blank lines before the array, and a byte-order mark, are skipped.
 *
 * @param lines - The source's lines (without terminators), from the first one.
 * @param context - File name and report (`lines` and `records` are counted; lenient mode does not apply).
 * @throws {@link ImportError} `MALFORMED_LINE` (an element that does not parse, text outside the array),
 *   `TORN_LINE` (the array ends before its closing bracket), `INVALID_RECORD` (an element that is not an object).
 */
export async function* parseJsonArray(
  lines: AsyncIterable<SourceLine>,
  context: Omit<LineContext, 'lenient'>,
): AsyncGenerator<ParsedLine> {
  const { file, report } = context
  /** `before` the `[`, `value` (an element or `]` may come), in an `element`, `after` the `]`. */
  let phase = 'before' as 'before' | 'value' | 'element' | 'after'
  let depth = 0
  let inString = false
  let escaped = false
  let parts: string[] = []
  let elementLine = 0
  let index = 0
  let number = 0
  const fail = (code: ImportErrorCode, line: number, what: string): ImportError =>
    new ImportError({ code, file, line, message: `${file} line ${line}: ${what}` })
  const finishElement = (text: string): ParsedLine => {
    index += 1
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch (error) {
      throw fail(
        ImportErrorCode.MALFORMED_LINE,
        elementLine,
        `element ${index} of the JSON array does not parse (${error instanceof Error ? error.message : String(error)})`,
      )
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new ImportError({
        code: ImportErrorCode.INVALID_RECORD,
        file,
        line: index,
        message: `${file} element ${index}: expected an event object, found ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`,
      })
    }
    const problem = unstorable(value as Record<string, unknown>)
    if (problem !== undefined) {
      throw new ImportError({
        code: ImportErrorCode.UNSTORABLE_RECORD,
        file,
        line: index,
        message: `${file} element ${index}: expected a record the store can hold, found one it cannot (${problem})`,
      })
    }
    report.records += 1
    return { line: index, value: value as Record<string, unknown> }
  }
  let lastEmpty = false
  for await (const raw of lines) {
    number += 1
    report.lines = number
    if (typeof raw !== 'string') throw tooLong(file, number, raw)
    lastEmpty = raw === ''
    let text = raw
    if (number === 1 && text.charCodeAt(0) === 0xfeff) text = text.slice(1)
    // Where the element being read starts on this line (0 when it began on an earlier one).
    let start = 0
    let backslash = text.indexOf('\\')
    for (let at = 0; at < text.length; at += 1) {
      const code = text.charCodeAt(at)
      if (phase === 'element') {
        if (inString) {
          if (escaped) {
            escaped = false
            continue
          }
          // Jump to the next quote or backslash (most of an event is string content).
          const quote = text.indexOf('"', at)
          // The next backslash is looked up again only once passed (a line may hold many strings).
          if (backslash !== -1 && backslash < at) backslash = text.indexOf('\\', at)
          if (backslash !== -1 && (quote === -1 || backslash < quote)) {
            escaped = true
            at = backslash
          } else if (quote !== -1) {
            inString = false
            at = quote
          } else at = text.length
          continue
        }
        if (code === QUOTE) inString = true
        else if (code === OPEN_BRACE || code === OPEN_BRACKET) depth += 1
        else if (depth > 0 && (code === CLOSE_BRACE || code === CLOSE_BRACKET)) depth -= 1
        else if (depth === 0 && (code === COMMA || code === CLOSE_BRACKET)) {
          parts.push(text.slice(start, at))
          const element = parts.join('\n')
          parts = []
          yield finishElement(element)
          phase = code === COMMA ? 'value' : 'after'
        }
        continue
      }
      if (isSpace(code)) continue
      if (phase === 'before' && code === OPEN_BRACKET) phase = 'value'
      else if (phase === 'value' && code === CLOSE_BRACKET && index === 0) phase = 'after'
      else if (phase === 'value' && code !== COMMA && code !== CLOSE_BRACKET) {
        phase = 'element'
        start = at
        elementLine = number
        depth = 0
        at -= 1
      } else {
        throw fail(
          ImportErrorCode.MALFORMED_LINE,
          number,
          phase === 'before'
            ? `expected a JSON array of events, found ${JSON.stringify(text.slice(at, at + 20))}`
            : phase === 'after'
              ? `expected nothing after the JSON array's closing bracket, found ${JSON.stringify(text.slice(at, at + 20))}`
              : `expected an element of the JSON array after element ${index}, found ${JSON.stringify(text.slice(at, at + 20))}`,
        )
      }
    }
    if (phase === 'element') parts.push(text.slice(start))
  }
  // The empty line after the last newline is the source's terminator, not a line.
  if (lastEmpty) report.lines = number - 1
  if (phase !== 'after') {
    throw fail(
      ImportErrorCode.TORN_LINE,
      number,
      `the JSON array ends after element ${index} without its closing bracket: the writer was cut short or is still writing`,
    )
  }
}

/** Whether the sorted `values` hold `value` (binary search). */
export function sortedHas(values: Int32Array, value: number): boolean {
  let low = 0
  let high = values.length - 1
  while (low <= high) {
    const middle = (low + high) >>> 1
    const found = values[middle]!
    if (found === value) return true
    if (found < value) low = middle + 1
    else high = middle - 1
  }
  return false
}
