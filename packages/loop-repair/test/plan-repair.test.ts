import { parseEvent } from '@agent-ledger/session-events'
import type { LoggedEvent, SessionEvent } from '@agent-ledger/session-events'
import { describe, expect, it } from 'vitest'

import {
  advanceRepairState,
  createRepairState,
  diagnoseToolPairing,
  placeholderText,
  planRepair,
  planRepairFromState,
  RepairCode,
  validateProviderMessages,
} from '../src/index.ts'
import { jsonClone, LogBuilder, timeAt } from './support/log-builder.ts'
import { projectMessages } from './support/project-messages.ts'

const read = { id: 'call-1', name: 'read_file', arguments: '{"path":"a.txt"}' }
const write = { id: 'call-2', name: 'write_file', arguments: '{"path":"b.txt"}' }

function fold(events: Iterable<LoggedEvent>) {
  let state = createRepairState()
  for (const event of events) state = advanceRepairState(state, event)
  return state
}

describe('planRepair', () => {
  it('R1: answers a call whose tool/call was logged with TOOL_OUTCOME_UNKNOWN citing the tool/call', () => {
    const log = new LogBuilder()
    log.turnStart(1)
    log.user('write b')
    const assistantSeq = log.assistant([write])
    const toolCallSeq = log.toolCall(write)

    const plan = planRepair(log.events)

    expect(plan.actions).toEqual([
      {
        code: 'TOOL_OUTCOME_UNKNOWN',
        callId: 'call-2',
        name: 'write_file',
        assistantSeq,
        toolCallSeq,
        resultSeq: 4,
      },
      { code: 'CLOSE_TURN', turn: 1, resultSeq: 5 },
    ])
    expect(plan.events[0]).toEqual({
      seq: 4,
      time: timeAt(3),
      type: 'tool/result',
      data: {
        message: {
          role: 'tool',
          tool_call_id: 'call-2',
          content: placeholderText(RepairCode.TOOL_OUTCOME_UNKNOWN, { callId: 'call-2', name: 'write_file' }),
        },
        isError: true,
        code: 'TOOL_OUTCOME_UNKNOWN',
      },
      sourceEventSeqs: [toolCallSeq],
    })
  })

  it('R1: answers a call that exists only in the assistant message with TOOL_NOT_STARTED citing the message', () => {
    const log = new LogBuilder()
    log.turnStart(1)
    const assistantSeq = log.assistant([read])

    const plan = planRepair(log.events)

    expect(plan.actions[0]).toEqual({
      code: 'TOOL_NOT_STARTED',
      callId: 'call-1',
      name: 'read_file',
      assistantSeq,
      resultSeq: 2,
    })
    const result = plan.events[0] as SessionEvent<'tool/result'>
    expect(result.sourceEventSeqs).toEqual([assistantSeq])
    expect(result.data.code).toBe('TOOL_NOT_STARTED')
    expect(result.data.isError).toBe(true)
    expect(result.data.message.content).toBe(
      placeholderText(RepairCode.TOOL_NOT_STARTED, { callId: 'call-1', name: 'read_file' }),
    )
  })

  it('R1: a dangling call gets exactly one placeholder, and re-planning after appending it adds nothing', () => {
    const log = new LogBuilder()
    log.turnStart(1)
    log.assistant([read])
    log.toolCall(read)

    const first = planRepair(log.events)
    expect(first.events.filter((event) => event.type === 'tool/result')).toHaveLength(1)
    log.appendAll(first.events)

    expect(planRepair(log.events)).toEqual({ actions: [], events: [] })
    expect(diagnoseToolPairing(log.events)).toEqual([])
  })

  it('closes an open turn with turn/end reason interrupted after the placeholders', () => {
    const log = new LogBuilder()
    log.turnStart(7)
    log.user('go')
    log.assistant([read, write])
    log.toolCall(read)

    const plan = planRepair(log.events)

    expect(plan.events.map((event) => [event.seq, event.type])).toEqual([
      [4, 'tool/result'],
      [5, 'tool/result'],
      [6, 'turn/end'],
    ])
    expect(plan.events[2]).toEqual({
      seq: 6,
      time: timeAt(3),
      type: 'turn/end',
      data: { turn: 7, reason: 'interrupted' },
    })
    expect(plan.actions.map((action) => action.code)).toEqual([
      'TOOL_OUTCOME_UNKNOWN',
      'TOOL_NOT_STARTED',
      'CLOSE_TURN',
    ])
  })

  it('closes a turn that was open without any tool call', () => {
    const log = new LogBuilder()
    log.turnStart(1)
    log.user('hello')

    expect(planRepair(log.events).events).toEqual([
      { seq: 2, time: timeAt(1), type: 'turn/end', data: { turn: 1, reason: 'interrupted' } },
    ])
  })

  it('plans nothing for an empty log or a log whose turns all ended with every call answered', () => {
    expect(planRepair([])).toEqual({ actions: [], events: [] })
    const log = new LogBuilder()
    log.turnStart(1)
    log.assistant([read])
    log.toolCall(read)
    log.toolResult('call-1')
    log.assistant()
    log.turnEnd(1)
    expect(planRepair(log.events)).toEqual({ actions: [], events: [] })
  })

  it('numbers planned events from the log end and stamps the last event time, whatever the input clock', () => {
    const log = new LogBuilder()
    log.turnStart(1)
    log.assistant([read])
    const events = log.events.map((event, index) => ({
      ...event,
      time: index === 1 ? '1999-12-31T23:59:59Z' : event.time,
    }))

    const plan = planRepair(events)

    expect(plan.events.map((event) => event.seq)).toEqual([2, 3])
    expect(plan.events.every((event) => event.time === '1999-12-31T23:59:59Z')).toBe(true)
  })

  it('is deterministic: equal logs give deep-equal plans', () => {
    const build = (): LoggedEvent[] => {
      const log = new LogBuilder()
      log.turnStart(1)
      log.assistant([read, write])
      log.toolCall(write)
      return log.events
    }
    expect(planRepair(build())).toEqual(planRepair(build()))
    expect(JSON.stringify(planRepair(build()))).toBe(JSON.stringify(planRepair(build())))
  })

  it('returns deep-frozen plans whose events are valid session events', () => {
    const log = new LogBuilder()
    log.turnStart(1)
    log.assistant([read, write])
    log.toolCall(read)
    const plan = planRepair(log.events)

    expect(Object.isFrozen(plan.events)).toBe(true)
    const result = plan.events[0] as SessionEvent<'tool/result'>
    expect(Object.isFrozen(result.data.message)).toBe(true)
    expect(Object.isFrozen(result.sourceEventSeqs)).toBe(true)
    for (const event of plan.events) expect(parseEvent(jsonClone(event))).toEqual(event)
  })

  it('R3: repairs a reused call id of a later turn although the same id was answered in an earlier turn', () => {
    const log = new LogBuilder()
    log.turnStart(1)
    log.assistant([read])
    log.toolCall(read)
    log.toolResult('call-1', 'contents')
    log.assistant()
    log.turnEnd(1)
    log.turnStart(2)
    const secondAssistant = log.assistant([read])
    const secondCall = log.toolCall(read)

    const plan = planRepair(log.events)

    expect(plan.actions[0]).toMatchObject({
      code: 'TOOL_OUTCOME_UNKNOWN',
      callId: 'call-1',
      assistantSeq: secondAssistant,
      toolCallSeq: secondCall,
    })
    expect(plan.events[0]!.sourceEventSeqs).toEqual([secondCall])
  })

  it('R3: answers both calls when the same id dangles in two assistant messages, each with its own code', () => {
    const log = new LogBuilder()
    log.turnStart(1)
    const firstAssistant = log.assistant([read])
    const firstCall = log.toolCall(read)
    log.turnStart(2)
    const secondAssistant = log.assistant([read])

    const plan = planRepair(log.events)

    expect(plan.actions.slice(0, 2)).toEqual([
      {
        code: 'TOOL_OUTCOME_UNKNOWN',
        callId: 'call-1',
        name: 'read_file',
        assistantSeq: firstAssistant,
        toolCallSeq: firstCall,
        resultSeq: 5,
      },
      {
        code: 'TOOL_NOT_STARTED',
        callId: 'call-1',
        name: 'read_file',
        assistantSeq: secondAssistant,
        resultSeq: 6,
      },
    ])
    // The first placeholder cites the first message's tool/call, so it settles that call, not the newer one.
    const afterFirst = advanceRepairState(fold(log.events), plan.events[0]!)
    expect(afterFirst.pendingCalls).toEqual([
      {
        callId: 'call-1',
        name: 'read_file',
        arguments: read.arguments,
        assistantSeq: secondAssistant,
        toolCallSeq: null,
      },
    ])
    log.appendAll(plan.events)
    expect(planRepair(log.events).events).toEqual([])
    expect(validateProviderMessages(projectMessages(log.events))).toEqual([])
  })

  it('R2: repairs a dangling call followed by later events by appending, and the projection stays valid', () => {
    const log = new LogBuilder()
    log.system('you are a coding agent')
    log.turnStart(1)
    log.user('write b')
    const danglingAssistant = log.assistant([write])
    log.turnStart(2)
    log.user('are you there?')
    log.assistant([], 'yes')
    log.turnEnd(2)
    const before = jsonClone(log.events)

    const plan = planRepair(log.events)
    expect(plan.events.map((event) => event.seq)).toEqual([8])
    expect(plan.events[0]!.sourceEventSeqs).toEqual([danglingAssistant])
    log.appendAll(plan.events)

    expect(log.events.slice(0, before.length)).toEqual(before)
    const messages = projectMessages(log.events)
    expect(messages.map((message) => message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'user',
      'assistant',
    ])
    expect(validateProviderMessages(messages)).toEqual([])
    expect(diagnoseToolPairing(log.events)).toEqual([])
  })

  it('ignores plugin and ignorable unknown events', () => {
    const log = new LogBuilder()
    log.turnStart(1)
    log.assistant([read])
    log.plugin(['a', 'b'])
    log.ignorable('hello')

    const plan = planRepair(log.events)

    expect(plan.actions.map((action) => action.code)).toEqual(['TOOL_NOT_STARTED', 'CLOSE_TURN'])
    expect(plan.events[0]!.seq).toBe(4)
  })
})

