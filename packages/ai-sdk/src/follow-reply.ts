import type { LoggedEvent } from '@agent-ledger/session-events'
import type { SessionStore } from '@agent-ledger/session-store'
import { createUIMessageStreamResponse } from 'ai'
import type { UIMessageChunk } from 'ai'

import { AiSdkAdapterError, AiSdkErrorCode } from './ai-sdk-error.ts'
import { PROVIDER_TOOL_EVENT } from './record-model.ts'
import type { ProviderToolData } from './record-model.ts'
import {
  APPROVAL_ID_EVENT,
  APPROVAL_REQUEST_EVENT,
  requestApprovalId,
  UI_MESSAGE_ID_EVENT,
} from './ui-messages.ts'
import type { ApprovalIdData, ApprovalRequestData, UiMessageIdData } from './ui-messages.ts'

/** Options of {@link followReply}. */
export interface FollowReplyOptions {
  /** Ends the stream (the client went away). */
  readonly signal?: AbortSignal
  /**
   * How long the follow waits for the next event before it asks the backend whether a writer
   * still holds a live lease on the session (`backend.head(id).owner`), in milliseconds.
   * Default 1,000.
   */
  readonly leaseCheckMs?: number
}

/** The default of {@link FollowReplyOptions.leaseCheckMs}. */
const LEASE_CHECK_MS = 1000

