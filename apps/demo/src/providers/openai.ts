import type { AssistantMessage, Usage, WireMessage, WireToolCall } from '@agent-ledger/session-events'
import { z } from 'zod'

import { MiniAgentError } from '../mini-agent-error.ts'
import type { ToolDefinition } from '../tools.ts'
import type { FinishReason, ModelRequest, ModelResponse, Provider } from './provider.ts'

/** Where and how to reach an OpenAI-compatible chat-completions endpoint. */
export interface OpenAiConfig {
  /** Base URL up to the API version, e.g. `https://api.openai.com/v1` or `https://api.deepseek.com`. */
  readonly baseUrl: string
  readonly apiKey: string
  readonly model: string
}

/** Options of {@link createOpenAiProvider}: the config plus an injectable `fetch` (tests use recorded payloads). */
export interface OpenAiProviderOptions extends OpenAiConfig {
  readonly fetch?: typeof fetch
  /** Sent as `max_tokens` when set. */
  readonly maxTokens?: number
}

/** The default base URL when `OPENAI_BASE_URL` is not set. */
export const DEFAULT_OPENAI_BASE_URL = 'https://api.openai.com/v1'

/**
 * Reads the openai provider's settings from the environment: `OPENAI_BASE_URL` (default
 * {@link DEFAULT_OPENAI_BASE_URL}), `OPENAI_API_KEY` and `MODEL` (both required).
 *
 * @param env - The environment, usually `process.env`.
 * @returns The config.
 * @throws {@link MiniAgentError} `PROVIDER_CONFIG` naming the missing or malformed variable.
 */
export function openAiConfigFromEnv(env: Readonly<Record<string, string | undefined>>): OpenAiConfig {
  const baseUrl = env.OPENAI_BASE_URL?.trim() || DEFAULT_OPENAI_BASE_URL
  const apiKey = env.OPENAI_API_KEY?.trim() ?? ''
  const model = env.MODEL?.trim() ?? ''
  let protocol = ''
  try {
    protocol = new URL(baseUrl).protocol
  } catch {
    // reported below
  }
  if (protocol !== 'https:' && protocol !== 'http:') {
    throw new MiniAgentError({
      code: 'PROVIDER_CONFIG',
      message: `OPENAI_BASE_URL is ${JSON.stringify(baseUrl)}; expected an http(s) URL such as ${DEFAULT_OPENAI_BASE_URL}.`,
    })
  }
  if (apiKey === '') {
    throw new MiniAgentError({
      code: 'PROVIDER_CONFIG',
      message:
        'OPENAI_API_KEY is not set; the openai provider needs an API key (use --provider scripted to run offline).',
    })
  }
  if (model === '') {
    throw new MiniAgentError({
      code: 'PROVIDER_CONFIG',
      message:
        'MODEL is not set; the openai provider needs a model name such as gpt-4o-mini or deepseek-chat.',
    })
  }
  return { baseUrl, apiKey, model }
}

/** An HTTP request ready for `fetch`. */
export interface ChatHttpRequest {
  readonly url: string
  readonly init: { readonly method: 'POST'; readonly headers: Record<string, string>; readonly body: string }
}

/**
 * Builds the chat-completions request for the derived messages: the messages go out exactly
 * as the log projects them (model-visible ⟺ logged), DeepSeek's `reasoning_content`
 * included, which its thinking mode requires back on tool-call turns.
 *
 * @param options - Endpoint, key, model and optional `max_tokens`.
 * @param request - The messages and tools.
 * @returns URL and `fetch` init (POST, JSON body, bearer auth).
 */
export function buildChatRequest(
  options: OpenAiConfig & { readonly maxTokens?: number },
  request: { readonly messages: readonly WireMessage[]; readonly tools: readonly ToolDefinition[] },
): ChatHttpRequest {
  const body: Record<string, unknown> = { model: options.model, messages: request.messages }
  if (request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }))
  }
  if (options.maxTokens !== undefined) body.max_tokens = options.maxTokens
  body.stream = false
  return {
    url: `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`,
    init: {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        authorization: `Bearer ${options.apiKey}`,
      },
      body: JSON.stringify(body),
    },
  }
}

const count = z.number().int().nonnegative()

const chatCompletionSchema = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullish(),
          reasoning_content: z.string().nullish(),
          tool_calls: z
            .array(
              z.object({
                id: z.string().min(1),
                type: z.literal('function').optional(),
                function: z.object({ name: z.string().min(1), arguments: z.string() }),
              }),
            )
            .nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
  usage: z
    .object({
      prompt_tokens: count.optional(),
      completion_tokens: count.optional(),
      total_tokens: count.optional(),
      prompt_tokens_details: z.object({ cached_tokens: count.nullish() }).nullish(),
      prompt_cache_hit_tokens: count.optional(),
    })
    .nullish(),
})

