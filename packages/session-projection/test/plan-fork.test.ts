import { describe, expect, it } from 'vitest'

import { planRepair, RepairCode, validateProviderMessages } from '@agent-ledger/loop-repair'
import type { LoggedEvent, SessionEvent } from '@agent-ledger/session-events'

import { createSessionLog, planFork, ProjectionError } from '../src/index.ts'
import type { SessionLog } from '../src/index.ts'
import {
  assistant,
  newLog,
  steppingClock,
  system,
  toolCall,
  toolResult,
  turnEnd,
  turnStart,
  user,
} from './support/events.ts'

/** Two turns; turn 2 is cut mid tool call. */
function parent(): SessionLog {
  const log = newLog()
  log.append(system('sys')) // 0
  log.append(turnStart(1)) // 1
  log.append(user('u1')) // 2
  log.append(assistant('a1')) // 3
  log.append(turnEnd(1)) // 4
  log.append(turnStart(2)) // 5
  log.append(user('u2')) // 6
  log.append(assistant(null, ['c1', 'c2'])) // 7
  log.append(toolCall('c1')) // 8
  log.append(toolResult('c1', 'r1')) // 9
  log.append(toolResult('c2', 'r2')) // 10
  log.append(assistant('a2')) // 11
  log.append(turnEnd(2)) // 12
  return log
}

function errorOf(run: () => unknown): ProjectionError {
  try {
    run()
  } catch (error) {
    if (ProjectionError.is(error)) return error
    throw error
  }
  throw new Error('expected a ProjectionError')
}

describe('planFork', () => {
  it('copies events 0..boundary with their seqs, then session/end-seed, for a cut between turns', () => {
    const log = parent()
    const seed = planFork(log.events, { boundarySeq: 4, parentSession: 'parent-1' })
    expect(seed.events.slice(0, 5)).toEqual(log.events.slice(0, 5))
    expect(seed.events[0]).toBe(log.events[0])
    expect(seed.events[5]).toEqual({
      seq: 5,
      time: log.events[4]!.time,
      type: 'session/end-seed',
      data: { inherited: true, parentSession: 'parent-1', boundarySeq: 4 },
    })
    expect(seed.events).toHaveLength(6)
    expect(seed.header).toEqual({ parentSession: 'parent-1', seeded: true, inheritedEventCount: 5 })
    expect(Object.isFrozen(seed.events)).toBe(true)
    // The seed is a valid log of its own.
    const child = createSessionLog({ clock: steppingClock(), events: seed.events })
    expect(child.deriveMessages()).toHaveLength(3)
    expect(log.events).toHaveLength(13)
  })

  it('closes a cut inside an open turn with exactly the closers loop-repair plans for a crash there', () => {
    const log = parent()
    const seed = planFork(log.events, { boundarySeq: 8, parentSession: 'p' })
    const crashAt8 = planRepair(log.events.slice(0, 9)).events
    expect(crashAt8.map((event) => event.type)).toEqual(['tool/result', 'tool/result', 'turn/end'])
    expect(seed.events.slice(9, 12)).toEqual(crashAt8)
    const [unknown, notStarted] = seed.events.slice(9, 11) as SessionEvent<'tool/result'>[]
    expect(unknown!.data.code).toBe(RepairCode.TOOL_OUTCOME_UNKNOWN)
    expect(notStarted!.data.code).toBe(RepairCode.TOOL_NOT_STARTED)
    expect(seed.events[12]).toMatchObject({ seq: 12, type: 'session/end-seed', data: { boundarySeq: 8 } })
    expect(seed.header.inheritedEventCount).toBe(9)
    const child = createSessionLog({ clock: steppingClock(), events: seed.events })
    expect(validateProviderMessages(child.deriveMessages())).toEqual([])
    expect(child.projection.repairState).toEqual({ openTurn: null, pendingCalls: [] })
  })

  it('refuses a cut inside an open turn with OPEN_TURN when asked to', () => {
    const log = parent()
    const error = errorOf(() =>
      planFork(log.events, { boundarySeq: 6, parentSession: 'p', openTurn: 'refuse' }),
    )
    expect([error.code, error.seq]).toEqual(['OPEN_TURN', 6])
    const calls = errorOf(() =>
      planFork(log.events, { boundarySeq: 9, parentSession: 'p', openTurn: 'refuse' }),
    )
    expect(calls.code).toBe('OPEN_TURN')
    expect(
      planFork(log.events, { boundarySeq: 12, parentSession: 'p', openTurn: 'refuse' }).events,
    ).toHaveLength(14)
  })

  it('refuses a bad boundary with BAD_BOUNDARY', () => {
    const log = parent()
    for (const boundarySeq of [-1, 1.5, Number.NaN, 13, 1000]) {
      const error = errorOf(() => planFork(log.events, { boundarySeq, parentSession: 'p' }))
      expect(error.code).toBe('BAD_BOUNDARY')
    }
    const empty = errorOf(() => planFork([], { boundarySeq: 0, parentSession: 'p' }))
    expect(empty.code).toBe('BAD_BOUNDARY')
    expect(empty.message).toContain('found an empty log')
    expect(empty.message).not.toContain('0 to -1')
  })

  it('refuses a prefix that is not dense from 0', () => {
    const log = parent()
    const gap = errorOf(() =>
      planFork([log.events[0]!, log.events[2]!], { boundarySeq: 2, parentSession: 'p' }),
    )
    expect([gap.code, gap.expected, gap.found]).toEqual(['SEQ_GAP', 1, 2])
    const repeat = errorOf(() =>
      planFork([log.events[0]!, log.events[0]!], { boundarySeq: 1, parentSession: 'p' }),
    )
    expect(repeat.code).toBe('SEQ_DUPLICATE')
  })

  it('reads the prefix only up to the boundary', () => {
    const log = parent()
    let read = 0
    function* counting(): Generator<LoggedEvent> {
      for (const event of log.events) {
        read += 1
        yield event
      }
    }
    planFork(counting(), { boundarySeq: 3, parentSession: 'p' })
    expect(read).toBe(4)
  })

  it('is idempotent: the same input gives the same seed, and forking a seed at its end-seed adds no second closer', () => {
    const log = parent()
    const first = planFork(log.events, { boundarySeq: 8, parentSession: 'p' })
    expect(planFork(log.events, { boundarySeq: 8, parentSession: 'p' })).toEqual(first)
    const endSeed = first.events.at(-1)!.seq
    const again = planFork(first.events, { boundarySeq: endSeed, parentSession: 'child' })
    expect(again.events.slice(0, first.events.length)).toEqual(first.events)
    expect(again.events).toHaveLength(first.events.length + 1)
    expect(again.events.filter((event) => event.type === 'turn/end' && event.seq > 8)).toHaveLength(1)
    expect(again.events.at(-1)).toMatchObject({ type: 'session/end-seed', data: { parentSession: 'child' } })
  })
})
