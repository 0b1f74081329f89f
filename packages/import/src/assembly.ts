import type { LoggedEvent, SessionHeaderInput } from '@agent-ledger/session-events'

import { eventDigest } from './builder.ts'
import type { SessionBuilder } from './builder.ts'
import type { FormatFacts, FormatSession, ForkPass } from './formats/types.ts'
import { fitId } from './ids.ts'
import type { ImportReport } from './report.ts'
import { shiftEvent } from './shift.ts'
import { EPOCH } from './time.ts'

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

/** Receives the events of an import as they are built (see `ImportOptions.sink`). */
export interface ImportSink {
  /** Called in order; the next batch waits for the promise (backpressure). */
  write(batch: ImportBatch): Promise<void>
}

/** What the assembly needs to know about the import. */
export interface AssemblyContext {
  readonly format: string
  readonly facts: FormatFacts
  readonly report: ImportReport
  /** The main session's id. */
  readonly mainId: string
  /** The imported id of another source session of the same format (`parentSourceId`). */
  readonly sessionId: (sourceId: string) => string
  readonly sourceMetadata: Readonly<Record<string, unknown>>
  readonly sink: ImportSink | undefined
  readonly batchEvents: number
  /** A builder counting into the report for the lines `counts` accepts. */
  readonly newBuilder: (counts?: (line: number) => boolean) => SessionBuilder
}

/** The session a fork branches from: its id and the digests of its events (see {@link eventDigest}). */
interface ForkParent {
  readonly id: string
  readonly digests: ArrayLike<number>
}

/**
 * How a fork's own events become its log: the events it shares with its parent (same bytes,
 * from the same records), `session/end-seed`, then the rest moved one seq up. Works batch by
 * batch, so a fork is never held whole.
 */
class ForkSeeder {
  readonly #shared: number
  readonly #parentSession: string
  #seen = 0
  #lastTime = EPOCH

  constructor(shared: number, parentSession: string) {
    this.#shared = shared
    this.#parentSession = parentSession
  }

  #endSeed(): LoggedEvent {
    const shared = this.#shared
    return {
      seq: shared,
      time: this.#lastTime,
      type: 'session/end-seed',
      data: { inherited: true, parentSession: this.#parentSession, boundarySeq: shared - 1 },
    }
  }

