import type { TurnEndReason } from '@agent-ledger/session-events'
import { openOrCreateWriter } from '@agent-ledger/session-store'
import type { OpenWriterOptions, SessionStore, SessionWriter } from '@agent-ledger/session-store'
import { generateId, wrapLanguageModel } from 'ai'
import type { ModelMessage, StreamTextTransform, ToolSet, UIMessage } from 'ai'

import { AiSdkAdapterError, AiSdkErrorCode } from './ai-sdk-error.ts'
import { fromModelMessages, toModelMessages } from './convert.ts'
import type { FromModelMessagesOptions, WireEntry } from './convert.ts'
import { ledgerRecorderMiddleware } from './record-model.ts'
import type { ProviderToolData } from './record-model.ts'
import { noteProviderTool, noteUiId, stateOf } from './session-state.ts'
import type { RepairedCall, TurnState } from './session-state.ts'
import {
  APPROVAL_ID_EVENT,
  APPROVAL_REQUEST_EVENT,
  APPROVAL_RESPONSE_EVENT,
  fromUIUserMessage,
  toUIMessages,
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
import { wrapTools } from './wrap-tools.ts'

/**
 * Options of {@link openAiSdkSession}. The writer options of the core (`owner`, `leaseMs`,
 * `takeover`, `signal`) go to `store.openWriter(id, options)`; `owner`, `leaseMs` and
 * `signal` also to `store.create` when the session is created.
 */
export interface OpenAiSdkSessionOptions extends OpenWriterOptions {
  /**
   * The system prompt. Logged as the leading `system/message` when the session has none;
   * when it differs from the logged one, a `replace` of that message is logged (the old
   * prompt stays in the log). Omit it to keep whatever the log holds.
   */
  readonly system?: string
  /** Create the session when it does not exist (default true). */
  readonly create?: boolean
}

/** The model type `wrapLanguageModel` accepts (a provider model object, not a gateway id string). */
type WrappableModel = Parameters<typeof wrapLanguageModel>[0]['model']

/**
 * One agent-ledger session seen through the AI SDK: the history as `ModelMessage[]`, a
 * model wrapper that logs responses, tools that log durably before they run, and turns.
 * Create it with {@link openAiSdkSession}.
 */
export class AiSdkSession {
  /** The open writer (the session's single writer until {@link AiSdkSession.close}). */
  readonly writer: SessionWriter
  /**
   * The repair placeholders on the history when the session was opened, oldest first: the
   * tool calls answered by a placeholder (from this open's repair and earlier ones) whose
   * placeholder still stands (a placeholder later replaced, by a denial or the call's real
   * result, is not listed). Derived from the projection, so the same on a resume from a
   * checkpoint as after a full replay.
   */
  readonly repairs: readonly RepairedCall[]
  readonly #turn: TurnState
  readonly #uiIds: UiMessageIds
  readonly #approvals: Map<string, ApprovalState>
  readonly #providerTools: Map<number, ProviderToolData[]>
  #closed = false

  /** Built by {@link openAiSdkSession}; not meant to be called directly. */
  constructor(init: {
    writer: SessionWriter
    repairs: readonly RepairedCall[]
    turn: TurnState
    uiIds: UiMessageIds
    approvals: Map<string, ApprovalState>
    providerTools: Map<number, ProviderToolData[]>
  }) {
    this.writer = init.writer
    this.repairs = init.repairs
    this.#turn = init.turn
    this.#uiIds = init.uiIds
    this.#approvals = init.approvals
    this.#providerTools = init.providerTools
  }

  /** Whether a turn is open (begun and not ended). */
  get turnOpen(): boolean {
    return this.#turn.open
  }

  /**
   * The history derived from the log, as AI SDK messages (system messages included).
   *
   * @returns Fresh model messages; error results (including repair placeholders) are `error-text`.
   */
  messages(): ModelMessage[] {
    const surface = this.writer.projection.surface()
    const errorResults = new Set<number>()
    surface.forEach((node, index) => {
      if (node.isError === true) errorResults.add(index)
    })
    const messages = toModelMessages(
      surface.map((node) => node.message),
      { errorResults },
    )
    return this.#withApprovals(messages, surface)
  }

  /**
   * Approved calls that have not run (no result, or a repair placeholder from a restart):
   * their placeholder leaves the prompt, the assistant message carries the SDK's
   * `tool-approval-request` and the prompt ends with the `tool-approval-response`, so the SDK
   * runs the call (through {@link AiSdkSession.wrapTools}) before it asks the model again.
   */
  #withApprovals(
    messages: ModelMessage[],
    surface: ReturnType<SessionWriter['projection']['surface']>,
  ): ModelMessage[] {
    const placeholders = new Set(this.repairs.map((repair) => repair.seq))
    const answered = new Map<string, number>()
    for (const node of surface)
      if (node.message.role === 'tool') answered.set(node.message.tool_call_id, node.seq)
    const due = new Map<string, ApprovalResponseData>()
    for (const [callId, approval] of this.#approvals) {
      const seq = answered.get(callId)
      if (approval.response?.approved === true && (seq === undefined || placeholders.has(seq)))
        due.set(callId, approval.response)
    }
    if (due.size === 0) return messages
    const result: ModelMessage[] = []
    for (const message of messages) {
      if (message.role === 'tool') {
        const content = message.content.filter(
          (part) => part.type !== 'tool-result' || !due.has(part.toolCallId),
        )
        if (content.length > 0) result.push({ ...message, content })
      } else if (message.role === 'assistant' && typeof message.content !== 'string') {
        const content: typeof message.content = []
        for (const part of message.content) {
          content.push(part)
          const response = part.type === 'tool-call' ? due.get(part.toolCallId) : undefined
          if (response !== undefined)
            content.push({
              type: 'tool-approval-request',
              approvalId: response.approvalId,
              toolCallId: response.callId,
            })
        }
        result.push({ ...message, content })
      } else {
        result.push(message)
      }
    }
    result.push({
      role: 'tool',
      content: [...due.values()].map((response) => ({
        type: 'tool-approval-response' as const,
        approvalId: response.approvalId,
        approved: true,
        ...(response.reason === undefined ? {} : { reason: response.reason }),
      })),
    })
    return result
  }

  /**
   * The history split for `generateText`/`streamText`: the leading system messages as
   * `system`, the rest as `messages`. Spread it into the call: `generateText({ model, ...session.prompt() })`.
   */
  prompt(): { system?: string; messages: ModelMessage[] } {
    const messages = this.messages()
    const system: string[] = []
    while (messages[0]?.role === 'system') system.push((messages.shift() as { content: string }).content)
    return system.length === 0 ? { messages } : { system: system.join('\n\n'), messages }
  }

  /**
   * The chat as the AI SDK's UI messages (what `useChat` shows), derived from the log like
   * {@link AiSdkSession.messages}: a projection, never a second copy. Pass it as `messages`
   * to `useChat`, or as `originalMessages` to `toUIMessageStreamResponse`.
   *
   * @returns Fresh UI messages (no system messages); ids are the UI's own where logged, else `m<seq>`.
   */
  uiMessages(): UIMessage[] {
    return toUIMessages(this.writer.projection.surface(), {
      ids: this.#uiIds,
      approvals: this.#approvals,
      placeholderSeqs: new Set(this.repairs.map((repair) => repair.seq)),
      providerTools: this.#providerTools,
    })
  }

  /**
   * The id of the assistant UI message that answers the last user message: the one already
   * logged, or a new one, logged (an ignorable `ai-sdk/ui-message-id` event) so that
   * {@link AiSdkSession.uiMessages} gives the streamed message the same id after a reload.
   * Pass it as `generateMessageId: () => session.replyMessageId()` to `toUIMessageStreamResponse`.
   *
   * @throws {@link AiSdkAdapterError} `TURN_STATE` when the session has no user message.
   */
  replyMessageId(): string {
    this.#assertOpen()
    const lastUser = this.writer.projection.surface().findLast((node) => node.type === 'user/message')
    if (lastUser === undefined) {
      throw new AiSdkAdapterError({
        code: AiSdkErrorCode.TURN_STATE,
        message: `Cannot name the reply in session ${JSON.stringify(this.writer.id)}: expected a user message to answer, found none`,
      })
    }
    const known = this.#uiIds.reply.get(lastUser.seq)
    if (known !== undefined) return known
    const id = generateId()
    this.#logUiId({ id, replyToSeq: lastUser.seq })
    return id
  }

  /**
   * Starts a turn: logs `turn/start` and the user input: a string, model messages, or the
   * chat UI's user message (its id is logged beside it, for {@link AiSdkSession.uiMessages}).
   *
   * @throws {@link AiSdkAdapterError} `TURN_STATE` when a turn is already open; `UNSUPPORTED_CONTENT` from the conversion.
   */
  beginTurn(
    input: string | readonly ModelMessage[] | UIMessage,
    options: FromModelMessagesOptions = {},
  ): number {
    this.#assertOpen()
    if (this.#turn.open) {
      throw new AiSdkAdapterError({
        code: AiSdkErrorCode.TURN_STATE,
        message: `Cannot begin a turn in session ${JSON.stringify(this.writer.id)}: expected no open turn, found turn ${this.#turn.number} open; call endTurn() first`,
        details: { turn: this.#turn.number },
      })
    }
    const ui = isUIMessage(input) ? input : undefined
    if (ui?.role === 'assistant') return this.#beginApprovalTurn(ui)
    const entries = fromModelMessages(
      typeof input === 'string'
        ? [{ role: 'user', content: input }]
        : ui === undefined
          ? (input as readonly ModelMessage[])
          : [fromUIUserMessage(ui)],
      options,
    )
    const turn = this.#turn.number + 1
    this.writer.append({ type: 'turn/start', data: { turn } })
    this.#turn.number = turn
    this.#turn.open = true
    for (const entry of entries) {
      const seq = this.#appendEntry(entry)
      if (ui !== undefined) this.#logUiId({ id: ui.id, userSeq: seq })
    }
    return turn
  }

  /**
   * Logs messages the SDK produced without the model wrapper (e.g. `result.response.messages`
   * of a call made with an unwrapped model). Tool results are logged as answers to their calls.
   */
  appendMessages(messages: readonly ModelMessage[], options: FromModelMessagesOptions = {}): void {
    this.#assertOpen()
    for (const entry of fromModelMessages(messages, options)) this.#appendEntry(entry)
  }

  /**
   * Ends the open turn (`turn/end` with `reason`) and flushes.
   *
   * @throws {@link AiSdkAdapterError} `TURN_STATE` when no turn is open.
   */
  async endTurn(reason: Exclude<TurnEndReason, 'interrupted'> = 'completed'): Promise<void> {
    this.#assertOpen()
    if (!this.#turn.open) {
      throw new AiSdkAdapterError({
        code: AiSdkErrorCode.TURN_STATE,
        message: `Cannot end a turn in session ${JSON.stringify(this.writer.id)}: expected an open turn, found none`,
      })
    }
    this.writer.append({ type: 'turn/end', data: { turn: this.#turn.number, reason } })
    this.#turn.open = false
    await this.writer.flush()
  }

  /**
   * Wraps a language model so that every response is logged before the SDK acts on it
   * (see {@link ledgerRecorderMiddleware}).
   */
  wrapModel(model: WrappableModel): WrappableModel {
    return wrapLanguageModel({
      model,
      middleware: ledgerRecorderMiddleware(this.writer, {
        onProviderTool: (data) => noteProviderTool(this.#providerTools, data),
      }),
    })
  }

  /** Wraps tools so each call is durable before it runs (see {@link wrapTools}). */
  wrapTools<TTools extends ToolSet>(tools: TTools): TTools {
    return wrapTools(tools, this.writer, {
      onApprovalRequest: async (call) => {
        // The SDK asks again when it resumes an answered call: the request is logged once.
        if (this.#approvals.has(call.callId)) return
        const data: ApprovalRequestData = { callId: call.callId, name: call.name }
        appendIgnorable(this.writer, APPROVAL_REQUEST_EVENT, data)
        this.#approvals.set(call.callId, { name: call.name })
        await this.writer.flush()
      },
    })
  }

  /**
   * A `streamText` transform that logs the id the SDK gives each approval request (an
   * ignorable `ai-sdk/approval-id`) and flushes it before the request goes on to the client,
   * so that {@link AiSdkSession.uiMessages} and {@link followReply} show a pending approval
   * under the id the client saw, after a reload or a restart. Pass it as
   * `experimental_transform: session.streamTransform()`.
   */
  streamTransform<TTools extends ToolSet>(): StreamTextTransform<TTools> {
    return () =>
      new TransformStream({
        transform: async (part, controller) => {
          if (part.type === 'tool-approval-request')
            await this.#logApprovalId({ callId: part.toolCall.toolCallId, approvalId: part.approvalId })
          controller.enqueue(part)
        },
      })
  }

  async #logApprovalId(data: ApprovalIdData): Promise<void> {
    const approval = this.#approvals.get(data.callId)
    // A request the session did not log (a tool not wrapped), or one already named: nothing to add.
    if (approval === undefined || approval.approvalId !== undefined || approval.response !== undefined) return
    appendIgnorable(this.writer, APPROVAL_ID_EVENT, data)
    approval.approvalId = data.approvalId
    await this.writer.flush()
  }

  /** Flushes and releases the session. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true
    await this.writer.close()
  }

  #appendEntry(entry: WireEntry): number {
    const { message } = entry
    switch (message.role) {
      case 'system':
        return this.writer.append({ type: 'system/message', data: { message } }).seq
      case 'user':
        return this.writer.append({ type: 'user/message', data: { message } }).seq
      case 'assistant':
        return this.writer.append({ type: 'assistant/message', data: { message } }).seq
      case 'tool':
        return this.writer.append({
          type: 'tool/result',
          data: { message, ...(entry.isError === true ? { isError: true } : {}) },
        }).seq
    }
  }

  /**
   * A turn that answers approvals: the chat UI's assistant message whose tool parts are
   * `approval-responded`. Logs each response; a denial is logged as the call's error result
   * (`Tool execution denied`), replacing a repair placeholder.
   */
  #beginApprovalTurn(message: UIMessage): number {
    const responses: ApprovalResponseData[] = []
    for (const part of message.parts) {
      if (!('toolCallId' in part) || part.state !== 'approval-responded') continue
      const approval = this.#approvals.get(part.toolCallId)
      if (approval === undefined || approval.response !== undefined) continue
      responses.push({
        callId: part.toolCallId,
        approvalId: part.approval.id,
        approved: part.approval.approved,
        ...(part.approval.reason === undefined ? {} : { reason: part.approval.reason }),
      })
    }
    if (responses.length === 0) {
      throw new AiSdkAdapterError({
        code: AiSdkErrorCode.INVALID_MESSAGE,
        message: `Cannot begin a turn in session ${JSON.stringify(this.writer.id)} with assistant UI message ${JSON.stringify(message.id)}: expected a tool part in state "approval-responded" answering a pending approval, found none`,
      })
    }
    const turn = this.#turn.number + 1
    this.writer.append({ type: 'turn/start', data: { turn } })
    this.#turn.number = turn
    this.#turn.open = true
    for (const response of responses) {
      appendIgnorable(this.writer, APPROVAL_RESPONSE_EVENT, response)
      this.#approvals.get(response.callId)!.response = response
      if (!response.approved) this.#logDenial(response)
    }
    return turn
  }

  #logDenial(response: ApprovalResponseData): void {
    const surface = this.writer.projection.surface()
    const placeholder = surface.findLast(
      (node) => node.message.role === 'tool' && node.message.tool_call_id === response.callId,
    )
    this.writer.append({
      type: 'tool/result',
      data: {
        message: {
          role: 'tool',
          tool_call_id: response.callId,
          content: `Tool execution denied${response.reason === undefined ? '' : `: ${response.reason}`}`,
        },
        isError: true,
      },
      ...(placeholder === undefined
        ? {}
        : {
            surfaceOp: { op: 'replace' as const, startSeq: placeholder.seq, endSeq: placeholder.seq },
            sourceEventSeqs: [placeholder.seq],
          }),
    })
  }

  #logUiId(data: UiMessageIdData): void {
    appendIgnorable(this.writer, UI_MESSAGE_ID_EVENT, data)
    noteUiId(this.#uiIds, data)
  }

  #assertOpen(): void {
    if (this.#closed) {
      throw new AiSdkAdapterError({
        code: AiSdkErrorCode.SESSION_CLOSED,
        message: `Session ${JSON.stringify(this.writer.id)} is closed: expected an open session`,
      })
    }
  }
}

function isUIMessage(input: unknown): input is UIMessage {
  return typeof input === 'object' && input !== null && !Array.isArray(input) && 'parts' in input
}

/** Appends an adapter event no other reader needs to know (`ignorable`: never on the surface). */
function appendIgnorable(writer: SessionWriter, type: string, data: object): void {
  writer.append({ type, data, ignorable: true } as unknown as Parameters<SessionWriter['append']>[0])
}

function applySystem(writer: SessionWriter, system: string): void {
  const first = writer.projection.surface()[0]
  if (first?.type === 'system/message') {
    if (first.message.content === system) return
    writer.append({
      type: 'system/message',
      data: { message: { role: 'system', content: system } },
      surfaceOp: { op: 'replace', startSeq: first.seq, endSeq: first.seq },
      sourceEventSeqs: [first.seq],
    })
    return
  }
  if (first === undefined) {
    writer.append({ type: 'system/message', data: { message: { role: 'system', content: system } } })
    return
  }
  throw new AiSdkAdapterError({
    code: AiSdkErrorCode.INVALID_MESSAGE,
    message: `Cannot set the system prompt of session ${JSON.stringify(writer.id)}: expected the history to start with a system message or be empty, found a ${first.message.role} message`,
  })
}

/**
 * Opens (or creates) a session for the AI SDK. Opening an existing session goes through the
 * store's `openWriter`, which repairs what a crash left open (a placeholder result for every
 * unanswered tool call, `turn/end` `interrupted`) before anything else is written; the
 * session's `messages()` then hold those placeholders, ready for the next call.
 *
 * Reads no events of its own: the adapter's state (error results, repairs, the turn count, UI
 * ids, approvals, provider-executed tools) comes from the writer's projection, which the store
 * restores from the session's checkpoint when it has one and folds only the events after it.
 *
 * @param store - An agent-ledger store (`createJsonlStore`, or `createSessionStore` over any backend).
 * @param id - The session id.
 * @param options - `system` prompt, `create` when missing (default true), and the writer options.
 * @returns The session; close it when done.
 * @throws whatever the store throws (`SESSION_LOCKED`, damage codes...), and {@link AiSdkAdapterError}.
 */
export async function openAiSdkSession(
  store: SessionStore,
  id: string,
  options: OpenAiSdkSessionOptions = {},
): Promise<AiSdkSession> {
  const { writer } = await openOrCreateWriter(store, id, {
    ...writerOptions(options),
    create: options.create,
  })
  try {
    if (options.system !== undefined) applySystem(writer, options.system)
    await writer.flush()
  } catch (error) {
    await writer.close().catch(() => undefined)
    throw error
  }
  return new AiSdkSession({ writer, ...stateOf(writer.projection) })
}

/** The core's writer options out of the adapter's options (only those given). */
function writerOptions(options: OpenAiSdkSessionOptions): OpenWriterOptions {
  return {
    ...(options.owner === undefined ? {} : { owner: options.owner }),
    ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
    ...(options.takeover === undefined ? {} : { takeover: options.takeover }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  }
}
