import type { AssistantMessage, Usage, WireToolCall } from '@agent-ledger/session-events'
import type { SessionWriter } from '@agent-ledger/session-store'
import type { LanguageModelMiddleware } from 'ai'

type GenerateResult = Awaited<ReturnType<NonNullable<LanguageModelMiddleware['wrapGenerate']>>>
type StreamResult = Awaited<ReturnType<NonNullable<LanguageModelMiddleware['wrapStream']>>>
type StreamPart = StreamResult['stream'] extends ReadableStream<infer TPart> ? TPart : never
type ModelUsage = GenerateResult['usage']

/** Collects one model response into the wire assistant message. */
/**
 * Ignorable: a tool call the provider ran itself (e.g. a web search) and its result, beside
 * the `assistant/message` of its step (`assistantSeq`). The log's message shape cannot carry
 * it to the model, so it stays off the surface; the chat UI shows it.
 */
export const PROVIDER_TOOL_EVENT = 'ai-sdk/provider-tool'

/** `data` of {@link PROVIDER_TOOL_EVENT}. */
export interface ProviderToolData {
  readonly assistantSeq: number
  readonly callId: string
  readonly name: string
  readonly input: string
  readonly result?: unknown
  readonly isError?: boolean
}

/** Options of {@link ledgerRecorderMiddleware}. */
export interface RecorderOptions {
  /** Called with each provider-executed tool call logged. */
  readonly onProviderTool?: (data: ProviderToolData) => void
}

type ProviderTool = { -readonly [TKey in keyof ProviderToolData]: ProviderToolData[TKey] }

class ResponseCollector {
  readonly providerTools = new Map<string, Omit<ProviderTool, 'assistantSeq'>>()
  text: string | null = null
  reasoning: string | undefined
  readonly toolCalls: WireToolCall[] = []
  omitted: string[] = []

  addText(text: string): void {
    this.text = (this.text ?? '') + text
  }

  addReasoning(text: string): void {
    this.reasoning = (this.reasoning ?? '') + text
  }

  addToolCall(call: {
    toolCallId: string
    toolName: string
    input: string
    providerExecuted?: boolean
  }): void {
    if (call.providerExecuted === true) {
      this.providerTools.set(call.toolCallId, {
        callId: call.toolCallId,
        name: call.toolName,
        input: call.input,
      })
      return
    }
    this.toolCalls.push({
      id: call.toolCallId,
      type: 'function',
      function: { name: call.toolName, arguments: call.input },
    })
  }

  addToolResult(part: { toolCallId: string; toolName: string; result: unknown; isError?: boolean }): void {
    const known = this.providerTools.get(part.toolCallId) ?? {
      callId: part.toolCallId,
      name: part.toolName,
      input: '',
    }
    known.result = part.result
    if (part.isError === true) known.isError = true
    this.providerTools.set(part.toolCallId, known)
  }

  get empty(): boolean {
    return (
      this.text === null &&
      this.reasoning === undefined &&
      this.toolCalls.length === 0 &&
      this.providerTools.size === 0
    )
  }

  message(): AssistantMessage {
    const notes = this.omitted.map(
      (what) => `[${what} omitted: the session log's message shape cannot hold it]`,
    )
    const text = notes.length === 0 ? this.text : (this.text ?? '') + notes.join('')
    return {
      role: 'assistant',
      content: text,
      ...(this.toolCalls.length > 0 ? { tool_calls: [...this.toolCalls] } : {}),
      ...(this.reasoning === undefined ? {} : { reasoning_content: this.reasoning }),
    }
  }
}

