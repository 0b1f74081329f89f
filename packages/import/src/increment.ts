import { isRepairCode } from '@agent-ledger/loop-repair'
import type { LoggedEvent, SessionEvent } from '@agent-ledger/session-events'

import { ImportError, ImportErrorCode } from './import-error.ts'
import { eventKey, shiftEvent } from './shift.ts'

/** What to do with a session already imported, given a new import of its (grown) source. */
export type IncrementPlan =
  | { readonly kind: 'unchanged' }
  /** Append `events` (their seqs already follow the stored log). `closersKept` repair events of the earlier import stay before them. */
  | { readonly kind: 'append'; readonly events: readonly LoggedEvent[]; readonly closersKept: number }

/** True for the events an import's `finish` adds at the end of a source: repair placeholders and `turn/end interrupted`. */
function isCloser(event: LoggedEvent): boolean {
  if (event.type === 'tool/result') return isRepairCode((event.data as { code?: unknown }).code)
  return event.type === 'turn/end' && (event.data as { reason?: unknown }).reason === 'interrupted'
}

function diverged(file: string, seq: number): ImportError {
  return new ImportError({
    code: ImportErrorCode.DIVERGED,
    file,
    message: `${file}: expected the stored session to be a prefix of the new import, found a difference at seq ${seq} (the source was rewritten, not only appended, or another importer version wrote it); import it under another id or remove the session first`,
  })
}

/**
 * The comparison of a stored session with a fresh import, one fresh event at a time (the
 * rules are in {@link planIncrement}). Drivers feed it stored events while it matches, the
 * stored tail once it does not, and take from it the fresh events to append.
 */
class IncrementCore {
  readonly #file: string
  readonly #normalize: (event: LoggedEvent) => LoggedEvent
  /** `match`: comparing; `tail`: the stored tail is being read; `fresh`: placing fresh events. */
  phase: 'match' | 'tail' | 'fresh' = 'match'
  #shared = 0
  readonly #tail: LoggedEvent[] = []
  #skipped = 0
  #appended = 0
  #delta: number | undefined
  readonly #placeholders: number[] = []
  readonly #extraByReplacement = new Map<number, number>()

  constructor(options: { readonly file: string; readonly normalize?: (event: LoggedEvent) => LoggedEvent }) {
    this.#file = options.file
    this.#normalize = options.normalize ?? ((event: LoggedEvent) => event)
  }

