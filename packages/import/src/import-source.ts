import { createEventRegistry, SESSION_ID_PATTERN } from '@agent-ledger/session-events'
import type { EventRegistry, LoggedEvent } from '@agent-ledger/session-events'

import { Assembly } from './assembly.ts'
import type { ImportedSession, ImportSink } from './assembly.ts'
import { SessionBuilder } from './builder.ts'
import { claudeCodeFormat, looksLikeClaudeCode } from './formats/claude-code.ts'
import { codexDetection, codexFormat } from './formats/codex.ts'
import {
  looksLikeOpenHandsV0,
  looksLikeOpenHandsV1,
  openHandsEvaluationLine,
  openHandsFormat,
} from './formats/openhands.ts'
import { looksLikePi, piFormat } from './formats/pi.ts'
import type {
  FormatInput,
  FormatModule,
  FormatScanner,
  FormatSession,
  LiveContinuation,
} from './formats/types.ts'
import { fitId } from './ids.ts'
import { ImportError, ImportErrorCode } from './import-error.ts'
import {
  keepSourceText,
  LinePositions,
  parseJsonArray,
  parseLines,
  tooLongMessage,
  unstorable,
} from './lines.ts'
import type { ParsedLine, SourceLine } from './lines.ts'
import { createReport } from './report.ts'
import type { ImportReport } from './report.ts'
import { sourceRecordEventType } from './source-record.ts'

export type { ImportBatch, ImportedSession, ImportSink } from './assembly.ts'

/** The formats this package imports. */
export const SOURCE_FORMATS = ['claude-code', 'codex', 'pi', 'openhands'] as const
export type SourceFormat = (typeof SOURCE_FORMATS)[number]

/**
 * Version of the mapping this build applies. It changes whenever the same source would give
 * different events; an incremental import refuses to extend a session imported by another one.
 */
export const IMPORTER_VERSION = 5

/** The registry that knows `import/source-record` (readers need not: the events are ignorable). */
export const importEventRegistry: EventRegistry = createEventRegistry([sourceRecordEventType])

/** Options of {@link importSource}. */
export interface ImportOptions {
  /** The source as the user named it (messages, `header.metadata.source.file`). */
  readonly file: string
  /**
   * SHA-256 (hex) of the source bytes, computed by the caller and recorded in the header; a
   * function is called once every line was read (a caller hashing while it streams).
   */
  readonly sha256: string | (() => string)
  /** The format, or `auto` (default): detected from the first record. */
  readonly from?: SourceFormat | 'auto'
  /** Skip and count lines that are not JSON instead of refusing the source. */
  readonly lenient?: boolean
  /** `all` (default): every record also kept verbatim; `unmapped`: only records no other event carries. */
  readonly verbatim?: 'all' | 'unmapped'
  /** Fallback for the session id when the source records none (OpenHands): e.g. the file or directory name. */
  readonly sourceName?: string
  /**
   * Where the events go as they are built, in batches, instead of the result (bounded
   * memory): a main session or sidechain is handed over batch by batch while it is built,
   * a fork whole once it is complete. Without a sink, every session's events are in the result.
   */
  readonly sink?: ImportSink
  /** Events per batch handed to the sink (default 2,048). */
  readonly batchEvents?: number
  /**
   * The source is still being written (`import --follow`): build only what the lines so far
   * settle (no repair closers, no message still being merged, no forks), a prefix of what the
   * complete source will give. Feed complete lines only.
   */
  readonly live?: boolean
}

/** What {@link importSource} returns. */
export interface ImportResult {
  readonly format: SourceFormat
  readonly formatVersion: string
  /** How the format was chosen: `detected: …` (what in the content said so) or `given: …`. */
  readonly detection: string
  /** The main session first, then forks and sidechains. */
  readonly sessions: readonly ImportedSession[]
  readonly report: ImportReport
}

/**
 * Which format a first record belongs to, and why; `undefined` when none matches.
 *
 * @param record - The first JSON object of the source (or the first element of a JSON array).
 */
export function detectFormat(
  record: Record<string, unknown>,
): { format: SourceFormat; reason: string } | undefined {
  const codex = codexDetection(record)
  if (codex !== undefined) return { format: 'codex', reason: codex }
  if (looksLikePi(record)) {
    return {
      format: 'pi',
      reason: `a {type: "session"} header${typeof record['version'] === 'number' ? ` of version ${record['version']}` : ' without version (v1)'}`,
    }
  }
  if (looksLikeOpenHandsV1(record))
    return { format: 'openhands', reason: `a V1 SDK event of kind "${String(record['kind'])}"` }
  if (looksLikeOpenHandsV0(record))
    return { format: 'openhands', reason: 'a V0 event with "source" and "action"/"observation"' }
  if (looksLikeClaudeCode(record)) {
    return { format: 'claude-code', reason: `a transcript line of type "${String(record['type'])}"` }
  }
  return undefined
}