interface Message {
  readonly content?: string | null
  readonly reasoning_content?: string
  readonly tool_calls?: readonly { id: string; function: { name: string; arguments: string } }[]
  readonly tool_call_id?: string
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

/** The UI chunks one logged event of a reply stands for. */
function chunksOf(event: LoggedEvent, state: { step: boolean }): UIMessageChunk[] {
  const data = event.data as { message?: Message; isError?: boolean }
  const chunks: UIMessageChunk[] = []
  if (event.type === 'assistant/message') {
    if (state.step) chunks.push({ type: 'finish-step' })
    state.step = true
    chunks.push({ type: 'start-step' })
    const message = data.message!
    const id = `r${event.seq}`
    if (message.reasoning_content !== undefined) {
      chunks.push(
        { type: 'reasoning-start', id },
        { type: 'reasoning-delta', id, delta: message.reasoning_content },
        { type: 'reasoning-end', id },
      )
    }
    if (typeof message.content === 'string' && message.content !== '') {
      chunks.push(
        { type: 'text-start', id: `t${event.seq}` },
        { type: 'text-delta', id: `t${event.seq}`, delta: message.content },
        { type: 'text-end', id: `t${event.seq}` },
      )
    }
    for (const call of message.tool_calls ?? []) {
      chunks.push({
        type: 'tool-input-available',
        toolCallId: call.id,
        toolName: call.function.name,
        input: parsed(call.function.arguments),
      })
    }
  } else if (event.type === 'tool/result') {
    const message = data.message!
    chunks.push(
      data.isError === true
        ? { type: 'tool-output-error', toolCallId: message.tool_call_id!, errorText: message.content ?? '' }
        : {
            type: 'tool-output-available',
            toolCallId: message.tool_call_id!,
            output: parsed(message.content ?? ''),
          },
    )
  } else if (event.type === PROVIDER_TOOL_EVENT) {
    const ran = event.data as ProviderToolData
    chunks.push({
      type: 'tool-input-available',
      toolCallId: ran.callId,
      toolName: ran.name,
      input: parsed(ran.input),
      providerExecuted: true,
    })
    if ('result' in ran) {
      chunks.push(
        ran.isError === true
          ? { type: 'tool-output-error', toolCallId: ran.callId, errorText: JSON.stringify(ran.result) }
          : {
              type: 'tool-output-available',
              toolCallId: ran.callId,
              output: ran.result,
              providerExecuted: true,
            },
      )
    }
  }
  return chunks
}

/**
 * The reply being generated in a session, as a UI message stream served from the log
 * (`store.follow`): what a client that reconnects mid-generation gets (`useChat({ resume: true })`,
 * `DefaultChatTransport`'s `GET <api>/<id>/stream`). It replays the open turn's reply from its
 * first step, then each step as it is logged, and ends with the turn; any number of clients
 * can follow at once, each with its own stream, from any process that opens the store.
 *
 * Granularity is the step: text arrives per model response (the log holds responses, not
 * deltas). Returns a 204 response when no turn is open or the session does not exist
 * (nothing to resume).
 *
 * A turn whose writer died (no live lease on the session: the core's notion, so on
 * PostgreSQL once the dead writer's lease expires, and a writer idle past its lease counts
 * as gone) and that nothing reopened never ends in the log: when the follow has waited
 * `leaseCheckMs` for an event, the log holds nothing more and no writer holds a live lease,
 * the stream ends with an `error` chunk (`REPLY_INTERRUPTED`, an `AiSdkAdapterError`
 * message) after what was logged. The session's next open repairs the turn.
 *
 * @param store - The store the session is written to (by this or another process).
 * @param id - The session (the chat id).
 * @param options - `signal`: the request's, so a client that goes away stops the follow;
 *   `leaseCheckMs`: how long to wait for an event before checking the lease.
 * @returns A `text/event-stream` response of UI message chunks, or 204.
 */
export async function followReply(
  store: SessionStore,
  id: string,
  options: FollowReplyOptions = {},
): Promise<Response> {
  let turnStart: number | undefined
  try {
    // The open turn's start from the projection (restored from the session's checkpoint
    // when it has one): no read of the log from seq 0.
    turnStart = (await store.openReader(id)).projection.repairState.openTurn?.seq
  } catch (error) {
    // A chat that has no session yet has nothing to resume either.
    if ((error as { code?: unknown } | null)?.code !== 'SESSION_NOT_FOUND') throw error
  }
  if (turnStart === undefined) return new Response(null, { status: 204 })
  const followed = store.follow(id, {
    fromSeq: turnStart,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  })
  const events = followed[Symbol.asyncIterator]()
  const state = { step: false }
  let userSeq: number | undefined
  let started = false
  /**
   * An approval request waits for the next event: the SDK's id for it (`ai-sdk/approval-id`,
   * logged by the session's stream transform right after the request), or else its fallback id.
   */
  let waiting: string | undefined
  const approvalChunk = (callId: string, approvalId: string | undefined): UIMessageChunk => ({
    type: 'tool-approval-request',
    approvalId: requestApprovalId(callId, approvalId),
    toolCallId: callId,
  })
  const checkMs = options.leaseCheckMs ?? LEASE_CHECK_MS
  let lastSeq = turnStart - 1
  /** The next event, asked for once and kept while lease checks run beside it. */
  let pending: Promise<IteratorResult<LoggedEvent>> | undefined
  /**
   * The next event, or `interrupted` once no writer holds a live lease and the log holds
   * nothing past what was followed (the writer died with the turn open: it will not go on).
   */
  const nextEvent = async (): Promise<IteratorResult<LoggedEvent> | 'interrupted'> => {
    pending ??= events.next()
    for (;;) {
      let timer: ReturnType<typeof setTimeout> | undefined
      const waited = await Promise.race([
        pending,
        new Promise<'check'>((resolve) => (timer = setTimeout(() => resolve('check'), checkMs))),
      ])
      clearTimeout(timer)
      if (waited !== 'check') {
        pending = undefined
        return waited
      }
      if (options.signal?.aborted === true) continue
      const head = await store.backend.head(
        id,
        options.signal === undefined ? {} : { signal: options.signal },
      )
      if (head.owner === null && head.nextSeq <= lastSeq + 1) return 'interrupted'
    }
  }
  const stream = new ReadableStream<UIMessageChunk>({
    async pull(controller) {
      for (;;) {
        const next = await nextEvent()
        if (next === 'interrupted') {
          const error = new AiSdkAdapterError({
            code: AiSdkErrorCode.REPLY_INTERRUPTED,
            message: `Following the reply of session ${JSON.stringify(id)}: expected the turn opened at seq ${turnStart} to go on or end, found it open at seq ${lastSeq} with no writer holding a live lease (the server died mid-turn; reopening the session repairs the turn)`,
            details: { sessionId: id, turnStartSeq: turnStart, lastSeq },
          })
          if (!started) controller.enqueue({ type: 'start' })
          if (state.step) controller.enqueue({ type: 'finish-step' })
          controller.enqueue({ type: 'error', errorText: error.message })
          controller.close()
          await events.return?.()
          return
        }
        if (next.done === true) {
          controller.close()
          return
        }
        const event = next.value
        lastSeq = event.seq
        if (waiting !== undefined) {
          const named = event.type === APPROVAL_ID_EVENT ? (event.data as ApprovalIdData) : undefined
          const callId = waiting
          waiting = undefined
          controller.enqueue(approvalChunk(callId, named?.callId === callId ? named.approvalId : undefined))
          if (named?.callId === callId) return
        }
        if (event.type === APPROVAL_REQUEST_EVENT) {
          waiting = (event.data as ApprovalRequestData).callId
          continue
        }
        if (event.type === 'user/message') userSeq = event.seq
        if (event.type === UI_MESSAGE_ID_EVENT) {
          const named = event.data as UiMessageIdData
          if ('replyToSeq' in named && named.replyToSeq === userSeq && !started) {
            started = true
            controller.enqueue({ type: 'start', messageId: named.id })
          }
          continue
        }
        if (event.type === 'turn/end') {
          if (state.step) controller.enqueue({ type: 'finish-step' })
          controller.enqueue({ type: 'finish' })
          controller.close()
          await events.return?.()
          return
        }
        const chunks = chunksOf(event, state)
        if (chunks.length === 0) continue
        if (!started) {
          started = true
          controller.enqueue({ type: 'start' })
        }
        for (const chunk of chunks) controller.enqueue(chunk)
        return
      }
    },
    async cancel() {
      await events.return?.()
    },
  })
  return createUIMessageStreamResponse({ stream })
}
