import type { LoggedEvent, WireMessage } from '@agent-ledger/session-events'

import { eventOfType, findNotStartedIndex, findPendingIndex } from './pending-match.ts'
import { isRepairCode } from './repair-code.ts'
import { advanceRepairState, createRepairState } from './repair-state.ts'

/** What {@link diagnoseToolPairing} found wrong with the pairing of tool calls and results in a log. */
export const DiagnosticCode = {
  /** A `tool/result` answers an id that no assistant message ever requested (RELIABILITY R4). */
  ORPHAN_TOOL_RESULT: 'ORPHAN_TOOL_RESULT',
  /** A `tool/result` answers an id whose every request already has a result. */
  DUPLICATE_TOOL_RESULT: 'DUPLICATE_TOOL_RESULT',
  /** A `tool/result` answers a call of an older assistant message after a newer assistant message was logged. */
  TOOL_RESULT_OUT_OF_ORDER: 'TOOL_RESULT_OUT_OF_ORDER',
  /** An assistant tool call has no result at the end of the log (repair has not run). */
  DANGLING_TOOL_CALL: 'DANGLING_TOOL_CALL',
  /** A `tool/call` names an id with no unstarted assistant request (never requested, or started twice). */
  TOOL_CALL_WITHOUT_REQUEST: 'TOOL_CALL_WITHOUT_REQUEST',
} as const
export type DiagnosticCode = (typeof DiagnosticCode)[keyof typeof DiagnosticCode]

/** One finding of {@link diagnoseToolPairing}. Branch on `code`; `message` is for humans. */
export interface Diagnostic {
  readonly code: DiagnosticCode
  /** The event the finding is about (the result, the `tool/call`, or for a dangling call its assistant message). */
  readonly seq: number
  readonly callId: string
  readonly message: string
}

/**
 * Reports how tool calls and tool results pair up in a log, without changing anything.
 *
 * Results are matched to calls exactly as {@link advanceRepairState} matches them (per
 * assistant message). Repair placeholders (results whose `data.code` is a repair code)
 * legitimately answer calls of older assistant messages (RELIABILITY R2), so they are
 * never reported as out of order.
 *
 * @param events - The log, in `seq` order; read once.
 * @returns The findings, ordered by `seq` (stable); empty for a well-paired, repaired log.
 */
export function diagnoseToolPairing(events: Iterable<LoggedEvent>): Diagnostic[] {
  const diagnostics: Diagnostic[] = []
  const requestedIds = new Set<string>()
  let latestAssistantSeq = -1
  let state = createRepairState()
  for (const event of events) {
    const assistant = eventOfType(event, 'assistant/message')
    if (assistant !== undefined) {
      latestAssistantSeq = assistant.seq
      for (const call of assistant.data.message.tool_calls ?? []) requestedIds.add(call.id)
    }
    const toolCall = eventOfType(event, 'tool/call')
    if (toolCall !== undefined && findNotStartedIndex(state.pendingCalls, toolCall.data.callId) === -1) {
      const callId = toolCall.data.callId
      diagnostics.push({
        code: DiagnosticCode.TOOL_CALL_WITHOUT_REQUEST,
        seq: event.seq,
        callId,
        message: requestedIds.has(callId)
          ? `tool/call seq ${event.seq} starts call ${JSON.stringify(callId)}: expected an unstarted, unanswered request with that id, found only requests already started or answered`
          : `tool/call seq ${event.seq} starts call ${JSON.stringify(callId)}: expected an assistant message requesting it, found none`,
      })
    }
    const toolResult = eventOfType(event, 'tool/result')
    if (toolResult !== undefined) {
      const callId = toolResult.data.message.tool_call_id
      const index = findPendingIndex(state.pendingCalls, callId, toolResult.sourceEventSeqs)
      const matched = state.pendingCalls[index]
      if (matched === undefined) {
        const duplicate = requestedIds.has(callId)
        diagnostics.push({
          code: duplicate ? DiagnosticCode.DUPLICATE_TOOL_RESULT : DiagnosticCode.ORPHAN_TOOL_RESULT,
          seq: event.seq,
          callId,
          message: duplicate
            ? `tool/result seq ${event.seq} answers call ${JSON.stringify(callId)}: expected one result per request, found every request with that id already answered`
            : `tool/result seq ${event.seq} answers call ${JSON.stringify(callId)}: expected an assistant message requesting it, found none`,
        })
      } else if (matched.assistantSeq < latestAssistantSeq && !isRepairCode(toolResult.data.code)) {
        diagnostics.push({
          code: DiagnosticCode.TOOL_RESULT_OUT_OF_ORDER,
          seq: event.seq,
          callId,
          message: `tool/result seq ${event.seq} answers call ${JSON.stringify(callId)} of assistant message seq ${matched.assistantSeq}: expected it before the next assistant message, found it after assistant message seq ${latestAssistantSeq}`,
        })
      }
    }
    state = advanceRepairState(state, event)
  }
  for (const call of state.pendingCalls) {
    diagnostics.push({
      code: DiagnosticCode.DANGLING_TOOL_CALL,
      seq: call.assistantSeq,
      callId: call.callId,
      message: `Call ${JSON.stringify(call.callId)} (${JSON.stringify(call.name)}) of assistant message seq ${call.assistantSeq}: expected a tool/result, found none by the end of the log${call.toolCallSeq === null ? '' : ` (its tool/call is seq ${call.toolCallSeq})`}`,
    })
  }
  return diagnostics.sort((left, right) => left.seq - right.seq)
}

