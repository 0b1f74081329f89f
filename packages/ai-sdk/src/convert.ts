import type {
  AssistantMessage,
  ContentPart,
  ToolMessage,
  UserMessage,
  WireMessage,
  WireToolCall,
} from '@agent-ledger/session-events'
import type {
  AssistantModelMessage,
  ImagePart,
  ModelMessage,
  TextPart,
  ToolCallPart,
  ToolModelMessage,
  ToolResultPart,
  UserModelMessage,
} from 'ai'

import { AiSdkAdapterError, AiSdkErrorCode } from './ai-sdk-error.ts'

type AssistantPart = Exclude<AssistantModelMessage['content'], string>[number]
type ToolContentPart = ToolModelMessage['content'][number]
type ToolOutput = ToolResultPart['output']
type DataContent = ImagePart['image']

/**
 * One wire message ready to log, with what the event carries beside the message: a tool
 * result's error flag (the wire `tool` message has none).
 */
export interface WireEntry {
  readonly message: WireMessage
  /** Set on a tool result the model should read as an error (`error-text`, `error-json`, `execution-denied`). */
  readonly isError?: boolean
}

/** Options of {@link fromModelMessages}. */
export interface FromModelMessagesOptions {
  /**
   * What to do with a part the wire shape cannot hold (a non-image file, a provider-executed
   * tool call or result, an approval request): `throw` (default) an `UNSUPPORTED_CONTENT`
   * error, or `placeholder`: keep a text part (or tool result text) naming what was left out.
   */
  readonly unsupported?: 'throw' | 'placeholder'
}

/** What {@link toModelMessages} needs beside the wire messages. */
export interface ToModelMessagesOptions {
  /** Positions (indexes into `messages`) of tool messages whose result is an error. */
  readonly errorResults?: ReadonlySet<number>
}

const IMAGE_SIGNATURES: readonly { readonly mediaType: string; readonly bytes: readonly number[] }[] = [
  { mediaType: 'image/png', bytes: [0x89, 0x50, 0x4e, 0x47] },
  { mediaType: 'image/jpeg', bytes: [0xff, 0xd8, 0xff] },
  { mediaType: 'image/gif', bytes: [0x47, 0x49, 0x46, 0x38] },
  { mediaType: 'image/webp', bytes: [0x52, 0x49, 0x46, 0x46] },
]

function toBytes(data: Uint8Array | ArrayBuffer): Uint8Array {
  return data instanceof Uint8Array ? data : new Uint8Array(data)
}

function bytesToBase64(bytes: Uint8Array): string {
  let binary = ''
  for (let index = 0; index < bytes.length; index += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(index, index + 0x8000))
  }
  return btoa(binary)
}

function sniffImageType(base64: string): string | undefined {
  let head: string
  try {
    head = atob(base64.slice(0, 16))
  } catch {
    return undefined
  }
  return IMAGE_SIGNATURES.find((signature) =>
    signature.bytes.every((byte, index) => head.charCodeAt(index) === byte),
  )?.mediaType
}

/** A URL string for image data: an `http(s):`/`data:` URL as given, bytes or base64 as a `data:` URL. */
function imageUrl(data: DataContent | URL, mediaType: string | undefined): string | undefined {
  if (data instanceof URL) return data.href
  if (typeof data === 'string') {
    if (/^(https?|data):/i.test(data)) return data
    const type = mediaType ?? sniffImageType(data)
    return type === undefined ? undefined : `data:${type};base64,${data}`
  }
  const base64 = bytesToBase64(toBytes(data))
  const type = mediaType ?? sniffImageType(base64)
  return type === undefined ? undefined : `data:${type};base64,${base64}`
}

function describePart(part: {
  readonly type: string
  readonly mediaType?: unknown
  readonly filename?: unknown
}): string {
  const bits = [part.type]
  if (typeof part.mediaType === 'string') bits.push(part.mediaType)
  if (typeof part.filename === 'string') bits.push(JSON.stringify(part.filename))
  return bits.join(' ')
}

class Converter {
  readonly #unsupported: 'throw' | 'placeholder'
  readonly entries: WireEntry[] = []

  constructor(options: FromModelMessagesOptions) {
    this.#unsupported = options.unsupported ?? 'throw'
  }

  /** The placeholder text for a part the wire cannot hold, or a thrown error. */
  omitted(
    index: number,
    part: { readonly type: string; readonly mediaType?: unknown; readonly filename?: unknown },
  ): string {
    const what = describePart(part)
    if (this.#unsupported === 'throw') {
      throw new AiSdkAdapterError({
        code: AiSdkErrorCode.UNSUPPORTED_CONTENT,
        message: `Message ${index} has a "${what}" part: expected a part the OpenAI chat wire shape can hold (text, image, reasoning, tool call, tool result), found one it cannot; pass { unsupported: 'placeholder' } to log a placeholder instead`,
        details: { index, part: part.type },
      })
    }
    return `[${what} omitted: the session log's message shape cannot hold it]`
  }

