/**
 * The Anthropic Messages API shape of a projected message list, and the API's tool-pairing
 * rule checked on it. Pure.
 */
import type { WireMessage } from '@agent-ledger/session-events'

/** An Anthropic Messages API content block (the kinds an export produces). */
export type AnthropicBlock =
  | { type: 'text'; text: string }
  | {
      type: 'image'
      source: { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string }
    }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'tool_result'; tool_use_id: string; content: string }

/** An Anthropic Messages API request body, without model and limits. */
export interface AnthropicRequest {
  system?: string
  messages: { role: 'user' | 'assistant'; content: AnthropicBlock[] }[]
}

/** What the conversion could not carry over, counted. */
export interface ProviderExportLoss {
  reasoning: number
  systemMoved: number
  unparsableArguments: number
  insertedFirstUser: number
}

function userBlocks(content: Extract<WireMessage, { role: 'user' }>['content']): AnthropicBlock[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }]
  return content.map((part): AnthropicBlock => {
    if (part.type === 'text') return { type: 'text', text: part.text }
    const match = /^data:([^;,]+);base64,(.*)$/s.exec(part.image_url.url)
    return match === null
      ? { type: 'image', source: { type: 'url', url: part.image_url.url } }
      : { type: 'image', source: { type: 'base64', media_type: match[1]!, data: match[2]! } }
  })
}

/** A loss record with nothing lost yet (each export counts into its own). */
export function noProviderExportLoss(): ProviderExportLoss {
  return { reasoning: 0, systemMoved: 0, unparsableArguments: 0, insertedFirstUser: 0 }
}

/**
 * The Messages API shape of a projected message list: system messages joined into `system`,
 * `tool_use` blocks for calls, `tool_result` blocks (in a user turn, in the order of the uses
 * they answer, whatever order the tools finished in) for results, consecutive
 * messages of one role merged so roles alternate, a first user turn inserted when the
 * conversation starts with the assistant. `reasoning_content` is dropped (Anthropic thinking
 * blocks need the provider's signatures).
 *
 * @param messages - The projection (after compaction and repair).
 * @returns The request body and what was lost.
 */
export function toAnthropic(messages: readonly WireMessage[]): {
  request: AnthropicRequest
  loss: ProviderExportLoss
} {
  const loss = noProviderExportLoss()
  const system: string[] = []
  const out: AnthropicRequest['messages'] = []
  const push = (role: 'user' | 'assistant', blocks: AnthropicBlock[]): void => {
    if (blocks.length === 0) return
    const last = out.at(-1)
    if (last?.role === role) last.content.push(...blocks)
    else out.push({ role, content: blocks })
  }
  for (const message of messages) {
    if (message.role === 'system') {
      if (out.length > 0) loss.systemMoved += 1
      system.push(message.content)
    } else if (message.role === 'user') {
      push('user', userBlocks(message.content))
    } else if (message.role === 'tool') {
      push('user', [{ type: 'tool_result', tool_use_id: message.tool_call_id, content: message.content }])
    } else {
      if (message.reasoning_content !== undefined) loss.reasoning += 1
      const blocks: AnthropicBlock[] = []
      if (message.content !== null && message.content.trim() !== '')
        blocks.push({ type: 'text', text: message.content })
      for (const call of message.tool_calls ?? []) {
        let input: Record<string, unknown>
        try {
          const parsed: unknown = JSON.parse(call.function.arguments)
          input =
            typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
              ? (parsed as Record<string, unknown>)
              : { value: parsed }
        } catch {
          loss.unparsableArguments += 1
          input = { arguments: call.function.arguments }
        }
        blocks.push({ type: 'tool_use', id: call.id, name: call.function.name, input })
      }
      push('assistant', blocks)
    }
  }
  orderResultsByUses(out)
  if (out[0]?.role === 'assistant') {
    loss.insertedFirstUser += 1
    out.unshift({
      role: 'user',
      content: [{ type: 'text', text: '(the conversation starts with the assistant)' }],
    })
  }
  const request: AnthropicRequest = { messages: out }
  if (system.length > 0) request.system = system.join('\n\n')
  return { request, loss }
}

/**
 * Puts the `tool_result` blocks of each user turn in the order of the `tool_use` blocks of the
 * assistant turn before it (in place, in the slots the results held). Parallel tools finish,
 * and are logged, in any order (the chat shape accepts that); the Messages API wants the
 * results in the uses' order. A result no use names keeps its place after the named ones.
 */
function orderResultsByUses(messages: AnthropicRequest['messages']): void {
  for (let index = 1; index < messages.length; index++) {
    const [previous, current] = [messages[index - 1]!, messages[index]!]
    if (previous.role !== 'assistant' || current.role !== 'user') continue
    const rank = new Map<string, number>()
    for (const block of previous.content) if (block.type === 'tool_use') rank.set(block.id, rank.size)
    const slots: number[] = []
    current.content.forEach((block, slot) => {
      if (block.type === 'tool_result') slots.push(slot)
    })
    const sorted = slots
      .map((slot) => current.content[slot] as AnthropicBlock & { type: 'tool_result' })
      .sort((a, b) => (rank.get(a.tool_use_id) ?? rank.size) - (rank.get(b.tool_use_id) ?? rank.size))
    slots.forEach((slot, order) => (current.content[slot] = sorted[order]!))
  }
}

/** Why an Anthropic Messages request would be refused for its tool blocks. */
export interface AnthropicIssue {
  readonly code: 'UNANSWERED_TOOL_USE' | 'TOOL_RESULT_MISMATCH'
  /** Index in `request.messages`. */
  readonly index: number
  readonly message: string
}

/**
 * Checks the Messages API's tool rule on a request: the user message right after an assistant
 * message with `tool_use` blocks holds one `tool_result` per use, in the uses' order, and a
 * `tool_result` answers only the assistant message just before it.
 *
 * @param request - A request body (e.g. from {@link toAnthropic}).
 * @returns The issues by index; empty when the request is acceptable.
 */
export function validateAnthropicRequest(request: AnthropicRequest): AnthropicIssue[] {
  const issues: AnthropicIssue[] = []
  const uses = (index: number): string[] =>
    (request.messages[index]?.content ?? []).flatMap((block) => (block.type === 'tool_use' ? [block.id] : []))
  request.messages.forEach((message, index) => {
    const previous = index > 0 && request.messages[index - 1]!.role === 'assistant' ? uses(index - 1) : []
    if (message.role === 'user') {
      const results = message.content.flatMap((block) =>
        block.type === 'tool_result' ? [block.tool_use_id] : [],
      )
      if (results.join(',') !== previous.join(','))
        issues.push({
          code: 'TOOL_RESULT_MISMATCH',
          index,
          message: `User message ${index} holds tool_result [${results.join(', ')}]: expected [${previous.join(', ')}] for the tool_use blocks before it`,
        })
    } else if (previous.length > 0) {
      issues.push({
        code: 'UNANSWERED_TOOL_USE',
        index: index - 1,
        message: `Assistant message ${index - 1} has tool_use [${previous.join(', ')}]: expected a user message of tool_result blocks next, found another assistant message`,
      })
    }
  })
  const last = request.messages.length - 1
  if (last >= 0 && request.messages[last]!.role === 'assistant' && uses(last).length > 0)
    issues.push({
      code: 'UNANSWERED_TOOL_USE',
      index: last,
      message: `Assistant message ${last} has tool_use [${uses(last).join(', ')}]: expected a user message of tool_result blocks next, found the end of the request`,
    })
  return issues
}
