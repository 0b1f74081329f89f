import { describe, expect, it } from 'vitest'

import type { EventInput, LoggedEvent } from '@agent-ledger/session-events'

import { createProjection, ProjectionError, ProjectionErrorCode } from '../src/index.ts'
import type { SessionLog } from '../src/index.ts'
import {
  assistant,
  describeMessages,
  newLog,
  roles,
  system,
  toolCall,
  toolResult,
  turnEnd,
  turnStart,
  user,
} from './support/events.ts'
import { testRegistry } from './support/random-log.ts'

function replaceInput(
  input: EventInput,
  range: { startSeq: number; endSeq: number },
  sourceEventSeqs: readonly number[],
): EventInput {
  return { ...input, surfaceOp: { op: 'replace', ...range }, sourceEventSeqs }
}

function expectProjectionError(run: () => unknown, code: string): ProjectionError {
  try {
    run()
  } catch (error) {
    expect(ProjectionError.is(error)).toBe(true)
    expect((error as ProjectionError).code).toBe(code)
    return error as ProjectionError
  }
  throw new Error(`expected a ProjectionError ${code}, nothing was thrown`)
}

/** Appends `input` expecting a refusal with `code`, and checks that nothing changed. */
function expectRefused(log: SessionLog, input: EventInput, code: string): ProjectionError {
  const events = log.events
  const messages = log.deriveMessages()
  const before = JSON.stringify(log.projection.snapshot())
  const error = expectProjectionError(() => log.append(input), code)
  expect(log.events).toBe(events)
  expect(log.deriveMessages()).toBe(messages)
  expect(JSON.stringify(log.projection.snapshot())).toBe(before)
  return error
}