  user(index: number, message: UserModelMessage): void {
    if (typeof message.content === 'string') {
      this.entries.push({ message: { role: 'user', content: message.content } })
      return
    }
    const parts: ContentPart[] = []
    for (const part of message.content) {
      if (part.type === 'text') {
        parts.push({ type: 'text', text: part.text })
        continue
      }
      // An image file is logged as an image: its filename and part type do not survive.
      const url =
        part.type === 'image'
          ? imageUrl(part.image, part.mediaType)
          : part.mediaType.startsWith('image/')
            ? imageUrl(part.data, part.mediaType)
            : undefined
      if (url === undefined) {
        parts.push({ type: 'text', text: this.omitted(index, part) })
        continue
      }
      const detail = imageDetail(part.providerOptions)
      parts.push({ type: 'image_url', image_url: detail === undefined ? { url } : { url, detail } })
    }
    this.entries.push({ message: { role: 'user', content: parts } })
  }

  assistant(index: number, message: AssistantModelMessage): void {
    if (typeof message.content === 'string') {
      this.entries.push({ message: { role: 'assistant', content: message.content } })
      return
    }
    let text: string | null = null
    let reasoning: string | undefined
    const toolCalls: WireToolCall[] = []
    for (const part of message.content) {
      switch (part.type) {
        case 'text':
          text = (text ?? '') + part.text
          break
        case 'reasoning':
          reasoning = (reasoning ?? '') + part.text
          break
        case 'tool-call':
          if (part.providerExecuted === true) {
            text = (text ?? '') + this.omitted(index, { type: 'provider-executed tool-call' })
            break
          }
          toolCalls.push(wireToolCall(part))
          break
        case 'tool-result':
          text = (text ?? '') + this.omitted(index, { type: 'provider-executed tool-result' })
          break
        case 'file':
        case 'tool-approval-request':
          text = (text ?? '') + this.omitted(index, part)
          break
        default:
          text = (text ?? '') + this.omitted(index, part)
      }
    }
    const wire: AssistantMessage = {
      role: 'assistant',
      content: text,
      ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
      ...(reasoning === undefined ? {} : { reasoning_content: reasoning }),
    }
    this.entries.push({ message: wire })
  }

  tool(index: number, message: ToolModelMessage): void {
    for (const part of message.content) {
      if (part.type !== 'tool-result') continue // approval responses are not model-visible
      const { content, isError } = this.toolOutput(index, part.output)
      const wire: ToolMessage = { role: 'tool', tool_call_id: part.toolCallId, content }
      this.entries.push(isError ? { message: wire, isError } : { message: wire })
    }
  }

  toolOutput(index: number, output: ToolOutput): { content: string; isError: boolean } {
    switch (output.type) {
      case 'text':
        return { content: output.value, isError: false }
      case 'json':
        return { content: JSON.stringify(output.value), isError: false }
      case 'error-text':
        return { content: output.value, isError: true }
      case 'error-json':
        return { content: JSON.stringify(output.value), isError: true }
      case 'execution-denied':
        return {
          content: `Tool execution denied${output.reason === undefined ? '.' : `: ${output.reason}`}`,
          isError: true,
        }
      case 'content':
        return {
          content: output.value
            .map((item) => (item.type === 'text' ? item.text : this.omitted(index, item as { type: string })))
            .join(''),
          isError: false,
        }
      default:
        return { content: this.omitted(index, output), isError: false }
    }
  }
}

function imageDetail(providerOptions: unknown): 'auto' | 'low' | 'high' | undefined {
  const openai = (providerOptions as { openai?: { imageDetail?: unknown } } | undefined)?.openai
  const detail = openai?.imageDetail
  return detail === 'auto' || detail === 'low' || detail === 'high' ? detail : undefined
}

function wireToolCall(part: ToolCallPart): WireToolCall {
  return {
    id: part.toolCallId,
    type: 'function',
    function: {
      name: part.toolName,
      arguments: typeof part.input === 'string' ? part.input : JSON.stringify(part.input ?? {}),
    },
  }
}

