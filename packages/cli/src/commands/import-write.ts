import { createIncrement, ImportError, ImportErrorCode, importSource } from '@agent-ledger/import'
import type {
  ImportBatch,
  ImportReport,
  ImportResult,
  ImportSink,
  Increment,
  SourceFormat,
} from '@agent-ledger/import'
import type { LoggedEvent } from '@agent-ledger/session-events'
import { DEFAULT_REDACTION_POLICY } from '@agent-ledger/session-store-jsonl'
import { redactJson } from '@agent-ledger/session-store-jsonl/format'
import type {
  SessionStore as JsonlStore,
  SessionWriter as JsonlWriter,
} from '@agent-ledger/session-store-jsonl'

import type { Progress } from '../progress.ts'
import { openSource } from './import-sources.ts'
import type { ImportSourceFile, OpenedSource } from './import-sources.ts'

/** An event as a writer's `append` takes it. */
type AppendInput = Parameters<JsonlWriter['append']>[0]

/** The writer calls an import makes (the JSONL store's and the core store's writers both have them). */
export interface ImportWriter {
  readonly projection: { readonly nextSeq: number }
  append(input: AppendInput): unknown
  flush(): Promise<unknown>
  close(): Promise<unknown>
}

/**
 * The store calls an import makes: the JSONL store and the core store over any backend
 * (`--store postgres://...`) both have them, so one import path serves every store.
 */
export interface ImportStore {
  create(request: Parameters<JsonlStore['create']>[0]): Promise<ImportWriter>
  openWriter(id: string): Promise<ImportWriter>
  readEvents(id: string): AsyncIterable<LoggedEvent>
}

/** What an import did to one session. */
export interface SessionOutcome {
  readonly id: string
  readonly role: string
  /** Events the import built for the session. */
  readonly events: number
  readonly action: 'created' | 'unchanged' | 'appended' | 'would-create'
  readonly appended?: number
}

/** What the store would write for an event (its redaction), for comparing with what it holds. */
function redacted(event: LoggedEvent): LoggedEvent {
  const data = redactJson(event.data, (value) => DEFAULT_REDACTION_POLICY.redact(value))
  return data === event.data ? event : ({ ...event, data } as LoggedEvent)
}

function notFound(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'SESSION_NOT_FOUND'
}

/** True when the store holds a session with this id (any backend: the error code is shared). */
async function exists(store: ImportStore, id: string): Promise<boolean> {
  const iterator = store.readEvents(id)[Symbol.asyncIterator]()
  try {
    await iterator.next()
    return true
  } catch (error) {
    if (notFound(error)) return false
    throw error
  } finally {
    await iterator.return?.()
  }
}

function appendInput(event: LoggedEvent): AppendInput {
  const input: Record<string, unknown> = { type: event.type, data: event.data }
  if (event.surfaceOp !== undefined) input['surfaceOp'] = event.surfaceOp
  if (event.sourceEventSeqs !== undefined) input['sourceEventSeqs'] = event.sourceEventSeqs
  if (event.ignorable === true) input['ignorable'] = true
  return input as AppendInput
}

interface OpenSession {
  readonly id: string
  readonly role: string
  readonly writer: ImportWriter | null
  /** Set for a session that existed: the fresh events are compared with the stored ones. */
  readonly increment: Increment | null
  readonly created: boolean
  events: number
  appended: number
}

/**
 * Writes an import's batches through the store: a new session is created with its first
 * batch as the seed (a session of one batch is published whole, or not at all) and the next
 * batches are appended and flushed one by one; a session that exists is compared with the
 * fresh events as they come (its stored events read as a stream) and only what is new is
 * appended. Memory holds one batch and the writer's projection.
 *
 * Writers may be kept open across imports (`keepOpen`, for `import --follow`): a session
 * followed while its source grows is never reopened, so no repair on open runs between polls.
 */
