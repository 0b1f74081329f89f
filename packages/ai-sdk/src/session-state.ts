/**
 * The AI SDK session's state beside the surface, from the writer's projection: the turn, the
 * repair placeholders, and the adapter's ignorable events (UI ids, approvals, provider tools)
 * folded from the projection's annotations. The same on a resume from a checkpoint as after
 * a full replay.
 */
import { isRepairCode } from '@agent-ledger/loop-repair'
import type { LoggedEvent } from '@agent-ledger/session-events'
import type { SessionWriter } from '@agent-ledger/session-store'

import { PROVIDER_TOOL_EVENT } from './record-model.ts'
import type { ProviderToolData } from './record-model.ts'
import {
  APPROVAL_ID_EVENT,
  APPROVAL_REQUEST_EVENT,
  APPROVAL_RESPONSE_EVENT,
  UI_MESSAGE_ID_EVENT,
} from './ui-messages.ts'
import type {
  ApprovalIdData,
  ApprovalRequestData,
  ApprovalResponseData,
  ApprovalState,
  UiMessageIdData,
  UiMessageIds,
} from './ui-messages.ts'

/** A tool call that the open repaired: its placeholder result and why. */
export interface RepairedCall {
  /** The wire tool call id. */
  readonly callId: string
  /** `TOOL_OUTCOME_UNKNOWN` (the tool may have run) or `TOOL_NOT_STARTED` (it never started). */
  readonly code: string
  /** Seq of the placeholder `tool/result`. */
  readonly seq: number
}

/** The writer's projection (the store restores it from the session's checkpoint). */
type Projection = SessionWriter['projection']

/** The session's turn counter: the highest turn begun, and whether it is open. */
export interface TurnState {
  number: number
  open: boolean
}

/**
 * The adapter's state from a projection: the turn from its repair state and counters, the
 * repairs from the surface's placeholders, and the UI ids, approvals and provider-executed
 * tools from its annotations (the adapter's ignorable events, folded in seq order).
 */
export function stateOf(projection: Projection): {
  repairs: RepairedCall[]
  turn: TurnState
  uiIds: UiMessageIds
  approvals: Map<string, ApprovalState>
  providerTools: Map<number, ProviderToolData[]>
} {
  const repairs: RepairedCall[] = []
  for (const node of projection.surface()) {
    if (node.message.role === 'tool' && isRepairCode(node.code))
      repairs.push({ callId: node.message.tool_call_id, code: node.code, seq: node.seq })
  }
  repairs.sort((a, b) => a.seq - b.seq)
  const uiIds: UiMessageIds = { user: new Map(), reply: new Map() }
  const approvals = new Map<string, ApprovalState>()
  const providerTools = new Map<number, ProviderToolData[]>()
  for (const event of projection.annotations()) foldAnnotation({ uiIds, approvals, providerTools }, event)
  return {
    repairs,
    turn: { number: projection.stats.highestTurn, open: projection.repairState.openTurn !== null },
    uiIds,
    approvals,
    providerTools,
  }
}

/** Folds one of the adapter's ignorable events into its state (other types are left alone). */
function foldAnnotation(
  state: {
    readonly uiIds: UiMessageIds
    readonly approvals: Map<string, ApprovalState>
    readonly providerTools: Map<number, ProviderToolData[]>
  },
  event: LoggedEvent,
): void {
  switch (event.type) {
    case UI_MESSAGE_ID_EVENT:
      noteUiId(state.uiIds, event.data as UiMessageIdData)
      break
    case PROVIDER_TOOL_EVENT:
      noteProviderTool(state.providerTools, event.data as ProviderToolData)
      break
    case APPROVAL_REQUEST_EVENT: {
      const data = event.data as ApprovalRequestData
      state.approvals.set(data.callId, { name: data.name })
      break
    }
    case APPROVAL_ID_EVENT: {
      const data = event.data as ApprovalIdData
      const approval = state.approvals.get(data.callId)
      if (approval !== undefined) approval.approvalId = data.approvalId
      break
    }
    case APPROVAL_RESPONSE_EVENT: {
      const data = event.data as ApprovalResponseData
      const approval = state.approvals.get(data.callId)
      if (approval !== undefined) approval.response = data
      break
    }
    default:
      break
  }
}

export function noteProviderTool(tools: Map<number, ProviderToolData[]>, data: ProviderToolData): void {
  const list = tools.get(data.assistantSeq)
  if (list === undefined) tools.set(data.assistantSeq, [data])
  else list.push(data)
}

export function noteUiId(ids: UiMessageIds, data: UiMessageIdData): void {
  if ('userSeq' in data) ids.user.set(data.userSeq, data.id)
  else ids.reply.set(data.replyToSeq, data.id)
}
