import { writeFile } from 'node:fs/promises'
import { resolve } from 'node:path'

import { planRepairFromState } from '@agent-ledger/loop-repair'
import type { WireMessage } from '@agent-ledger/session-events'

import { ExitCode } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import type { CommandContext } from '../context.ts'
import { displayPath, ioError } from '../session-path.ts'
import type { SessionTarget } from '../open-store.ts'
import { readSessionView } from './messages.ts'

/** An Anthropic Messages API content block (the kinds an export produces). */
type AnthropicBlock =
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

/**
 * The Messages API shape of a projected message list: system messages joined into `system`,
 * `tool_use` blocks for calls, `tool_result` blocks (in a user turn) for results, consecutive
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
  const loss: ProviderExportLoss = {
    reasoning: 0,
    systemMoved: 0,
    unparsableArguments: 0,
    insertedFirstUser: 0,
  }
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
 * The OpenAI chat shape: the projection as sent, `reasoning_content` dropped (OpenAI refuses
 * unknown fields on some models; DeepSeek wants it only on the current turn).
 */
function toOpenAi(messages: readonly WireMessage[]): {
  messages: WireMessage[]
  loss: ProviderExportLoss
} {
  const loss: ProviderExportLoss = {
    reasoning: 0,
    systemMoved: 0,
    unparsableArguments: 0,
    insertedFirstUser: 0,
  }
  const out = messages.map((message) => {
    if (message.role !== 'assistant' || message.reasoning_content === undefined) return message
    loss.reasoning += 1
    const { reasoning_content: _dropped, ...rest } = message
    return rest
  })
  return { messages: out, loss }
}

/**
 * `export --format openai|anthropic`: the repaired projection of a session (read-only: the
 * repair plan is applied in memory, as `messages --repaired` does) in a provider's shape.
 */
export async function runProviderExport(
  context: CommandContext,
  target: SessionTarget,
  options: { readonly format: 'openai' | 'anthropic'; readonly output: string | undefined },
): Promise<number> {
  const read = await readSessionView(context, target, null)
  const projection = read.projection
  const plan = planRepairFromState(projection.repairState, {
    nextSeq: projection.nextSeq,
    time: context.clock(),
  })
  for (const event of plan.events) projection.apply(event)
  const messages = projection.deriveMessages()
  const converted = options.format === 'openai' ? toOpenAi(messages) : toAnthropic(messages)
  const body =
    options.format === 'openai'
      ? (converted as ReturnType<typeof toOpenAi>).messages
      : (converted as ReturnType<typeof toAnthropic>).request
  const textOut = `${stringifyJson(body, 2)}\n`
  if (options.output === undefined) await context.out.write(textOut)
  else {
    const target = resolve(context.cwd, options.output)
    try {
      await writeFile(target, textOut, { mode: 0o600 })
    } catch (error) {
      throw ioError(error, { path: displayPath(target, context.cwd), doing: 'write' })
    }
  }
  const lost = Object.entries(converted.loss).filter(([, count]) => count > 0)
  if (lost.length > 0) {
    context.notice('note', `not carried over: ${lost.map(([key, count]) => `${key} ${count}`).join(', ')}`)
  }
  return ExitCode.OK
}