export class StoreSink implements ImportSink {
  readonly #store: ImportStore
  readonly #file: string
  readonly #setTime: (time: string) => void
  readonly #dryRun: boolean
  readonly #writers: Map<string, ImportWriter>
  readonly #keepOpen: boolean
  readonly #live: boolean
  #open: OpenSession | null = null
  /** The batches of a seeded session held until its seed is complete (see {@link StoreSink.write}). */
  #held: { readonly first: ImportBatch; readonly events: LoggedEvent[] } | null = null
  /** One outcome per session, in the order they completed. */
  readonly outcomes: SessionOutcome[] = []
  /** Called after each batch written, with the session id and the events appended so far. */
  onProgress: ((id: string, appended: number) => void) | undefined

  constructor(options: {
    readonly store: ImportStore
    readonly file: string
    readonly setTime: (time: string) => void
    readonly dryRun: boolean
    /** Writers kept open between imports (shared by the sinks of one `--follow`). */
    readonly writers?: Map<string, ImportWriter>
    /** The import is live (`--follow`): even a single batch may end inside a turn. */
    readonly live?: boolean
  }) {
    this.#live = options.live === true
    this.#store = options.store
    this.#file = options.file
    this.#setTime = options.setTime
    this.#dryRun = options.dryRun
    this.#keepOpen = options.writers !== undefined
    this.#writers = options.writers ?? new Map<string, ImportWriter>()
  }

  async write(input: ImportBatch): Promise<void> {
    const batch = this.#seedWhole(input)
    if (batch === null) return
    if (batch.first) this.#open = await this.#begin(batch)
    const open = this.#open!
    if (!batch.first) await this.#continue(open, batch.events)
    open.events += batch.events.length
    this.onProgress?.(open.id, open.appended)
    if (batch.last) await this.#end(open)
  }

  /**
   * A seeded session (a fork) comes in batches, but the store's create takes its seed whole:
   * its batches are held up to the one holding `session/end-seed`, then written as one.
   */
  #seedWhole(batch: ImportBatch): ImportBatch | null {
    const held = this.#held
    if (held === null && !(batch.first && batch.header.seeded === true)) return batch
    const events = held === null ? [...batch.events] : [...held.events, ...batch.events]
    if (!batch.last && !events.some((event) => event.type === 'session/end-seed')) {
      this.#held = { first: held?.first ?? batch, events }
      return null
    }
    this.#held = null
    return { ...(held?.first ?? batch), events, last: batch.last }
  }

  async #begin(batch: ImportBatch): Promise<OpenSession> {
    const base = { id: batch.id, role: batch.role, events: 0, appended: 0 }
    if (this.#dryRun) return { ...base, writer: null, increment: null, created: false }
    const kept = this.#writers.get(batch.id)
    if (kept === undefined && !(await exists(this.#store, batch.id))) {
      this.#setTime(batch.header.createdAt)
      // A complete session of one batch is published whole. Otherwise the session is created
      // empty and every batch appended: the store repairs what a seed leaves open (a call
      // without its result, an open turn) when it opens the writer, and a batch cut in the
      // middle of a turn is not a session that ended there.
      // A seeded session (a fork) is created with its seed up to its session/end-seed marker.
      const marker = batch.events.findIndex((event) => event.type === 'session/end-seed')
      const seeded = batch.header.seeded === true && marker !== -1 ? marker + 1 : 0
      const whole = batch.last && !this.#live ? batch.events.length : seeded
      const writer = await this.#store.create({
        id: batch.id,
        header: batch.header,
        ...(whole > 0 ? { seed: batch.events.slice(0, whole) } : {}),
      })
      this.#writers.set(batch.id, writer)
      const open = { ...base, writer, increment: null, created: true }
      if (whole < batch.events.length) await this.#continue(open, batch.events.slice(whole))
      return open
    }
    // Opened before reading: a session an interrupted import left mid-turn is repaired on
    // open, and its closers are then part of the stored tail the comparison expects.
    const writer = kept ?? (await this.#store.openWriter(batch.id))
    this.#writers.set(batch.id, writer)
    const increment = createIncrement(this.#store.readEvents(batch.id), {
      file: this.#file,
      normalize: redacted,
    })
    const open = { ...base, writer, increment, created: false }
    await this.#continue(open, batch.events)
    return open
  }

  async #continue(open: OpenSession, events: readonly LoggedEvent[]): Promise<void> {
    if (open.writer === null) return
    const toAppend = open.increment === null ? events : await open.increment.push(events)
    if (toAppend.length === 0) return
    const writer = open.writer
    if (writer.projection.nextSeq !== toAppend[0]!.seq) {
      throw new ImportError({
        code: ImportErrorCode.DIVERGED,
        file: this.#file,
        message: `${this.#file}: expected session ${open.id} to end at seq ${toAppend[0]!.seq - 1}, found it ends at seq ${writer.projection.nextSeq - 1} (it was changed while importing); nothing more appended`,
      })
    }
    for (const event of toAppend) {
      this.#setTime(event.time)
      try {
        writer.append(appendInput(event))
      } catch (error) {
        if ((error as { code?: unknown }).code !== 'BUFFER_FULL') throw error
        await writer.flush()
        writer.append(appendInput(event))
      }
    }
    await writer.flush()
    open.appended += toAppend.length
  }

  async #end(open: OpenSession): Promise<void> {
    this.#open = null
    let outcome: SessionOutcome
    if (open.writer === null)
      outcome = { id: open.id, role: open.role, events: open.events, action: 'would-create' }
    else if (open.created) outcome = { id: open.id, role: open.role, events: open.events, action: 'created' }
    else {
      const result = await open.increment!.end()
      outcome =
        result.kind === 'unchanged'
          ? { id: open.id, role: open.role, events: open.events, action: 'unchanged' }
          : { id: open.id, role: open.role, events: open.events, action: 'appended', appended: open.appended }
    }
    if (!this.#keepOpen && open.writer !== null) {
      this.#writers.delete(open.id)
      await open.writer.close()
    }
    this.outcomes.push(outcome)
  }

  /** Closes every writer still open (after an error, or at the end of `--follow`). */
  async close(): Promise<void> {
    const writers = [...this.#writers.values()]
    this.#writers.clear()
    for (const writer of writers) await writer.close()
  }
}

