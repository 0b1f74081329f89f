import { createIncrement, ImportError, ImportErrorCode, importSource } from '@agent-ledger/import'
import type { SourceLine } from '@agent-ledger/import'
import type {
  ImportBatch,
  ImportReport,
  ImportResult,
  ImportSink,
  Increment,
  SourceFormat,
} from '@agent-ledger/import'
import type { LoggedEvent } from '@agent-ledger/session-events'
import { DEFAULT_REDACTION_POLICY } from '@agent-ledger/session-store'
import type { SessionStore, SessionWriter } from '@agent-ledger/session-store'

import type { Progress } from '../progress.ts'
import { openSource } from './import-sources.ts'
import { SeedChannel } from './seed-channel.ts'
import type { ImportSourceFile, OpenedSource } from './import-sources.ts'

/** An event as a writer's `append` takes it. */
type AppendInput = Parameters<SessionWriter['append']>[0]

/** What an import did to one session. */
export interface SessionOutcome {
  readonly id: string
  readonly role: string
  /** Events the import built for the session. */
  readonly events: number
  readonly action: 'created' | 'unchanged' | 'appended' | 'would-create'
  readonly appended?: number
}

/**
 * `value` with `redact` applied to every string in it (object keys untouched), the same
 * object when nothing changed.
 */
function redactStrings(value: unknown, redact: (text: string) => string): unknown {
  if (typeof value === 'string') return redact(value)
  if (Array.isArray(value)) {
    const items = value.map((item: unknown) => redactStrings(item, redact))
    return items.some((item, index) => item !== value[index]) ? items : value
  }
  if (typeof value !== 'object' || value === null) return value
  const entries = Object.entries(value).map(([key, item]) => [key, redactStrings(item, redact)] as const)
  const record = value as Record<string, unknown>
  return entries.some(([key, item]) => item !== record[key]) ? Object.fromEntries(entries) : value
}

/** What the store would write for an event (the core's default redaction, the store's policy), for comparing with what it holds. */
function redacted(event: LoggedEvent): LoggedEvent {
  const data = redactStrings(event.data, (text) => DEFAULT_REDACTION_POLICY.redact(text))
  return data === event.data ? event : ({ ...event, data } as LoggedEvent)
}

function notFound(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'SESSION_NOT_FOUND'
}

