import { rmSync } from 'node:fs'

import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { tool } from 'ai'
import type { ToolExecutionOptions } from 'ai'
import { afterAll, describe, expect, it } from 'vitest'
import { z } from 'zod'

import { wrapTools } from '../src/index.ts'
import { allEvents, tempRoot } from '../../../tooling/adapters/stores.ts'

const root = tempRoot('ai-sdk')
afterAll(() => rmSync(root, { recursive: true, force: true }))

const execution = (toolCallId: string): ToolExecutionOptions => ({ toolCallId, messages: [] })

describe('wrapTools', () => {
  it('logs a one-call assistant message when the model was not wrapped, so repair can answer the call', async () => {
    const store = createJsonlStore({ root })
    const writer = await store.create({ id: 'unwrapped' })
    const tools = wrapTools(
      {
        add: tool({
          inputSchema: z.object({ a: z.number(), b: z.number() }),
          execute: ({ a, b }) => Promise.resolve(a + b),
        }),
      },
      writer,
    )
    const sum: unknown = await tools.add.execute!({ a: 2, b: 3 }, execution('t1'))
    await writer.close()
    expect(sum).toBe(5)
    const events = await allEvents(store, 'unwrapped')
    expect(events.map((event) => [event.type, event.data])).toEqual([
      [
        'assistant/message',
        {
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 't1', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } },
            ],
          },
        },
      ],
      ['tool/call', { callId: 't1', name: 'add', arguments: '{"a":2,"b":3}' }],
      ['tool/result', { message: { role: 'tool', tool_call_id: 't1', content: '5' } }],
    ])
  })

  it('logs a streaming tool once, with its last value, and passes every value through', async () => {
    const store = createJsonlStore({ root })
    const writer = await store.create({ id: 'streaming' })
    const tools = wrapTools(
      {
        progress: tool({
          inputSchema: z.object({}),
          async *execute() {
            await Promise.resolve()
            yield { done: 1 }
            yield { done: 2 }
          },
        }),
      },
      writer,
    )
    const seen: unknown[] = []
    for await (const value of tools.progress.execute!({}, execution('s1')) as AsyncIterable<unknown>)
      seen.push(value)
    await writer.close()
    expect(seen).toEqual([{ done: 1 }, { done: 2 }])
    const events = await allEvents(store, 'streaming')
    expect(events.map((event) => event.type)).toEqual(['assistant/message', 'tool/call', 'tool/result'])
    expect(events[2]!.data).toEqual({ message: { role: 'tool', tool_call_id: 's1', content: '{"done":2}' } })
  })

  it('logs what toModelOutput gives the model, not the raw output', async () => {
    const store = createJsonlStore({ root })
    const writer = await store.create({ id: 'model-output' })
    const tools = wrapTools(
      {
        secret: tool({
          inputSchema: z.object({}),
          execute: () => Promise.resolve({ token: 'hidden', summary: 'ok' }),
          toModelOutput: ({ output }) => ({ type: 'text', value: output.summary }),
        }),
      },
      writer,
    )
    await tools.secret.execute!({}, execution('m1'))
    await writer.close()
    const events = await allEvents(store, 'model-output')
    expect(events[2]!.data).toEqual({ message: { role: 'tool', tool_call_id: 'm1', content: 'ok' } })
  })
})
