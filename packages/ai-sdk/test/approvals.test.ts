/**
 * Tool approvals (`needsApproval`) across a server restart: the request is logged before the
 * SDK asks for it, the pending approval survives a reopen (repair answers the call
 * TOOL_NOT_STARTED, honestly: it did not run), and the UI's response resumes it: an approved
 * call runs and its result replaces the placeholder; a denied one is logged as denied.
 */
import { rmSync } from 'node:fs'

import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { readUIMessageStream, stepCountIs, streamText, tool, validateUIMessages } from 'ai'
import type { UIMessage } from 'ai'
import { convertArrayToReadableStream, MockLanguageModelV3 } from 'ai/test'
import { afterAll, describe, expect, it } from 'vitest'
import { z } from 'zod'

import { openAiSdkSession } from '../src/index.ts'
import type { AiSdkSession } from '../src/index.ts'
import { allEvents, tempRoot } from '../../../tooling/adapters/stores.ts'
import { streamedStep } from './support.ts'

const root = tempRoot('ai-sdk-approval')
afterAll(() => rmSync(root, { recursive: true, force: true }))

const question: UIMessage = { id: 'user-1', role: 'user', parts: [{ type: 'text', text: 'Deploy web.' }] }

function deployTools(ran: string[]) {
  return {
    deploy: tool({
      inputSchema: z.object({ service: z.string() }),
      needsApproval: true,
      execute: ({ service }) => {
        ran.push(service)
        return Promise.resolve(`deployed ${service}`)
      },
    }),
  }
}

/** One chat request: streams the reply to a client and returns the client's last message. */
async function chatRequest(
  session: AiSdkSession,
  model: MockLanguageModelV3,
  tools: ReturnType<typeof deployTools>,
  continuing?: UIMessage,
): Promise<UIMessage> {
  const result = streamText({
    model: session.wrapModel(model),
    ...session.prompt(),
    tools: session.wrapTools(tools),
    stopWhen: stepCountIs(4),
  })
  const stream = result.toUIMessageStream({
    originalMessages: session.uiMessages(),
    generateMessageId: () => session.replyMessageId(),
  })
  let last: UIMessage | undefined
  for await (const message of readUIMessageStream(
    continuing === undefined ? { stream } : { stream, message: continuing },
  ))
    last = message
  await session.endTurn()
  return last!
}

/** Turn 1 on one "server": the model calls deploy, the SDK asks for approval; then the server stops. */
async function askThenRestart(id: string, ran: string[]): Promise<UIMessage> {
  const store = createJsonlStore({ root })
  const session = await openAiSdkSession(store, id)
  session.beginTurn(question)
  const model = new MockLanguageModelV3({
    doStream: [
      {
        stream: convertArrayToReadableStream(
          streamedStep({ calls: [{ id: 'call-1', name: 'deploy', input: { service: 'web' } }] }),
        ),
      },
    ],
  })
  const streamed = await chatRequest(session, model, deployTools(ran))
  expect(streamed.parts.at(-1)).toMatchObject({ type: 'tool-deploy', state: 'approval-requested' })
  await session.close()
  await store.close()
  return streamed
}

/** What the client does when the user clicks approve or deny (`addToolApprovalResponse`). */
function respond(message: UIMessage, approved: boolean, reason?: string): UIMessage {
  return {
    ...message,
    parts: message.parts.map((part) =>
      'toolCallId' in part && part.state === 'approval-requested'
        ? {
            ...part,
            state: 'approval-responded',
            approval: { id: part.approval.id, approved, ...(reason === undefined ? {} : { reason }) },
          }
        : part,
    ),
  }
}