const errorBodySchema = z.object({
  error: z.object({
    message: z.string().optional(),
    code: z.unknown().optional(),
    type: z.unknown().optional(),
  }),
})

const FINISH_REASONS: ReadonlySet<string> = new Set(['stop', 'tool_calls', 'length', 'content_filter'])

function redact(text: string, secret: string): string {
  return secret === '' ? text : text.split(secret).join('***')
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Context for {@link parseChatResponse}: where the answer came from, and the key to keep out of messages. */
export interface ChatResponseContext {
  readonly url: string
  readonly apiKey?: string
}

/**
 * Turns a chat-completions HTTP answer into a {@link ModelResponse}, or a typed error.
 *
 * @param status - The HTTP status.
 * @param bodyText - The response body as text.
 * @param context - The URL (for messages) and the key (redacted from any message).
 * @returns The first choice's message in the wire shape, its usage and finish reason.
 * @throws {@link MiniAgentError} `PROVIDER_HTTP_ERROR` for a non-2xx status (with the
 *   provider's own error message when the body has one), `PROVIDER_BAD_RESPONSE` for a 2xx
 *   body that is not a usable chat completion.
 */
export function parseChatResponse(
  status: number,
  bodyText: string,
  context: ChatResponseContext,
): ModelResponse {
  const body = parseJson(bodyText)
  if (status < 200 || status > 299) {
    const parsedError = errorBodySchema.safeParse(body)
    const detail = parsedError.success
      ? (parsedError.data.error.message ?? JSON.stringify(parsedError.data.error))
      : bodyText.slice(0, 200)
    throw new MiniAgentError({
      code: 'PROVIDER_HTTP_ERROR',
      status,
      message: redact(
        `The provider at ${context.url} answered HTTP ${status}: ${JSON.stringify(detail)}.`,
        context.apiKey ?? '',
      ),
    })
  }
  const parsed = chatCompletionSchema.safeParse(body)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new MiniAgentError({
      code: 'PROVIDER_BAD_RESPONSE',
      message: `The provider at ${context.url} answered HTTP ${status} with a body that is not a chat completion: ${
        body === undefined ? 'not JSON' : `${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`
      }.`,
      cause: parsed.error,
    })
  }
  const choice = parsed.data.choices[0]!
  const toolCalls: WireToolCall[] = (choice.message.tool_calls ?? []).map((call) => ({
    id: call.id,
    type: 'function',
    function: { name: call.function.name, arguments: call.function.arguments },
  }))
  const message: AssistantMessage = { role: 'assistant', content: choice.message.content ?? null }
  if (toolCalls.length > 0) message.tool_calls = toolCalls
  if (typeof choice.message.reasoning_content === 'string') {
    message.reasoning_content = choice.message.reasoning_content
  }
  const finish = choice.finish_reason ?? ''
  const finishReason = (FINISH_REASONS.has(finish) ? finish : 'other') as FinishReason
  const rawUsage = parsed.data.usage
  if (rawUsage === undefined || rawUsage === null) return { message, finishReason }
  const usage: Usage = {}
  if (rawUsage.prompt_tokens !== undefined) usage.prompt_tokens = rawUsage.prompt_tokens
  if (rawUsage.completion_tokens !== undefined) usage.completion_tokens = rawUsage.completion_tokens
  if (rawUsage.total_tokens !== undefined) usage.total_tokens = rawUsage.total_tokens
  const cached = rawUsage.prompt_tokens_details?.cached_tokens ?? rawUsage.prompt_cache_hit_tokens
  if (cached !== undefined && cached !== null) usage.cached_tokens = cached
  return { message, usage, finishReason }
}

function isAbortError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'AbortError'
}

/**
 * Creates a provider for any OpenAI-compatible chat-completions endpoint (OpenAI, DeepSeek,
 * local servers), with tool calling, over the global `fetch` (or an injected one).
 * Non-streaming: one POST per model request.
 *
 * @param options - Endpoint, key, model, and optionally `fetch` and `maxTokens`.
 * @returns A provider named `openai`.
 */
export function createOpenAiProvider(options: OpenAiProviderOptions): Provider {
  const fetchImplementation = options.fetch ?? globalThis.fetch
  return {
    name: 'openai',
    model: options.model,
    async complete(request: ModelRequest): Promise<ModelResponse> {
      const http = buildChatRequest(options, request)
      let response: Response
      try {
        response = await fetchImplementation(
          http.url,
          request.signal === undefined ? http.init : { ...http.init, signal: request.signal },
        )
      } catch (error) {
        if (isAbortError(error)) throw error
        throw new MiniAgentError({
          code: 'PROVIDER_NETWORK_ERROR',
          message: `The request to ${http.url} got no HTTP answer: ${redact(String(error), options.apiKey)}.`,
          cause: error,
        })
      }
      const text = await response.text()
      return parseChatResponse(response.status, text, { url: http.url, apiKey: options.apiKey })
    },
  }
}
