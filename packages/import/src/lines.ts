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
