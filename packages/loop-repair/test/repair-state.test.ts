import type { LoggedEvent } from '@agent-ledger/session-events'
import { describe, expect, it } from 'vitest'

import { advanceRepairState, createRepairState } from '../src/index.ts'
import type { RepairState } from '../src/index.ts'
import { jsonClone, LogBuilder } from './support/log-builder.ts'

const read = { id: 'call-1', name: 'read_file', arguments: '{"path":"a"}' }
const bash = { id: 'call-2', name: 'bash', arguments: '{"cmd":"ls"}' }

function fold(events: Iterable<LoggedEvent>, from: RepairState = createRepairState()): RepairState {
  let state = from
  for (const event of events) state = advanceRepairState(state, event)
  return state
}

describe('advanceRepairState', () => {
  it('starts empty and frozen', () => {
    const state = createRepairState()
    expect(state).toEqual({ openTurn: null, pendingCalls: [] })
    expect(Object.isFrozen(state)).toBe(true)
    expect(Object.isFrozen(state.pendingCalls)).toBe(true)
  })

  it('adds one pending entry per assistant tool call, in call order, not yet started', () => {
    const log = new LogBuilder()
    const assistantSeq = log.assistant([read, bash])

    expect(fold(log.events).pendingCalls).toEqual([
      { callId: 'call-1', name: 'read_file', arguments: '{"path":"a"}', assistantSeq, toolCallSeq: null },
      { callId: 'call-2', name: 'bash', arguments: '{"cmd":"ls"}', assistantSeq, toolCallSeq: null },
    ])
  })

  it('marks the matching pending entry started on tool/call', () => {
    const log = new LogBuilder()
    log.assistant([read, bash])
    const toolCallSeq = log.toolCall(bash)

    const state = fold(log.events)

    expect(state.pendingCalls.map((call) => call.toolCallSeq)).toEqual([null, toolCallSeq])
  })

  it('gives a tool/call to the most recent unstarted entry with that id', () => {
    const log = new LogBuilder()
    log.assistant([read])
    const first = log.toolCall(read)
    log.assistant([read])
    const second = log.toolCall(read)

    expect(fold(log.events).pendingCalls.map((call) => call.toolCallSeq)).toEqual([first, second])
  })

  it('removes the answered entry on tool/result and keeps the others in order', () => {
    const log = new LogBuilder()
    log.assistant([read, bash])
    log.toolResult('call-1')

    expect(fold(log.events).pendingCalls.map((call) => call.callId)).toEqual(['call-2'])
  })

  it('R3: removes the most recent entry with a reused id, so an older dangling one stays pending', () => {
    const log = new LogBuilder()
    const older = log.assistant([read])
    log.assistant([read])
    log.toolResult('call-1')

    expect(fold(log.events).pendingCalls).toMatchObject([{ callId: 'call-1', assistantSeq: older }])
  })

  it('R3: removes the entry a result cites in sourceEventSeqs, even when a newer one has the same id', () => {
    const log = new LogBuilder()
    log.assistant([read])
    const olderCall = log.toolCall(read)
    const newer = log.assistant([read])
    log.toolResult('call-1', 'late', { sourceEventSeqs: [olderCall] })

    expect(fold(log.events).pendingCalls).toMatchObject([{ callId: 'call-1', assistantSeq: newer }])
  })

  it('keeps untouched pending entries by reference, so a caller can tell which entry a result removed', () => {
    const log = new LogBuilder()
    log.assistant([read, bash])
    log.assistant([{ id: 'call-3', name: 'edit' }])
    const before = fold(log.events)
    const after = advanceRepairState(before, {
      seq: 2,
      time: '2025-01-01T00:00:02Z',
      type: 'tool/result',
      data: { message: { role: 'tool', tool_call_id: 'call-2', content: 'ok' } },
    })
    expect(after.pendingCalls).toEqual([before.pendingCalls[0], before.pendingCalls[2]])
    expect(after.pendingCalls[0]).toBe(before.pendingCalls[0])
    expect(after.pendingCalls[1]).toBe(before.pendingCalls[2])
  })

  it('opens a turn on turn/start and closes it on turn/end', () => {
    const log = new LogBuilder()
    const startSeq = log.turnStart(4)
    expect(fold(log.events).openTurn).toEqual({ turn: 4, seq: startSeq })
    log.turnEnd(4)
    expect(fold(log.events).openTurn).toBeNull()
  })

  it('keeps the latest turn when a turn starts while another is open (a crash without repair)', () => {
    const log = new LogBuilder()
    log.turnStart(1)
    const second = log.turnStart(2)
    expect(fold(log.events).openTurn).toEqual({ turn: 2, seq: second })
  })

  it('returns the same object for events that change nothing', () => {
    const log = new LogBuilder()
    log.turnStart(1)
    log.assistant([read])
    const state = fold(log.events)
    const unchanged: LoggedEvent[] = [
      {
        seq: 10,
        time: '2025-01-01T00:00:00Z',
        type: 'user/message',
        data: { message: { role: 'user', content: 'x' } },
      },
      {
        seq: 11,
        time: '2025-01-01T00:00:00Z',
        type: 'assistant/message',
        data: { message: { role: 'assistant', content: 'x' } },
      },
      {
        seq: 12,
        time: '2025-01-01T00:00:00Z',
        type: 'assistant/message',
        data: { message: { role: 'assistant', content: null, tool_calls: [] } },
      },
      {
        seq: 13,
        time: '2025-01-01T00:00:00Z',
        type: 'tool/call',
        data: { callId: 'nobody', name: 'x', arguments: '' },
      },
      {
        seq: 14,
        time: '2025-01-01T00:00:00Z',
        type: 'tool/result',
        data: { message: { role: 'tool', tool_call_id: 'nobody', content: '' } },
      },
      {
        seq: 15,
        time: '2025-01-01T00:00:00Z',
        type: 'compaction/start',
        data: { compactionId: 'c', startSeq: 0, endSeq: 1 },
      },
      { seq: 16, time: '2025-01-01T00:00:00Z', type: 'vendor/note', data: { any: 'thing' }, ignorable: true },
      {
        seq: 17,
        time: '2025-01-01T00:00:00Z',
        type: 'plan/update',
        data: { steps: [] },
      } as unknown as LoggedEvent,
    ]
    for (const event of unchanged) expect(advanceRepairState(state, event)).toBe(state)
    const closed = fold(
      [{ seq: 20, time: '2025-01-01T00:00:00Z', type: 'turn/end', data: { turn: 1, reason: 'completed' } }],
      state,
    )
    const closedAgain = {
      seq: 21,
      time: '2025-01-01T00:00:00Z',
      type: 'turn/end',
      data: { turn: 1, reason: 'completed' },
    } as const
    expect(advanceRepairState(closed, closedAgain)).toBe(closed)
  })

  it('never mutates its input and returns frozen states', () => {
    const log = new LogBuilder()
    log.turnStart(1)
    log.assistant([read, bash])
    log.toolCall(read)
    log.toolResult('call-2')
    log.turnEnd(1)
    let state = createRepairState()
    for (const event of log.events) {
      const snapshot = jsonClone(state)
      const next = advanceRepairState(state, event)
      expect(state).toEqual(snapshot)
      expect(Object.isFrozen(next)).toBe(true)
      expect(Object.isFrozen(next.pendingCalls)).toBe(true)
      for (const call of next.pendingCalls) expect(Object.isFrozen(call)).toBe(true)
      state = next
    }
  })

  it('continues from a state restored from JSON (a checkpoint) exactly as from the live state', () => {
    const log = new LogBuilder()
    log.turnStart(1)
    log.assistant([read, bash])
    log.toolCall(read)
    const head = log.events.length
    log.toolResult('call-1')
    log.toolCall(bash)
    log.turnStart(2)

    const live = fold(log.events.slice(0, head))
    const restored = JSON.parse(JSON.stringify(live)) as RepairState

    expect(fold(log.events.slice(head), restored)).toEqual(fold(log.events))
  })
})
