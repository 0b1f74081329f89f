import type { ModelMessage } from 'ai'
import { describe, expect, it } from 'vitest'

import { AiSdkAdapterError, fromModelMessages, toModelMessages } from '../src/index.ts'

/** Converts to wire and back, passing the error flags along as the session does. */
function roundTrip(messages: ModelMessage[]): ModelMessage[] {
  const entries = fromModelMessages(messages)
  const errorResults = new Set<number>()
  entries.forEach((entry, index) => {
    if (entry.isError === true) errorResults.add(index)
  })
  return toModelMessages(
    entries.map((entry) => entry.message),
    { errorResults },
  )
}

const PNG_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='

describe('fromModelMessages / toModelMessages', () => {
  it('round-trips every shape both sides express, unchanged', () => {
    const messages: ModelMessage[] = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'plain text' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in these?' },
          { type: 'image', image: 'https://example.com/cat.png' },
          {
            type: 'image',
            image: PNG_BASE64,
            mediaType: 'image/png',
            providerOptions: { openai: { imageDetail: 'low' } },
          },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'Two images; look up both.' },
          { type: 'text', text: 'Let me look.' },
          { type: 'tool-call', toolCallId: 'a', toolName: 'lookup', input: { q: 'cat' } },
          { type: 'tool-call', toolCallId: 'b', toolName: 'lookup', input: { q: 'dot', page: 2 } },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'a',
            toolName: 'lookup',
            output: { type: 'text', value: 'a cat' },
          },
          {
            type: 'tool-result',
            toolCallId: 'b',
            toolName: 'lookup',
            output: { type: 'error-text', value: 'not found' },
          },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'A cat; the dot was not found.' }] },
    ]
    expect(roundTrip(messages)).toEqual(messages)
  })

  it('writes the OpenAI chat wire shape', () => {
    const entries = fromModelMessages([
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'think' },
          { type: 'text', text: 'Calling.' },
          { type: 'tool-call', toolCallId: 'c1', toolName: 'run', input: { cmd: 'ls' } },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c1',
            toolName: 'run',
            output: { type: 'error-json', value: { exit: 2 } },
          },
        ],
      },
    ])
    expect(entries).toEqual([
      {
        message: {
          role: 'assistant',
          content: 'Calling.',
          reasoning_content: 'think',
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'run', arguments: '{"cmd":"ls"}' } }],
        },
      },
      { message: { role: 'tool', tool_call_id: 'c1', content: '{"exit":2}' }, isError: true },
    ])
  })

  it('degrades what the wire cannot tell apart, as documented', () => {
    const back = roundTrip([
      { role: 'assistant', content: 'a string reply' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'two ' },
          { type: 'text', text: 'parts' },
          { type: 'tool-call', toolCallId: 'j', toolName: 'json', input: { a: 1 } },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'j',
            toolName: 'json',
            output: { type: 'json', value: { ok: true } },
          },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'image', image: new Uint8Array(Buffer.from(PNG_BASE64, 'base64')) },
          { type: 'file', data: PNG_BASE64, mediaType: 'image/png', filename: 'dot.png' },
        ],
      },
    ])
    expect(back).toEqual([
      // a string assistant content becomes one text part
      { role: 'assistant', content: [{ type: 'text', text: 'a string reply' }] },
      // text parts are joined
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'two parts' },
          { type: 'tool-call', toolCallId: 'j', toolName: 'json', input: { a: 1 } },
        ],
      },
      // a json output comes back as the text the model read
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'j',
            toolName: 'json',
            output: { type: 'text', value: '{"ok":true}' },
          },
        ],
      },
      // bytes come back as base64 with the sniffed media type; an image file comes back as an image
      {
        role: 'user',
        content: [
          { type: 'image', image: PNG_BASE64, mediaType: 'image/png' },
          { type: 'image', image: PNG_BASE64, mediaType: 'image/png' },
        ],
      },
    ])
  })

  it('refuses a part the wire cannot hold, naming the message and the part, unless asked for a placeholder', () => {
    const messages: ModelMessage[] = [
      { role: 'user', content: 'hi' },
      {
        role: 'user',
        content: [{ type: 'file', data: 'JVBERi0=', mediaType: 'application/pdf', filename: 'a.pdf' }],
      },
    ]
    let thrown: unknown
    try {
      fromModelMessages(messages)
    } catch (error) {
      thrown = error
    }
    expect(AiSdkAdapterError.is(thrown)).toBe(true)
    expect(thrown).toMatchObject({ code: 'UNSUPPORTED_CONTENT', details: { index: 1, part: 'file' } })
    expect((thrown as Error).message).toMatch(
      /^Message 1 has a "file application\/pdf "a\.pdf"" part: expected/,
    )
    expect(fromModelMessages(messages, { unsupported: 'placeholder' })[1]).toEqual({
      message: {
        role: 'user',
        content: [
          {
            type: 'text',
            text: `[file application/pdf "a.pdf" omitted: the session log's message shape cannot hold it]`,
          },
        ],
      },
    })
  })

  it('reads a denied execution as an error result the model can read', () => {
    expect(
      fromModelMessages([
        {
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: 'x',
              toolName: 'rm',
              output: { type: 'execution-denied', reason: 'user said no' },
            },
          ],
        },
      ]),
    ).toEqual([
      {
        message: { role: 'tool', tool_call_id: 'x', content: 'Tool execution denied: user said no' },
        isError: true,
      },
    ])
  })

  it('keeps invalid argument JSON as its raw text and names an unanswerable result "unknown"', () => {
    expect(
      toModelMessages([
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'bad', type: 'function', function: { name: 'f', arguments: '{not json' } }],
        },
        { role: 'tool', tool_call_id: 'bad', content: 'error' },
        { role: 'tool', tool_call_id: 'orphan', content: 'late' },
      ]),
    ).toEqual([
      {
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: 'bad', toolName: 'f', input: '{not json' }],
      },
      {
        role: 'tool',
        content: [
          { type: 'tool-result', toolCallId: 'bad', toolName: 'f', output: { type: 'text', value: 'error' } },
          {
            type: 'tool-result',
            toolCallId: 'orphan',
            toolName: 'unknown',
            output: { type: 'text', value: 'late' },
          },
        ],
      },
    ])
  })
})
