import { createEventRegistry, SESSION_ID_PATTERN } from '@agent-ledger/session-events'
import type { EventRegistry, LoggedEvent, SessionHeaderInput } from '@agent-ledger/session-events'

import { SessionBuilder } from './builder.ts'
import { importClaudeCode, looksLikeClaudeCode } from './formats/claude-code.ts'
import { importCodex, looksLikeCodex } from './formats/codex.ts'
import { importOpenHands, looksLikeOpenHandsV0, looksLikeOpenHandsV1 } from './formats/openhands.ts'
import { importPi, looksLikePi } from './formats/pi.ts'
import type { FormatInput, FormatOutput } from './formats/types.ts'
import { ImportError, ImportErrorCode } from './import-error.ts'
import { parseLines } from './lines.ts'
import type { ParsedLine } from './lines.ts'
import { createReport } from './report.ts'
import type { ImportReport } from './report.ts'
import { eventKey, shiftEvent } from './shift.ts'
import { sourceRecordEventType } from './source-record.ts'
import { EPOCH } from './time.ts'

/** The formats this package imports. */
export const SOURCE_FORMATS = ['claude-code', 'codex', 'pi', 'openhands'] as const
export type SourceFormat = (typeof SOURCE_FORMATS)[number]

/**
 * Version of the mapping this build applies. It changes whenever the same source would give
 * different events; an incremental import refuses to extend a session imported by another one.
 */
export const IMPORTER_VERSION = 1

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
}

