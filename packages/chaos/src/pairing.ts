/**
 * The pairing rule both providers enforce on a request's history, checked over the log's wire
 * shape (OpenAI chat: `tool_calls` on an assistant message, one `role: 'tool'` message per call)
 * and over the Anthropic shape the same history converts to (`tool_use` blocks answered by
 * `tool_result` blocks in the next user message). A request that breaks it is refused by the
 * provider: the session is bricked.
 */

/** One message of the log's wire shape (the fields the pairing rule reads). */
export interface WireMessage {
  readonly role: string
  readonly tool_calls?: readonly { readonly id: string }[] | undefined
  readonly tool_call_id?: string | undefined
  readonly content?: unknown
}

/** Why a history is not a valid next request, or null when it is. */
export type PairingDefect = string | null

/**
 * Checks the OpenAI chat rule: each assistant message with `tool_calls` is followed at once by
 * exactly one tool message per call, in the calls' order, and no tool message answers anything else.
 *
 * @param messages - The history in order.
 * @returns The first defect found, or null.
 */
export function openAiPairingDefect(messages: readonly WireMessage[]): PairingDefect {
  let index = 0
  while (index < messages.length) {
    const message = messages[index]!
    if (message.role === 'tool')
      return `message ${index} answers ${message.tool_call_id ?? '?'} with no call before it`
    index += 1
    const calls = message.role === 'assistant' ? (message.tool_calls ?? []) : []
    for (const call of calls) {
      const answer = messages[index]
      if (answer?.role !== 'tool') return `call ${call.id} has no tool message at ${index}`
      if (answer.tool_call_id !== call.id)
        return `message ${index} answers ${answer.tool_call_id ?? '?'}, expected ${call.id}`
      index += 1
    }
  }
  return null
}

/** One Anthropic message, reduced to the blocks the pairing rule reads. */
interface AnthropicMessage {
  readonly role: 'user' | 'assistant'
  readonly uses: readonly string[]
  readonly results: readonly string[]
}

/** The Anthropic shape of a wire history: tool messages become `tool_result` blocks of one user message. */
function toAnthropic(messages: readonly WireMessage[]): AnthropicMessage[] {
  const out: AnthropicMessage[] = []
  for (const message of messages) {
    if (message.role === 'system') continue
    if (message.role === 'assistant') {
      out.push({ role: 'assistant', uses: (message.tool_calls ?? []).map((call) => call.id), results: [] })
      continue
    }
    const result = message.role === 'tool' ? [message.tool_call_id ?? ''] : []
    const last = out.at(-1)
    // Consecutive user-side messages merge into one user turn (Anthropic alternates roles).
    if (last?.role === 'user') out[out.length - 1] = { ...last, results: [...last.results, ...result] }
    else out.push({ role: 'user', uses: [], results: result })
  }
  return out
}

/**
 * Checks the Anthropic rule: the user message after an assistant message with `tool_use` blocks
 * holds one `tool_result` per use, in order, and `tool_result`s answer only the message before.
 *
 * @param messages - The history in the log's wire shape.
 * @returns The first defect found, or null.
 */
export function anthropicPairingDefect(messages: readonly WireMessage[]): PairingDefect {
  const converted = toAnthropic(messages)
  for (let index = 0; index < converted.length; index++) {
    const message = converted[index]!
    const previous = converted[index - 1]
    if (message.role === 'user') {
      const expected = previous?.role === 'assistant' ? previous.uses : []
      if (message.results.join(',') !== expected.join(','))
        return `user message ${index} has tool_result [${message.results.join(',')}], expected [${expected.join(',')}]`
    } else if (previous?.role === 'assistant' && previous.uses.length > 0) {
      return `assistant message ${index - 1} has tool_use blocks and no user message after it`
    }
  }
  const last = converted.at(-1)
  if (last?.role === 'assistant' && last.uses.length > 0)
    return `the last assistant message has tool_use [${last.uses.join(',')}] that nothing answers`
  return null
}