const ID_PREFIX: Readonly<Record<SourceFormat, string>> = {
  'claude-code': 'claude',
  codex: 'codex',
  pi: 'pi',
  openhands: 'openhands',
}

function idPart(value: string): string {
  return fitId(value.replace(/[^A-Za-z0-9_-]+/g, '-').replace(/^-+|-+$/g, ''), 90)
}

/**
 * The session id an import gives a source: `<format>-<source id>` (`claude-<sessionId>`,
 * `codex-<session_meta.id>`, `pi-<header id>`, `openhands-<name>`). Deterministic: the same
 * source always lands on the same id.
 */
export function importedSessionId(format: SourceFormat, sourceId: string): string {
  const id = `${ID_PREFIX[format]}-${idPart(sourceId) || 'source'}`
  return SESSION_ID_PATTERN.test(id) ? id : `${ID_PREFIX[format]}-source`
}

/**
 * Whether a source is one JSON object rather than JSON lines: an object spread over lines (`{`
 * alone on the first line), or a one-line object with an `items` array (an early Codex
 * `{session, items}` rollout). A JSON array (an OpenHands trajectory) is not one: it is read
 * element by element ({@link parseJsonArray}).
 */
function isDocument(firstLine: string): boolean {
  const start = firstLine.trim()
  if (start === '{') return true
  if (!start.startsWith('{') || !start.includes('"items"')) return false
  try {
    const value: unknown = JSON.parse(start)
    return typeof value === 'object' && value !== null && Array.isArray((value as { items?: unknown }).items)
  } catch {
    return false
  }
}

/** The records of a JSON document: an array's elements, or an object's `items` after the object without them. */
function documentElements(value: unknown): unknown[] {
  if (Array.isArray(value)) return value
  if (typeof value !== 'object' || value === null) return [value]
  const { items, ...wrapper } = value as Record<string, unknown>
  return Array.isArray(items) ? [wrapper, ...(items as unknown[])] : [value]
}

/** The records of a one-object source (small: an early Codex rollout), parsed whole. */
async function* documentRecords(
  source: AsyncIterable<SourceLine>,
  context: { readonly file: string; readonly report: ImportReport },
): AsyncGenerator<ParsedLine> {
  const parts: string[] = []
  for await (const line of source) {
    context.report.lines += 1
    if (typeof line !== 'string') {
      throw new ImportError({
        code: ImportErrorCode.LINE_TOO_LARGE,
        file: context.file,
        line: context.report.lines,
        message: tooLongMessage(`${context.file} line ${context.report.lines}`, line),
      })
    }
    parts.push(line)
  }
  // The empty line after the last newline is the source's terminator, not a line.
  if (parts.at(-1) === '') context.report.lines -= 1
  let value: unknown
  try {
    value = JSON.parse(parts.join('\n'))
  } catch (error) {
    throw new ImportError({
      code: ImportErrorCode.MALFORMED_LINE,
      file: context.file,
      line: 1,
      message: `${context.file}: expected one JSON document (an array of events, or an object with items), found text that does not parse (${error instanceof Error ? error.message : String(error)})`,
    })
  }
  let index = 0
  for (const element of documentElements(value)) {
    index += 1
    if (typeof element !== 'object' || element === null || Array.isArray(element)) {
      throw new ImportError({
        code: ImportErrorCode.INVALID_RECORD,
        file: context.file,
        line: index,
        message: `${context.file} element ${index}: expected an event object, found ${element === null ? 'null' : Array.isArray(element) ? 'an array' : typeof element}`,
      })
    }
    const problem = unstorable(element as Record<string, unknown>)
    if (problem !== undefined) {
      throw new ImportError({
        code: ImportErrorCode.UNSTORABLE_RECORD,
        file: context.file,
        line: index,
        message: `${context.file} element ${index}: expected a record the store can hold, found one it cannot (${problem})`,
      })
    }
    context.report.records += 1
    yield { line: index, value: element as Record<string, unknown> }
  }
}

const FORMATS: Readonly<Record<SourceFormat, FormatModule>> = {
  'claude-code': claudeCodeFormat,
  codex: codexFormat,
  pi: piFormat,
  openhands: openHandsFormat,
}

