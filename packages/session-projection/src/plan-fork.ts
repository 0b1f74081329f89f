import { planRepair } from '@agent-ledger/loop-repair'
import { deepFreeze } from '@agent-ledger/session-events'
import type { LoggedEvent, SessionEvent } from '@agent-ledger/session-events'

import { ProjectionError, ProjectionErrorCode } from './projection-error.ts'

/** What {@link planFork} needs: where to cut, who the parent is, and what to do with an open turn. */
export interface ForkRequest {
  /** Seq of the last inherited event (inclusive). */
  readonly boundarySeq: number
  /** Id of the session being forked. */
  readonly parentSession: string
  /**
   * A cut inside an open turn, or one that leaves tool calls unanswered: `'close'` (default)
   * appends the closers loop-repair plans for a crash at that point; `'refuse'` throws `OPEN_TURN`.
   */
  readonly openTurn?: 'close' | 'refuse'
}

/** The seed of a forked session: its first events and the header fields that mark it as a fork. */
export interface ForkSeed {
  /**
   * Events `0..boundarySeq` of the parent (same objects, same seqs), then any closers, then
   * `session/end-seed {inherited: true, parentSession, boundarySeq}`.
   */
  readonly events: readonly LoggedEvent[]
  /** Header fields for the child session. */
  readonly header: {
    readonly parentSession: string
    readonly seeded: true
    readonly inheritedEventCount: number
  }
}

/**
 * Plans the seed of a session forked from `prefix` at `boundarySeq`.
 *
 * **Details**: the seed copies events `0..boundarySeq` (the parent is never touched). When
 * the cut is inside an open turn or leaves assistant tool calls without results, the seed
 * continues with exactly the closing events `planRepair` gives for a log that ends at the
 * boundary (placeholders `TOOL_OUTCOME_UNKNOWN` / `TOOL_NOT_STARTED`, then `turn/end
 * interrupted`), or the fork is refused when `openTurn` is `'refuse'`. The last event is
 * `session/end-seed`. Synthesised events take the boundary event's `time`, so the seed is
 * deterministic: the same input gives a deep-equal seed, and forking a seed at its own
 * `session/end-seed` adds no second closer.
 *
 * @param prefix - The parent's events from seq 0, in order; read up to `boundarySeq` only.
 * @param request - The boundary, the parent id and the open-turn policy.
 * @returns The seed, deep-frozen; `header.inheritedEventCount` is `boundarySeq + 1`.
 * @throws {@link ProjectionError} `BAD_BOUNDARY` when `boundarySeq` is not an integer seq of the log,
 *   `OPEN_TURN` when refusing an open turn, `SEQ_GAP` / `SEQ_DUPLICATE` when `prefix` is not dense from 0.
 */
export function planFork(prefix: Iterable<LoggedEvent>, request: ForkRequest): ForkSeed {
  const { boundarySeq, parentSession } = request
  if (!Number.isSafeInteger(boundarySeq) || boundarySeq < 0) {
    throw new ProjectionError({
      code: ProjectionErrorCode.BAD_BOUNDARY,
      field: 'boundarySeq',
      found: String(boundarySeq),
      message: `Fork boundary ${String(boundarySeq)} is invalid: expected a non-negative integer seq, found ${typeof boundarySeq === 'number' ? 'another number' : typeof boundarySeq}`,
    })
  }
  const inherited: LoggedEvent[] = []
  for (const event of prefix) {
    const expected = inherited.length
    if (event.seq !== expected) {
      const gap = event.seq > expected
      throw new ProjectionError({
        code: gap ? ProjectionErrorCode.SEQ_GAP : ProjectionErrorCode.SEQ_DUPLICATE,
        seq: event.seq,
        expected,
        found: event.seq,
        field: 'seq',
        message: `Fork prefix event ${expected} is out of order: expected seq ${expected}, found ${event.seq}`,
      })
    }
    inherited.push(event)
    if (event.seq === boundarySeq) break
  }
  const boundary = inherited[boundarySeq]
  if (boundary === undefined) {
    throw new ProjectionError({
      code: ProjectionErrorCode.BAD_BOUNDARY,
      seq: boundarySeq,
      field: 'boundarySeq',
      expected: inherited.length - 1,
      found: boundarySeq,
      message:
        inherited.length === 0
          ? `Fork boundary ${boundarySeq} is beyond the log: expected a seq of an event, found an empty log (no event to fork at)`
          : `Fork boundary ${boundarySeq} is beyond the log: expected a seq from 0 to ${inherited.length - 1}, found ${boundarySeq}`,
    })
  }
  const closers = planRepair(inherited).events
  if (closers.length > 0 && request.openTurn === 'refuse') {
    const { openTurn, pendingCalls } = describeOpenWork(closers)
    throw new ProjectionError({
      code: ProjectionErrorCode.OPEN_TURN,
      seq: boundarySeq,
      field: 'boundarySeq',
      found: boundarySeq,
      message: `Fork at seq ${boundarySeq} cuts into unfinished work: expected a closed turn with every tool call answered, found ${[openTurn, pendingCalls].filter((part) => part !== '').join(' and ')}`,
    })
  }
  const endSeed: SessionEvent<'session/end-seed'> = {
    seq: boundarySeq + 1 + closers.length,
    time: boundary.time,
    type: 'session/end-seed',
    data: { inherited: true, parentSession, boundarySeq },
  }
  const seed: ForkSeed = {
    events: [...inherited, ...closers, endSeed],
    header: { parentSession, seeded: true, inheritedEventCount: boundarySeq + 1 },
  }
  return deepFreeze(seed)
}

function describeOpenWork(closers: readonly SessionEvent[]): { openTurn: string; pendingCalls: string } {
  const results = closers.filter((event) => event.type === 'tool/result').length
  const turnEnd = closers.find((event) => event.type === 'turn/end')
  return {
    openTurn: turnEnd === undefined ? '' : `an open turn ${turnEnd.data.turn}`,
    pendingCalls: results === 0 ? '' : `${results} unanswered tool call(s)`,
  }
}
