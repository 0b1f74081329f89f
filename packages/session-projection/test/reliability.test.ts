import { describe, expect, it } from 'vitest'

import { planRepair, RepairCode, validateProviderMessages } from '@agent-ledger/loop-repair'
import type { LoggedEvent, SessionEvent } from '@agent-ledger/session-events'

import { createProjection, createSessionLog } from '../src/index.ts'
import type { SessionLog } from '../src/index.ts'
import {
  assistant,
  describeMessages,
  newLog,
  steppingClock,
  toolCall,
  toolResult,
  turnStart,
  user,
} from './support/events.ts'

function repair(log: SessionLog): SessionEvent[] {
  const closers = planRepair(log.events).events
  for (const { seq: _seq, time: _time, ...closing } of closers) log.append(closing)
  return [...closers]
}

describe('tool-call recovery at projection level (RELIABILITY R1-R4)', () => {
  it('R1: a dangling call at the tail gets one appended placeholder that is never a success; repairing again adds none', () => {
    const log = newLog()
    log.append(turnStart(1))
    log.append(user('run it'))
    log.append(assistant(null, ['t1']))
    log.append(toolCall('t1', 'shell'))
    expect(log.projection.repairState.pendingCalls).toMatchObject([{ callId: 't1', toolCallSeq: 3 }])
    const closers = repair(log)
    expect(closers.map((event) => [event.seq, event.type])).toEqual([
      [4, 'tool/result'],
      [5, 'turn/end'],
    ])
    const placeholder = closers[0] as SessionEvent<'tool/result'>
    expect(placeholder.data).toMatchObject({ isError: true, code: RepairCode.TOOL_OUTCOME_UNKNOWN })
    expect(describeMessages(log.deriveMessages()).at(-1)).toMatch(/^tool:t1:Error:/)
    expect(validateProviderMessages(log.deriveMessages())).toEqual([])
    expect(repair(log)).toEqual([])
    expect(log.events).toHaveLength(6)
  })

  it('R2: a placeholder appended after later events is projected directly after the call, and the log is not rewritten', () => {
    const log = newLog()
    log.append(user('first'))
    log.append(assistant(null, ['A']))
    log.append(user('are you there?'))
    log.append(assistant('yes'))
    const written = [...log.events]
    expect(validateProviderMessages(log.deriveMessages())).not.toEqual([])
    const [placeholder] = repair(log)
    expect(placeholder).toMatchObject({ seq: 4, type: 'tool/result', sourceEventSeqs: [1] })
    expect(log.events.slice(0, 4)).toEqual(written)
    expect(describeMessages(log.deriveMessages()).map((line) => line.slice(0, 12))).toEqual([
      'user:first',
      'assistant:nu',
      'tool:A:Error',
      'user:are you',
      'assistant:ye',
    ])
    expect(validateProviderMessages(log.deriveMessages())).toEqual([])
  })

  it('R3: tool-call ids reused across turns are matched per assistant message, so turn 2 is repaired', () => {
    const log = newLog()
    log.append(turnStart(1))
    log.append(assistant(null, ['call-1']))
    log.append(toolResult('call-1', 'turn 1 result'))
    log.append({ type: 'turn/end', data: { turn: 1, reason: 'completed' } })
    log.append(turnStart(2))
    log.append(assistant(null, ['call-1']))
    expect(log.projection.repairState.pendingCalls).toMatchObject([{ callId: 'call-1', assistantSeq: 5 }])
    const closers = repair(log)
    expect((closers[0] as SessionEvent<'tool/result'>).data.code).toBe(RepairCode.TOOL_NOT_STARTED)
    expect(describeMessages(log.deriveMessages()).map((line) => line.slice(0, 20))).toEqual([
      'assistant:null',
      'tool:call-1:turn 1 r',
      'assistant:null',
      'tool:call-1:Error: t',
    ])
    expect(validateProviderMessages(log.deriveMessages())).toEqual([])
  })

  it('R4: an orphan tool/result (its call deleted by a foreign writer) is counted and not projected; the log keeps it', () => {
    // A foreign writer removed the assistant message that requested "gone"; seqs were renumbered to stay dense.
    const events: LoggedEvent[] = [
      {
        seq: 0,
        time: '2026-01-01T00:00:00.000Z',
        type: 'user/message',
        data: { message: { role: 'user', content: 'u' } },
      },
      {
        seq: 1,
        time: '2026-01-01T00:00:01.000Z',
        type: 'tool/result',
        data: { message: { role: 'tool', tool_call_id: 'gone', content: 'output' } },
      },
      {
        seq: 2,
        time: '2026-01-01T00:00:02.000Z',
        type: 'assistant/message',
        data: { message: { role: 'assistant', content: 'ok' } },
      },
    ]
    const log = createSessionLog({ clock: steppingClock(), events })
    expect(log.projection.stats.orphanToolResults).toBe(1)
    expect(describeMessages(log.deriveMessages())).toEqual(['user:u', 'assistant:ok'])
    expect(validateProviderMessages(log.deriveMessages())).toEqual([])
    expect(log.events).toHaveLength(3)
    expect(log.events[1]).toEqual(events[1])
    const bare = createProjection()
    for (const event of events) bare.apply(event)
    expect(bare.stats.orphanToolResults).toBe(1)
  })
})