const DEFAULT_BATCH_EVENTS = 2048

function refuse(file: string, message: string, line?: number): ImportError {
  return new ImportError({ code: ImportErrorCode.UNRECOGNIZED_FORMAT, file, line, message })
}

/**
 * Imports another agent's session log into v4 events. Pure: no I/O, no clock, no randomness;
 * the caller reads the file (and decompresses a `.jsonl.zst` rollout) and hashes it.
 *
 * **Details**
 * - The format is detected from the first record (or taken from `from`, and checked).
 * - Two passes: the first sees every line (a malformed line is refused before anything is
 *   built) and keeps what the mapping must know first (header facts, a tree's node index);
 *   the second maps. Given `lines` as a function, each pass reads the source again and the
 *   records are never held (with a `sink`, memory is bounded by the index, the projection of
 *   what is visible and one batch); given an iterable, the records are held between passes.
 * - Every record is kept verbatim in an ignorable `import/source-record` event carrying its
 *   line, beside the events it maps to; every lossy mapping is counted in `report.lossy`.
 * - Trees: the path to the last leaf is the main session; each other branch becomes a fork
 *   seeded with the events the two share (`parentSession`, `session/end-seed`).
 * - Crash scars: a call the source never answered gets loop-repair's placeholder; orphan and
 *   duplicate results are dropped with a diagnostic; split assistant records are merged and
 *   their usage taken from the last one.
 * - Deterministic: the same source and options give the same sessions, ids and events, with
 *   or without a sink, whatever the batch size.
 *
 * @param lines - The source's lines without terminators (see `splitLines` for text chunks),
 *   or a function that reads them again from the start each time it is called.
 * @param options - File name, digest, format, mode, sink.
 * @throws {@link ImportError} `UNRECOGNIZED_FORMAT`, `EMPTY_SOURCE`, `MALFORMED_LINE`, `TORN_LINE` (strict),
 *   `INVALID_RECORD`, `INVALID_OPTIONS`, `INVALID_IMPORT`.
 */
export async function importSource(
  lines: AsyncIterable<SourceLine> | (() => AsyncIterable<SourceLine>),
  options: ImportOptions,
): Promise<ImportResult> {
  return (await runImport(lines, options)).result
}

/** What a live import keeps to go on with appended lines (see {@link importLive}). */
interface LiveState {
  readonly scanner: FormatScanner
  readonly facts: string
  readonly assembly: Assembly
  readonly report: ImportReport
  readonly format: SourceFormat
  readonly continued: { session: FormatSession; continuation: LiveContinuation } | undefined
  readonly array: boolean
  /** Some line held several records. */
  readonly spliced: boolean
}

