import type { SurfaceEventType, UserMessage, WireMessage } from '@agent-ledger/session-events'
import type { UIMessage } from 'ai'

import { AiSdkAdapterError, AiSdkErrorCode } from './ai-sdk-error.ts'
import type { ProviderToolData } from './record-model.ts'

/**
 * The ignorable event that records the id a chat UI knows a message by (the surface never
 * sees it). `userSeq`: the `user/message` the id names; `replyToSeq`: the assistant reply to
 * that user message (all its steps) gets the id.
 */
export const UI_MESSAGE_ID_EVENT = 'ai-sdk/ui-message-id'

/** `data` of {@link UI_MESSAGE_ID_EVENT}. */
export type UiMessageIdData =
  { readonly id: string; readonly userSeq: number } | { readonly id: string; readonly replyToSeq: number }

/** The ids a chat UI gave the messages, by the seq they are keyed on. */
export interface UiMessageIds {
  readonly user: Map<number, string>
  readonly reply: Map<number, string>
}

/** Ignorable: a tool call that needs approval, logged before the SDK asks for it. */
export const APPROVAL_REQUEST_EVENT = 'ai-sdk/approval-request'
/** Ignorable: the user's answer to an approval request. */
export const APPROVAL_RESPONSE_EVENT = 'ai-sdk/approval-response'
/**
 * Ignorable: the id the SDK gave an approval request (`tool-approval-request`'s `approvalId`),
 * logged by `AiSdkSession.streamTransform` before the client sees it.
 */
export const APPROVAL_ID_EVENT = 'ai-sdk/approval-id'

/** `data` of {@link APPROVAL_ID_EVENT}. */
export interface ApprovalIdData {
  readonly callId: string
  readonly approvalId: string
}

/** `data` of {@link APPROVAL_REQUEST_EVENT}. */
export interface ApprovalRequestData {
  readonly callId: string
  readonly name: string
}

/** `data` of {@link APPROVAL_RESPONSE_EVENT}. */
export interface ApprovalResponseData {
  readonly callId: string
  readonly approvalId: string
  readonly approved: boolean
  readonly reason?: string
}

/** What the log holds about one call's approval. */
export interface ApprovalState {
  readonly name: string
  /** The SDK's id of the request, when logged ({@link APPROVAL_ID_EVENT}). */
  approvalId?: string
  response?: ApprovalResponseData
}

/**
 * The approval id a request is shown with before it is answered: the SDK's, when logged; else
 * (a request made without the session's stream transform, e.g. by `generateText`) one derived
 * from the call id (the session matches answers by call id).
 */
export function requestApprovalId(callId: string, approvalId: string | undefined): string {
  return approvalId ?? `approval-${callId}`
}

/** What the log says beside the surface, for {@link toUIMessages}. */
export interface UiLogState {
  /** The ids the UI gave messages; a message without one is `m<seq>`. */
  readonly ids: UiMessageIds
  /** Approval requests and responses, by call id. */
  readonly approvals: ReadonlyMap<string, ApprovalState>
  /** Seqs of repair placeholder results. */
  readonly placeholderSeqs: ReadonlySet<number>
  /** Provider-executed tool calls, by the seq of their step's `assistant/message`. */
  readonly providerTools: ReadonlyMap<number, readonly ProviderToolData[]>
}

/** One surface node as the projection gives it. */
interface Node {
  readonly seq: number
  readonly type: SurfaceEventType
  readonly message: WireMessage
  /** A `tool/result` logged as an error. */
  readonly isError?: true
}

type Part = UIMessage['parts'][number]
type ToolPart = Extract<Part, { toolCallId: string; state: string }>

/** A tool's output as the UI shows it: the JSON value when the logged text is JSON, else the text. */
function outputOf(content: string): unknown {
  try {
    return JSON.parse(content) as unknown
  } catch {
    return content
  }
}

function inputOf(argumentsText: string): unknown {
  try {
    return JSON.parse(argumentsText) as unknown
  } catch {
    return argumentsText
  }
}

function userParts(message: UserMessage): Part[] {
  if (typeof message.content === 'string') return [{ type: 'text', text: message.content }]
  return message.content.map((part): Part => {
    if (part.type === 'text') return { type: 'text', text: part.text }
    const data = /^data:([^;,]+);base64,/.exec(part.image_url.url)
    return { type: 'file', mediaType: data?.[1] ?? 'image/*', url: part.image_url.url }
  })
}

/**
 * The chat UI's messages derived from the surface: each user message is one `user` UI message;
 * everything the model and the tools answered until the next user message is ONE `assistant`
 * UI message, a `step-start` part before each model step, then its reasoning, text and one
 * `tool-<name>` part per call (state `output-available`, `output-error` for error results and
 * repair placeholders, `input-available` while unanswered). System messages are the prompt,
 * not the chat: they are left out.
 *
 * A call with a logged approval request shows its approval: `approval-requested` until
 * answered (a repair placeholder of a restart does not count as a result), `approval-responded`
 * until it runs, `output-denied` when denied, its output with `approval` once run.
 *
 * @param nodes - The projection's surface.
 * @param log - What the log says beside the surface (UI ids, approvals, placeholders).
 * @returns Fresh UI messages, valid for the SDK's `validateUIMessages`.
 */
