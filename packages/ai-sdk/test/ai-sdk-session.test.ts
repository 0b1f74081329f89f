import { rmSync } from 'node:fs'
import { hostname } from 'node:os'

import { SessionStoreError } from '@agent-ledger/session-store'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { generateText, stepCountIs, streamText, tool } from 'ai'
import { convertArrayToReadableStream, MockLanguageModelV3 } from 'ai/test'
import { afterAll, describe, expect, it, onTestFinished } from 'vitest'
import { z } from 'zod'

import { openAiSdkSession } from '../src/index.ts'
import { crossProcessStoreKinds, storeKinds } from './stores.ts'
import { spawnTsChild } from '../../../tooling/adapters/child.ts'
import { allEvents, tempRoot } from '../../../tooling/adapters/stores.ts'
import { textResponse, toolCallResponse } from './support.ts'

const root = tempRoot('ai-sdk')
afterAll(() => rmSync(root, { recursive: true, force: true }))

function weatherTools(log: string[]) {
  return {
    weather: tool({
      description: 'Weather in a city',
      inputSchema: z.object({ city: z.string() }),
      execute: ({ city }) => {
        log.push(city)
        return Promise.resolve({ city, forecast: 'sunny', celsius: 21 })
      },
    }),
    fail: tool({
      inputSchema: z.object({}),
      execute: async (): Promise<string> => {
        await Promise.resolve()
        throw new Error('the service is down')
      },
    }),
  }
}

describe.each(storeKinds)('a generateText run over the %s store', (_name, kind) => {
  it.skipIf(kind.skip !== null)(
    `logs a multi-step tool-calling run: turn, user, assistant with usage, call before result, final answer${kind.skip === null ? '' : ` (skipped: ${kind.skip})`}`,
    async () => {
      const { store, id: sessionId, close } = await kind.open()
      onTestFinished(close)
      const id = sessionId('multi-step')
      const session = await openAiSdkSession(store, id, { system: 'You are a weather bot.' })
      session.beginTurn('Weather in Paris, then break something.')
      const model = new MockLanguageModelV3({
        doGenerate: [
          toolCallResponse({ id: 'c1', name: 'weather', input: { city: 'Paris' } }),
          toolCallResponse({ id: 'c2', name: 'fail', input: {} }),
          textResponse('Paris is sunny; the other tool failed.'),
        ],
      })
      const ran: string[] = []
      const result = await generateText({
        model: session.wrapModel(model),
        ...session.prompt(),
        tools: session.wrapTools(weatherTools(ran)),
        stopWhen: stepCountIs(5),
      })
      await session.endTurn()
      await session.close()
      expect(result.text).toBe('Paris is sunny; the other tool failed.')
      expect(ran).toEqual(['Paris'])

      const events = await allEvents(store, id)
      expect(events.map((event) => event.type)).toEqual([
        'system/message',
        'turn/start',
        'user/message',
        'assistant/message',
        'tool/call',
        'tool/result',
        'assistant/message',
        'tool/call',
        'tool/result',
        'assistant/message',
        'turn/end',
      ])
      const [firstAnswer, , firstResult] = events.slice(3, 6) as [
        { data: { message: unknown; usage: unknown } },
        unknown,
        { data: unknown; sourceEventSeqs: number[] },
      ]
      expect(firstAnswer.data).toEqual({
        message: {
          role: 'assistant',
          content: 'Calling weather.',
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
          ],
        },
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      })
      expect(firstResult.data).toEqual({
        message: {
          role: 'tool',
          tool_call_id: 'c1',
          content: '{"city":"Paris","forecast":"sunny","celsius":21}',
        },
      })
      expect(firstResult.sourceEventSeqs).toEqual([4])
      expect(events[8]!.data).toEqual({
        message: { role: 'tool', tool_call_id: 'c2', content: 'the service is down' },
        isError: true,
      })
      expect(events[10]!.data).toEqual({ turn: 1, reason: 'completed' })

      // The third model call saw exactly the history the log holds (the SDK's own prompt).
      const thirdPrompt = model.doGenerateCalls[2]!.prompt
      expect(thirdPrompt.map((message) => message.role)).toEqual([
        'system',
        'user',
        'assistant',
        'tool',
        'assistant',
        'tool',
      ])

      // Resumed, the history round-trips into the SDK's shape with the error result kept an error.
      const again = await openAiSdkSession(store, id)
      const messages = again.messages()
      await again.close()
      expect(messages.at(-2)).toEqual({
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c2',
            toolName: 'fail',
            output: { type: 'error-text', value: 'the service is down' },
          },
        ],
      })
      expect(messages.at(-1)).toEqual({
        role: 'assistant',
        content: [{ type: 'text', text: 'Paris is sunny; the other tool failed.' }],
      })
    },
  )
})