describe('createProjection', () => {
  it('starts empty at seq 0 and returns the same frozen empty list until something changes', () => {
    const projection = createProjection()
    expect(projection.nextSeq).toBe(0)
    expect(projection.lastEvent).toBeNull()
    expect(projection.lastTime).toBeNull()
    expect(projection.openCompaction).toBeNull()
    expect(projection.repairState).toEqual({ openTurn: null, pendingCalls: [] })
    const messages = projection.deriveMessages()
    expect(messages).toEqual([])
    expect(Object.isFrozen(messages)).toBe(true)
    expect(projection.deriveMessages()).toBe(messages)
    expect(projection.surface()).toEqual([])
  })

  it("carries the adapters' ignorable events as annotations, in seq order, and no other log-only event", () => {
    const log = newLog({ registry: testRegistry })
    const ignorable = (type: string, data: object) => log.append({ type, data, ignorable: true } as never)
    ignorable('ai-sdk/ui-message-id', { id: 'u-1', userSeq: 1 })
    log.append(user('hi'))
    ignorable('import/source-record', { line: 'a verbatim source record' })
    ignorable('openai-agents/items', { forSeq: 1, items: [] })
    log.append({ type: 'test/note', data: { text: 'plugin' } })
    ignorable('ai-sdkx/lookalike', {})
    const annotations = log.projection.annotations()
    expect(annotations.map((event) => [event.seq, event.type])).toEqual([
      [0, 'ai-sdk/ui-message-id'],
      [3, 'openai-agents/items'],
    ])
    expect(log.projection.annotations()).toBe(annotations)
    expect(Object.isFrozen(annotations)).toBe(true)
    expect([log.projection.stats.ignoredUnknown, log.projection.stats.pluginEvents]).toEqual([4, 1])
  })

  it('projects only the four surface types; log-only, plugin and ignorable events never reach the surface', () => {
    const log = newLog({ registry: testRegistry })
    log.append(turnStart(1))
    log.append(system('be brief'))
    log.append(user('hi'))
    log.append({ type: 'test/note', data: { text: 'plugin' } })
    log.append({
      type: 'future/thing',
      data: { role: 'user', content: 'not a message' },
      ignorable: true,
    } as never)
    log.append(assistant('hello'))
    log.append(turnEnd(1))
    expect(describeMessages(log.deriveMessages())).toEqual(['system:be brief', 'user:hi', 'assistant:hello'])
    expect(log.projection.surface().map((node) => [node.seq, node.type])).toEqual([
      [1, 'system/message'],
      [2, 'user/message'],
      [5, 'assistant/message'],
    ])
    expect(log.projection.stats).toEqual({
      events: 7,
      surfaceEvents: 3,
      ignoredUnknown: 1,
      pluginEvents: 1,
      orphanToolResults: 0,
      duplicateToolResults: 0,
      replaces: 0,
      nonMonotonicTime: 0,
      turns: 1,
      highestTurn: 1,
    })
    // Neither is an adapter annotation (ai-sdk/..., openai-agents/...): counted, not carried.
    expect(log.projection.annotations()).toEqual([])
    expect(log.projection.nextSeq).toBe(7)
    expect(log.projection.lastEvent?.type).toBe('turn/end')
  })

  it('V6: refuses an unknown type without ignorable (and a plugin type the registry does not know), changing nothing', () => {
    const projection = createProjection()
    const event = { seq: 0, time: '2026-01-01T00:00:00.000Z', type: 'test/note', data: { text: 'x' } }
    const error = expectProjectionError(() => projection.apply(event as LoggedEvent), 'UNKNOWN_EVENT_TYPE')
    expect(error.field).toBe('type')
    expect(projection.nextSeq).toBe(0)
    expect(Object.isFrozen(event)).toBe(false)
    const known = createProjection({ registry: testRegistry })
    known.apply(event as LoggedEvent)
    expect(known.stats.pluginEvents).toBe(1)
  })

  it('refuses a seq that skips (SEQ_GAP) or repeats (SEQ_DUPLICATE), with expected and found', () => {
    const projection = createProjection()
    const at = (seq: number): LoggedEvent => ({
      seq,
      time: '2026-01-01T00:00:00.000Z',
      type: 'turn/start',
      data: { turn: seq },
    })
    projection.apply(at(0))
    const gap = expectProjectionError(() => projection.apply(at(2)), ProjectionErrorCode.SEQ_GAP)
    expect([gap.expected, gap.found, gap.seq]).toEqual([1, 2, 2])
    const repeat = expectProjectionError(() => projection.apply(at(0)), ProjectionErrorCode.SEQ_DUPLICATE)
    expect([repeat.expected, repeat.found]).toEqual([1, 0])
    expect(projection.nextSeq).toBe(1)
    expect(projection.stats.events).toBe(1)
  })

  it('check() throws like apply() would and changes nothing', () => {
    const log = newLog()
    log.append(user('a'))
    const projection = log.projection
    const before = JSON.stringify(projection.snapshot())
    const good: LoggedEvent = {
      seq: 1,
      time: '2026-01-01T00:00:09.000Z',
      type: 'user/message',
      data: { message: { role: 'user', content: 'b' } },
    }
    projection.check(good)
    expect(JSON.stringify(projection.snapshot())).toBe(before)
    expect(Object.isFrozen(good)).toBe(false)
    expectProjectionError(() => projection.check({ ...good, seq: 5 }), 'SEQ_GAP')
    expect(JSON.stringify(projection.snapshot())).toBe(before)
  })

  it('deep-freezes an applied event in place and shares its message with deriveMessages', () => {
    const projection = createProjection()
    const message = { role: 'user' as const, content: [{ type: 'text' as const, text: 'hi' }] }
    const event: LoggedEvent = {
      seq: 0,
      time: '2026-01-01T00:00:00.000Z',
      type: 'user/message',
      data: { message },
    }
    projection.apply(event)
    expect(projection.deriveMessages()[0]).toBe(message)
    expect(Object.isFrozen(event)).toBe(true)
    expect(Object.isFrozen(message.content[0])).toBe(true)
    expect(projection.surface()[0]).toEqual({ seq: 0, type: 'user/message', message })
    expect(Object.isFrozen(projection.surface()[0])).toBe(true)
  })

  it('returns the same array while nothing new reaches the surface, and a new one after a change', () => {
    const log = newLog()
    log.append(user('a'))
    const first = log.deriveMessages()
    log.append(turnStart(1))
    log.append(toolCall('nobody'))
    expect(log.deriveMessages()).toBe(first)
    log.append(user('b'))
    const second = log.deriveMessages()
    expect(second).not.toBe(first)
    expect(first).toHaveLength(1)
    expect(second[0]).toBe(first[0])
    expect(log.deriveMessages()).toBe(second)
  })

  it('W11: counts a time that goes backwards and keeps seq order', () => {
    const times = ['2026-01-01T10:00:00.000Z', '2026-01-01T09:00:00.000Z', '2016-01-01T00:00:00.000Z']
    let index = 0
    const log = newLog({ clock: { now: () => times[index++]! } })
    log.append(user('first'))
    log.append(user('second'))
    log.append(user('third'))
    expect(log.projection.stats.nonMonotonicTime).toBe(2)
    expect(describeMessages(log.deriveMessages())).toEqual(['user:first', 'user:second', 'user:third'])
    expect(log.projection.lastTime).toBe(times[2])
  })

  it('returns frozen stats that do not change after later events', () => {
    const log = newLog()
    const stats = log.projection.stats
    log.append(user('a'))
    expect(Object.isFrozen(stats)).toBe(true)
    expect(stats.events).toBe(0)
    expect(log.projection.stats.events).toBe(1)
  })
})

