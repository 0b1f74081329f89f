/**
 * The chat UI's messages as a projection of the log: what `session.uiMessages()` derives equals
 * what the SDK's own UI stream built for the client, passes `validateUIMessages`, keeps the UI's
 * ids across a reopen, and every step is in the log as it happens (a client that disconnects
 * mid-stream loses nothing).
 */
import { rmSync } from 'node:fs'

import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { readUIMessageStream, stepCountIs, streamText, tool, validateUIMessages } from 'ai'
import type { UIMessage } from 'ai'
import { convertArrayToReadableStream, MockLanguageModelV3 } from 'ai/test'
import { afterAll, describe, expect, it } from 'vitest'
import { z } from 'zod'

import { openAiSdkSession } from '../src/index.ts'
import { allEvents, tempRoot } from '../../../tooling/adapters/stores.ts'
import { streamedStep } from './support.ts'

const root = tempRoot('ai-sdk-ui')
afterAll(() => rmSync(root, { recursive: true, force: true }))

function weatherTools(gate?: { started: () => void; released: Promise<void> }) {
  return {
    weather: tool({
      description: 'Weather in a city',
      inputSchema: z.object({ city: z.string() }),
      execute: async ({ city }) => {
        gate?.started()
        await gate?.released
        return { city, sky: 'sunny', celsius: 21 }
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

function scriptedModel(): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    doStream: [
      {
        stream: convertArrayToReadableStream(
          streamedStep({
            text: 'Let me check.',
            calls: [
              { id: 'c1', name: 'weather', input: { city: 'Paris' } },
              { id: 'c2', name: 'fail', input: {} },
            ],
          }),
        ),
      },
      { stream: convertArrayToReadableStream(streamedStep({ text: 'Sunny in Paris, 21°C.' })) },
    ],
  })
}

const question: UIMessage = {
  id: 'user-1',
  role: 'user',
  parts: [{ type: 'text', text: 'Weather in Paris?' }],
}

describe('uiMessages()', () => {
  it('equals the message the SDK streamed to the client, validates, and keeps the UI ids after a reopen', async () => {
    const store = createJsonlStore({ root })
    const session = await openAiSdkSession(store, 'ui-roundtrip', { system: 'You report the weather.' })
    session.beginTurn(question)
    const tools = weatherTools()
    const result = streamText({
      model: session.wrapModel(scriptedModel()),
      ...session.prompt(),
      tools: session.wrapTools(tools),
      stopWhen: stepCountIs(4),
    })
    const stream = result.toUIMessageStream({
      originalMessages: session.uiMessages(),
      generateMessageId: () => session.replyMessageId(),
      // The SDK masks error texts by default; the log keeps the tool's own.
      onError: (error) => (error instanceof Error ? error.message : String(error)),
    })
    let streamed: UIMessage | undefined
    for await (const message of readUIMessageStream({ stream })) streamed = message
    await session.endTurn()

    const derived = session.uiMessages()
    expect(derived).toEqual([question, streamed])
    // Not a tautology of the projection: the streamed message is the SDK's own.
    expect(streamed!.parts.map((part) => part.type)).toEqual([
      'step-start',
      'text',
      'tool-weather',
      'tool-fail',
      'step-start',
      'text',
    ])
    expect(await validateUIMessages({ messages: derived, tools: tools as never })).toEqual(derived)
    await session.close()

    const reopened = await openAiSdkSession(store, 'ui-roundtrip')
    expect(reopened.uiMessages()).toEqual(derived)
    expect(reopened.replyMessageId()).toBe(streamed!.id)
    await reopened.close()
    await store.close()
  })

  it('a client that disconnects mid-stream loses nothing: each step is durable as it happens', async () => {
    const store = createJsonlStore({ root })
    const session = await openAiSdkSession(store, 'ui-disconnect')
    session.beginTurn(question)
    let release!: () => void
    let started!: () => void
    const toolStarted = new Promise<void>((resolve) => (started = resolve))
    const tools = weatherTools({ started, released: new Promise<void>((resolve) => (release = resolve)) })
    const finished = new Promise<void>((resolve, reject) => {
      const result = streamText({
        model: session.wrapModel(scriptedModel()),
        ...session.prompt(),
        tools: session.wrapTools(tools),
        stopWhen: stepCountIs(4),
        onFinish: () => session.endTurn().then(resolve, reject),
      })
      // The docs' recipe: consume the result on the server whatever the client does.
      void result.consumeStream()
      const reader = result
        .toUIMessageStream({ generateMessageId: () => session.replyMessageId() })
        .getReader()
      void (async () => {
        // The client reads until the tool is running, then goes away.
        for (;;) {
          const { value } = await reader.read()
          if (value?.type === 'tool-input-available') break
        }
        await reader.cancel()
        await toolStarted
        // While the tool runs, a reader of the store sees the step that called it.
        const onDisk = (await allEvents(store, 'ui-disconnect')).map((event) => event.type)
        expect(onDisk.slice(0, 6)).toEqual([
          'turn/start',
          'user/message',
          'ai-sdk/ui-message-id', // the user message's UI id
          'ai-sdk/ui-message-id', // the reply's
          'assistant/message',
          'tool/call',
        ])
        release()
      })().catch(reject)
    })
    await finished
    await session.close()

    const reopened = await openAiSdkSession(store, 'ui-disconnect')
    const [user, reply] = reopened.uiMessages()
    expect(user).toEqual(question)
    expect(reply!.parts).toEqual([
      { type: 'step-start' },
      { type: 'text', text: 'Let me check.', state: 'done' },
      {
        type: 'tool-weather',
        toolCallId: 'c1',
        state: 'output-available',
        input: { city: 'Paris' },
        output: { city: 'Paris', sky: 'sunny', celsius: 21 },
      },
      {
        type: 'tool-fail',
        toolCallId: 'c2',
        state: 'output-error',
        input: {},
        errorText: 'the service is down',
      },
      { type: 'step-start' },
      { type: 'text', text: 'Sunny in Paris, 21°C.', state: 'done' },
    ])
    await reopened.close()
    await store.close()
  })

  it('logs a provider-executed tool call and its result, shown to the UI, kept off the model history', async () => {
    const store = createJsonlStore({ root })
    const session = await openAiSdkSession(store, 'ui-provider-tool')
    session.beginTurn(question)
    const model = new MockLanguageModelV3({
      doStream: [
        {
          stream: convertArrayToReadableStream([
            { type: 'stream-start', warnings: [] },
            {
              type: 'tool-call',
              toolCallId: 'ws-1',
              toolName: 'web_search',
              input: '{"query":"Paris weather"}',
              providerExecuted: true,
            },
            {
              type: 'tool-result',
              toolCallId: 'ws-1',
              toolName: 'web_search',
              result: { hits: ['sunny, 21°C'] },
            },
            ...streamedStep({ text: 'Sunny, 21°C.' }).slice(1),
          ]),
        },
      ],
    })
    const result = streamText({ model: session.wrapModel(model), ...session.prompt() })
    await result.consumeStream()
    await session.endTurn()
    await session.close()

    const events = await allEvents(store, 'ui-provider-tool')
    const logged = events.find((event) => event.type === 'ai-sdk/provider-tool')
    expect(logged).toMatchObject({
      ignorable: true,
      data: {
        callId: 'ws-1',
        name: 'web_search',
        input: '{"query":"Paris weather"}',
        result: { hits: ['sunny, 21°C'] },
      },
    })
    const reopened = await openAiSdkSession(store, 'ui-provider-tool')
    const [, reply] = reopened.uiMessages()
    expect(reply!.parts).toEqual([
      { type: 'step-start' },
      { type: 'text', text: 'Sunny, 21°C.', state: 'done' },
      {
        type: 'tool-web_search',
        toolCallId: 'ws-1',
        state: 'output-available',
        input: { query: 'Paris weather' },
        output: { hits: ['sunny, 21°C'] },
        providerExecuted: true,
      },
    ])
    // The model history holds the answer, not the provider's own call (no note either).
    expect(reopened.messages().at(-1)).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: 'Sunny, 21°C.' }],
    })
    await reopened.close()
    await store.close()
  })
})
