import type { LoggedEvent, SessionEvent, SessionEventType } from '@agent-ledger/session-events'

import type { PendingToolCall } from './pending-call.ts'

/**
 * Narrows a logged event to one core type. Events reach this package already validated
 * (by `parseEvent` or by typed appends), so the check is on `type` only.
 */
export function eventOfType<TType extends SessionEventType>(
  event: LoggedEvent,
  type: TType,
): SessionEvent<TType> | undefined {
  return event.type === type ? (event as SessionEvent<TType>) : undefined
}

/**
 * Index of the pending call a `tool/result` answers, or -1.
 *
 * The match is per assistant message, never a global "answered ids" set (RELIABILITY R3):
 * among pending entries with the result's `tool_call_id`, the one whose `toolCallSeq` or
 * `assistantSeq` is cited in the result's `sourceEventSeqs` wins; without such a citation,
 * the most recent entry wins.
 */
export function findPendingIndex(
  pending: readonly PendingToolCall[],
  callId: string,
  sourceEventSeqs: readonly number[] | undefined,
): number {
  let mostRecent = -1
  for (let index = pending.length - 1; index >= 0; index -= 1) {
    const entry = pending[index]!
    if (entry.callId !== callId) continue
    if (sourceEventSeqs === undefined) return index
    if (mostRecent === -1) mostRecent = index
    if (
      sourceEventSeqs.includes(entry.assistantSeq) ||
      (entry.toolCallSeq !== null && sourceEventSeqs.includes(entry.toolCallSeq))
    ) {
      return index
    }
  }
  return mostRecent
}

/** Index of the most recent pending entry with `callId` whose `tool/call` was not logged yet, or -1. */
export function findNotStartedIndex(pending: readonly PendingToolCall[], callId: string): number {
  for (let index = pending.length - 1; index >= 0; index -= 1) {
    const entry = pending[index]!
    if (entry.callId === callId && entry.toolCallSeq === null) return index
  }
  return -1
}
