import type { WireMessage } from '@agent-ledger/session-events'
import { describe, expect, it } from 'vitest'

import { validateProviderMessages } from '../src/index.ts'

const user = (content: string): WireMessage => ({ role: 'user', content })
const calls = (...ids: string[]): WireMessage => ({
  role: 'assistant',
  content: null,
  tool_calls: ids.map((id) => ({
    id,
    type: 'function' as const,
    function: { name: 'tool', arguments: '{}' },
  })),
})
const answer = (id: string): WireMessage => ({ role: 'tool', tool_call_id: id, content: 'ok' })
const say = (content: string): WireMessage => ({ role: 'assistant', content })

describe('validateProviderMessages', () => {
  it('accepts calls answered directly after their assistant message, in any order', () => {
    expect(
      validateProviderMessages([
        { role: 'system', content: 's' },
        user('u'),
        calls('a', 'b'),
        answer('b'),
        answer('a'),
        calls('a'),
        answer('a'),
        say('done'),
      ]),
    ).toEqual([])
  })

  it('reports a call with no answer before the next non-tool message at the assistant index', () => {
    expect(validateProviderMessages([user('u'), calls('a', 'b'), answer('a'), user('again')])).toMatchObject([
      { code: 'UNANSWERED_TOOL_CALL', index: 1, callId: 'b' },
    ])
  })

  it('reports an unanswered call at the end of the list', () => {
    expect(validateProviderMessages([user('u'), calls('a')])).toMatchObject([
      { code: 'UNANSWERED_TOOL_CALL', index: 1, callId: 'a' },
    ])
  })

  it('reports a tool message nobody called as an orphan', () => {
    expect(validateProviderMessages([user('u'), answer('x')])).toMatchObject([
      { code: 'ORPHAN_TOOL_MESSAGE', index: 1, callId: 'x' },
    ])
  })

  it('reports a second answer to the same call as a duplicate', () => {
    expect(validateProviderMessages([calls('a'), answer('a'), answer('a')])).toMatchObject([
      { code: 'DUPLICATE_TOOL_MESSAGE', index: 2, callId: 'a' },
    ])
  })

  it('reports an answer separated from its call by another message as out of place, and the call as unanswered', () => {
    expect(validateProviderMessages([calls('a'), user('interjection'), answer('a')])).toEqual([
      expect.objectContaining({ code: 'UNANSWERED_TOOL_CALL', index: 0, callId: 'a' }),
      expect.objectContaining({ code: 'TOOL_MESSAGE_OUT_OF_PLACE', index: 2, callId: 'a' }),
    ])
  })

  it('reports an answer to an earlier message call placed after a later assistant message as out of place', () => {
    expect(
      validateProviderMessages([calls('a'), answer('a'), calls('b'), answer('b'), answer('a')]),
    ).toMatchObject([{ code: 'TOOL_MESSAGE_OUT_OF_PLACE', index: 4, callId: 'a' }])
  })

  it('counts repeated ids in one assistant message: each needs its own answer', () => {
    expect(validateProviderMessages([calls('a', 'a'), answer('a'), answer('a')])).toEqual([])
    expect(validateProviderMessages([calls('a', 'a'), answer('a')])).toMatchObject([
      { code: 'UNANSWERED_TOOL_CALL', index: 0, callId: 'a' },
    ])
  })

  it('treats an assistant message with an empty tool_calls array as having no calls', () => {
    const empty: WireMessage = { role: 'assistant', content: 'x', tool_calls: [] }
    expect(validateProviderMessages([user('u'), empty, user('v')])).toEqual([])
  })
})
