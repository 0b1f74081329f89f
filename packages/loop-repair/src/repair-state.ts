import { deepFreeze } from '@agent-ledger/session-events'
import type { LoggedEvent, SessionEvent } from '@agent-ledger/session-events'

import type { PendingToolCall } from './pending-call.ts'
import { eventOfType, findNotStartedIndex, findPendingIndex } from './pending-match.ts'
import { placeholderText, RepairCode } from './repair-code.ts'

export type { PendingToolCall } from './pending-call.ts'

/**
 * What repair needs to know about a log, folded event by event.
 *
 * Plain JSON data (objects, arrays, numbers, strings, `null`), frozen when built by this
 * package, so it can be stored in a projection checkpoint and restored with `JSON.parse`.
 */
export interface RepairState {
  /** The turn started by the last `turn/start` not followed by a `turn/end`, or `null`. */
  readonly openTurn: { readonly turn: number; readonly seq: number } | null
  /** Unanswered assistant tool calls, oldest first (log order). */
  readonly pendingCalls: readonly PendingToolCall[]
}

const EMPTY_STATE: RepairState = Object.freeze({ openTurn: null, pendingCalls: Object.freeze([]) })

/**
 * The repair state of an empty log: no open turn, no pending call.
 *
 * @returns A frozen state to fold events into with {@link advanceRepairState}.
 */
export function createRepairState(): RepairState {
  return EMPTY_STATE
}

function withPending(state: RepairState, pendingCalls: readonly PendingToolCall[]): RepairState {
  return Object.freeze({ openTurn: state.openTurn, pendingCalls: Object.freeze(pendingCalls) })
}

/**
 * Folds one event into the repair state. Pure and incremental: work is proportional to
 * the pending calls, never to the history.
 *
 * **Details**
 * - `assistant/message` with `tool_calls`: one pending entry per call, `toolCallSeq` null.
 * - `tool/call`: the most recent pending entry with that `callId` and no `toolCallSeq` gets
 *   the event's `seq`.
 * - `tool/result`: removes the pending entry it answers (matched on
 *   `message.tool_call_id`, per assistant message, see RELIABILITY R3): the entry whose
 *   `toolCallSeq` or `assistantSeq` the result cites in `sourceEventSeqs`, else the most
 *   recent entry with that id. A result that matches nothing changes nothing.
 * - `turn/start`: `openTurn = {turn, seq}`; `turn/end`: `openTurn = null`.
 * - Every other event (log-only bookkeeping, plugin events, ignorable unknown events):
 *   no change.
 *
 * **Gotchas**: returns the same object when the event changes nothing, and a new frozen
 * one otherwise; `state` is never mutated, so a state restored with `JSON.parse` works too.
 *
 * @param state - The state after the previous events.
 * @param event - The next event in `seq` order.
 * @returns The state after `event`.
 */
export function advanceRepairState(state: RepairState, event: LoggedEvent): RepairState {
  const assistant = eventOfType(event, 'assistant/message')
  if (assistant !== undefined) {
    const toolCalls = assistant.data.message.tool_calls
    if (toolCalls === undefined || toolCalls.length === 0) return state
    const added = toolCalls.map((call): PendingToolCall =>
      Object.freeze({
        callId: call.id,
        name: call.function.name,
        arguments: call.function.arguments,
        assistantSeq: assistant.seq,
        toolCallSeq: null,
      }),
    )
    return withPending(state, [...state.pendingCalls, ...added])
  }
  const toolCall = eventOfType(event, 'tool/call')
  if (toolCall !== undefined) {
    const index = findNotStartedIndex(state.pendingCalls, toolCall.data.callId)
    if (index === -1) return state
    const pendingCalls = state.pendingCalls.slice()
    pendingCalls[index] = Object.freeze({ ...pendingCalls[index]!, toolCallSeq: toolCall.seq })
    return withPending(state, pendingCalls)
  }
  const toolResult = eventOfType(event, 'tool/result')
  if (toolResult !== undefined) {
    const index = findPendingIndex(
      state.pendingCalls,
      toolResult.data.message.tool_call_id,
      toolResult.sourceEventSeqs,
    )
    if (index === -1) return state
    return withPending(state, state.pendingCalls.toSpliced(index, 1))
  }
  const turnStart = eventOfType(event, 'turn/start')
  if (turnStart !== undefined) {
    return Object.freeze({
      openTurn: Object.freeze({ turn: turnStart.data.turn, seq: turnStart.seq }),
      pendingCalls: state.pendingCalls,
    })
  }
  if (event.type === 'turn/end') {
    if (state.openTurn === null) return state
    return Object.freeze({ openTurn: null, pendingCalls: state.pendingCalls })
  }
  return state
}