describe('openAiSdkSession with generateText', () => {
  it('logs a streamText run with the tool call durable before the tool runs', async () => {
    const store = createJsonlStore({ root })
    const session = await openAiSdkSession(store, 'streamed')
    session.beginTurn('Weather in Oslo?')
    const seenAtToolStart: string[][] = []
    const model = new MockLanguageModelV3({
      doStream: [
        {
          stream: convertArrayToReadableStream([
            { type: 'stream-start', warnings: [] },
            { type: 'text-start', id: 't' },
            { type: 'text-delta', id: 't', delta: 'Let me ' },
            { type: 'text-delta', id: 't', delta: 'check.' },
            { type: 'text-end', id: 't' },
            { type: 'tool-call', toolCallId: 's1', toolName: 'weather', input: '{"city":"Oslo"}' },
            {
              type: 'finish',
              finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
              usage: {
                inputTokens: { total: 7, noCache: 7, cacheRead: undefined, cacheWrite: undefined },
                outputTokens: { total: 4, text: 4, reasoning: undefined },
              },
            },
          ]),
        },
        {
          stream: convertArrayToReadableStream([
            { type: 'text-start', id: 'u' },
            { type: 'text-delta', id: 'u', delta: 'Oslo is sunny.' },
            { type: 'text-end', id: 'u' },
            {
              type: 'finish',
              finishReason: { unified: 'stop', raw: 'stop' },
              usage: {
                inputTokens: { total: 9, noCache: 9, cacheRead: undefined, cacheWrite: undefined },
                outputTokens: { total: 3, text: 3, reasoning: undefined },
              },
            },
          ]),
        },
      ],
    })
    const tools = session.wrapTools({
      weather: tool({
        inputSchema: z.object({ city: z.string() }),
        execute: async ({ city }) => {
          const logged = await allEventTypesOnDisk(store, 'streamed')
          seenAtToolStart.push(logged)
          return `${city}: sunny`
        },
      }),
    })
    const result = streamText({
      model: session.wrapModel(model),
      ...session.prompt(),
      tools,
      stopWhen: stepCountIs(4),
    })
    expect(await result.text).toBe('Oslo is sunny.')
    await session.endTurn()
    await session.close()
    // When the tool ran, the assistant message and the tool call were already on disk.
    expect(seenAtToolStart).toEqual([['turn/start', 'user/message', 'assistant/message', 'tool/call']])
    const events = await allEvents(store, 'streamed')
    expect(events[2]!.data).toEqual({
      message: {
        role: 'assistant',
        content: 'Let me check.',
        tool_calls: [
          { id: 's1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
        ],
      },
      usage: { prompt_tokens: 7, completion_tokens: 4, total_tokens: 11 },
    })
    expect(events.map((event) => event.type).slice(4)).toEqual([
      'tool/result',
      'assistant/message',
      'turn/end',
    ])
  })

  it('refuses to begin a turn while one is open, naming the open turn', async () => {
    const store = createJsonlStore({ root })
    const session = await openAiSdkSession(store, 'turns')
    session.beginTurn('one')
    expect(() => session.beginTurn('two')).toThrowError(/expected no open turn, found turn 1 open/)
    await session.endTurn()
    expect(session.beginTurn('two')).toBe(2)
    await session.endTurn('aborted')
    await session.close()
  })

  it('replaces a changed system prompt, keeping the old one in the log', async () => {
    const store = createJsonlStore({ root })
    const first = await openAiSdkSession(store, 'system', { system: 'old prompt' })
    await first.close()
    const second = await openAiSdkSession(store, 'system', { system: 'new prompt' })
    expect(second.prompt()).toEqual({ system: 'new prompt', messages: [] })
    await second.close()
    const events = await allEvents(store, 'system')
    expect(events).toMatchObject([
      { seq: 0, type: 'system/message', data: { message: { content: 'old prompt' } } },
      {
        seq: 1,
        type: 'system/message',
        data: { message: { content: 'new prompt' } },
        surfaceOp: { op: 'replace', startSeq: 0, endSeq: 0 },
        sourceEventSeqs: [0],
      },
    ])
  })
})

/** Event types on disk: `readEvents` reads the file, so buffered (not yet flushed) events are not there. */
async function allEventTypesOnDisk(
  store: ReturnType<typeof createJsonlStore>,
  id: string,
): Promise<string[]> {
  return (await allEvents(store, id)).map((event) => event.type)
}

describe.each(crossProcessStoreKinds)('crash mid-tool and resume over the %s store', (_name, kind) => {
  it.skipIf(kind.skip !== null)(
    `a child SIGKILLed inside a tool (per-process owners): another process gets SESSION_LOCKED naming the holder and expiry (PostgreSQL; a JSONL lock of a dead process is stale at once); with takeover it resumes with TOOL_OUTCOME_UNKNOWN in the next model request${kind.skip === null ? '' : ` (skipped: ${kind.skip})`}`,
    async () => {
      const { store, target, id: sessionId, close } = await kind.open()
      onTestFinished(close)
      const id = sessionId('killed')
      const child = spawnTsChild(new URL('./fixtures/crash-mid-tool.ts', import.meta.url), [target!, id])
      await child.waitFor('IN_TOOL')
      child.child.kill('SIGKILL')
      expect((await child.exited).signal).toBe('SIGKILL')
      const lastWrittenAt = (await allEvents(store, id)).at(-1)!.time

      // The restarted worker is another process, so another owner. On PostgreSQL the child's
      // lease stays live until it expires; a JSONL lock whose process is gone (same host) is stale at once.
      const owner = `${hostname()}:${process.pid}`
      const childOwner = `${hostname()}:${child.child.pid}`
      if (kind.name.startsWith('PostgreSQL')) {
        const locked = await openAiSdkSession(store, id, { owner }).then(
          () => new Error('expected SESSION_LOCKED'),
          (error: unknown) => error,
        )
        expect(locked).toBeInstanceOf(SessionStoreError)
        const { code, details, message } = locked as SessionStoreError
        expect(code).toBe('SESSION_LOCKED')
        expect(details).toMatchObject({ holder: childOwner })
        const expiresAt = (details as { expiresAt: string }).expiresAt
        expect(Date.parse(expiresAt)).toBeGreaterThan(Date.parse(lastWrittenAt))
        expect(message).toContain(childOwner)
        expect(message).toContain(expiresAt)
        // Nothing was written by the refused open.
        expect(await allEvents(store, id)).toHaveLength(5)
      }

      // The worker that owns the session by id says so: it takes the lease over at once.
      const session = await openAiSdkSession(store, id, {
        system: 'You deploy services.',
        owner,
        takeover: true,
      })
      expect(session.repairs).toEqual([{ callId: 'call-deploy', code: 'TOOL_OUTCOME_UNKNOWN', seq: 5 }])
      expect(session.turnOpen).toBe(false)
      const events = await allEvents(store, id)
      expect(events.map((event) => event.type)).toEqual([
        'system/message',
        'turn/start',
        'user/message',
        'assistant/message',
        'tool/call',
        'tool/result',
        'turn/end',
      ])
      expect(events[6]!.data).toEqual({ turn: 1, reason: 'interrupted' })

      session.beginTurn('Did the deploy happen?')
      const model = new MockLanguageModelV3({
        doGenerate: [textResponse('I cannot tell; let me verify first.')],
      })
      await generateText({ model: session.wrapModel(model), ...session.prompt() })
      await session.endTurn()
      await session.close()

      const prompt = model.doGenerateCalls[0]!.prompt
      const toolMessage = prompt.find((message) => message.role === 'tool')
      expect(toolMessage).toBeDefined()
      const [part] = toolMessage!.content as {
        type: string
        toolCallId: string
        output: { type: string; value: string }
      }[]
      expect(part!.toolCallId).toBe('call-deploy')
      expect(part!.output.type).toBe('error-text')
      expect(part!.output.value).toMatch(/outcome is unknown.*\[TOOL_OUTCOME_UNKNOWN\]$/s)
      expect(prompt.at(-1)).toEqual({
        role: 'user',
        content: [{ type: 'text', text: 'Did the deploy happen?' }],
        providerOptions: undefined,
      })
    },
  )
})