/**
 * Converts AI SDK `ModelMessage`s into wire messages (OpenAI chat shape) ready to log, one
 * entry per wire message: a `tool` model message with N results becomes N entries.
 *
 * **Details**: text parts of one message are concatenated; reasoning parts become
 * `reasoning_content`; tool-call `input` is serialized with `JSON.stringify` (a string input
 * is kept as the raw argument text); image parts (and image files without a filename) become
 * `image_url` parts (bytes and base64 as `data:` URLs; `providerOptions.openai.imageDetail` as
 * `detail`); `json` tool outputs are serialized, error outputs set `isError`. `providerOptions`
 * and `providerMetadata` are not kept. See the package README for the full table.
 *
 * @param messages - The messages, in order.
 * @param options - `unsupported`: throw (default) or keep a placeholder for parts the wire cannot hold.
 * @returns The wire entries, in order.
 * @throws {@link AiSdkAdapterError} `UNSUPPORTED_CONTENT` (naming the message index and part type), or
 *   `INVALID_MESSAGE` for a message with an unknown role.
 */
export function fromModelMessages(
  messages: readonly ModelMessage[],
  options: FromModelMessagesOptions = {},
): WireEntry[] {
  const converter = new Converter(options)
  messages.forEach((message, index) => {
    switch (message.role) {
      case 'system':
        converter.entries.push({ message: { role: 'system', content: message.content } })
        break
      case 'user':
        converter.user(index, message)
        break
      case 'assistant':
        converter.assistant(index, message)
        break
      case 'tool':
        converter.tool(index, message)
        break
      default:
        throw new AiSdkAdapterError({
          code: AiSdkErrorCode.INVALID_MESSAGE,
          message: `Message ${index} has role ${JSON.stringify((message as { role?: unknown }).role)}: expected system, user, assistant or tool`,
          details: { index },
        })
    }
  })
  return converter.entries
}

function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text // the model produced invalid JSON: keep its raw text, as the SDK does for invalid calls
  }
}

function userToModel(message: UserMessage): UserModelMessage {
  if (typeof message.content === 'string') return { role: 'user', content: message.content }
  return {
    role: 'user',
    content: message.content.map((part): TextPart | ImagePart => {
      if (part.type === 'text') return { type: 'text', text: part.text }
      const { url, detail } = part.image_url
      const data = /^data:([^;,]+);base64,(.*)$/s.exec(url)
      const image: ImagePart =
        data === null
          ? { type: 'image', image: url }
          : { type: 'image', image: data[2]!, mediaType: data[1]! }
      return detail === undefined ? image : { ...image, providerOptions: { openai: { imageDetail: detail } } }
    }),
  }
}

function assistantToModel(message: AssistantMessage): AssistantModelMessage {
  const content: AssistantPart[] = []
  if (message.reasoning_content !== undefined)
    content.push({ type: 'reasoning', text: message.reasoning_content })
  if (message.content !== null && message.content !== '')
    content.push({ type: 'text', text: message.content })
  for (const call of message.tool_calls ?? []) {
    content.push({
      type: 'tool-call',
      toolCallId: call.id,
      toolName: call.function.name,
      input: parseArguments(call.function.arguments),
    })
  }
  return { role: 'assistant', content }
}

/**
 * Converts wire messages (a projection's `deriveMessages()`) into AI SDK `ModelMessage`s,
 * ready for `generateText({ messages })`.
 *
 * **Details**: consecutive `tool` messages become one `tool` model message (as the SDK groups
 * one step's results); each result's `toolName` comes from the assistant call it answers
 * (`unknown` for a result whose call is not in `messages`); a result listed in
 * `errorResults` becomes `error-text`, any other `text`. Assistant content is always an array
 * of parts: reasoning, then text, then tool calls. `data:` image URLs become base64 data with
 * a media type; other URLs stay strings (the SDK downloads or forwards them).
 *
 * @param messages - Wire messages in model order.
 * @param options - `errorResults`: indexes of tool messages that are error results.
 * @returns The model messages.
 */
export function toModelMessages(
  messages: readonly WireMessage[],
  options: ToModelMessagesOptions = {},
): ModelMessage[] {
  const names = new Map<string, string>()
  const result: ModelMessage[] = []
  let toolGroup: ToolContentPart[] | undefined
  messages.forEach((message, index) => {
    if (message.role !== 'tool') toolGroup = undefined
    switch (message.role) {
      case 'system':
        result.push({ role: 'system', content: message.content })
        break
      case 'user':
        result.push(userToModel(message))
        break
      case 'assistant':
        for (const call of message.tool_calls ?? []) names.set(call.id, call.function.name)
        result.push(assistantToModel(message))
        break
      case 'tool': {
        const part: ToolResultPart = {
          type: 'tool-result',
          toolCallId: message.tool_call_id,
          toolName: names.get(message.tool_call_id) ?? 'unknown',
          output: options.errorResults?.has(index)
            ? { type: 'error-text', value: message.content }
            : { type: 'text', value: message.content },
        }
        if (toolGroup === undefined) {
          toolGroup = [part]
          result.push({ role: 'tool', content: toolGroup })
        } else {
          toolGroup.push(part)
        }
        break
      }
    }
  })
  return result
}
