import type { AssistantMessage, Usage, WireMessage } from '@agent-ledger/session-events'

import type { ToolDefinition } from '../tools.ts'

/** One model request: the derived messages (exactly what the log projects) and the tools on offer. */
export interface ModelRequest {
  readonly messages: readonly WireMessage[]
  readonly tools: readonly ToolDefinition[]
  /** Fires on Ctrl+C; a provider aborts its HTTP request with it. */
  readonly signal?: AbortSignal
}

/**
 * Why the model stopped: `stop` (a final answer), `tool_calls` (it wants tools run),
 * `length` (cut off by the token limit) or anything else the provider reported.
 */
export type FinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'other'

/** One model answer, in the OpenAI wire shape, ready to be logged as `assistant/message`. */
export interface ModelResponse {
  readonly message: AssistantMessage
  readonly usage?: Usage
  readonly finishReason: FinishReason
}

/** A chat model mini-agent can drive. */
export interface Provider {
  /** `scripted` or `openai`; recorded in the session header's metadata. */
  readonly name: string
  /** The model name sent to the provider (or the script's name). */
  readonly model: string
  /**
   * Asks the model for the next assistant message.
   *
   * @throws {@link MiniAgentError} `PROVIDER_*` codes; an `AbortError` when the signal fired.
   */
  complete(request: ModelRequest): Promise<ModelResponse>
}
