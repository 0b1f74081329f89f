/**
 * A resumable reply: clients that (re)connect mid-generation through the SDK's own
 * `DefaultChatTransport.reconnectToStream`, over a real HTTP server on loopback, get the rest
 * of the reply served from the log (`followReply`, over `store.follow`), several at once.
 */
import { rmSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'

import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { DefaultChatTransport, readUIMessageStream, stepCountIs, streamText, tool } from 'ai'
import type { UIMessage } from 'ai'
import { convertArrayToReadableStream, MockLanguageModelV3 } from 'ai/test'
import { afterAll, describe, expect, it } from 'vitest'
import { z } from 'zod'

import { followReply, openAiSdkSession } from '../src/index.ts'
import { tempRoot } from '../../../tooling/adapters/stores.ts'
import { streamedStep } from './support.ts'

const root = tempRoot('ai-sdk-follow')
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe('followReply', () => {
  it('two clients reconnecting mid-generation over HTTP get the whole reply, equal to uiMessages()', async () => {
    const store = createJsonlStore({ root })
    const server = createServer((request, response) => {
      const match = /^\/api\/chat\/([^/]+)\/stream$/.exec(request.url ?? '')
      if (request.method !== 'GET' || match === null) {
        response.writeHead(404).end()
        return
      }
      const abort = new AbortController()
      response.on('close', () => abort.abort())
      followReply(store, match[1]!, { signal: abort.signal }).then(
        (reply) => {
          response.writeHead(reply.status, Object.fromEntries(reply.headers))
          if (reply.body === null) response.end()
          else Readable.fromWeb(reply.body as never).pipe(response)
        },
        (error: unknown) => response.writeHead(500).end(String(error)),
      )
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    const transport = new DefaultChatTransport({ api: `http://127.0.0.1:${port}/api/chat` })

    expect(await transport.reconnectToStream({ chatId: 'no-such-chat' })).toBeNull()

    const session = await openAiSdkSession(store, 'tabs')
    session.beginTurn({ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'Weather in Paris?' }] })
    let release!: () => void
    let started!: () => void
    const toolStarted = new Promise<void>((resolve) => (started = resolve))
    const released = new Promise<void>((resolve) => (release = resolve))
    const model = new MockLanguageModelV3({
      doStream: [
        {
          stream: convertArrayToReadableStream(
            streamedStep({
              text: 'Checking.',
              calls: [{ id: 'c1', name: 'weather', input: { city: 'Paris' } }],
            }),
          ),
        },
        { stream: convertArrayToReadableStream(streamedStep({ text: 'Sunny.' })) },
      ],
    })
    const result = streamText({
      model: session.wrapModel(model),
      ...session.prompt(),
      tools: session.wrapTools({
        weather: tool({
          inputSchema: z.object({ city: z.string() }),
          execute: async ({ city }) => {
            started()
            await released
            return { city, sky: 'sunny' }
          },
        }),
      }),
      stopWhen: stepCountIs(3),
      onFinish: () => session.endTurn(),
    })
    // The first client's connection is gone; the run goes on on the server.
    const finished = result.consumeStream()
    session.replyMessageId()
    await toolStarted

    // Two tabs reconnect while the tool runs: mid-generation.
    const tabs = await Promise.all([1, 2].map(() => transport.reconnectToStream({ chatId: 'tabs' })))
    release()
    const replies = await Promise.all(
      tabs.map(async (stream) => {
        let last: UIMessage | undefined
        for await (const message of readUIMessageStream({ stream: stream! })) last = message
        return last
      }),
    )
    await finished
    const [, reply] = session.uiMessages()
    expect(replies[0]).toEqual(reply)
    expect(replies[1]).toEqual(reply)
    expect(reply!.parts.map((part) => part.type)).toEqual([
      'step-start',
      'text',
      'tool-weather',
      'step-start',
      'text',
    ])
    // Nothing to resume once the turn ended.
    expect(await transport.reconnectToStream({ chatId: 'tabs' })).toBeNull()
    await session.close()
    await store.close()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
})
