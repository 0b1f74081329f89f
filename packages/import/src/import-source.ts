import { createEventRegistry, SESSION_ID_PATTERN } from '@agent-ledger/session-events'
import type { EventRegistry, LoggedEvent, SessionHeaderInput } from '@agent-ledger/session-events'

import { eventDigest, SessionBuilder } from './builder.ts'
import { claudeCodeFormat, looksLikeClaudeCode } from './formats/claude-code.ts'
import { codexFormat, looksLikeCodex } from './formats/codex.ts'
import { looksLikeOpenHandsV0, looksLikeOpenHandsV1, openHandsFormat } from './formats/openhands.ts'
import { looksLikePi, piFormat } from './formats/pi.ts'
import type { FormatFacts, FormatInput, FormatModule, FormatSession } from './formats/types.ts'
import { ImportError, ImportErrorCode } from './import-error.ts'
import { parseLines } from './lines.ts'
import type { ParsedLine } from './lines.ts'
import { createReport } from './report.ts'
import type { ImportReport } from './report.ts'
import { shiftEvent } from './shift.ts'
import { sourceRecordEventType } from './source-record.ts'
import { EPOCH } from './time.ts'

/** The formats this package imports. */
export const SOURCE_FORMATS = ['claude-code', 'codex', 'pi', 'openhands'] as const
export type SourceFormat = (typeof SOURCE_FORMATS)[number]

/**
 * Version of the mapping this build applies. It changes whenever the same source would give
 * different events; an incremental import refuses to extend a session imported by another one.
 */
export const IMPORTER_VERSION = 3

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

/** One batch of a session's events, for {@link ImportSink}. */
export interface ImportBatch {
  readonly id: string
  readonly role: ImportedSession['role']
  /** The session's header, complete from the first batch on. */
  readonly header: ImportedSession['header']
  /** Events in seq order, following the previous batch of the same session. */
  readonly events: readonly LoggedEvent[]
  /** The session's first batch (create it). */
  readonly first: boolean
  /** The session's last batch. */
  readonly last: boolean
}

/** Receives the events of an import as they are built (see {@link ImportOptions.sink}). */
export interface ImportSink {
  /** Called in order; the next batch waits for the promise (backpressure). */
  write(batch: ImportBatch): Promise<void>
}

/** One imported session, ready for `store.create({id, header, seed: events})`. */
export interface ImportedSession {
  readonly id: string
  readonly role: 'main' | 'fork' | 'sidechain'
  readonly header: Partial<SessionHeaderInput> & { readonly createdAt: string }
  /** The whole log, seqs dense from 0, repair closers included (empty when a sink took the events). */
  readonly events: readonly LoggedEvent[]
  /** How many events the session has. */
  readonly eventCount: number
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
  lines: AsyncIterable<string> | (() => AsyncIterable<string>),
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
  const reopen = typeof lines === 'function' ? lines : undefined
  const report = createReport('unknown', 'unknown')
  const lenient = options.lenient === true
  const lineIterator = (reopen === undefined ? (lines as AsyncIterable<string>) : reopen())[
    Symbol.asyncIterator
  ]()
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
  const array = firstLine.trimStart().startsWith('[')
  if (array) {
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
  const module = FORMATS[format]
  // Pass 1: every line once (strict mode refuses a bad line here, before anything is built).
  const scanner = module.scanner({ sourceName: options.sourceName })
  const held: ParsedLine[] | null = reopen === undefined || array ? [] : null
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
      ? () => parseLines(reopen!(), { file, lenient, report: createReport(format, facts.formatVersion) })
      : async function* (): AsyncGenerator<ParsedLine> {
          await Promise.resolve()
          yield* held
        }
  const assembly = new Assembly({ format, facts, options, report, sha256 })
  const verbatim = options.verbatim ?? 'all'
  const input: FormatInput = {
    replay,
    report,
    file,
    lenient,
    live: options.live === true,
    newBuilder: (counts = () => true, builderOptions = {}) =>
      new SessionBuilder(
        { format, file, registry: importEventRegistry, report, verbatim, counts },
        builderOptions,
      ),
    pump: (session) => assembly.pump(session),
  }
  const sessions = await module.map(input, scanner)
  return assembly.finish(sessions, {
    detection:
      from === 'auto'
        ? `detected ${format}: ${detected.reason}`
        : `given ${format} (content agrees: ${detected.reason})`,
  })
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

/** Ids, headers and batches of the sessions of one import; counts the main session into the report. */
class Assembly {
  readonly #format: SourceFormat
  readonly #facts: FormatFacts
  readonly #options: ImportOptions
  readonly #report: ImportReport
  readonly #mainId: string
  readonly #sourceMetadata: Record<string, unknown>
  readonly #started = new Map<string, ImportedSession['header']>()
  readonly #batch: number

  constructor(context: {
    readonly format: SourceFormat
    readonly facts: FormatFacts
    readonly options: ImportOptions
    readonly report: ImportReport
    readonly sha256: string
  }) {
    const { format, facts, options, sha256 } = context
    this.#format = format
    this.#facts = facts
    this.#options = options
    this.#report = context.report
    this.#batch = Math.max(1, options.batchEvents ?? DEFAULT_BATCH_EVENTS)
    const sourceId = facts.sourceId ?? options.sourceName ?? sha256.slice(0, 16)
    this.#mainId = importedSessionId(format, sourceId)
    this.#sourceMetadata = {
      format,
      formatVersion: facts.formatVersion,
      file: options.file,
      sha256,
      ...(facts.sourceId === undefined ? {} : { id: facts.sourceId }),
      importer: { name: '@agent-ledger/import', version: IMPORTER_VERSION },
      ...facts.metadata,
    }
  }

  #id(session: FormatSession): string {
    return session.key === '' ? this.#mainId : `${this.#mainId.slice(0, 100)}-${session.key}`.slice(0, 128)
  }