  /** The log's events for the next own events (`last`: the fork is complete). */
  map(own: readonly LoggedEvent[], last: boolean): LoggedEvent[] {
    const shared = this.#shared
    const out: LoggedEvent[] = []
    for (const event of own) {
      if (shared === 0 || this.#seen < shared) out.push(event)
      else {
        if (this.#seen === shared) out.push(this.#endSeed())
        out.push(shiftEvent(event, shared, 1))
      }
      this.#lastTime = event.time
      this.#seen += 1
    }
    if (last && shared > 0 && this.#seen === shared) out.push(this.#endSeed())
    return out
  }
}

/** Counts how many leading events equal the parent's (by digest), stopping at the first that differs. */
class PrefixProbe {
  readonly #parent: ArrayLike<number>
  #shared = 0
  #done = false

  constructor(parent: ArrayLike<number>) {
    this.#parent = parent
  }

  get shared(): number {
    return this.#shared
  }

  /** False once an event differs (or the parent has no more): the prefix is known. */
  push(events: readonly LoggedEvent[]): boolean {
    for (const event of events) {
      if (this.#done) break
      if (this.#shared < this.#parent.length && this.#parent[this.#shared] === eventDigest(event))
        this.#shared += 1
      else this.#done = true
    }
    return !this.#done
  }
}

/**
 * Ids, headers and batches of the sessions of one import; counts the main session into the
 * report. Sessions are handed to the sink one after the other: each one's last batch before
 * the next one's first.
 */
export class Assembly {
  readonly #context: AssemblyContext
  readonly #started = new Map<string, ImportedSession['header']>()
  readonly #parents = new Map<
    string,
    ForkParent | { readonly id: string; readonly events: readonly LoggedEvent[] }
  >()
  /** Sessions done, by key, in the order they completed. */
  readonly #done = new Map<string, ImportedSession>()

  constructor(context: AssemblyContext) {
    this.#context = context
  }

  #id(session: Pick<FormatSession, 'key'>): string {
    const mainId = this.#context.mainId
    return session.key === '' ? mainId : fitId(`${mainId}-${session.key}`, 128)
  }

  #header(
    session: Pick<FormatSession, 'role' | 'metadata'>,
    createdAt: string,
    extra: Record<string, unknown> = {},
  ): ImportedSession['header'] {
    const facts = this.#context.facts
    const header: Record<string, unknown> = { createdAt }
    if (facts.cwd !== undefined) header['cwd'] = facts.cwd
    if (session.role === 'main') {
      if (facts.parentSourceId !== undefined)
        header['parentSession'] = this.#context.sessionId(facts.parentSourceId)
      if (facts.delegationDepth !== undefined) header['delegationDepth'] = facts.delegationDepth
    } else if (session.role === 'sidechain') {
      header['parentSession'] = this.#context.mainId
      header['delegationDepth'] = 1
    }
    for (const [key, value] of Object.entries(extra)) header[key] = value
    header['metadata'] = { source: { ...this.#context.sourceMetadata, ...session.metadata } }
    return header as ImportedSession['header']
  }

  #count(session: Pick<FormatSession, 'role'>, events: readonly LoggedEvent[]): void {
    if (session.role !== 'main') return
    const report = this.#context.report
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

  /** Hands a main session's or sidechain's events over to the sink (all of them when `last`). */
  async #emit(session: FormatSession, last: boolean): Promise<void> {
    const events = session.builder.drain()
    this.#count(session, events)
    const id = this.#id(session)
    let header = this.#started.get(id)
    const first = header === undefined
    if (header === undefined) {
      header = this.#header(session, events[0]?.time ?? EPOCH)
      this.#started.set(id, header)
    }
    await this.#context.sink!.write({ id, role: session.role, header, events, first, last })
  }

  /** Called after each record of a session built in file order. */
  async pump(session: FormatSession): Promise<void> {
    if (this.#context.sink !== undefined && session.builder.events.length >= this.#context.batchEvents)
      await this.#emit(session, false)
  }

  /** A main session or sidechain is complete: its last batch goes now. */
  async close(session: FormatSession): Promise<void> {
    if (this.#done.has(session.key)) return
    const { report, sink } = this.#context
    const id = this.#id(session)
    const { builder } = session
    const eventCount = builder.nextSeq
    let events: readonly LoggedEvent[] = []
    let header: ImportedSession['header']
    if (sink === undefined) {
      events = builder.drain()
      this.#count(session, events)
      header = this.#header(session, events[0]?.time ?? EPOCH)
    } else {
      await this.#emit(session, true)
      header = this.#started.get(id)!
    }
    this.#parents.set(
      session.key,
      builder.digests === null ? { id, events } : { id, digests: builder.digests },
    )
    this.#done.set(session.key, {
      id,
      role: session.role,
      header,
      events,
      eventCount,
      repairs: { ...builder.repairs },
    })
    report.events += eventCount
    if (session.role === 'sidechain') report.sidechains += 1
  }

  /** A closed main session grew (a live import going on): takes its new events, counted. */
  take(session: FormatSession): LoggedEvent[] {
    const events = session.builder.drain()
    this.#count(session, events)
    this.#context.report.events += events.length
    return events
  }

  #parent(forkOf: string | undefined): ForkParent {
    const parent = this.#parents.get(forkOf ?? '') ?? this.#parents.get('')!
    if ('digests' in parent) return parent
    // Not tracked: the parent's events are still held (no sink).
    return { id: parent.id, digests: parent.events.map(eventDigest) }
  }

  /**
   * Builds a fork and hands it over in batches. `build` runs twice: a probe (counting nothing,
   * keeping nothing) that finds how many leading events the fork shares with its parent, so
   * that the header (`inheritedEventCount`) is complete from the first batch; then the build
   * whose events go to the sink (or the result) as they come, seeded on the way.
   */
  async fork(
    session: Omit<FormatSession, 'builder'>,
    build: (pass: ForkPass) => Promise<SessionBuilder>,
  ): Promise<FormatSession> {
    const parent = this.#parent(session.forkOf)
    const probe = new PrefixProbe(parent.digests)
    const newBuilder = this.#context.newBuilder
    const probed = await build({
      probe: true,
      newBuilder: () => newBuilder(() => false),
      step: (builder) => Promise.resolve(probe.push(builder.drain())),
    })
    probe.push(probed.drain())
    const batch = this.#context.sink === undefined ? Number.POSITIVE_INFINITY : this.#context.batchEvents
    const out = this.#forkOutput(session, parent.id, probe.shared)
    const builder = await build({
      probe: false,
      newBuilder: (counts) => newBuilder(counts),
      step: async (built) => {
        if (built.events.length >= batch) await out.write(built.drain(), false)
        return true
      },
    })
    await out.write(builder.drain(), true)
    const done = { ...session, builder }
    this.#finishFork(done, out.result())
    return done
  }

  #forkOutput(
    session: Omit<FormatSession, 'builder'>,
    parentId: string,
    shared: number,
  ): {
    write(own: readonly LoggedEvent[], last: boolean): Promise<void>
    result(): { header: ImportedSession['header']; events: LoggedEvent[]; count: number }
  } {
    const id = this.#id(session)
    const seeder = new ForkSeeder(shared, parentId)
    const sink = this.#context.sink
    const held: LoggedEvent[] = []
    let header: ImportedSession['header'] | undefined
    let count = 0
    return {
      write: async (own, last) => {
        const events = seeder.map(own, last)
        if (events.length === 0 && !last) return
        header ??= this.#header(
          session,
          events[0]?.time ?? EPOCH,
          shared > 0
            ? { parentSession: parentId, seeded: true, inheritedEventCount: shared }
            : { parentSession: parentId },
        )
        count += events.length
        const first = !this.#started.has(id)
        this.#started.set(id, header)
        if (sink === undefined) held.push(...events)
        else await sink.write({ id, role: 'fork', header, events, first, last })
      },
      result: () => ({ header: header!, events: held, count }),
    }
  }