describe('tool approvals across a restart', () => {
  it('a pending approval survives the restart; approved, the call runs and its result replaces the placeholder', async () => {
    const ran: string[] = []
    const streamed = await askThenRestart('approve', ran)
    expect(ran).toEqual([])

    const store = createJsonlStore({ root })
    const session = await openAiSdkSession(store, 'approve')
    expect(session.repairs).toMatchObject([{ callId: 'call-1', code: 'TOOL_NOT_STARTED' }])
    const [, pending] = session.uiMessages()
    expect(pending!.id).toBe(streamed.id)
    expect(pending!.parts.at(-1)).toMatchObject({
      type: 'tool-deploy',
      toolCallId: 'call-1',
      state: 'approval-requested',
    })

    const answer = respond(streamed, true)
    session.beginTurn(answer)
    const model = new MockLanguageModelV3({
      doStream: [{ stream: convertArrayToReadableStream(streamedStep({ text: 'Deployed.' })) }],
    })
    const tools = deployTools(ran)
    const final = await chatRequest(session, model, tools, answer)
    expect(ran).toEqual(['web'])
    // The model saw the real result, not the placeholder.
    const prompt = model.doStreamCalls[0]!.prompt
    const results = prompt.flatMap((message) =>
      message.role === 'tool' ? message.content.filter((part) => part.type === 'tool-result') : [],
    )
    expect(results).toMatchObject([{ toolCallId: 'call-1', output: { type: 'text', value: 'deployed web' } }])

    const derived = session.uiMessages()
    expect(derived).toHaveLength(2)
    expect(derived[1]!.id).toBe(streamed.id)
    expect(derived[1]!.parts).toEqual([
      { type: 'step-start' },
      {
        type: 'tool-deploy',
        toolCallId: 'call-1',
        state: 'output-available',
        input: { service: 'web' },
        output: 'deployed web',
        approval: {
          id: streamed.parts.flatMap((part) => ('approval' in part ? [part.approval.id] : []))[0],
          approved: true,
        },
      },
      { type: 'step-start' },
      { type: 'text', text: 'Deployed.', state: 'done' },
    ])
    expect(final.parts.map((part) => part.type)).toEqual(['step-start', 'tool-deploy', 'step-start', 'text'])
    expect(await validateUIMessages({ messages: derived, tools: tools as never })).toEqual(derived)
    await session.close()

    // The log keeps the request, the placeholder, the response and the real result (replacing it).
    const events = await allEvents(store, 'approve')
    expect(events.map((event) => event.type)).toEqual([
      'turn/start',
      'user/message',
      'ai-sdk/ui-message-id',
      'ai-sdk/ui-message-id',
      'assistant/message',
      'ai-sdk/approval-request',
      'turn/end',
      'tool/result', // TOOL_NOT_STARTED, by the reopen's repair
      'turn/start',
      'ai-sdk/approval-response',
      'tool/call',
      'tool/result',
      'assistant/message',
      'turn/end',
    ])
    expect(events[11]!.surfaceOp).toEqual({ op: 'replace', startSeq: events[7]!.seq, endSeq: events[7]!.seq })
    await store.close()
  })

  it('denied after the restart: the call never runs, the model and the UI see the denial', async () => {
    const ran: string[] = []
    const streamed = await askThenRestart('deny', ran)
    const store = createJsonlStore({ root })
    const session = await openAiSdkSession(store, 'deny')
    const answer = respond(streamed, false, 'not on a Friday')
    session.beginTurn(answer)
    const model = new MockLanguageModelV3({
      doStream: [{ stream: convertArrayToReadableStream(streamedStep({ text: 'Not deployed.' })) }],
    })
    await chatRequest(session, model, deployTools(ran), answer)
    expect(ran).toEqual([])
    const prompt = model.doStreamCalls[0]!.prompt
    const results = prompt.flatMap((message) =>
      message.role === 'tool' ? message.content.filter((part) => part.type === 'tool-result') : [],
    )
    expect(results).toMatchObject([
      {
        toolCallId: 'call-1',
        output: { type: 'error-text', value: 'Tool execution denied: not on a Friday' },
      },
    ])
    const [, reply] = session.uiMessages()
    expect(reply!.parts[1]).toMatchObject({
      type: 'tool-deploy',
      state: 'output-denied',
      approval: { approved: false, reason: 'not on a Friday' },
    })
    await session.close()
    await store.close()
  })
})
