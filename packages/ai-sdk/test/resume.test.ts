/**
 * Resume without replay: `openAiSdkSession` and `followReply` on a session with a checkpoint
 * read only the events after it through the backend port, and the resumed session equals the
 * one a full replay (checkpoints off) gives, on the same log: an open turn, a call that may
 * have run (`TOOL_OUTCOME_UNKNOWN`), a call that never started (`TOOL_NOT_STARTED`), an error
 * result, adapter annotations on both sides of the checkpoint, and a fork.
 */
import { createMemoryBackend, createSessionStore } from '@agent-ledger/session-store'
import type {
  CheckpointOptions,
  SessionBackend,
  SessionStore,
  SessionWriter,
} from '@agent-ledger/session-store'
import type { ModelMessage, UIMessage } from 'ai'
import { describe, expect, it } from 'vitest'

import { followReply, openAiSdkSession } from '../src/index.ts'
import { PROVIDER_TOOL_EVENT } from '../src/record-model.ts'
import { APPROVAL_REQUEST_EVENT, UI_MESSAGE_ID_EVENT } from '../src/ui-messages.ts'
import { countingBackend } from '../../../tooling/adapters/counting-backend.ts'

/** A checkpoint at every flush that ends a turn (and on close), none otherwise. */
const AT_TURN_END: CheckpointOptions = {
  everyEvents: 1000,
  minIntervalMs: 0,
  minLogBytes: 0,
  minGrowthRatio: 0,
}
const FULL_REPLAY: CheckpointOptions = { enabled: false }

/** A fixed clock: the same scenario gives the same log on every backend. */
function steppingClock(): () => string {
  let tick = 0
  return () => new Date(Date.UTC(2026, 0, 1) + 1000 * tick++).toISOString()
}

function storeOn(backend: SessionBackend, checkpoint: CheckpointOptions, clock: () => string): SessionStore {
  // One owner for every store of a scenario: a later store takes over the abandoned lease (a restart).
  return createSessionStore({ backend, clock, owner: 'resume-test', checkpoint })
}

const userMessage = (id: string, text: string): UIMessage => ({
  id,
  role: 'user',
  parts: [{ type: 'text', text }],
})

const callsOf = (...calls: readonly [id: string, name: string][]): ModelMessage => ({
  role: 'assistant',
  content: calls.map(([toolCallId, toolName]) => ({ type: 'tool-call', toolCallId, toolName, input: {} })),
})

function note(writer: SessionWriter, type: string, data: object): void {
  writer.append({ type, data, ignorable: true } as unknown as Parameters<SessionWriter['append']>[0])
}

function lastUserSeq(writer: SessionWriter): number {
  return writer.projection.surface().findLast((node) => node.type === 'user/message')!.seq
}

/** Where the checkpoint ends and the log ends after a scenario's crash. */
interface Built {
  readonly id: string
  readonly checkpointSeq: number
  readonly headSeq: number
}

/**
 * A finished turn with an error result and annotations (checkpointed on close), then a turn
 * with two calls, one started (`tool/call`) and one waiting for approval, and a crash: the
 * writer is abandoned with its lease held. With `fork`, the crash happens in a fork of the
 * finished session instead (the fork checkpointed on close, then the crashed turn).
 */
async function build(store: SessionStore, options: { readonly fork: boolean }): Promise<Built> {
  const first = await openAiSdkSession(store, 'chat', { system: 'Be brief.' })
  first.beginTurn(userMessage('u-1', 'List the files.'))
  note(first.writer, UI_MESSAGE_ID_EVENT, { id: 'r-1', replyToSeq: lastUserSeq(first.writer) })
  first.appendMessages([
    callsOf(['c1', 'ls']),
    {
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'c1',
          toolName: 'ls',
          output: { type: 'error-text', value: 'EACCES' },
        },
      ],
    },
    { role: 'assistant', content: 'I cannot read the directory.' },
  ])
  const answer = first.writer.projection.surface().at(-1)!.seq
  note(first.writer, PROVIDER_TOOL_EVENT, {
    assistantSeq: answer,
    callId: 'p1',
    name: 'web_search',
    input: '{"q":"EACCES"}',
    result: { hits: 1 },
  })
  await first.endTurn()
  await first.close()
  let id = 'chat'
  if (options.fork) {
    id = 'chat-fork'
    const forked = await store.fork('chat', { to: id, atSeq: first.writer.projection.nextSeq - 1 })
    await forked.close()
  }
  const checkpointSeq = (await store.openReader(id)).checkpoint
  const second = await openAiSdkSession(store, id)
  second.beginTurn(userMessage('u-2', 'Deploy, then check.'))
  second.appendMessages([callsOf(['c2', 'deploy'], ['c3', 'check'])])
  note(second.writer, APPROVAL_REQUEST_EVENT, { callId: 'c3', name: 'check' })
  second.writer.append({ type: 'tool/call', data: { callId: 'c2', name: 'deploy', arguments: '{}' } })
  await second.writer.flush()
  if (!checkpointSeq.used) throw new Error(`the scenario has no checkpoint (${checkpointSeq.reason})`)
  return { id, checkpointSeq: checkpointSeq.seq, headSeq: second.writer.projection.nextSeq - 1 }
}