  #finishFork(
    session: FormatSession,
    output: { header: ImportedSession['header']; events: LoggedEvent[]; count: number },
  ): void {
    this.#done.set(session.key, {
      id: this.#id(session),
      role: 'fork',
      header: output.header,
      events: output.events,
      eventCount: output.count,
      repairs: { ...session.builder.repairs },
    })
    this.#context.report.events += output.count
    this.#context.report.forks += 1
  }

  /** A fork a format built whole (not through {@link Assembly.fork}): seeded, then handed over in batches. */
  async #heldFork(session: FormatSession): Promise<void> {
    const parent = this.#parent(session.forkOf)
    const probe = new PrefixProbe(parent.digests)
    probe.push(session.builder.events)
    const out = this.#forkOutput(session, parent.id, probe.shared)
    const own = session.builder.drain()
    const batch = this.#context.sink === undefined ? Math.max(own.length, 1) : this.#context.batchEvents
    for (let at = 0; at < own.length || at === 0; at += batch)
      await out.write(own.slice(at, at + batch), at + batch >= own.length)
    this.#finishFork(session, out.result())
  }

  /** The result, sessions in the order the format listed them (closing any it did not close). */
  async finish(
    sessions: readonly FormatSession[],
    context: { readonly detection: string },
  ): Promise<{
    sessions: ImportedSession[]
    report: ImportReport
    detection: string
  }> {
    const report = this.#context.report
    for (const session of sessions) {
      if (this.#done.has(session.key)) continue
      if (session.role === 'fork') await this.#heldFork(session)
      else await this.close(session)
    }
    const result = sessions.map((session) => this.#done.get(session.key)!)
    report.sessions = result.length
    const finalReport = {
      ...report,
      repairs: { ...result[0]!.repairs },
      format: this.#context.format,
      formatVersion: this.#context.facts.formatVersion,
    }
    return { sessions: result, report: finalReport, detection: context.detection }
  }
}