async function runImport(
  lines: AsyncIterable<SourceLine> | (() => AsyncIterable<SourceLine>),
  options: ImportOptions,
): Promise<{ result: ImportResult; live: LiveState }> {
  const { file } = options
  if (typeof options.sha256 === 'string') checkDigest(file, options.sha256)
  const from = options.from ?? 'auto'
  if (from !== 'auto' && !(SOURCE_FORMATS as readonly string[]).includes(from)) {
    throw new ImportError({
      code: ImportErrorCode.INVALID_OPTIONS,
      file,
      message: `Import of ${file}: expected format auto, ${SOURCE_FORMATS.join(', ')}, found ${JSON.stringify(from)}`,
    })
  }
  const reopen = typeof lines === 'function' ? lines : undefined
  const report = createReport('unknown', 'unknown')
  const lenient = options.lenient === true
  const lineIterator = (reopen === undefined ? (lines as AsyncIterable<SourceLine>) : reopen())[
    Symbol.asyncIterator
  ]()
  // A JSON document (an OpenHands trajectory, an early Codex rollout) is recognised by its first non-blank line.
  let firstLine: SourceLine | undefined
  let skipped = 0
  for (let next = await lineIterator.next(); next.done !== true; next = await lineIterator.next()) {
    skipped += 1
    if (typeof next.value !== 'string' || next.value.trim() !== '') {
      firstLine = next.value
      break
    }
  }
  if (firstLine === undefined) {
    throw new ImportError({
      code: ImportErrorCode.EMPTY_SOURCE,
      file,
      message: `${file}: expected at least one record, found ${skipped === 0 ? 'an empty file' : 'only blank lines'}`,
    })
  }
  // A JSON array (an OpenHands trajectory) is read element by element, like lines; a source
  // that is one JSON object (an early Codex rollout) is parsed whole and held.
  const array = typeof firstLine === 'string' && firstLine.trimStart().startsWith('[')
  const document = !array && typeof firstLine === 'string' && isDocument(firstLine)
  const positions = new LinePositions()
  const parse = (
    source: AsyncIterable<SourceLine>,
    into: ImportReport,
    first = false,
  ): AsyncGenerator<ParsedLine> =>
    array
      ? parseJsonArray(source, { file, report: into })
      : document
        ? documentRecords(source, { file, report: into })
        : parseLines(source, { file, lenient, report: into, positions: first ? positions : undefined })
  const firstRead = firstLine
  const restored = (async function* (): AsyncGenerator<SourceLine> {
    for (let index = 1; index < skipped; index += 1) yield ''
    yield firstRead
    for (let next = await lineIterator.next(); next.done !== true; next = await lineIterator.next())
      yield next.value
  })()
  const records = parse(restored, report, true)[Symbol.asyncIterator]()
  // Detection: the first JSON object (lenient mode may skip malformed lines before it).
  let first: ParsedLine | undefined
  const skippedMalformed: ParsedLine[] = []
  for (let next = await records.next(); next.done !== true; next = await records.next()) {
    if ('value' in next.value) {
      first = next.value
      break
    }
    skippedMalformed.push(next.value)
  }
  if (first === undefined || !('value' in first)) {
    throw new ImportError({
      code: ImportErrorCode.EMPTY_SOURCE,
      file,
      message: `${file}: expected at least one JSON record, found none`,
    })
  }
  const detected = detectFormat(first.value)
  const keys = Object.keys(first.value).slice(0, 8).join(', ')
  if (detected === undefined) {
    const found = openHandsEvaluationLine(first.value) ?? `an object with keys ${keys}`
    throw refuse(
      file,
      `${file} line ${first.line}: expected a Claude Code, Codex, pi or OpenHands record, found ${found}; not imported`,
      first.line,
    )
  }
  if (from !== 'auto' && detected.format !== from) {
    throw refuse(
      file,
      `${file} line ${first.line}: expected ${from} content (--from ${from}), found ${detected.format} content (${detected.reason})`,
      first.line,
    )
  }
  const format = detected.format
  const module = FORMATS[format]
  // Pass 1: every line once (strict mode refuses a bad line here, before anything is built).
  const scanner = module.scanner({ sourceName: options.sourceName })
  const held: ParsedLine[] | null = reopen === undefined || document ? [] : null
  for (const parsed of skippedMalformed) {
    scanner.add(parsed)
    held?.push(parsed)
  }
  scanner.add(first)
  held?.push(first)
  for (let next = await records.next(); next.done !== true; next = await records.next()) {
    scanner.add(next.value)
    held?.push(next.value)
  }
  const sha256 = checkDigest(file, typeof options.sha256 === 'string' ? options.sha256 : options.sha256())
  const facts = scanner.facts()
  const replay =
    held === null
      ? () => parse(reopen!(), createReport(format, facts.formatVersion))
      : async function* (): AsyncGenerator<ParsedLine> {
          await Promise.resolve()
          yield* held
        }
  const verbatim = options.verbatim ?? 'all'
  const newBuilder: FormatInput['newBuilder'] = (counts = () => true, builderOptions = {}) =>
    new SessionBuilder(
      {
        format,
        file,
        registry: importEventRegistry,
        report,
        verbatim,
        counts,
        ...(positions.spliced ? { position: (record: number) => positions.position(record) } : {}),
      },
      builderOptions,
    )
  const sourceId = facts.sourceId ?? options.sourceName ?? sha256.slice(0, 16)
  const assembly = new Assembly({
    format,
    facts,
    report,
    mainId: importedSessionId(format, sourceId),
    sessionId: (id) => importedSessionId(format, id),
    sourceMetadata: {
      format,
      formatVersion: facts.formatVersion,
      file,
      sha256,
      ...(facts.sourceId === undefined ? {} : { id: facts.sourceId }),
      importer: { name: '@agent-ledger/import', version: IMPORTER_VERSION },
      ...facts.metadata,
    },
    sink: options.sink,
    batchEvents: Math.max(1, options.batchEvents ?? DEFAULT_BATCH_EVENTS),
    newBuilder: (counts) => newBuilder(counts),
  })
  let continued: LiveState['continued']
  const input: FormatInput = {
    replay,
    report,
    file,
    lenient,
    live: options.live === true,
    newBuilder,
    pump: (session) => assembly.pump(session),
    continueLive: (session, continuation) => {
      continued = { session, continuation }
    },
    close: (session) => assembly.close(session),
    fork: (session, build) => assembly.fork(session, build),
  }
  const sessions = await module.map(input, scanner)
  const done = await assembly.finish(sessions, {
    detection:
      from === 'auto'
        ? `detected ${format}: ${detected.reason}`
        : `given ${format} (content agrees: ${detected.reason})`,
  })
  return {
    result: { format, formatVersion: facts.formatVersion, ...done },
    live: {
      scanner,
      facts: JSON.stringify(facts),
      assembly,
      report,
      format,
      continued,
      array,
      spliced: positions.spliced,
    },
  }
}