  /** In `match`: true when `stored` equals `fresh` (both go on); otherwise the tail phase starts with `stored`. */
  compare(stored: LoggedEvent | undefined, fresh: LoggedEvent): boolean {
    if (stored !== undefined && eventKey(stored) === eventKey(this.#normalize(fresh))) {
      this.#shared += 1
      return true
    }
    this.phase = 'tail'
    if (stored !== undefined) this.addTail(stored)
    return false
  }

  /** One more stored event after the shared prefix: only the closers of the earlier import may be there. */
  addTail(stored: LoggedEvent): void {
    if (!isCloser(stored)) throw diverged(this.#file, this.#shared)
    this.#tail.push(stored)
    if (stored.type === 'tool/result') this.#placeholders.push(stored.seq)
  }

  /** The stored session ended (or its tail was read): fresh events are placed from now on. */
  endStored(): void {
    this.phase = 'fresh'
  }

  /** A fresh event after the shared prefix: the event to append (seqs moved), or null when the stored tail already says it. */
  place(original: LoggedEvent): LoggedEvent | null {
    if (this.#delta === undefined) {
      // The fresh import's own closers at the same place are what the stored tail already says.
      if (isCloser(original) && this.#skipped < this.#tail.length) {
        this.#skipped += 1
        return null
      }
      this.#delta = this.#tail.length - this.#skipped
    }
    const next = this.#shared + this.#skipped
    this.#appended += 1
    const event = this.#delta === 0 ? original : shiftEvent(original, next, this.#delta)
    if (typeof event.surfaceOp === 'object' && this.#placeholders.length > 0) {
      // Placeholders kept from the earlier import are surface nodes the fresh import never had:
      // a later compaction whose range spans them must cite them too (and count them as hidden).
      const { startSeq, endSeq } = event.surfaceOp
      const spanned = this.#placeholders.filter((seq) => seq > startSeq && seq < endSeq)
      if (spanned.length === 0) return event
      const cited = [...new Set([...(event.sourceEventSeqs ?? []), ...spanned])].sort((a, b) => a - b)
      this.#extraByReplacement.set(original.seq, spanned.length)
      return { ...event, sourceEventSeqs: cited }
    }
    if (event.type === 'compaction/end') {
      const end = event as SessionEvent<'compaction/end'>
      const extra = this.#extraByReplacement.get(
        (original as SessionEvent<'compaction/end'>).data.replacementSeq,
      )
      if (extra !== undefined)
        return { ...end, data: { ...end.data, hiddenCount: end.data.hiddenCount + extra } }
    }
    return event
  }

  result(): { readonly appended: number; readonly closersKept: number } {
    return { appended: this.#appended, closersKept: this.#tail.length }
  }
}

/** The outcome of a streamed incremental import ({@link createIncrement}). */
export type IncrementOutcome =
  | { readonly kind: 'unchanged' }
  | { readonly kind: 'append'; readonly appended: number; readonly closersKept: number }

/** A streamed incremental import: fresh events in, events to append out. */
export interface Increment {
  /** The next fresh events, in order; resolves to the ones to append now (seqs following the stored log). */
  push(events: readonly LoggedEvent[]): Promise<LoggedEvent[]>
  /** After the last fresh event. @throws {@link ImportError} `DIVERGED`. */
  end(): Promise<IncrementOutcome>
  /**
   * Stops reading the stored events (their store's read ends and releases what it holds), for an
   * increment given up before its end. Idempotent; a `push` or `end` that throws has done it.
   */
  close(): Promise<void>
}

/**
 * {@link planIncrement} for sessions too large to hold: the stored events are read as a stream
 * while the fresh import's events arrive in batches, and only the stored tail after the shared
 * prefix (the repair closers of the earlier import, a few events) is held.
 *
 * @param stored - The session's stored events, in seq order (read lazily, at most once).
 * @param options - `normalize` maps a fresh event to what the store would have written, `file` names the source.
 */
export function createIncrement(
  stored: AsyncIterable<LoggedEvent>,
  options: { readonly file: string; readonly normalize?: (event: LoggedEvent) => LoggedEvent },
): Increment {
  const core = new IncrementCore(options)
  const iterator = stored[Symbol.asyncIterator]()
  const readTail = async (): Promise<void> => {
    for (let next = await iterator.next(); next.done !== true; next = await iterator.next())
      core.addTail(next.value)
    core.endStored()
  }
  let closed = false
  const close = async (): Promise<void> => {
    if (closed) return
    closed = true
    await iterator.return?.()
  }
  /** Runs `step`; when it throws, the stored read is closed first (nothing will read it again). */
  const closingOnError = async <T>(step: () => Promise<T>): Promise<T> => {
    try {
      return await step()
    } catch (error) {
      await close().catch(() => undefined)
      throw error
    }
  }
  return {
    push: (events) =>
      closingOnError(async () => {
        const out: LoggedEvent[] = []
        for (const fresh of events) {
          if (core.phase === 'match') {
            const next = await iterator.next()
            if (core.compare(next.done === true ? undefined : next.value, fresh)) continue
            if (next.done === true) core.endStored()
            else await readTail()
          }
          const placed = core.place(fresh)
          if (placed !== null) out.push(placed)
        }
        return out
      }),
    end: () =>
      closingOnError(async (): Promise<IncrementOutcome> => {
        if (core.phase === 'match') await readTail()
        const { appended, closersKept } = core.result()
        return appended === 0 ? { kind: 'unchanged' } : { kind: 'append', appended, closersKept }
      }),
    close,
  }
}

/**
 * Plans an incremental import: compares the stored events of a session with a fresh import
 * of its source and returns only what is new.
 *
 * **Details**: the fresh import is deterministic, so a source that only grew gives the
 * stored events again as a prefix. Two differences are expected and handled: the repair
 * closers the earlier import added at its end (a call still running, a turn still open when
 * the source was read) stay in the log (it is append-only) and the new events follow them,
 * their seqs moved up; a real result arriving later for a call that got a placeholder is
 * then a duplicate the projection does not show. Anything else is a divergence.
 *
 * @param stored - The session's events as stored, in seq order.
 * @param fresh - The same session from a new import of the grown source.
 * @param options - `normalize` maps a fresh event to what the store would have written (redaction), `file` names the source.
 * @returns `unchanged`, or the events to append.
 * @throws {@link ImportError} `DIVERGED` (with the first differing seq) when the stored session is not a prefix.
 */
export function planIncrement(
  stored: readonly LoggedEvent[],
  fresh: readonly LoggedEvent[],
  options: { readonly file: string; readonly normalize?: (event: LoggedEvent) => LoggedEvent },
): IncrementPlan {
  const core = new IncrementCore(options)
  let read = 0
  const events: LoggedEvent[] = []
  for (const event of fresh) {
    if (core.phase === 'match') {
      if (core.compare(stored[read], event)) {
        read += 1
        continue
      }
      if (read < stored.length) read += 1
      while (read < stored.length) core.addTail(stored[read++]!)
      core.endStored()
    }
    const placed = core.place(event)
    if (placed !== null) events.push(placed)
  }
  while (read < stored.length) core.addTail(stored[read++]!)
  return events.length === 0
    ? { kind: 'unchanged' }
    : { kind: 'append', events, closersKept: core.result().closersKept }
}