  #header(
    session: FormatSession,
    createdAt: string,
    extra: Record<string, unknown> = {},
  ): ImportedSession['header'] {
    const header: Record<string, unknown> = { createdAt }
    if (this.#facts.cwd !== undefined) header['cwd'] = this.#facts.cwd
    if (session.role === 'main') {
      if (this.#facts.parentSourceId !== undefined)
        header['parentSession'] = importedSessionId(this.#format, this.#facts.parentSourceId)
      if (this.#facts.delegationDepth !== undefined) header['delegationDepth'] = this.#facts.delegationDepth
    } else if (session.role === 'sidechain') {
      header['parentSession'] = this.#mainId
      header['delegationDepth'] = 1
    }
    for (const [key, value] of Object.entries(extra)) header[key] = value
    header['metadata'] = { source: { ...this.#sourceMetadata, ...session.metadata } }
    return header as ImportedSession['header']
  }

  #count(session: FormatSession, events: readonly LoggedEvent[]): void {
    if (session.role !== 'main') return
    const report = this.#report
    for (const event of events) {
      if (event.type === 'system/message') report.messages.system += 1
      else if (event.type === 'user/message') report.messages.user += 1
      else if (event.type === 'assistant/message') report.messages.assistant += 1
      else if (event.type === 'tool/result') report.messages.tool += 1
      else if (event.type === 'tool/call') report.toolCalls += 1
      else if (event.type === 'turn/start') report.turns += 1
      else if (event.type === 'compaction/end') report.compactions += 1
    }
  }

  /** Hands a session's events over to the sink (all of them when `last`). */
  async #emit(session: FormatSession, last: boolean): Promise<void> {
    const sink = this.#options.sink!
    const events = session.builder.drain()
    this.#count(session, events)
    const id = this.#id(session)
    let header = this.#started.get(id)
    const first = header === undefined
    if (header === undefined) {
      header = this.#header(session, events[0]?.time ?? EPOCH)
      this.#started.set(id, header)
    }
    await sink.write({ id, role: session.role, header, events, first, last })
  }

  /** Called after each record of a session built in file order. */
  async pump(session: FormatSession): Promise<void> {
    if (this.#options.sink !== undefined && session.builder.events.length >= this.#batch)
      await this.#emit(session, false)
  }

  async finish(
    sessions: readonly FormatSession[],
    context: { readonly detection: string },
  ): Promise<ImportResult> {
    const report = this.#report
    const sink = this.#options.sink
    const result: ImportedSession[] = []
    const parents = new Map<string, { readonly id: string; readonly digests: readonly number[] }>()
    for (const session of sessions) {
      const id = this.#id(session)
      const { builder } = session
      if (session.role !== 'fork') {
        if (sessions.some((other) => other.forkOf === session.key))
          parents.set(session.key, { id, digests: builder.digests ?? builder.events.map(eventDigest) })
        const eventCount = builder.nextSeq
        let events: readonly LoggedEvent[] = []
        let header: ImportedSession['header']
        if (sink === undefined) {
          events = builder.events
          this.#count(session, events)
          header = this.#header(session, events[0]?.time ?? EPOCH)
        } else {
          await this.#emit(session, true)
          header = this.#started.get(id)!
        }
        result.push({ id, role: session.role, header, events, eventCount, repairs: { ...builder.repairs } })
        report.events += eventCount
        if (session.role === 'sidechain') report.sidechains += 1
        continue
      }
      const parent = parents.get(session.forkOf ?? '') ?? parents.get('')!
      const events = seedFork(parent.digests, builder.events, parent.id)
      const inherited = events.findIndex((event) => event.type === 'session/end-seed')
      const header = this.#header(
        session,
        events[0]?.time ?? EPOCH,
        inherited > 0
          ? { parentSession: parent.id, seeded: true, inheritedEventCount: inherited }
          : { parentSession: parent.id },
      )
      if (sink !== undefined) await sink.write({ id, role: 'fork', header, events, first: true, last: true })
      result.push({
        id,
        role: 'fork',
        header,
        events: sink === undefined ? events : [],
        eventCount: events.length,
        repairs: { ...builder.repairs },
      })
      report.events += events.length
      report.forks += 1
    }
    report.sessions = result.length
    const formatVersion = this.#facts.formatVersion
    const finalReport = { ...report, repairs: { ...result[0]!.repairs }, format: this.#format, formatVersion }
    return {
      format: this.#format,
      formatVersion,
      detection: context.detection,
      sessions: result,
      report: finalReport,
    }
  }
}

/**
 * A fork's log: the events it shares with its parent (same bytes, from the same records:
 * compared by digest, the parent's events may be gone), then `session/end-seed`, then its
 * own events moved one seq up.
 */
function seedFork(
  parent: readonly number[],
  own: readonly LoggedEvent[],
  parentSession: string,
): LoggedEvent[] {
  let shared = 0
  while (shared < parent.length && shared < own.length && parent[shared] === eventDigest(own[shared]!)) {
    shared += 1
  }
  if (shared === 0) return [...own]
  const boundary = own[shared - 1]!
  const endSeed = {
    seq: shared,
    time: boundary.time,
    type: 'session/end-seed',
    data: { inherited: true, parentSession, boundarySeq: shared - 1 },
  } as LoggedEvent
  return [...own.slice(0, shared), endSeed, ...own.slice(shared).map((event) => shiftEvent(event, shared, 1))]
}