export function toUIMessages(nodes: readonly Node[], log: UiLogState): UIMessage[] {
  const { ids, approvals, placeholderSeqs, providerTools } = log
  const result: UIMessage[] = []
  const calls = new Map<string, ToolPart>()
  let reply: UIMessage | undefined
  let lastUserSeq: number | undefined
  for (const node of nodes) {
    const { message } = node
    switch (message.role) {
      case 'system':
        break
      case 'user':
        reply = undefined
        lastUserSeq = node.seq
        result.push({ id: ids.user.get(node.seq) ?? `m${node.seq}`, role: 'user', parts: userParts(message) })
        break
      case 'assistant': {
        if (reply === undefined) {
          const id = (lastUserSeq === undefined ? undefined : ids.reply.get(lastUserSeq)) ?? `m${node.seq}`
          reply = { id, role: 'assistant', parts: [] }
          result.push(reply)
        }
        reply.parts.push({ type: 'step-start' })
        if (message.reasoning_content !== undefined)
          reply.parts.push({ type: 'reasoning', text: message.reasoning_content, state: 'done' })
        if (message.content !== null && message.content !== '')
          reply.parts.push({ type: 'text', text: message.content, state: 'done' })
        for (const call of message.tool_calls ?? []) {
          const part = {
            type: `tool-${call.function.name}`,
            toolCallId: call.id,
            state: 'input-available',
            input: inputOf(call.function.arguments),
          } as ToolPart
          calls.set(call.id, part)
          reply.parts.push(part)
          const approval = approvals.get(call.id)
          if (approval !== undefined) setApproval(part, call.id, approval)
        }
        for (const ran of providerTools.get(node.seq) ?? []) reply.parts.push(providerToolPart(ran))
        break
      }
      case 'tool': {
        const part = calls.get(message.tool_call_id)
        if (part === undefined) {
          throw new AiSdkAdapterError({
            code: AiSdkErrorCode.INVALID_MESSAGE,
            message: `Cannot derive UI messages: tool result seq ${node.seq} answers call ${JSON.stringify(message.tool_call_id)}, expected a call of an earlier assistant message, found none`,
          })
        }
        const answered = part as unknown as Record<string, unknown>
        const approval = approvals.get(message.tool_call_id)
        if (
          approval !== undefined &&
          (placeholderSeqs.has(node.seq) || approval.response?.approved === false)
        ) {
          // Not run: the approval is pending, answered and not run yet, or denied.
          setApproval(part, message.tool_call_id, approval)
        } else if (node.isError === true) {
          answered['state'] = 'output-error'
          answered['errorText'] = message.content
        } else {
          answered['state'] = 'output-available'
          answered['output'] = outputOf(message.content)
        }
        if (approval?.response?.approved === true) {
          answered['approval'] = { id: approval.response.approvalId, approved: true }
        }
        break
      }
    }
  }
  return result
}

/** A provider-executed call as the UI shows it (`providerExecuted: true`). */
function providerToolPart(ran: ProviderToolData): Part {
  const base = {
    type: `tool-${ran.name}`,
    toolCallId: ran.callId,
    input: inputOf(ran.input),
    providerExecuted: true,
  }
  if (ran.isError === true)
    return {
      ...base,
      state: 'output-error',
      errorText: typeof ran.result === 'string' ? ran.result : JSON.stringify(ran.result),
    } as Part
  if (!('result' in ran)) return { ...base, state: 'input-available' } as Part
  return { ...base, state: 'output-available', output: ran.result } as Part
}

/** Sets a tool part's approval state from the log (`approval-requested`, `-responded`, `output-denied`). */
function setApproval(part: ToolPart, callId: string, approval: ApprovalState): void {
  const fields = part as unknown as Record<string, unknown>
  delete fields['errorText']
  delete fields['output']
  const { response } = approval
  if (response === undefined) {
    fields['state'] = 'approval-requested'
    fields['approval'] = { id: requestApprovalId(callId, approval.approvalId) }
    return
  }
  fields['state'] = response.approved ? 'approval-responded' : 'output-denied'
  fields['approval'] = {
    id: response.approvalId,
    approved: response.approved,
    ...(response.reason === undefined ? {} : { reason: response.reason }),
  }
}

/**
 * A chat UI's user message as a model message, for `beginTurn`: `text` parts as text, `file`
 * parts with an `image/*` media type as images. Anything else cannot be a user's input.
 *
 * @throws {@link AiSdkAdapterError} `INVALID_MESSAGE` (not a user message), `UNSUPPORTED_CONTENT` (another part).
 */
export function fromUIUserMessage(message: UIMessage): {
  role: 'user'
  content: ({ type: 'text'; text: string } | { type: 'image'; image: string; mediaType?: string })[]
} {
  if (message.role !== 'user') {
    throw new AiSdkAdapterError({
      code: AiSdkErrorCode.INVALID_MESSAGE,
      message: `Cannot begin a turn with UI message ${JSON.stringify(message.id)}: expected role "user", found ${JSON.stringify(message.role)}`,
    })
  }
  return {
    role: 'user',
    content: message.parts.map((part) => {
      if (part.type === 'text') return { type: 'text', text: part.text }
      if (part.type === 'file' && part.mediaType.startsWith('image/')) {
        const data = /^data:([^;,]+);base64,(.*)$/s.exec(part.url)
        return data === null
          ? { type: 'image', image: part.url }
          : { type: 'image', image: data[2]!, mediaType: data[1]! }
      }
      throw new AiSdkAdapterError({
        code: AiSdkErrorCode.UNSUPPORTED_CONTENT,
        message: `Cannot log UI message ${JSON.stringify(message.id)}: expected text or image parts in a user message, found a ${JSON.stringify(part.type)} part`,
        details: { part: part.type },
      })
    }),
  }
}