/** One step of a repair plan, discriminated by `code`. `resultSeq` is the seq of the event it plans. */
export type RepairAction =
  | {
      readonly code: typeof RepairCode.TOOL_OUTCOME_UNKNOWN
      readonly callId: string
      readonly name: string
      readonly assistantSeq: number
      readonly toolCallSeq: number
      readonly resultSeq: number
    }
  | {
      readonly code: typeof RepairCode.TOOL_NOT_STARTED
      readonly callId: string
      readonly name: string
      readonly assistantSeq: number
      readonly resultSeq: number
    }
  | { readonly code: 'CLOSE_TURN'; readonly turn: number; readonly resultSeq: number }

/** The closing events to append to an interrupted log, and why each is there. */
export interface RepairPlan {
  /** One action per planned event, in the same order. */
  readonly actions: readonly RepairAction[]
  /** The events to append, in order, with consecutive seqs; empty when nothing needs repair. */
  readonly events: readonly SessionEvent[]
}

const EMPTY_PLAN: RepairPlan = Object.freeze({ actions: Object.freeze([]), events: Object.freeze([]) })

/**
 * Plans the events that close an interrupted log, from its folded repair state.
 *
 * **Details**
 * - One placeholder `tool/result` per pending call, in pending (log) order:
 *   `data = {message: {role: 'tool', tool_call_id, content: placeholderText(...)}, isError: true, code}`,
 *   with code `TOOL_OUTCOME_UNKNOWN` and `sourceEventSeqs: [toolCallSeq]` when a `tool/call`
 *   was logged, else `TOOL_NOT_STARTED` and `sourceEventSeqs: [assistantSeq]`.
 * - Then `turn/end {turn, reason: 'interrupted'}` when a turn is open.
 * - Seqs run from `position.nextSeq` upward; every event's `time` is `position.time`.
 *
 * Deterministic (same state and position, same plan, deep-equal) and idempotent: folding
 * the planned events into `state` and planning again returns an empty plan. Nothing is
 * rolled back or dropped: every pending call gets an honest answer.
 *
 * @param state - The state after the last logged event.
 * @param position - The seq the first planned event takes (the log's next seq, greater
 *   than every seq in `state`) and the time to stamp on the planned events.
 * @returns A deep-frozen plan; `actions[i]` explains `events[i]`.
 */
export function planRepairFromState(
  state: RepairState,
  position: { readonly nextSeq: number; readonly time: string },
): RepairPlan {
  if (state.pendingCalls.length === 0 && state.openTurn === null) return EMPTY_PLAN
  const actions: RepairAction[] = []
  const events: SessionEvent[] = []
  let seq = position.nextSeq
  for (const call of state.pendingCalls) {
    const code = call.toolCallSeq === null ? RepairCode.TOOL_NOT_STARTED : RepairCode.TOOL_OUTCOME_UNKNOWN
    actions.push(
      call.toolCallSeq === null
        ? {
            code: RepairCode.TOOL_NOT_STARTED,
            callId: call.callId,
            name: call.name,
            assistantSeq: call.assistantSeq,
            resultSeq: seq,
          }
        : {
            code: RepairCode.TOOL_OUTCOME_UNKNOWN,
            callId: call.callId,
            name: call.name,
            assistantSeq: call.assistantSeq,
            toolCallSeq: call.toolCallSeq,
            resultSeq: seq,
          },
    )
    events.push({
      seq,
      time: position.time,
      type: 'tool/result',
      data: {
        message: { role: 'tool', tool_call_id: call.callId, content: placeholderText(code, call) },
        isError: true,
        code,
      },
      sourceEventSeqs: [call.toolCallSeq ?? call.assistantSeq],
    })
    seq += 1
  }
  if (state.openTurn !== null) {
    actions.push({ code: 'CLOSE_TURN', turn: state.openTurn.turn, resultSeq: seq })
    events.push({
      seq,
      time: position.time,
      type: 'turn/end',
      data: { turn: state.openTurn.turn, reason: 'interrupted' },
    })
  }
  return deepFreeze<RepairPlan>({ actions, events })
}

/**
 * Plans the closing events for a whole log: folds every event with
 * {@link advanceRepairState}, then calls {@link planRepairFromState} at the log's end
 * (`nextSeq` = last seq + 1, `time` = the last event's time, so the plan is deterministic).
 *
 * @param events - The log, in `seq` order; read once.
 * @returns The plan; empty for an empty log or a log with nothing to repair.
 */
export function planRepair(events: Iterable<LoggedEvent>): RepairPlan {
  let state = createRepairState()
  let last: LoggedEvent | undefined
  for (const event of events) {
    state = advanceRepairState(state, event)
    last = event
  }
  if (last === undefined) return EMPTY_PLAN
  return planRepairFromState(state, { nextSeq: last.seq + 1, time: last.time })
}