/** One imported session, ready for `store.create({id, header, seed: events})`. */
export interface ImportedSession {
  readonly id: string
  readonly role: 'main' | 'fork' | 'sidechain'
  readonly header: Partial<SessionHeaderInput> & { readonly createdAt: string }
  /** The whole log, seqs dense from 0, repair closers included. */
  readonly events: readonly LoggedEvent[]
  /** Repair events in this session (placeholders and turn closers), by code. */
  readonly repairs: Readonly<Record<string, number>>
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
  if (looksLikeCodex(record)) {
    return {
      format: 'codex',
      reason: `a {timestamp, type, payload} line of type "${String(record['type'])}"`,
    }
  }
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
  return value
    .replace(/[^A-Za-z0-9_-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 90)
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

async function* prepend(first: ParsedLine, rest: AsyncIterator<ParsedLine>): AsyncGenerator<ParsedLine> {
  yield first
  for (let next = await rest.next(); next.done !== true; next = await rest.next()) yield next.value
}

async function* arrayRecords(
  firstLine: string,
  rest: AsyncIterator<string>,
  context: { readonly file: string; readonly report: ImportReport },
): AsyncGenerator<ParsedLine> {
  const parts = [firstLine]
  for (let next = await rest.next(); next.done !== true; next = await rest.next()) {
    parts.push(next.value)
    context.report.lines += 1
  }
  let value: unknown
  try {
    value = JSON.parse(parts.join('\n'))
  } catch (error) {
    throw new ImportError({
      code: ImportErrorCode.MALFORMED_LINE,
      file: context.file,
      line: 1,
      message: `${context.file}: expected a JSON array of events, found text that does not parse (${error instanceof Error ? error.message : String(error)})`,
    })
  }
  let index = 0
  for (const element of Array.isArray(value) ? value : []) {
    index += 1
    if (typeof element !== 'object' || element === null || Array.isArray(element)) {
      throw new ImportError({
        code: ImportErrorCode.INVALID_RECORD,
        file: context.file,
        line: index,
        message: `${context.file} element ${index}: expected an event object, found ${element === null ? 'null' : typeof element}`,
      })
    }
    context.report.records += 1
    yield { line: index, value: element as Record<string, unknown> }
  }
}

const IMPORTERS: Readonly<Record<SourceFormat, (input: FormatInput) => Promise<FormatOutput>>> = {
  'claude-code': importClaudeCode,
  codex: importCodex,
  pi: importPi,
  openhands: importOpenHands,
}

function refuse(file: string, message: string, line?: number): ImportError {
  return new ImportError({ code: ImportErrorCode.UNRECOGNIZED_FORMAT, file, line, message })
}

/**
 * Imports another agent's session log into v4 events. Pure: no I/O, no clock, no randomness;
 * the caller reads the file (and decompresses a `.jsonl.zst` rollout) and hashes it.
 *
 * **Details**
 * - The format is detected from the first record (or taken from `from`, and checked).
 * - Lines are parsed as they stream in; linear formats (Codex, OpenHands) are mapped as
 *   they are read, tree formats (Claude Code, pi) once the whole tree is known.
 * - Every record is kept verbatim in an ignorable `import/source-record` event carrying its
 *   line, beside the events it maps to; every lossy mapping is counted in `report.lossy`.
 * - Trees: the path to the last leaf is the main session; each other branch becomes a fork
 *   seeded with the events the two share (`parentSession`, `session/end-seed`).
 * - Crash scars: a call the source never answered gets loop-repair's placeholder; orphan and
 *   duplicate results are dropped with a diagnostic; split assistant records are merged and
 *   their usage taken from the last one.
 * - Deterministic: the same source and options give the same sessions, ids and events.
 *
 * @param lines - The source's lines without terminators (see `splitLines` for text chunks).
 * @param options - File name, digest, format, mode.
 * @throws {@link ImportError} `UNRECOGNIZED_FORMAT`, `EMPTY_SOURCE`, `MALFORMED_LINE`, `TORN_LINE` (strict),
 *   `INVALID_RECORD`, `INVALID_OPTIONS`, `INVALID_IMPORT`.
 */
export async function importSource(
  lines: AsyncIterable<string>,
  options: ImportOptions,
): Promise<ImportResult> {
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
  const report = createReport('unknown', 'unknown')
  const lenient = options.lenient === true
  const lineIterator = lines[Symbol.asyncIterator]()
  // A JSON array (an OpenHands trajectory) is recognised by its first non-blank line.
  let firstLine: string | undefined
  let skipped = 0
  for (let next = await lineIterator.next(); next.done !== true; next = await lineIterator.next()) {
    skipped += 1
    if (next.value.trim() !== '') {
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
  let records: AsyncIterator<ParsedLine>
  if (firstLine.trimStart().startsWith('[')) {
    report.lines = skipped
    records = arrayRecords(firstLine, lineIterator, { file, report })
  } else {
    const restored = (async function* (): AsyncGenerator<string> {
      for (let index = 1; index < skipped; index += 1) yield ''
      yield firstLine
      for (let next = await lineIterator.next(); next.done !== true; next = await lineIterator.next())
        yield next.value
    })()
    records = parseLines(restored, { file, lenient, report })[Symbol.asyncIterator]()
  }
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
    throw refuse(
      file,
      `${file} line ${first.line}: expected a Claude Code, Codex, pi or OpenHands record, found an object with keys ${keys}; not imported`,
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
  const verbatim = options.verbatim ?? 'all'
  const input: FormatInput = {
    records: (async function* (): AsyncGenerator<ParsedLine> {
      yield* skippedMalformed
      yield* prepend(first, records)
    })(),
    report,
    file,
    lenient,
    newBuilder: (counts = () => true) =>
      new SessionBuilder({ format, file, registry: importEventRegistry, report, verbatim, counts }),
  }
  const output = await IMPORTERS[format](input)
  return assemble(output, { format, detected, from, options, report })
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

function assemble(
  output: FormatOutput,
  context: {
    readonly format: SourceFormat
    readonly detected: { readonly reason: string }
    readonly from: string
    readonly options: ImportOptions
    readonly report: ImportReport
  },
): ImportResult {
  const { format, report, options } = context
  const sha256 = checkDigest(
    options.file,
    typeof options.sha256 === 'string' ? options.sha256 : options.sha256(),
  )
  const sourceId = output.sourceId ?? options.sourceName ?? sha256.slice(0, 16)
  const mainId = importedSessionId(format, sourceId)
  const sourceMetadata = {
    format,
    formatVersion: output.formatVersion,
    file: options.file,
    sha256,
    ...(output.sourceId === undefined ? {} : { id: output.sourceId }),
    importer: { name: '@agent-ledger/import', version: IMPORTER_VERSION },
    ...output.metadata,
  }
  const built = new Map<string, ImportedSession>()
  const sessions: ImportedSession[] = []
  for (const session of output.sessions) {
    const id = session.key === '' ? mainId : `${mainId.slice(0, 100)}-${session.key}`.slice(0, 128)
    let events: readonly LoggedEvent[] = session.builder.events
    const header: Record<string, unknown> = { createdAt: events[0]?.time ?? EPOCH }
    if (output.cwd !== undefined) header['cwd'] = output.cwd
    const metadata: Record<string, unknown> = { source: { ...sourceMetadata, ...session.metadata } }
    if (session.role === 'main') {
      if (output.parentSourceId !== undefined)
        header['parentSession'] = importedSessionId(format, output.parentSourceId)
      if (output.delegationDepth !== undefined) header['delegationDepth'] = output.delegationDepth
    } else if (session.role === 'sidechain') {
      header['parentSession'] = mainId
      header['delegationDepth'] = 1
    } else {
      const parent = built.get(session.forkOf ?? '') ?? sessions[0]!
      events = seedFork(parent.events, events, parent.id)
      const inherited = events.findIndex((event) => event.type === 'session/end-seed')
      header['parentSession'] = parent.id
      if (inherited > 0) {
        header['seeded'] = true
        header['inheritedEventCount'] = inherited
      }
    }
    header['metadata'] = metadata
    const imported: ImportedSession = {
      id,
      role: session.role,
      header: header as ImportedSession['header'],
      events,
      repairs: { ...session.builder.repairs },
    }
    built.set(session.key, imported)
    sessions.push(imported)
    report.events += events.length
    if (session.role === 'fork') report.forks += 1
    if (session.role === 'sidechain') report.sidechains += 1
  }
  report.sessions = sessions.length
  const main = sessions[0]!
  for (const event of main.events) {
    if (event.type === 'system/message') report.messages.system += 1
    else if (event.type === 'user/message') report.messages.user += 1
    else if (event.type === 'assistant/message') report.messages.assistant += 1
    else if (event.type === 'tool/result') report.messages.tool += 1
    else if (event.type === 'tool/call') report.toolCalls += 1
    else if (event.type === 'turn/start') report.turns += 1
    else if (event.type === 'compaction/end') report.compactions += 1
  }
  const finalReport = { ...report, repairs: { ...main.repairs }, format, formatVersion: output.formatVersion }
  return {
    format,
    formatVersion: output.formatVersion,
    detection:
      context.from === 'auto'
        ? `detected ${format}: ${context.detected.reason}`
        : `given ${format} (content agrees: ${context.detected.reason})`,
    sessions,
    report: finalReport,
  }
}

/**
 * A fork's log: the events it shares with its parent (same bytes, from the same records),
 * then `session/end-seed`, then its own events moved one seq up.
 */
function seedFork(
  parent: readonly LoggedEvent[],
  own: readonly LoggedEvent[],
  parentSession: string,
): LoggedEvent[] {
  let shared = 0
  while (
    shared < parent.length &&
    shared < own.length &&
    eventKey(parent[shared]!) === eventKey(own[shared]!)
  ) {
    shared += 1
  }
  if (shared === 0) return [...own]
  const boundary = parent[shared - 1]!
  const endSeed = {
    seq: shared,
    time: boundary.time,
    type: 'session/end-seed',
    data: { inherited: true, parentSession, boundarySeq: shared - 1 },
  } as LoggedEvent
  return [
    ...parent.slice(0, shared),
    endSeed,
    ...own.slice(shared).map((event) => shiftEvent(event, shared, 1)),
  ]
}