describe('replace', () => {
  function conversation(): SessionLog {
    const log = newLog()
    log.append(system('sys')) // 0
    log.append(user('u1')) // 1
    log.append(assistant('a1')) // 2
    log.append(user('u2')) // 3
    log.append(assistant('a2')) // 4
    return log
  }

  it('swaps an inclusive range of current nodes for the new event; the replaced events stay in the log', () => {
    const log = conversation()
    log.append(replaceInput(user('summary'), { startSeq: 1, endSeq: 3 }, [1, 2, 3]))
    expect(describeMessages(log.deriveMessages())).toEqual(['system:sys', 'user:summary', 'assistant:a2'])
    expect(log.events).toHaveLength(6)
    expect(log.projection.stats.replaces).toBe(1)
  })

  it('locates the range in surface order, not numeric order', () => {
    const log = conversation()
    log.append(replaceInput(user('s1'), { startSeq: 1, endSeq: 2 }, [1, 2])) // 5, sits before seq 3
    // Surface: 0, 5, 3, 4. The range 5..3 is valid (5 comes first), although 5 > 3.
    log.append(replaceInput(user('s2'), { startSeq: 5, endSeq: 3 }, [5, 3])) // 6
    expect(describeMessages(log.deriveMessages())).toEqual(['system:sys', 'user:s2', 'assistant:a2'])
    // The range 3..5 is numerically ordered but reversed in surface order.
    const other = conversation()
    other.append(replaceInput(user('s1'), { startSeq: 1, endSeq: 2 }, [1, 2]))
    const error = expectRefused(
      other,
      replaceInput(user('x'), { startSeq: 3, endSeq: 5 }, [3, 5]),
      'INVALID_SURFACE_OP',
    )
    expect(error.field).toBe('surfaceOp')
  })

  it('refuses a range whose ends are not current surface nodes (REPLACE_RANGE_NOT_FOUND)', () => {
    const log = conversation()
    log.append(turnStart(1)) // 5, log-only
    log.append(replaceInput(user('s'), { startSeq: 1, endSeq: 2 }, [1, 2])) // 6
    const hidden = expectRefused(
      log,
      replaceInput(user('x'), { startSeq: 1, endSeq: 3 }, [1, 3]),
      'REPLACE_RANGE_NOT_FOUND',
    )
    expect([hidden.field, hidden.found]).toEqual(['surfaceOp.startSeq', 1])
    const logOnly = expectRefused(
      log,
      replaceInput(user('x'), { startSeq: 3, endSeq: 5 }, [3, 5]),
      'REPLACE_RANGE_NOT_FOUND',
    )
    expect([logOnly.field, logOnly.found]).toEqual(['surfaceOp.endSeq', 5])
  })

  it('refuses a replace that does not cite every hidden node, and accepts extra citations', () => {
    const log = conversation()
    const error = expectRefused(
      log,
      replaceInput(user('x'), { startSeq: 1, endSeq: 3 }, [1, 3]),
      'REPLACE_CITATION_MISSING',
    )
    expect([error.field, error.expected]).toEqual(['sourceEventSeqs', 2])
    log.append(replaceInput(user('x'), { startSeq: 1, endSeq: 3 }, [0, 1, 2, 3, 4]))
    expect(roles(log.deriveMessages())).toEqual(['system', 'user', 'assistant'])
  })

  it('lets only a system message replace a leading system message', () => {
    const log = conversation()
    expectRefused(log, replaceInput(user('x'), { startSeq: 0, endSeq: 1 }, [0, 1]), 'INVALID_SURFACE_OP')
    log.append(replaceInput(system('new rules'), { startSeq: 0, endSeq: 0 }, [0]))
    expect(describeMessages(log.deriveMessages())[0]).toBe('system:new rules')
    // A leading user message may be replaced by anything.
    const plain = newLog()
    plain.append(user('u'))
    plain.append(replaceInput(assistant('a'), { startSeq: 0, endSeq: 0 }, [0]))
    expect(roles(plain.deriveMessages())).toEqual(['assistant'])
  })

  it('refuses a range that splits tool results from the assistant message that called them', () => {
    const log = newLog()
    log.append(user('u')) // 0
    log.append(assistant(null, ['c1', 'c2'])) // 1
    log.append(toolResult('c1', 'r1')) // 2
    log.append(toolResult('c2', 'r2')) // 3
    log.append(user('next')) // 4
    expectRefused(log, replaceInput(user('x'), { startSeq: 0, endSeq: 1 }, [0, 1]), 'INVALID_SURFACE_OP')
    expectRefused(log, replaceInput(user('x'), { startSeq: 2, endSeq: 4 }, [2, 3, 4]), 'INVALID_SURFACE_OP')
    expectRefused(log, replaceInput(user('x'), { startSeq: 1, endSeq: 2 }, [1, 2]), 'INVALID_SURFACE_OP')
    log.append(replaceInput(user('x'), { startSeq: 0, endSeq: 3 }, [0, 1, 2, 3]))
    expect(describeMessages(log.deriveMessages())).toEqual(['user:x', 'user:next'])
  })

  it('lets a tool/result replace only the tool messages with its own tool_call_id, in place', () => {
    const log = newLog()
    log.append(assistant(null, ['c1', 'c2'])) // 0
    log.append(toolResult('c1', 'a very long output')) // 1
    log.append(toolResult('c2', 'r2')) // 2
    log.append(user('next')) // 3
    expectRefused(
      log,
      replaceInput(toolResult('c1', 'x'), { startSeq: 1, endSeq: 2 }, [1, 2]),
      'INVALID_SURFACE_OP',
    )
    expectRefused(
      log,
      replaceInput(toolResult('c1', 'x'), { startSeq: 3, endSeq: 3 }, [3]),
      'INVALID_SURFACE_OP',
    )
    expectRefused(
      log,
      replaceInput(toolResult('c2', 'x'), { startSeq: 1, endSeq: 1 }, [1]),
      'INVALID_SURFACE_OP',
    )
    log.append(replaceInput(toolResult('c1', '[trimmed]'), { startSeq: 1, endSeq: 1 }, [1]))
    expect(describeMessages(log.deriveMessages())).toEqual([
      'assistant:null',
      'tool:c1:[trimmed]',
      'tool:c2:r2',
      'user:next',
    ])
  })

  it('refuses a tool/result replace while a call with the same id is still open (it would read as the answer)', () => {
    const log = newLog()
    log.append(assistant(null, ['c1'])) // 0
    log.append(toolResult('c1', 'r')) // 1
    log.append(assistant(null, ['c1'])) // 2, id reused, still open
    expectRefused(
      log,
      replaceInput(toolResult('c1', 'x'), { startSeq: 1, endSeq: 1 }, [1]),
      'INVALID_SURFACE_OP',
    )
    expect(log.projection.repairState.pendingCalls.map((call) => call.assistantSeq)).toEqual([2])
  })

  it('opens the calls of a replacing assistant message and places their results after it', () => {
    const log = newLog()
    log.append(user('u')) // 0
    log.append(assistant('thinking')) // 1
    log.append(replaceInput(assistant(null, ['c9']), { startSeq: 1, endSeq: 1 }, [1])) // 2
    log.append(user('later')) // 3
    log.append(toolResult('c9', 'r9')) // 4
    expect(describeMessages(log.deriveMessages())).toEqual([
      'user:u',
      'assistant:null',
      'tool:c9:r9',
      'user:later',
    ])
  })
})

