import type { LoggedEvent } from '@agent-ledger/session-events'

/**
 * Moves an event by `delta` seqs: its own seq, and every seq it cites that is `>= from`
 * (`sourceEventSeqs`, a replace range, a compaction's range and replacement). Seqs before
 * `from` (an inherited prefix) stay. Returns a new, unfrozen event; `data` is copied only
 * where a seq changes.
 */
export function shiftEvent(event: LoggedEvent, from: number, delta: number): LoggedEvent {
  const move = (seq: number): number => (seq >= from ? seq + delta : seq)
  const shifted: Record<string, unknown> = { seq: event.seq + delta, time: event.time, type: event.type }
  let data: unknown = event.data
  const fields = event.data as Record<string, unknown>
  if (event.type === 'compaction/start') {
    data = {
      ...fields,
      startSeq: move(fields['startSeq'] as number),
      endSeq: move(fields['endSeq'] as number),
    }
  } else if (event.type === 'compaction/end') {
    data = { ...fields, replacementSeq: move(fields['replacementSeq'] as number) }
  } else if (event.type === 'session/end-seed' && typeof fields['boundarySeq'] === 'number') {
    data = { ...fields, boundarySeq: move(fields['boundarySeq']) }
  }
  shifted['data'] = data
  if (event.surfaceOp !== undefined) {
    shifted['surfaceOp'] =
      typeof event.surfaceOp === 'object'
        ? { op: 'replace', startSeq: move(event.surfaceOp.startSeq), endSeq: move(event.surfaceOp.endSeq) }
        : event.surfaceOp
  }
  if (event.sourceEventSeqs !== undefined) shifted['sourceEventSeqs'] = event.sourceEventSeqs.map(move)
  if (event.ignorable === true) shifted['ignorable'] = true
  return shifted as unknown as LoggedEvent
}

/** The canonical text of an event, for prefix comparison (same construction, same text). */
export function eventKey(event: LoggedEvent): string {
  return JSON.stringify(event)
}
