/**
 * Resume without replay: `openAgentsSession` on a session with a checkpoint reads only the
 * events after it through the backend port, and the resumed session equals the one a full
 * replay (checkpoints off) gives on the same log: exact items and a history transaction on
 * both sides of the checkpoint, a function call that never returned.
 */
import { createMemoryBackend, createSessionStore } from '@agent-ledger/session-store'
import type { CheckpointOptions, SessionBackend, SessionStore } from '@agent-ledger/session-store'
import type { AgentInputItem } from '@openai/agents-core'
import { describe, expect, it } from 'vitest'

import { ITEMS_EVENT_TYPE, OPERATION_EVENT_TYPE, openAgentsSession } from '../src/index.ts'
import { countingBackend } from '../../../tooling/adapters/counting-backend.ts'

/** A checkpoint on close (and at a flush ending a turn), none otherwise. */
const ON_CLOSE: CheckpointOptions = { everyEvents: 1000, minIntervalMs: 0, minLogBytes: 0, minGrowthRatio: 0 }
const FULL_REPLAY: CheckpointOptions = { enabled: false }

function steppingClock(): () => string {
  let tick = 0
  return () => new Date(Date.UTC(2026, 0, 1) + 1000 * tick++).toISOString()
}

function storeOn(backend: SessionBackend, checkpoint: CheckpointOptions, clock: () => string): SessionStore {
  return createSessionStore({ backend, clock, owner: 'resume-test', checkpoint })
}

const reply = (id: string, text: string): AgentInputItem => ({
  type: 'message',
  role: 'assistant',
  id,
  status: 'completed',
  content: [{ type: 'output_text', text, providerData: { annotations: [] } }],
})

const functionCall = (callId: string, name: string): AgentInputItem => ({
  type: 'function_call',
  id: `fc_${callId}`,
  callId,
  name,
  arguments: '{"city":"Oslo"}',
  status: 'completed',
})

/** Items and a transaction, closed (checkpointed), then more items and a call, and a crash. */
async function build(store: SessionStore): Promise<{ checkpointSeq: number; headSeq: number }> {
  const first = await openAgentsSession(store, 'agents')
  await first.addItems([{ role: 'user', content: 'Weather in Oslo?' }, reply('msg_1', 'Checking.')])
  await first.applyHistoryTransaction({
    operationId: 'op-1',
    transaction: { type: 'append_items', items: [reply('msg_2', 'Still checking.')] },
  })
  await first.close()
  const read = await store.openReader('agents')
  if (!read.checkpoint.used) throw new Error(`the scenario has no checkpoint (${read.checkpoint.reason})`)
  const second = await openAgentsSession(store, 'agents')
  await second.addItems([reply('msg_3', 'Asking the tool.'), functionCall('c1', 'weather')])
  await second.applyHistoryTransaction({
    operationId: 'op-2',
    transaction: { type: 'append_items', items: [reply('msg_4', 'Waiting.')] },
  })
  // The crash: the writer is abandoned with its lease held (the next store, same owner, takes over).
  return { checkpointSeq: read.checkpoint.seq, headSeq: second.writer.projection.nextSeq - 1 }
}

async function resume(checkpoint: CheckpointOptions) {
  const clock = steppingClock()
  const { backend, counter } = countingBackend(createMemoryBackend())
  const built = await build(storeOn(backend, ON_CLOSE, clock))
  const store = storeOn(backend, checkpoint, clock)
  counter.reset()
  const session = await openAgentsSession(store, 'agents', { create: false })
  const read = { events: counter.events(), lowestFromSeq: counter.lowestFromSeq() }
  const annotationTypes = session.writer.projection.annotations().map((event) => event.type)
  const items = await session.getItems()
  // A transaction already applied is recognised by its id (its record survived the resume).
  await session.applyHistoryTransaction({
    operationId: 'op-2',
    transaction: { type: 'append_items', items: [reply('msg_4', 'Waiting.')] },
  })
  const state = { items, afterRetry: await session.getItems(), repairs: session.writer.recovery.repairs }
  const use = session.writer.recovery.checkpoint
  await session.close()
  await store.close()
  return { built, read, state, use, annotationTypes }
}

describe('openAgentsSession resuming a session with a checkpoint', () => {
  it('reads only the events after the checkpoint and equals the full replay', async () => {
    const fromCheckpoint = await resume(ON_CLOSE)
    const replayed = await resume(FULL_REPLAY)
    const { built } = fromCheckpoint

    expect(fromCheckpoint.use).toMatchObject({ used: true, seq: built.checkpointSeq })
    expect(fromCheckpoint.read.lowestFromSeq).toBeGreaterThanOrEqual(built.checkpointSeq)
    expect(fromCheckpoint.read.events).toBeLessThanOrEqual(built.headSeq - built.checkpointSeq + 1)
    expect(replayed.use).toMatchObject({ used: false, reason: 'disabled' })
    expect(replayed.read.lowestFromSeq).toBe(0)

    expect(fromCheckpoint.state).toEqual(replayed.state)
    expect(fromCheckpoint.annotationTypes).toContain(ITEMS_EVENT_TYPE)
    expect(fromCheckpoint.annotationTypes).toContain(OPERATION_EVENT_TYPE)
    const { items, afterRetry, repairs } = fromCheckpoint.state
    // The exact items come back (their ids and provider data are not in the wire form).
    expect(items.slice(0, 5)).toEqual([
      { role: 'user', content: 'Weather in Oslo?' },
      reply('msg_1', 'Checking.'),
      reply('msg_2', 'Still checking.'),
      reply('msg_3', 'Asking the tool.'),
      functionCall('c1', 'weather'),
    ])
    // The repair placeholder answers the call right after it; the transaction's item follows.
    expect(items.slice(5)).toMatchObject([
      { type: 'function_call_result', callId: 'c1' },
      reply('msg_4', 'Waiting.'),
    ])
    expect(afterRetry).toEqual(items)
    expect(repairs.length).toBeGreaterThan(0)
  })
})
