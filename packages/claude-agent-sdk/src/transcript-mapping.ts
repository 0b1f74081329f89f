/**
 * The model-visible events of a mirrored transcript: the importer's Claude Code mapping
 * (`importLive` of `@agent-ledger/import`) applied to the entries, its own verbatim records
 * left out (the mirror keeps every entry verbatim already). Incremental: the live import is
 * kept between batches, so a batch maps only its own entries; the whole transcript is mapped
 * again only when the live import cannot go on (a record that is not a child of the leaf).
 * Derived, never the source of truth: `load` reads the verbatim entries only.
 */
import type { SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk'
import { importLive, SOURCE_RECORD_EVENT_TYPE } from '@agent-ledger/import'
import type { LiveImport } from '@agent-ledger/import'
import type { LoggedEvent, SurfaceOp } from '@agent-ledger/session-events'

/** A mapped event whose citations are indexes into the mapped list (not seqs of any one session). */
export interface MappedEvent {
  readonly type: string
  readonly data: unknown
  /** Indexes (into the mapped list) of the earlier events it answers (a tool result's call). */
  readonly sources?: readonly number[]
  /** A replace surface op's range, as indexes into the mapped list. */
  readonly replaces?: readonly [number, number]
  readonly ignorable?: boolean
  /** Canonical text (type, data, citations as indexes): equal for the same mapping of the same entries. */
  readonly key: string
}

/** The events a batch adds to the mapping (after those given before), or why the mapping stops. */
export interface MappingStep {
  readonly events: readonly MappedEvent[]
  /** Set when the mapping cannot go on: the events before it are still to be written. */
  readonly stopped?: string
}

/** The digest the importer records of its source (the mirror records none: the entries are in the log). */
const NO_DIGEST = '0'.repeat(64)

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function linesOf(entries: readonly SessionStoreEntry[]): () => AsyncIterable<string> {
  return () => ({
    [Symbol.asyncIterator]: () => {
      let index = 0
      return {
        next: () =>
          Promise.resolve(
            index < entries.length
              ? { done: false as const, value: JSON.stringify(entries[index++]) }
              : { done: true as const, value: undefined },
          ),
      }
    },
  })
}

/**
 * The mapping of one key's transcript, kept between batches.
 *
 * `extend` maps a batch: through the live import when it can go on (the batch's entries
 * only), else by mapping the whole transcript again and checking that it starts with what was
 * mapped before (a branch switch does not: the mapping stops).
 */
export class TranscriptMapper {
  #live: LiveImport | undefined
  /** Importer seq of a model-visible event to its index in the mapped list. */
  #index = new Map<number, number>()
  /** Canonical keys of the events mapped so far, in order. */
  #keys: string[] = []
  /** Events mapped but not yet given out (a reopened log that holds fewer than its entries map to). */
  #backlog: MappedEvent[] = []
  readonly #sessionId: string

  /** @param sessionId - The SDK's session id (the importer's fallback source id). */
  constructor(sessionId: string) {
    this.#sessionId = sessionId
  }

  /**
   * Restores the mapping of a reopened transcript whose log holds `logged` mapped events.
   *
   * @returns Why the log is not a prefix of the mapping (it holds more events), or undefined.
   */
  async restore(entries: readonly SessionStoreEntry[], logged: number): Promise<string | undefined> {
    if (entries.length === 0) return undefined
    const mapped = await this.#remap(entries)
    if (mapped.events.length < logged) {
      return `the log holds ${logged} mapped events, the mapping of its entries gives ${mapped.events.length}`
    }
    this.#backlog = mapped.events.slice(logged)
    return mapped.stopped
  }

  /**
   * Maps a batch.
   *
   * @param added - The batch's new entries.
   * @param transcript - The whole transcript, the batch included (called for a mapping afresh only).
   */
  async extend(
    added: readonly SessionStoreEntry[],
    transcript: () => readonly SessionStoreEntry[],
  ): Promise<MappingStep> {
    const backlog = this.#backlog
    this.#backlog = []
    let step: MappingStep | undefined
    if (this.#live !== undefined) {
      let appended: ReturnType<LiveImport['append']> | undefined
      try {
        appended = this.#live.append(added.map((entry) => JSON.stringify(entry)))
      } catch {
        appended = undefined
      }
      if (appended?.kind === 'appended') step = this.#convert(appended.events)
    }
    if (step === undefined) {
      // First batch, or the live import gave up: map the whole transcript, keep what extends.
      const before = this.#keys.slice(0, this.#keys.length - backlog.length)
      const mapped = await this.#remap(transcript())
      const diverged = before.findIndex((key, index) => mapped.events[index]?.key !== key)
      if (diverged !== -1) {
        return {
          events: [],
          stopped: `the mapping of the transcript no longer starts with the ${before.length} events already mapped (from mapped event ${diverged}: a branch switch)`,
        }
      }
      return { ...mapped, events: mapped.events.slice(before.length) }
    }
    return { ...step, events: [...backlog, ...step.events] }
  }

  /** Maps the whole transcript afresh (a new live import): every event, from the first. */
  async #remap(entries: readonly SessionStoreEntry[]): Promise<MappingStep> {
    this.#live = undefined
    this.#index = new Map()
    this.#keys = []
    let live: LiveImport
    try {
      live = await importLive(linesOf(entries), {
        file: `claude-agent-sdk:${this.#sessionId}`,
        sha256: NO_DIGEST,
        from: 'claude-code',
        verbatim: 'unmapped',
        sourceName: this.#sessionId,
        lenient: true,
      })
    } catch (error) {
      return { events: [], stopped: `the importer refused the transcript: ${describe(error)}` }
    }
    this.#live = live
    const main = live.result.sessions.find((session) => session.role === 'main') ?? live.result.sessions[0]
    return main === undefined ? { events: [] } : this.#convert(main.events)
  }

  /** The importer's events as mapped events: its verbatim records left out, citations as indexes. */
  #convert(events: readonly LoggedEvent[]): MappingStep {
    const mapped: MappedEvent[] = []
    for (const event of events) {
      if (event.type === SOURCE_RECORD_EVENT_TYPE) continue
      const at = (seq: number): number | undefined => this.#index.get(seq)
      const sources = event.sourceEventSeqs?.map(at)
      const op: SurfaceOp | undefined = event.surfaceOp
      const replaces = typeof op === 'object' ? [at(op.startSeq), at(op.endSeq)] : undefined
      if (sources?.includes(undefined) === true || replaces?.includes(undefined) === true) {
        this.#live = undefined
        return { events: mapped, stopped: `a ${event.type} event cites an event that is not model-visible` }
      }
      this.#index.set(event.seq, this.#keys.length)
      const fields = {
        type: event.type,
        data: event.data,
        ...(sources === undefined ? {} : { sources: sources as number[] }),
        ...(replaces === undefined ? {} : { replaces: replaces as [number, number] }),
        ...(event.ignorable === true ? { ignorable: true } : {}),
      }
      const key = JSON.stringify(fields)
      this.#keys.push(key)
      mapped.push({ ...fields, key })
    }
    return { events: mapped }
  }
}
