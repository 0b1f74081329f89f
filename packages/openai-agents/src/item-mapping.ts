import { isDeepStrictEqual } from 'node:util'

import type { ContentPart, WireMessage, WireToolCall } from '@agent-ledger/session-events'
import type { AgentInputItem } from '@openai/agents-core'

/** An item as plain JSON data (what the log can hold). */
type ItemRecord = Record<string, unknown>

/** The item's `type` (`message` when absent, as the SDK allows for messages). */
function itemType(item: ItemRecord): string {
  const type = item['type']
  return typeof type === 'string' ? type : type === undefined ? 'message' : JSON.stringify(type)
}

const IMAGE_DETAILS = new Set(['auto', 'low', 'high'])

function placeholder(what: string): string {
  return `[${what} kept verbatim by @agent-ledger/openai-agents: the chat wire shape cannot hold it]`
}

function textOf(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined
}

function userParts(content: readonly ItemRecord[]): ContentPart[] {
  return content.map((part): ContentPart => {
    if (part['type'] === 'input_text') return { type: 'text', text: textOf(part['text']) ?? '' }
    if (part['type'] === 'input_image' && typeof part['image'] === 'string') {
      const detail = part['detail']
      return {
        type: 'image_url',
        image_url:
          typeof detail === 'string' && IMAGE_DETAILS.has(detail)
            ? { url: part['image'], detail: detail as 'auto' | 'low' | 'high' }
            : { url: part['image'] },
      }
    }
    return { type: 'text', text: placeholder(`a ${String(part['type'])} part`) }
  })
}

function assistantText(content: readonly ItemRecord[]): string {
  return content
    .map((part) => {
      if (part['type'] === 'output_text') return textOf(part['text']) ?? ''
      if (part['type'] === 'refusal') return textOf(part['refusal']) ?? ''
      return placeholder(`a ${String(part['type'])} part`)
    })
    .join('')
}

/** The text the model reads for a function call output. */
function outputText(output: unknown): string {
  if (typeof output === 'string') return output
  const record = output as ItemRecord | null
  if (
    record !== null &&
    typeof record === 'object' &&
    record['type'] === 'text' &&
    typeof record['text'] === 'string'
  ) {
    return record['text']
  }
  return JSON.stringify(output)
}

/**
 * The wire message (OpenAI chat shape) one SDK item is logged as.
 *
 * @param item - An SDK item as JSON data.
 * @returns One wire message; items the wire cannot hold become an assistant note (the item itself is kept beside it).
 */
export function itemToWire(item: ItemRecord): WireMessage {
  const type = itemType(item)
  if (type === 'message') {
    const content = item['content']
    switch (item['role']) {
      case 'system':
        return { role: 'system', content: textOf(content) ?? '' }
      case 'user':
        return typeof content === 'string'
          ? { role: 'user', content }
          : { role: 'user', content: userParts(Array.isArray(content) ? (content as ItemRecord[]) : []) }
      case 'assistant':
        return {
          role: 'assistant',
          content: Array.isArray(content) ? assistantText(content as ItemRecord[]) : (textOf(content) ?? ''),
        }
      default:
        break
    }
  }
  if (type === 'function_call') {
    const call: WireToolCall = {
      id: String(item['callId']),
      type: 'function',
      function: { name: String(item['name']), arguments: textOf(item['arguments']) ?? '' },
    }
    return { role: 'assistant', content: null, tool_calls: [call] }
  }
  if (type === 'function_call_result') {
    return { role: 'tool', tool_call_id: String(item['callId']), content: outputText(item['output']) }
  }
  if (type === 'reasoning') {
    const parts = Array.isArray(item['content']) ? (item['content'] as ItemRecord[]) : []
    return {
      role: 'assistant',
      content: null,
      reasoning_content: parts.map((part) => textOf(part['text']) ?? '').join('\n'),
    }
  }
  return { role: 'assistant', content: placeholder(`a ${type} item`) }
}

/**
 * The SDK items a wire message stands for, when no exact item was recorded beside it (an
 * event written by another adapter, a repair placeholder, or an item the wire holds exactly).
 *
 * @param message - The wire message.
 * @param callNames - Tool name per call id, for results (`unknown` when the call is not known).
 * @returns The items, in the order the SDK emits them: reasoning, message, function calls.
 */
export function wireToItems(message: WireMessage, callNames: ReadonlyMap<string, string>): ItemRecord[] {
  switch (message.role) {
    case 'system':
      return [{ type: 'message', role: 'system', content: message.content }]
    case 'user':
      return [
        {
          type: 'message',
          role: 'user',
          content:
            typeof message.content === 'string'
              ? message.content
              : message.content.map((part) =>
                  part.type === 'text'
                    ? { type: 'input_text', text: part.text }
                    : {
                        type: 'input_image',
                        image: part.image_url.url,
                        ...(part.image_url.detail === undefined ? {} : { detail: part.image_url.detail }),
                      },
                ),
        },
      ]
    case 'assistant': {
      const items: ItemRecord[] = []
      if (message.reasoning_content !== undefined) {
        items.push({ type: 'reasoning', content: [{ type: 'input_text', text: message.reasoning_content }] })
      }
      if (message.content !== null) {
        items.push({
          type: 'message',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: message.content }],
        })
      }
      for (const call of message.tool_calls ?? []) {
        items.push({
          type: 'function_call',
          callId: call.id,
          name: call.function.name,
          arguments: call.function.arguments,
          status: 'completed',
        })
      }
      return items
    }
    case 'tool':
      return [
        {
          type: 'function_call_result',
          callId: message.tool_call_id,
          name: callNames.get(message.tool_call_id) ?? 'unknown',
          status: 'completed',
          output: { type: 'text', text: message.content },
        },
      ]
  }
}

/** The item as plain JSON (no `undefined` members, no class instances), as the log would hold it. */
export function toJsonItem(item: AgentInputItem | ItemRecord): ItemRecord {
  return JSON.parse(JSON.stringify(item)) as ItemRecord
}

/** True when the wire message alone gives back exactly `item` (so nothing needs recording beside it). */
export function wireHoldsItem(
  item: ItemRecord,
  message: WireMessage,
  callNames: ReadonlyMap<string, string>,
): boolean {
  const back = wireToItems(message, callNames)
  return back.length === 1 && isDeepStrictEqual(back[0], item)
}

/** The surface event type that carries a wire message of this role. */
export function surfaceTypeOf(
  message: WireMessage,
): 'system/message' | 'user/message' | 'assistant/message' | 'tool/result' {
  switch (message.role) {
    case 'system':
      return 'system/message'
    case 'user':
      return 'user/message'
    case 'assistant':
      return 'assistant/message'
    case 'tool':
      return 'tool/result'
  }
}

/**
 * A stable identity for an item, used to recognise an item the adapter already logged during a
 * run when the runner persists it again at the end: function calls and results by call id,
 * anything else by its role/type and content.
 */
export function itemKey(item: ItemRecord): string {
  const type = itemType(item)
  if (type === 'function_call') return `function_call:${String(item['callId'])}`
  if (type === 'function_call_result') return `function_call_result:${String(item['callId'])}`
  if (type === 'message') return `message:${String(item['role'])}:${JSON.stringify(item['content'])}`
  if (typeof item['id'] === 'string') return `${type}#${item['id']}`
  return `${type}:${JSON.stringify(item)}`
}
