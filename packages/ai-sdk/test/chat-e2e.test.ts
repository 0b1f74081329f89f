/**
 * A chat app end to end: a real HTTP server child on loopback (test/fixtures/chat-server.ts, the
 * AI SDK's persistence and resume recipes with the session as their storage) and, in this
 * process, the SDK's own client transport (`DefaultChatTransport`). One server restart:
 *
 * 1. a message whose tool needs approval; the server is SIGKILLed once the client sees the
 *    approval request; a new server process shows the pending approval under the id the client
 *    saw; approved, the tool runs exactly once and the reply completes;
 * 2. on the new server, a client that disconnects mid-generation and reconnects
 *    (`reconnectToStream`) gets the rest of the reply.
 *
 * The final UI messages equal the log's projection (the session opened here, after the server
 * stopped) and pass `validateUIMessages`. Every wait is on an event (a stdout line, a stream
 * chunk, an exit), never on time.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'

import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { DefaultChatTransport, readUIMessageStream, validateUIMessages } from 'ai'
import type { UIMessage, UIMessageChunk } from 'ai'
import { afterAll, describe, expect, it, onTestFinished } from 'vitest'

import { openAiSdkSession } from '../src/index.ts'
import { spawnTsChild } from '../../../tooling/adapters/child.ts'
import type { TsChild } from '../../../tooling/adapters/child.ts'
import { allEvents, tempRoot } from '../../../tooling/adapters/stores.ts'

const root = tempRoot('ai-sdk-chat-e2e')
afterAll(() => rmSync(root, { recursive: true, force: true }))
const ranFile = join(root, 'deploy-ran.txt')

/** Starts a server child; resolves with it and its base URL once it listens. */
async function startServer(): Promise<{ server: TsChild; base: string }> {
  const server = spawnTsChild(new URL('./fixtures/chat-server.ts', import.meta.url), [root, ranFile])
  onTestFinished(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGKILL')
      await server.exited
    }
  })
  await server.waitFor('LISTENING')
  const port = /LISTENING (\d+)/.exec(server.output().stdout)![1]!
  return { server, base: `http://127.0.0.1:${port}` }
}

/** The client side of `useChat`: the SDK's transport, sending only the last message (the log has the rest). */
function transportFor(base: string): DefaultChatTransport<UIMessage> {
  return new DefaultChatTransport({
    api: `${base}/api/chat`,
    prepareSendMessagesRequest: ({ id, messages }) => ({ body: { id, message: messages.at(-1) } }),
  })
}

function send(
  transport: DefaultChatTransport<UIMessage>,
  chatId: string,
  messages: UIMessage[],
  abortSignal?: AbortSignal,
): Promise<ReadableStream<UIMessageChunk>> {
  return transport.sendMessages({
    trigger: 'submit-message',
    chatId,
    messageId: undefined,
    messages,
    abortSignal,
  })
}

/** Reads a reply stream as the client builds it; stops early once `until` holds for the message. */
async function read(
  stream: ReadableStream<UIMessageChunk>,
  options: { continuing?: UIMessage; until?: (message: UIMessage) => boolean } = {},
): Promise<UIMessage> {
  let last: UIMessage | undefined
  for await (const message of readUIMessageStream(
    options.continuing === undefined ? { stream } : { stream, message: options.continuing },
  )) {
    last = message
    if (options.until?.(message) === true) break
  }
  return structuredClone(last!)
}

async function loadChat(base: string, chatId: string): Promise<UIMessage[]> {
  const response = await fetch(`${base}/api/chat/${chatId}`)
  expect(response.status).toBe(200)
  return (await response.json()) as UIMessage[]
}

type ToolPart = Extract<UIMessage['parts'][number], { toolCallId: string }>

function toolPart(message: UIMessage, type: string): ToolPart | undefined {
  return message.parts.find((part): part is ToolPart => part.type === type && 'toolCallId' in part)
}

const deployQuestion: UIMessage = {
  id: 'u-deploy',
  role: 'user',
  parts: [{ type: 'text', text: 'Deploy web.' }],
}
const weatherQuestion: UIMessage = {
  id: 'u-weather',
  role: 'user',
  parts: [{ type: 'text', text: 'Weather in Paris?' }],
}