/** Why a message list would be refused by an OpenAI-compatible provider. */
export interface ProviderIssue {
  readonly code:
    'UNANSWERED_TOOL_CALL' | 'ORPHAN_TOOL_MESSAGE' | 'DUPLICATE_TOOL_MESSAGE' | 'TOOL_MESSAGE_OUT_OF_PLACE'
  /** Index in the message list: the assistant message for an unanswered call, else the tool message. */
  readonly index: number
  readonly callId: string
  readonly message: string
}

interface OpenBlock {
  readonly index: number
  /** Call id to how many of its calls still need an answer (ids may repeat in one message). */
  readonly remaining: Map<string, number>
  readonly answered: Set<string>
}

/**
 * Checks that a message list is acceptable to an OpenAI-compatible provider: every
 * assistant tool call is answered by exactly one tool message, all placed directly after
 * that assistant message and before the next non-tool message, and no tool message
 * answers a call that is not open there.
 *
 * **Details**: a tool message whose id no assistant message in the list requests is
 * `ORPHAN_TOOL_MESSAGE`; one whose id belongs to a call elsewhere in the list is
 * `TOOL_MESSAGE_OUT_OF_PLACE`; a second answer inside the same block is
 * `DUPLICATE_TOOL_MESSAGE`; a call still unanswered when its block ends is
 * `UNANSWERED_TOOL_CALL` (index of the assistant message).
 *
 * @param messages - The message list as it would be sent (e.g. a projection).
 * @returns The issues ordered by index (stable); empty when the list is acceptable.
 */
export function validateProviderMessages(messages: readonly WireMessage[]): ProviderIssue[] {
  const issues: ProviderIssue[] = []
  const allCallIds = new Set<string>()
  for (const message of messages) {
    if (message.role === 'assistant') for (const call of message.tool_calls ?? []) allCallIds.add(call.id)
  }
  let open: OpenBlock | undefined
  const closeBlock = (): void => {
    if (open === undefined) return
    for (const [callId, count] of open.remaining) {
      for (let left = count; left > 0; left -= 1) {
        issues.push({
          code: 'UNANSWERED_TOOL_CALL',
          index: open.index,
          callId,
          message: `Assistant message ${open.index} calls ${JSON.stringify(callId)}: expected a tool message answering it before the next non-tool message, found none`,
        })
      }
    }
    open = undefined
  }
  messages.forEach((message, index) => {
    if (message.role === 'tool') {
      const callId = message.tool_call_id
      const remaining = open?.remaining.get(callId) ?? 0
      if (open !== undefined && remaining > 0) {
        if (remaining === 1) open.remaining.delete(callId)
        else open.remaining.set(callId, remaining - 1)
        open.answered.add(callId)
      } else if (open?.answered.has(callId) === true) {
        issues.push({
          code: 'DUPLICATE_TOOL_MESSAGE',
          index,
          callId,
          message: `Tool message ${index} answers ${JSON.stringify(callId)}: expected one answer per call, found a second one`,
        })
      } else if (allCallIds.has(callId)) {
        issues.push({
          code: 'TOOL_MESSAGE_OUT_OF_PLACE',
          index,
          callId,
          message: `Tool message ${index} answers ${JSON.stringify(callId)}: expected it directly after the assistant message that calls it, found it elsewhere`,
        })
      } else {
        issues.push({
          code: 'ORPHAN_TOOL_MESSAGE',
          index,
          callId,
          message: `Tool message ${index} answers ${JSON.stringify(callId)}: expected an assistant message calling it, found none`,
        })
      }
      return
    }
    closeBlock()
    const toolCalls = message.role === 'assistant' ? (message.tool_calls ?? []) : []
    if (toolCalls.length > 0) {
      const remaining = new Map<string, number>()
      for (const call of toolCalls) remaining.set(call.id, (remaining.get(call.id) ?? 0) + 1)
      open = { index, remaining, answered: new Set() }
    }
  })
  closeBlock()
  return issues.sort((left, right) => left.index - right.index)
}