describe('planRepairFromState', () => {
  it('uses the given position: seqs from nextSeq upward and the given time on every event', () => {
    const log = new LogBuilder()
    log.turnStart(3)
    log.assistant([read, write])

    const plan = planRepairFromState(fold(log.events), { nextSeq: 40, time: '2030-05-05T05:05:05.500Z' })

    expect(plan.events.map((event) => [event.seq, event.time])).toEqual([
      [40, '2030-05-05T05:05:05.500Z'],
      [41, '2030-05-05T05:05:05.500Z'],
      [42, '2030-05-05T05:05:05.500Z'],
    ])
    expect(plan.actions.map((action) => action.resultSeq)).toEqual([40, 41, 42])
  })

  it('is idempotent: folding the plan into the state leaves nothing to plan', () => {
    const log = new LogBuilder()
    log.turnStart(1)
    log.assistant([read, write])
    log.toolCall(write)
    const state = fold(log.events)
    const plan = planRepairFromState(state, { nextSeq: log.nextSeq, time: timeAt(9) })

    const repaired = plan.events.reduce(advanceRepairState, state)

    expect(repaired).toEqual(createRepairState())
    expect(
      planRepairFromState(repaired, { nextSeq: log.nextSeq + plan.events.length, time: timeAt(9) }).events,
    ).toEqual([])
  })
})
