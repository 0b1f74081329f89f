import { parseEvent } from '@agent-ledger/session-events'
import type { LoggedEvent, TurnEndReason } from '@agent-ledger/session-events'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

import {
  advanceRepairState,
  createRepairState,
  diagnoseToolPairing,
  planRepair,
  planRepairFromState,
  validateProviderMessages,
} from '../src/index.ts'
import type { RepairState } from '../src/index.ts'
import { jsonClone, LogBuilder } from './support/log-builder.ts'
import { projectMessages } from './support/project-messages.ts'

// A random log is a script of segments: turns (assistant messages with 0-3 tool calls, some
// started with tool/call, some answered, ids reused across messages), plugin and ignorable
// events, stray results from a foreign writer, and resumes that append a repair plan. Any
// turn may be cut short by a crash (the next segment carries on without repair), and the
// whole log may be cut at any point.

const callArbitrary = fc.record({
  id: fc.constantFrom('call-0', 'call-1', 'call-2'),
  name: fc.constantFrom('read_file', 'write_file', 'bash'),
  started: fc.boolean(),
  answered: fc.boolean(),
  cites: fc.boolean(),
})

const stepArbitrary = fc.record({
  calls: fc.uniqueArray(callArbitrary, { selector: (call) => call.id, maxLength: 3 }),
  parallel: fc.boolean(),
})

const segmentArbitrary = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('turn' as const),
      steps: fc.array(stepArbitrary, { minLength: 1, maxLength: 3 }),
      endReason: fc.option(fc.constantFrom<TurnEndReason>('completed', 'aborted', 'error', 'max-tokens')),
      crashAt: fc.option(fc.nat()),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('plugin' as const), ignorable: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('resume' as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('stray' as const),
      id: fc.constantFrom('call-0', 'call-1', 'ghost'),
    }),
  },
)

const scriptArbitrary = fc.record({
  system: fc.boolean(),
  segments: fc.array(segmentArbitrary, { maxLength: 8 }),
  crashAt: fc.option(fc.nat()),
})

type Script = typeof scriptArbitrary extends fc.Arbitrary<infer TScript> ? TScript : never

function buildLog(script: Script): LoggedEvent[] {
  const log = new LogBuilder()
  if (script.system) log.system('You are a coding agent.')
  let turn = 0
  for (const segment of script.segments) {
    switch (segment.kind) {
      case 'turn': {
        turn += 1
        const start = log.nextSeq
        log.turnStart(turn)
        log.user(`task ${turn}`)
        for (const step of segment.steps) {
          const assistantSeq = log.assistant(
            step.calls.map((call) => ({ ...call, arguments: `{"n":${turn}}` })),
          )
          const toolCallSeqs = new Map<string, number>()
          const start = (call: (typeof step.calls)[number]): void => {
            if (call.started) toolCallSeqs.set(call.id, log.toolCall(call))
          }
          const answer = (call: (typeof step.calls)[number]): void => {
            if (!call.answered) return
            const cited = toolCallSeqs.get(call.id) ?? assistantSeq
            log.toolResult(call.id, `output of ${call.name}`, call.cites ? { sourceEventSeqs: [cited] } : {})
          }
          if (step.parallel) {
            step.calls.forEach(start)
            step.calls.forEach(answer)
          } else {
            for (const call of step.calls) {
              start(call)
              answer(call)
            }
          }
        }
        log.assistant([], 'done')
        if (segment.endReason !== null) log.turnEnd(turn, segment.endReason)
        if (segment.crashAt !== null)
          log.events.length = start + (segment.crashAt % (log.nextSeq - start + 1))
        break
      }
      case 'plugin':
        if (segment.ignorable) log.ignorable('note')
        else log.plugin(['step'])
        break
      case 'resume':
        log.appendAll(planRepair(log.events).events)
        break
      case 'stray':
        log.toolResult(segment.id, 'stray output')
        break
    }
  }
  if (script.crashAt !== null) log.events.length = script.crashAt % (log.nextSeq + 1)
  return log.events
}

function fold(events: Iterable<LoggedEvent>, from: RepairState = createRepairState()): RepairState {
  let state = from
  for (const event of events) state = advanceRepairState(state, event)
  return state
}

const runs = { numRuns: 300 }

describe('repair over random logs', () => {
  it('R1: repair is deterministic, its events are valid and numbered from the log end, and it is idempotent', () => {
    fc.assert(
      fc.property(scriptArbitrary, (script) => {
        const log = buildLog(script)
        const plan = planRepair(log)

        expect(planRepair(jsonClone(log))).toEqual(plan)
        expect(plan.events.map((event) => event.seq)).toEqual(
          plan.events.map((_, index) => log.length + index),
        )
        expect(plan.actions.map((action) => action.resultSeq)).toEqual(plan.events.map((event) => event.seq))
        for (const event of plan.events) {
          expect(event.time).toBe(log.at(-1)!.time)
          expect(parseEvent(jsonClone(event))).toEqual(event)
        }
        expect(planRepair([...log, ...plan.events])).toEqual({ actions: [], events: [] })
      }),
      runs,
    )
  })

  it('folding a ++ b incrementally equals folding a, then b, also through a JSON checkpoint', () => {
    fc.assert(
      fc.property(scriptArbitrary, fc.nat(), (script, split) => {
        const log = buildLog(script)
        const cut = split % (log.length + 1)
        const head = fold(log.slice(0, cut))
        const whole = fold(log)

        expect(fold(log.slice(cut), head)).toEqual(whole)
        const restored = JSON.parse(JSON.stringify(head)) as RepairState
        expect(fold(log.slice(cut), restored)).toEqual(whole)
        const position = { nextSeq: log.length, time: '2025-06-01T00:00:00Z' }
        expect(planRepairFromState(fold(log.slice(cut), restored), position)).toEqual(
          planRepairFromState(whole, position),
        )
      }),
      runs,
    )
  })

  it('R1: after appending the plan there is no pending call, no open turn and no dangling diagnostic', () => {
    fc.assert(
      fc.property(scriptArbitrary, (script) => {
        const log = buildLog(script)
        const before = fold(log)
        const plan = planRepair(log)
        const repaired = [...log, ...plan.events]

        expect(fold(repaired)).toEqual({ openTurn: null, pendingCalls: [] })
        expect(plan.events.filter((event) => event.type === 'tool/result')).toHaveLength(
          before.pendingCalls.length,
        )
        expect(plan.events.filter((event) => event.type === 'turn/end')).toHaveLength(
          before.openTurn === null ? 0 : 1,
        )
        expect(
          diagnoseToolPairing(repaired).filter((finding) => finding.code === 'DANGLING_TOOL_CALL'),
        ).toEqual([])
      }),
      runs,
    )
  })

  it('R2: the message list projected from log ++ repair passes the provider validator, and without repair it reports exactly the pending calls', () => {
    fc.assert(
      fc.property(scriptArbitrary, (script) => {
        const log = buildLog(script)
        const pending = fold(log).pendingCalls

        const unrepaired = validateProviderMessages(projectMessages(log))
        expect(unrepaired.map((issue) => issue.code)).toEqual(pending.map(() => 'UNANSWERED_TOOL_CALL'))
        expect(unrepaired.map((issue) => issue.callId).sort()).toEqual(
          pending.map((call) => call.callId).sort(),
        )

        expect(validateProviderMessages(projectMessages([...log, ...planRepair(log).events]))).toEqual([])
      }),
      runs,
    )
  })
})
