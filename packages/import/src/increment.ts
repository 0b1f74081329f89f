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
  const normalize = options.normalize ?? ((event: LoggedEvent) => event)
  let shared = 0
  while (
    shared < stored.length &&
    shared < fresh.length &&
    eventKey(stored[shared]!) === eventKey(normalize(fresh[shared]!))
  ) {
    shared += 1
  }
  const storedTail = stored.slice(shared)
  if (!storedTail.every(isCloser)) {
    throw new ImportError({
      code: ImportErrorCode.DIVERGED,
      file: options.file,
      message: `${options.file}: expected the stored session to be a prefix of the new import, found a difference at seq ${shared} (the source was rewritten, not only appended, or another importer version wrote it); import it under another id or remove the session first`,
    })
  }
  // The fresh import's own closers at the same place are what the stored tail already says.
  let next = shared
  while (next < fresh.length && isCloser(fresh[next]!) && next - shared < storedTail.length) next += 1
  if (next >= fresh.length) return { kind: 'unchanged' }
  const delta = stored.length - next
  // Placeholders kept from the earlier import are surface nodes the fresh import never had: a
  // later compaction whose range spans them must cite them too (and count them as hidden).
  const placeholders = storedTail.filter((event) => event.type === 'tool/result').map((event) => event.seq)
  const extraHidden = new Map<string, number>()
  const events = fresh.slice(next).map((original) => {
    const event = delta === 0 ? original : shiftEvent(original, next, delta)
    if (typeof event.surfaceOp === 'object' && placeholders.length > 0) {
      const { startSeq, endSeq } = event.surfaceOp
      const spanned = placeholders.filter((seq) => seq > startSeq && seq < endSeq)
      if (spanned.length === 0) return event
      const cited = [...new Set([...(event.sourceEventSeqs ?? []), ...spanned])].sort((a, b) => a - b)
      const compaction = fresh
        .slice(next)
        .find(
          (candidate) =>
            candidate.type === 'compaction/end' &&
            (candidate as SessionEvent<'compaction/end'>).data.replacementSeq === original.seq,
        ) as SessionEvent<'compaction/end'> | undefined
      if (compaction !== undefined) extraHidden.set(compaction.data.compactionId, spanned.length)
      return { ...event, sourceEventSeqs: cited }
    }
    if (event.type === 'compaction/end') {
      const end = event as SessionEvent<'compaction/end'>
      const extra = extraHidden.get(end.data.compactionId)
      if (extra !== undefined)
        return { ...end, data: { ...end.data, hiddenCount: end.data.hiddenCount + extra } }
    }
    return event
  })
  return { kind: 'append', events, closersKept: storedTail.length }
}
