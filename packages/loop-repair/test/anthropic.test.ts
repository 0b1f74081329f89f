// The Anthropic shape of a wire history and the Messages API's tool rule checked on it: each
// defect a crash leaves (an unanswered call, answers out of order, an orphan answer) is refused.
import { describe, expect, it } from 'vitest'

import type { WireMessage } from '@agent-ledger/session-events'

import { toAnthropic, validateAnthropicRequest } from '../src/index.ts'

const calls = (...ids: string[]): WireMessage => ({
  role: 'assistant',
  content: null,
  tool_calls: ids.map((id) => ({ id, type: 'function', function: { name: 'run', arguments: '{}' } })),
})
const answer = (id: string): WireMessage => ({ role: 'tool', tool_call_id: id, content: 'ok' })
const user: WireMessage = { role: 'user', content: 'go' }
const codes = (messages: WireMessage[]): string[] =>
  validateAnthropicRequest(toAnthropic(messages).request).map((issue) => `${issue.code}@${issue.index}`)

describe('validateAnthropicRequest', () => {
  it('accepts parallel calls answered in order, then a next user turn (merged into the results turn)', () => {
    expect(codes([user, calls('a', 'b'), answer('a'), answer('b'), user, calls('c'), answer('c')])).toEqual(
      [],
    )
  })

  it('refuses a tool_use nothing answers, at the end or before the next assistant turn', () => {
    expect(codes([user, calls('a')])).toEqual(['UNANSWERED_TOOL_USE@1'])
    // The two assistant messages merge into one turn; the user turn after it answers only one use.
    expect(codes([user, calls('a'), calls('b'), answer('b')])).toEqual(['TOOL_RESULT_MISMATCH@2'])
  })

  it('refuses answers out of order in a request, and an answer to a call of an older turn', () => {
    const request = toAnthropic([user, calls('a', 'b'), answer('a'), answer('b')]).request
    request.messages[2]!.content.reverse()
    expect(validateAnthropicRequest(request).map((issue) => `${issue.code}@${issue.index}`)).toEqual([
      'TOOL_RESULT_MISMATCH@2',
    ])
    expect(
      codes([user, calls('a'), answer('a'), { role: 'assistant', content: 'done' }, answer('a')]),
    ).toEqual(['TOOL_RESULT_MISMATCH@4'])
  })

  it('orders parallel results by their uses, whatever order the tools finished in (chaos disk-full, seed 1)', () => {
    // Logged in completion order, the second call first (the chat shape accepts it).
    const { request } = toAnthropic([user, calls('a', 'b', 'c'), answer('c'), answer('a'), answer('b'), user])
    expect(
      request.messages[2]!.content.map((block) =>
        block.type === 'tool_result' ? block.tool_use_id : block.type,
      ),
    ).toEqual(['a', 'b', 'c', 'text'])
    expect(validateAnthropicRequest(request)).toEqual([])
  })

  it('names the expected and the found ids', () => {
    const [issue] = validateAnthropicRequest(toAnthropic([user, calls('a', 'b'), answer('b')]).request)
    expect(issue?.message).toBe(
      'User message 2 holds tool_result [b]: expected [a, b] for the tool_use blocks before it',
    )
  })
})