/** Builds the scenario on a fresh backend, then resumes it through a new store (a restart). */
async function resume(checkpoint: CheckpointOptions, options: { readonly fork: boolean }) {
  const clock = steppingClock()
  const { backend, counter } = countingBackend(createMemoryBackend())
  const built = await build(storeOn(backend, AT_TURN_END, clock), options)
  const store = storeOn(backend, checkpoint, clock)
  counter.reset()
  const pendingBefore = (await store.openReader(built.id)).pendingToolCalls
  counter.reset()
  const session = await openAiSdkSession(store, built.id, { create: false })
  const read = { events: counter.events(), lowestFromSeq: counter.lowestFromSeq() }
  const state = {
    pendingBefore,
    messages: session.messages(),
    uiMessages: session.uiMessages(),
    repairs: session.repairs,
    turnOpen: session.turnOpen,
    pendingAfter: session.writer.projection.repairState.pendingCalls,
    nextTurn: session.beginTurn('Go on.'),
    prompt: session.prompt(),
  }
  const use = session.writer.recovery.checkpoint
  await session.close()
  await store.close()
  return { built, read, state, use }
}

describe.each([
  ['a session', { fork: false }],
  ['a fork', { fork: true }],
])('openAiSdkSession resuming %s with a checkpoint', (_name, options) => {
  it('reads only the events after the checkpoint and equals the full replay', async () => {
    const fromCheckpoint = await resume(AT_TURN_END, options)
    const replayed = await resume(FULL_REPLAY, options)
    const { built } = fromCheckpoint

    expect(fromCheckpoint.use).toMatchObject({ used: true, seq: built.checkpointSeq })
    expect(fromCheckpoint.read.lowestFromSeq).toBeGreaterThanOrEqual(built.checkpointSeq)
    // Event `checkpointSeq` itself (the checkpoint's binding), then the tail.
    expect(fromCheckpoint.read.events).toBeLessThanOrEqual(built.headSeq - built.checkpointSeq + 1)
    // The counter sees a read from seq 0 when there is one.
    expect(replayed.use).toMatchObject({ used: false, reason: 'disabled' })
    expect(replayed.read.lowestFromSeq).toBe(0)
    expect(replayed.read.events).toBeGreaterThan(built.headSeq)

    expect(fromCheckpoint.state).toEqual(replayed.state)
    const { state } = fromCheckpoint
    expect(state.pendingBefore.map((call) => call.callId)).toEqual(['c2', 'c3'])
    expect(state.pendingAfter).toEqual([])
    expect(state.repairs.map(({ callId, code }) => [callId, code])).toEqual([
      ['c2', 'TOOL_OUTCOME_UNKNOWN'],
      ['c3', 'TOOL_NOT_STARTED'],
    ])
    expect(state.turnOpen).toBe(false)
    expect(state.nextTurn).toBe(3)
    const parts = state.uiMessages.flatMap((message) => message.parts) as Record<string, unknown>[]
    expect(state.uiMessages.map((message) => message.id).slice(0, 3)).toEqual(['u-1', 'r-1', 'u-2'])
    expect(parts.find((part) => part['toolCallId'] === 'c1')).toMatchObject({ state: 'output-error' })
    expect(parts.find((part) => part['toolCallId'] === 'p1')).toMatchObject({ providerExecuted: true })
    expect(parts.find((part) => part['toolCallId'] === 'c3')).toMatchObject({ state: 'approval-requested' })
  })
})

describe('followReply on a session with a checkpoint', () => {
  it('finds the open turn without reading the log from seq 0', async () => {
    const clock = steppingClock()
    const { backend, counter } = countingBackend(createMemoryBackend())
    const built = await build(storeOn(backend, AT_TURN_END, clock), { fork: false })
    const store = storeOn(backend, AT_TURN_END, clock)
    counter.reset()
    const response = await followReply(store, built.id)
    expect(response.status).toBe(200)
    await response.body?.cancel()
    expect(counter.reads.length).toBeGreaterThan(0)
    expect(counter.lowestFromSeq()).toBeGreaterThanOrEqual(built.checkpointSeq)
    await store.close()
  })
})