describe('a chat app over HTTP with the SDK transport', () => {
  it('approval across a SIGKILLed server, then a mid-stream disconnect and reconnect; the UI messages are the log', async () => {
    // Server 1: the model calls deploy, the SDK asks for approval.
    const first = await startServer()
    const asked = await read(await send(transportFor(first.base), 'deploy', [deployQuestion]), {
      until: (message) => toolPart(message, 'tool-deploy')?.state === 'approval-requested',
    })
    const request = toolPart(asked, 'tool-deploy') as Extract<ToolPart, { state: 'approval-requested' }>
    expect(request.state).toBe('approval-requested')
    first.server.child.kill('SIGKILL')
    expect((await first.server.exited).signal).toBe('SIGKILL')

    // What the client saw is durable: the request and the SDK's id for it.
    const store = createJsonlStore({ root })
    onTestFinished(() => store.close())
    const logged = await allEvents(store, 'deploy')
    expect(
      logged.filter((event) => event.type.startsWith('ai-sdk/approval-')).map((event) => event.data),
    ).toEqual([
      { callId: 'call-deploy', name: 'deploy' },
      { callId: 'call-deploy', approvalId: request.approval.id },
    ])
    expect(existsSync(ranFile)).toBe(false)

    // Server 2: the page loads the chat (the pending approval, same ids); resume finds nothing open.
    const second = await startServer()
    const transport = transportFor(second.base)
    const loaded = await loadChat(second.base, 'deploy')
    expect(loaded.map((message) => message.id)).toEqual(['u-deploy', asked.id])
    expect(toolPart(loaded[1]!, 'tool-deploy')).toEqual(request)
    expect(await transport.reconnectToStream({ chatId: 'deploy' })).toBeNull()

    // The user approves (what addToolApprovalResponse does); the tool runs once, the reply completes.
    const approved: UIMessage = {
      ...loaded[1]!,
      parts: loaded[1]!.parts.map((part) =>
        part === toolPart(loaded[1]!, 'tool-deploy')
          ? { ...request, state: 'approval-responded', approval: { id: request.approval.id, approved: true } }
          : part,
      ),
    }
    const done = await read(await send(transport, 'deploy', [loaded[0]!, approved]), { continuing: approved })
    expect(readFileSync(ranFile, 'utf8')).toBe('deploy web\n')
    expect(toolPart(done, 'tool-deploy')).toMatchObject({
      state: 'output-available',
      output: 'deployed web',
      approval: { id: request.approval.id, approved: true },
    })
    expect(done.parts.at(-1)).toMatchObject({ type: 'text', text: 'Deployed web.' })
    const deployChat = await loadChat(second.base, 'deploy')
    expect(deployChat).toEqual([deployQuestion, done])

    // A client that disconnects mid-generation (the weather tool is running) and reconnects.
    const abort = new AbortController()
    const partial = await read(await send(transport, 'weather', [weatherQuestion], abort.signal), {
      until: (message) => toolPart(message, 'tool-weather')?.state === 'input-available',
    })
    abort.abort()
    expect(partial.parts.map((part) => part.type)).toEqual(['step-start', 'text', 'tool-weather'])
    const resumed = await transport.reconnectToStream({ chatId: 'weather' })
    expect(resumed).not.toBeNull()
    expect((await fetch(`${second.base}/release`, { method: 'POST' })).status).toBe(204)
    const reconnected = await read(resumed!)
    expect(reconnected.id).toBe(partial.id)
    expect(reconnected.parts.map((part) => part.type)).toEqual([
      'step-start',
      'text',
      'tool-weather',
      'step-start',
      'text',
    ])
    expect(toolPart(reconnected, 'tool-weather')).toMatchObject({
      state: 'output-available',
      output: { city: 'Paris', sky: 'sunny' },
    })
    // The turn has ended once the stream did: nothing left to resume.
    expect(await transport.reconnectToStream({ chatId: 'weather' })).toBeNull()
    const weatherChat = await loadChat(second.base, 'weather')
    expect(weatherChat).toEqual([weatherQuestion, reconnected])

    // The server stops; the log, read here, is the chats the clients hold, and they are valid.
    second.server.child.kill('SIGTERM')
    await second.server.exited
    for (const [id, chat] of [
      ['deploy', deployChat],
      ['weather', weatherChat],
    ] as const) {
      const session = await openAiSdkSession(store, id)
      expect(session.uiMessages()).toEqual(chat)
      await session.close()
      await expect(validateUIMessages({ messages: chat })).resolves.toEqual(chat)
    }
    expect(readFileSync(ranFile, 'utf8')).toBe('deploy web\n')
  })
})