describe('tool results', () => {
  it('places results after the assistant message they answer, after its earlier results', () => {
    const log = newLog()
    log.append(user('u')) // 0
    log.append(assistant(null, ['c1', 'c2', 'c3'])) // 1
    log.append(toolResult('c2', 'r2')) // 2
    log.append(user('interjection')) // 3
    const before = log.deriveMessages()
    log.append(toolResult('c3', 'r3')) // 4, out of place
    log.append(toolResult('c1', 'r1')) // 5, out of place
    const after = log.deriveMessages()
    expect(describeMessages(after)).toEqual([
      'user:u',
      'assistant:null',
      'tool:c2:r2',
      'tool:c3:r3',
      'tool:c1:r1',
      'user:interjection',
    ])
    expect(before).toHaveLength(4)
    expect(after).not.toBe(before)
  })

  it('does not project a duplicate result for an answered call, and counts it', () => {
    const log = newLog()
    log.append(assistant(null, ['c1'])) // 0
    log.append(toolResult('c1', 'first')) // 1
    log.append(toolResult('c1', 'again')) // 2
    expect(describeMessages(log.deriveMessages())).toEqual(['assistant:null', 'tool:c1:first'])
    expect(log.projection.stats.duplicateToolResults).toBe(1)
    expect(log.projection.stats.orphanToolResults).toBe(0)
    expect(log.events).toHaveLength(3)
  })

  it('does not project a result whose assistant message a replace has hidden (an orphan on the surface)', () => {
    const log = newLog()
    log.append(user('u')) // 0
    log.append(assistant(null, ['c1'])) // 1
    log.append(replaceInput(user('summary'), { startSeq: 0, endSeq: 1 }, [0, 1])) // 2
    log.append(toolResult('c1', 'late')) // 3
    expect(describeMessages(log.deriveMessages())).toEqual(['user:summary'])
    expect(log.projection.stats.orphanToolResults).toBe(1)
    expect(log.projection.repairState.pendingCalls).toEqual([])
  })

  it('follows the citation when two open calls share an id', () => {
    const log = newLog()
    log.append(assistant(null, ['c1'])) // 0, never answered
    log.append(user('retry')) // 1
    log.append(assistant(null, ['c1'])) // 2
    log.append(toolResult('c1', 'for the first', [0])) // 3
    log.append(toolResult('c1', 'for the second')) // 4
    expect(describeMessages(log.deriveMessages())).toEqual([
      'assistant:null',
      'tool:c1:for the first',
      'user:retry',
      'assistant:null',
      'tool:c1:for the second',
    ])
  })
})

describe('openCompaction', () => {
  it('tracks a compaction/start until its compaction/end, without touching the surface', () => {
    const log = newLog()
    log.append(user('u'))
    const messages = log.deriveMessages()
    log.append({ type: 'compaction/start', data: { compactionId: 'k1', startSeq: 0, endSeq: 0 } })
    expect(log.projection.openCompaction).toEqual({ compactionId: 'k1', seq: 1, startSeq: 0, endSeq: 0 })
    expect(log.deriveMessages()).toBe(messages)
    log.append({ type: 'compaction/end', data: { compactionId: 'other', replacementSeq: 0, hiddenCount: 0 } })
    expect(log.projection.openCompaction?.compactionId).toBe('k1')
    log.append({ type: 'compaction/end', data: { compactionId: 'k1', replacementSeq: 0, hiddenCount: 0 } })
    expect(log.projection.openCompaction).toBeNull()
  })
})