/** True when the store holds a session with this id (any backend: the error code is shared). */
async function exists(store: SessionStore, id: string): Promise<boolean> {
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

/** A new session being published: its batches flow into the store's create as a streamed seed. */
interface Publishing {
  readonly channel: SeedChannel<readonly LoggedEvent[]>
  /** The create: resolves with the writer once the session is published (after the last batch). */
  readonly created: Promise<SessionWriter>
}

interface OpenSession {
  readonly id: string
  readonly role: string
  writer: SessionWriter | null
  /** Set while a new session's seed streams into its create (until its last batch). */
  publishing: Publishing | null
  /** Set for a session that existed: the fresh events are compared with the stored ones. */
  readonly increment: Increment | null
  readonly created: boolean
  events: number
  appended: number
}

/**
 * Writes an import's batches through the store. A new session, whatever its role (main,
 * sidechain, fork), is created with ALL its batches as one streamed seed: the store writes
 * them where no reader sees them (the JSONL temp file, a PostgreSQL transaction) and
 * publishes the session once, after its last batch, so an import interrupted at any point
 * (a kill, a full disk, a bad line found late) publishes nothing of it and a re-import
 * starts clean. A session that exists is compared with the fresh events as they come (its
 * stored events read as a stream) and only what is new is appended. Memory holds about one
 * batch being built, one being written, and the writer's projection.
 *
 * A live import (`--follow`) is different by design: its session is created empty and each
 * batch appended and flushed, so what the agent has written so far is readable while the
 * source still grows (a followed session is never complete before its end). Writers may be
 * kept open across imports (`keepOpen`): a followed session is never reopened, so no repair
 * on open runs between polls.
 */
export class StoreSink implements ImportSink {
  readonly #store: SessionStore
  readonly #file: string
  readonly #setTime: (time: string) => void
  readonly #dryRun: boolean
  readonly #writers: Map<string, SessionWriter>
  readonly #keepOpen: boolean
  readonly #live: boolean
  #open: OpenSession | null = null
  /** One outcome per session, in the order they completed. */
  readonly outcomes: SessionOutcome[] = []
  /** Called after each batch written, with the session id and the events appended so far. */
  onProgress: ((id: string, appended: number) => void) | undefined

  constructor(options: {
    readonly store: SessionStore
    readonly file: string
    readonly setTime: (time: string) => void
    readonly dryRun: boolean
    /** Writers kept open between imports (shared by the sinks of one `--follow`). */
    readonly writers?: Map<string, SessionWriter>
    /** The import is live (`--follow`): even a single batch may end inside a turn. */
    readonly live?: boolean
  }) {
    this.#live = options.live === true
    this.#store = options.store
    this.#file = options.file
    this.#setTime = options.setTime
    this.#dryRun = options.dryRun
    this.#keepOpen = options.writers !== undefined
    this.#writers = options.writers ?? new Map<string, SessionWriter>()
  }

  async write(batch: ImportBatch): Promise<void> {
    if (batch.first) this.#open = await this.#begin(batch)
    const open = this.#open!
    if (!batch.first) await this.#continue(open, batch.events)
    open.events += batch.events.length
    this.onProgress?.(open.id, open.appended)
    if (batch.last) await this.#end(open)
  }

  async #begin(batch: ImportBatch): Promise<OpenSession> {
    const base = { id: batch.id, role: batch.role, events: 0, appended: 0, publishing: null }
    if (this.#dryRun) return { ...base, writer: null, increment: null, created: false }
    const kept = this.#writers.get(batch.id)
    if (kept === undefined && !(await exists(this.#store, batch.id))) {
      this.#setTime(batch.header.createdAt)
      if (!this.#live) {
        // Every batch, the first included, goes into one streamed seed; the create resolves
        // after the last one, when the session is published whole.
        const channel = new SeedChannel<readonly LoggedEvent[]>()
        const created = this.#store.create({ id: batch.id, header: batch.header, seed: channel })
        created.catch(() => undefined)
        const open: OpenSession = { ...base, writer: null, increment: null, created: true }
        open.publishing = { channel, created }
        await this.#continue(open, batch.events)
        return open
      }
      // Live: created empty, each batch appended and flushed (readable while the source grows).
      const writer = await this.#store.create({ id: batch.id, header: batch.header })
      this.#writers.set(batch.id, writer)
      const open = { ...base, writer, increment: null, created: true }
      await this.#continue(open, batch.events)
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

  /** Hands a batch of a new session's seed to its create: resolved once the store took it. */
  async #stream(open: OpenSession, publishing: Publishing, events: readonly LoggedEvent[]): Promise<void> {
    if (events.length === 0) return
    for (const event of events) this.#setTime(event.time)
    const pushed = publishing.channel.push(events)
    pushed.catch(() => undefined)
    try {
      await Promise.race([pushed, publishing.created])
    } catch (error) {
      // The create failed (its error is the one to report) or stopped taking batches.
      await publishing.created
      throw error
    }
    open.appended += events.length
  }

  async #continue(open: OpenSession, events: readonly LoggedEvent[]): Promise<void> {
    if (open.publishing !== null) return this.#stream(open, open.publishing, events)
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
    if (open.publishing !== null) {
      const { channel, created } = open.publishing
      channel.end()
      open.writer = await created
      open.publishing = null
      this.#writers.set(open.id, open.writer)
    }
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

  /**
   * Closes every writer still open (after an error, or at the end of `--follow`). A new
   * session still streaming into its create is abandoned: its create fails and publishes
   * nothing of it.
   */
  async close(): Promise<void> {
    const publishing = this.#open?.publishing ?? null
    if (publishing !== null) {
      this.#open!.publishing = null
      publishing.channel.fail(
        new Error(
          `the import of ${this.#file} stopped before session ${this.#open!.id} was complete; nothing of it was published`,
        ),
      )
      await publishing.created.catch(() => undefined)
    }
    // A session given up mid-comparison: its stored read ends (the log it holds open closes).
    await this.#open?.increment?.close()
    this.#open = null
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
  const reopen = (): AsyncIterable<SourceLine> => {
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
