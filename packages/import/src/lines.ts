import { ImportError, ImportErrorCode } from './import-error.ts'
import { addDiagnostic } from './report.ts'
import type { ImportReport } from './report.ts'

/** One source line: a JSON object, or (lenient mode) a line that was not one. */
export type ParsedLine =
  | { readonly line: number; readonly value: Record<string, unknown> }
  | { readonly line: number; readonly malformed: string }

/** How lines are read: the file name for messages, lenient or strict, the report to count into. */
export interface LineContext {
  readonly file: string
  readonly lenient: boolean
  readonly report: ImportReport
}

function parseObject(text: string): Record<string, unknown> | string {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return `expected a JSON object, found ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`
  }
  return value as Record<string, unknown>
}

function preview(text: string): string {
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text)
}

/**
 * Parses a stream of lines (without terminators) into JSON objects, numbering them from 1.
 * Blank lines are counted and skipped. A line that is not a JSON object is `MALFORMED_LINE`,
 * or `TORN_LINE` when it is the last one (a writer cut short); in lenient mode both are
 * yielded as `malformed`, counted and listed in the report instead of thrown.
 *
 * @param lines - The source's lines, in order; read once.
 * @param context - File name, mode and report.
 */
export async function* parseLines(
  lines: AsyncIterable<string>,
  context: LineContext,
): AsyncGenerator<ParsedLine> {
  let number = 0
  let held: { line: number; text: string; reason: string } | null = null
  const release = (torn: boolean): ParsedLine => {
    const bad = held!
    held = null
    const code = torn ? ImportErrorCode.TORN_LINE : ImportErrorCode.MALFORMED_LINE
    const what = torn
      ? `the last line is not complete JSON (${bad.reason}): the writer was cut short or is still writing`
      : `expected a JSON object, found ${preview(bad.text)} (${bad.reason})`
    if (!context.lenient) {
      throw new ImportError({
        code,
        file: context.file,
        line: bad.line,
        message: `${context.file} line ${bad.line}: ${what}; use lenient mode (--lenient) to skip and count such lines`,
      })
    }
    context.report.malformedLines += 1
    addDiagnostic(context.report, {
      code,
      line: bad.line,
      message: `${context.file} line ${bad.line}: ${what}; skipped`,
    })
    return { line: bad.line, malformed: bad.text }
  }
  for await (const raw of lines) {
    number += 1
    context.report.lines = number
    let text = raw.endsWith('\r') ? raw.slice(0, -1) : raw
    if (number === 1 && text.charCodeAt(0) === 0xfeff) text = text.slice(1)
    if (text.trim() === '') continue
    if (held !== null) yield release(false)
    const parsed = parseObject(text)
    if (typeof parsed === 'string') {
      held = { line: number, text, reason: parsed }
      continue
    }
    context.report.records += 1
    yield { line: number, value: parsed }
  }
  if (held !== null) yield release(true)
}

/**
 * Splits text chunks (a decoded file stream) into lines without their terminators. The last
 * line is yielded even without a final newline (so a torn tail is seen and reported).
 *
 * @param chunks - Text in order, cut anywhere.
 */
export async function* splitLines(chunks: AsyncIterable<string>): AsyncGenerator<string> {
  let rest = ''
  for await (const chunk of chunks) {
    rest += chunk
    let start = 0
    for (let index = rest.indexOf('\n'); index !== -1; index = rest.indexOf('\n', start)) {
      yield rest.slice(start, index)
      start = index + 1
    }
    rest = rest.slice(start)
  }
  if (rest !== '') yield rest
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
  lines: AsyncIterable<string>,
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
    report.records += 1
    return { line: index, value: value as Record<string, unknown> }
  }
  for await (const raw of lines) {
    number += 1
    report.lines = number
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