/** The provider's usage in the log's (OpenAI) terms; absent counts stay absent. */
export function toLedgerUsage(usage: ModelUsage | undefined): Usage | undefined {
  if (usage === undefined) return undefined
  const prompt = usage.inputTokens.total
  const completion = usage.outputTokens.total
  const result: { -readonly [TKey in keyof Usage]: Usage[TKey] } = {}
  if (prompt !== undefined) result.prompt_tokens = prompt
  if (completion !== undefined) result.completion_tokens = completion
  if (prompt !== undefined && completion !== undefined) result.total_tokens = prompt + completion
  if (usage.inputTokens.cacheRead !== undefined) result.cached_tokens = usage.inputTokens.cacheRead
  return Object.keys(result).length === 0 ? undefined : result
}

function append(
  writer: SessionWriter,
  collected: ResponseCollector,
  extra: { usage: ModelUsage | undefined; interrupted: boolean; options: RecorderOptions },
): void {
  const usage = toLedgerUsage(extra.usage)
  const assistant = writer.append({
    type: 'assistant/message',
    data: {
      message: collected.message(),
      ...(usage === undefined ? {} : { usage }),
      ...(extra.interrupted ? { interrupted: true } : {}),
    },
  })
  for (const tool of collected.providerTools.values()) {
    const data: ProviderToolData = { assistantSeq: assistant.seq, ...tool }
    writer.append({ type: PROVIDER_TOOL_EVENT, data, ignorable: true } as unknown as Parameters<
      SessionWriter['append']
    >[0])
    extra.options.onProviderTool?.(data)
  }
}

/**
 * A language-model middleware that logs every model response as an `assistant/message`
 * (text, reasoning, tool calls with the model's raw argument text, usage) **before** the SDK
 * sees it, so the assistant message that requests a tool call is in the log before the tool
 * runs.
 *
 * Streams: text and reasoning deltas pass through as they arrive; tool-call parts are held
 * until the model's stream finishes, then the message is logged and the held parts released
 * (so `streamText` starts tools after the response is complete and logged). A stream that
 * ends without a `finish` part is logged with `interrupted: true`.
 *
 * @param writer - The open session.
 * @returns A middleware for `wrapLanguageModel`.
 */
export function ledgerRecorderMiddleware(
  writer: SessionWriter,
  options: RecorderOptions = {},
): LanguageModelMiddleware {
  return {
    specificationVersion: 'v3',
    wrapGenerate: async ({ doGenerate }): Promise<GenerateResult> => {
      const result = await doGenerate()
      const collected = new ResponseCollector()
      for (const part of result.content) {
        switch (part.type) {
          case 'text':
            collected.addText(part.text)
            break
          case 'reasoning':
            collected.addReasoning(part.text)
            break
          case 'tool-call':
            collected.addToolCall(part)
            break
          case 'tool-result':
            collected.addToolResult(part)
            break
          case 'source':
            break // citations are metadata: the SDK does not send them back to the model
          default:
            collected.omitted.push(part.type)
        }
      }
      append(writer, collected, { usage: result.usage, interrupted: false, options })
      return result
    },
    wrapStream: async ({ doStream }): Promise<StreamResult> => {
      const result = await doStream()
      const collected = new ResponseCollector()
      const held: StreamPart[] = []
      let logged = false
      const transform = new TransformStream<StreamPart, StreamPart>({
        transform(part, controller) {
          switch (part.type) {
            case 'text-delta':
              collected.addText(part.delta)
              break
            case 'reasoning-delta':
              collected.addReasoning(part.delta)
              break
            case 'tool-call':
              collected.addToolCall(part)
              held.push(part)
              return
            case 'tool-result':
              collected.addToolResult(part)
              break
            case 'finish':
              append(writer, collected, { usage: part.usage, interrupted: false, options })
              logged = true
              for (const waiting of held.splice(0)) controller.enqueue(waiting)
              break
            default:
              break
          }
          controller.enqueue(part)
        },
        flush(controller) {
          if (!logged && !collected.empty)
            append(writer, collected, { usage: undefined, interrupted: true, options })
          for (const waiting of held.splice(0)) controller.enqueue(waiting)
        },
      })
      return { ...result, stream: result.stream.pipeThrough(transform) }
    },
  }
}