/** What importing one source did. */
export interface SourceOutcome {
  readonly file: string
  readonly format: SourceFormat
  readonly formatVersion: string
  readonly detection: string
  readonly report: ImportReport
  readonly sessions: readonly SessionOutcome[]
}

/** How {@link importOne} imports a source. */
export interface ImportOneOptions {
  readonly source: ImportSourceFile
  /** The source as shown to the user. */
  readonly file: string
  readonly from: SourceFormat | 'auto'
  readonly lenient: boolean
  readonly sink: StoreSink
  readonly progress: Progress
  /** A source still being written (`--follow`): complete lines only, nothing closed. */
  readonly live?: boolean
  /** With `live`, or for the final import of `--follow`: a last line still being written. */
  readonly onTorn?: (line: number, chars: number) => void
}

/**
 * Imports one source through a sink, in two passes over the file (the first also hashes it),
 * so no pass holds the source: memory is bounded by the importer's index and one batch.
 */
export async function importOne(options: ImportOneOptions): Promise<SourceOutcome> {
  const { source, file, progress, onTorn } = options
  let opens = 0
  let first: OpenedSource | undefined
  const reopen = (): AsyncIterable<string> => {
    opens += 1
    const pass = opens === 1 ? 'scan' : `pass ${opens}`
    const opened = openSource(source, {
      onBytes: (bytes) => progress.update(bytes, pass),
      ...(onTorn === undefined ? {} : { onTorn: opens === 1 ? onTorn : () => undefined }),
    })
    first ??= opened
    return opened.lines
  }
  const result: ImportResult = await importSource(reopen, {
    file,
    sha256: () => first!.digest(),
    from: options.from,
    lenient: options.lenient,
    sourceName: source.sourceName,
    sink: options.sink,
    ...(options.live === true ? { live: true } : {}),
  })
  return {
    file,
    format: result.format,
    formatVersion: result.formatVersion,
    detection: result.detection,
    report: result.report,
    sessions: [...options.sink.outcomes],
  }
}