/** What {@link LiveImport.append} did with the appended lines. */
export type LiveAppend =
  | {
      readonly kind: 'appended'
      /** The main session's id. */
      readonly id: string
      /** Events to append to the main session now (seqs following what was handed over before). */
      readonly events: readonly LoggedEvent[]
      /** The report of the import so far. */
      readonly report: ImportReport
    }
  | {
      /** The lines cannot be appended to what was built: import the whole source again (live). */
      readonly kind: 'reimport'
      readonly reason: string
    }

/** A live import that keeps its state (the index, the builder) to go on with appended lines. */
export interface LiveImport {
  /** The import of the source as it was (the main session only, nothing closed). */
  readonly result: ImportResult
  /**
   * Maps complete lines appended to the source since the last call (or the import), in
   * order, as a live import of the grown source would: the events to append, or `reimport`
   * with the reason when they cannot be appended (a line that is not JSON, changed header
   * facts, a Claude Code record that is not a child of the main path's leaf, a format mapped
   * from the whole file). After `reimport` the live import is spent.
   */
  append(lines: readonly string[]): LiveAppend
}

/**
 * Imports a source still being written (`import --follow`) and keeps what it built, so that
 * lines appended later are mapped without reading the source again: a live import
 * (`live: true`) whose {@link LiveImport.append} goes on where it stopped. The events it
 * appends are those a live import of the grown source would give (tested against one).
 *
 * @param lines - A function reading the source from the start (each pass calls it; every
 *   call must give the same lines).
 * @param options - As {@link importSource} (`live` is implied).
 * @throws {@link ImportError} As {@link importSource}.
 */
export async function importLive(
  lines: () => AsyncIterable<SourceLine>,
  options: Omit<ImportOptions, 'live'>,
): Promise<LiveImport> {
  const { result, live } = await runImport(lines, { ...options, live: true })
  const { scanner, assembly, report, continued } = live
  let line = report.lines
  let spent: string | undefined =
    continued === undefined || live.array
      ? `the ${live.format} mapping of this source needs the whole file`
      : live.spliced
        ? 'a line of the source holds several records (its record numbers are not its lines)'
        : undefined
  const reimport = (reason: string): LiveAppend => {
    spent ??= reason
    return { kind: 'reimport', reason: spent }
  }
  return {
    result,
    append: (appended) => {
      if (spent !== undefined || continued === undefined) return reimport(spent ?? '')
      for (const raw of appended) {
        line += 1
        report.lines = line
        const text = raw.endsWith('\r') ? raw.slice(0, -1) : raw
        if (text.trim() === '') continue
        let value: unknown
        try {
          value = JSON.parse(text)
        } catch {
          value = undefined
        }
        if (typeof value !== 'object' || value === null || Array.isArray(value))
          return reimport(`line ${line} is not a JSON object`)
        keepSourceText(value as Record<string, unknown>, text)
        report.records += 1
        const parsed = { line, value: value as Record<string, unknown> }
        scanner.add(parsed)
        if (JSON.stringify(scanner.facts()) !== live.facts)
          return reimport(`line ${line} changes what the header says (session id, version, cwd, model...)`)
        const refused = continued.continuation.add(parsed)
        if (refused !== undefined) return reimport(`line ${line}: ${refused}`)
      }
      const events = assembly.take(continued.session)
      return {
        kind: 'appended',
        id: result.sessions[0]!.id,
        events,
        report: { ...report, repairs: {}, format: live.format, formatVersion: result.formatVersion },
      }
    },
  }
}

function checkDigest(file: string, sha256: unknown): string {
  if (typeof sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(sha256)) {
    throw new ImportError({
      code: ImportErrorCode.INVALID_OPTIONS,
      file,
      message: `Import of ${file}: expected sha256 to be 64 lower-case hex digits, found ${JSON.stringify(sha256)}`,
    })
  }
  return sha256
}
