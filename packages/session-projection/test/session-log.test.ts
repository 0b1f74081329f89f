import { describe, expect, it } from 'vitest'

import { SessionEventsError } from '@agent-ledger/session-events'
import type { EventInput, LoggedEvent } from '@agent-ledger/session-events'

import { createSessionLog, ProjectionError } from '../src/index.ts'
import type { SessionLog } from '../src/index.ts'
import { assistant, newLog, steppingClock, system, toolResult, turnStart, user } from './support/events.ts'

function refusal(log: SessionLog, input: unknown): ProjectionError {
  const events = log.events
  const nextSeq = log.projection.nextSeq
  const surface = log.projection.surface()
  const messages = log.deriveMessages()
  let caught: unknown
  try {
    log.append(input as EventInput)
  } catch (error) {
    caught = error
  }
  expect(caught).toBeInstanceOf(Error)
  expect(caught).not.toBeInstanceOf(RangeError)
  expect(ProjectionError.is(caught)).toBe(true)
  expect(log.events).toBe(events)
  expect(log.projection.nextSeq).toBe(nextSeq)
  expect(log.projection.surface()).toBe(surface)
  expect(log.deriveMessages()).toBe(messages)
  return caught as ProjectionError
}

describe('createSessionLog', () => {
  it('assigns dense seqs and the injected clock time, and returns the committed, frozen event', () => {
    const clock = steppingClock()
    const log = createSessionLog({ clock })
    const first = log.append(turnStart(1))
    const second = log.append(user('hi'))
    expect([first.seq, second.seq]).toEqual([0, 1])
    expect(first.time).toBe('2026-01-01T00:00:00.000Z')
    expect(second.time).toBe('2026-01-01T00:00:01.000Z')
    expect(second.data.message.content).toBe('hi')
    expect(Object.isFrozen(second)).toBe(true)
    expect(Object.isFrozen(second.data.message)).toBe(true)
    expect(log.events).toEqual([first, second])
    expect(log.events[1]).toBe(second)
    expect(Object.isFrozen(log.events)).toBe(true)
    expect(log.events).toBe(log.events)
  })

  it('ignores seq and time supplied by the caller and keeps no unknown envelope fields', () => {
    const log = newLog()
    const event = log.append({ ...user('x'), seq: 99, time: 'never', extra: true } as EventInput)
    expect(event.seq).toBe(0)
    expect(event.time).toBe('2026-01-01T00:00:00.000Z')
    expect(Object.keys(event).sort()).toEqual(['data', 'seq', 'time', 'type'])
  })

  it('rebuilds from existing events to the same projection', () => {
    const log = newLog()
    log.append(system('s'))
    log.append(user('u'))
    log.append(assistant('a'))
    const copy = JSON.parse(JSON.stringify(log.events)) as LoggedEvent[]
    const rebuilt = createSessionLog({ clock: steppingClock(), events: copy })
    expect(rebuilt.events).toEqual(log.events)
    expect(rebuilt.deriveMessages()).toEqual(log.deriveMessages())
    expect(rebuilt.projection.snapshot()).toEqual(log.projection.snapshot())
    expect(rebuilt.append(user('next')).seq).toBe(3)
  })

  it('reports a gap in existing events as SEQ_GAP with expected and found', () => {
    const log = newLog()
    for (const text of ['a', 'b', 'c']) log.append(user(text))
    const events = [log.events[0]!, log.events[2]!]
    try {
      createSessionLog({ clock: steppingClock(), events })
      expect.unreachable()
    } catch (error) {
      expect(ProjectionError.is(error) && [error.code, error.expected, error.found]).toEqual([
        'SEQ_GAP',
        1,
        2,
      ])
    }
  })

  it('reports a repeated seq in existing events as SEQ_DUPLICATE with expected and found', () => {
    const log = newLog()
    for (const text of ['a', 'b']) log.append(user(text))
    const events = [log.events[0]!, log.events[1]!, log.events[1]!]
    try {
      createSessionLog({ clock: steppingClock(), events })
      expect.unreachable()
    } catch (error) {
      expect(ProjectionError.is(error) && [error.code, error.expected, error.found]).toEqual([
        'SEQ_DUPLICATE',
        2,
        1,
      ])
    }
  })

  it('re-throws contract failures as ProjectionError with the same code, field, and the original as cause', () => {
    const log = newLog()
    const invalid = refusal(log, { type: 'user/message', data: { message: { role: 'user', content: 42 } } })
    expect(invalid.code).toBe('INVALID_EVENT')
    expect(invalid.field).toBe('data.message.content')
    expect(SessionEventsError.is(invalid.cause)).toBe(true)
    const unknown = refusal(log, { type: 'made/up', data: {} })
    expect(unknown.code).toBe('UNKNOWN_EVENT_TYPE')
    expect(refusal(log, 'not an object').code).toBe('INVALID_EVENT')
    expect(refusal(log, { type: 'turn/start', data: { turn: 1 }, sourceEventSeqs: [] }).field).toBe(
      'sourceEventSeqs',
    )
    expect(refusal(log, { ...user('x'), ignorable: true }).field).toBe('ignorable')
  })

  it('W11: refuses a clock that returns something other than an ISO date-time, committing nothing', () => {
    for (const bad of ['NaN', 'Invalid Date', '', '2026-13-45']) {
      const log = createSessionLog({ clock: { now: () => bad } })
      const error = refusal(log, user('x'))
      expect([error.code, error.field]).toEqual(['INVALID_EVENT', 'time'])
    }
  })

  it('V5: keeps an ignorable unknown event verbatim, counts it, and keeps it off the surface', () => {
    const log = newLog()
    const data = { nested: { keep: ['all', 1, null] } }
    const event = log.append({ type: 'future/thing', data, ignorable: true } as never) as LoggedEvent
    expect(event.data).toBe(data)
    expect(event).toMatchObject({ type: 'future/thing', ignorable: true })
    expect(log.projection.stats.ignoredUnknown).toBe(1)
    expect(log.deriveMessages()).toEqual([])
    expect(log.projection.repairState).toEqual({ openTurn: null, pendingCalls: [] })
  })
})

describe('S9: hostile shapes through SessionLog.append', () => {
  function deepArray(depth: number): unknown {
    let value: unknown = []
    for (let level = 1; level < depth; level += 1) value = [value]
    return value
  }

  it('S9: a depth-100000 array gives TOO_DEEP, synchronously, and commits nothing', () => {
    const log = newLog()
    log.append(user('before'))
    const error = refusal(log, { type: 'test/deep', data: deepArray(100_000), ignorable: true })
    expect(error.code).toBe('TOO_DEEP')
    expect(SessionEventsError.is(error.cause)).toBe(true)
    const inMessage = refusal(log, {
      type: 'user/message',
      data: { message: { role: 'user', content: 'x', extra: deepArray(100_000) } },
    })
    expect(inMessage.code).toBe('TOO_DEEP')
  })

  it('S9: a 200,001-key object over the entry limit gives EVENT_TOO_LARGE and commits nothing', () => {
    // The row's 10^6 keys scaled down so the 2-core CI stays fast; the rule is the same: over the limit.
    const log = newLog({ limits: { maxDepth: 64, maxEntries: 200_000 } })
    const huge: Record<number, number> = {}
    for (let index = 0; index < 200_001; index += 1) huge[index] = index
    expect(refusal(log, { type: 'test/wide', data: huge, ignorable: true }).code).toBe('EVENT_TOO_LARGE')
    expect(log.events).toHaveLength(0)
  })

  it('S9: a cycle, a BigInt, a function, a class instance and undefined in an array give UNSERIALIZABLE_EVENT', () => {
    const log = newLog()
    const cyclic: Record<string, unknown> = { role: 'user', content: 'x' }
    cyclic.self = cyclic
    const shapes: unknown[] = [
      { type: 'user/message', data: { message: cyclic } },
      { type: 'test/big', data: { n: 10n }, ignorable: true },
      { type: 'test/fn', data: { f: () => 1 }, ignorable: true },
      { type: 'test/date', data: { at: new Date(0) }, ignorable: true },
      { type: 'test/hole', data: [1, undefined, 3], ignorable: true },
      { type: 'test/nan', data: { n: Number.NaN }, ignorable: true },
    ]
    for (const input of shapes) expect(refusal(log, input).code).toBe('UNSERIALIZABLE_EVENT')
    expect(log.events).toHaveLength(0)
    expect(log.append(user('still works')).seq).toBe(0)
  })

  it('S9: a hostile shape in surfaceOp or sourceEventSeqs is refused too', () => {
    const log = newLog()
    log.append(user('a'))
    const cyclic: unknown[] = []
    cyclic.push(cyclic)
    expect(refusal(log, { ...user('b'), sourceEventSeqs: cyclic }).code).toBe('UNSERIALIZABLE_EVENT')
    expect(refusal(log, { ...user('b'), surfaceOp: { op: 'replace', startSeq: 0n, endSeq: 0 } }).code).toBe(
      'UNSERIALIZABLE_EVENT',
    )
  })
})

describe('S3: __proto__ keys stay data', () => {
  it('S3: own __proto__ / constructor / prototype keys survive append, apply and derive without polluting Object.prototype', () => {
    const prototypeKeys = Object.getOwnPropertyNames(Object.prototype).sort()
    const log = newLog()
    const hostile = '{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}'
    const data = JSON.parse(
      `{"message":{"role":"tool","tool_call_id":"c1","content":${JSON.stringify(hostile)},"__proto__":{"polluted":true}},"extra":${hostile}}`,
    ) as Record<string, unknown>
    expect(Object.prototype.hasOwnProperty.call(data.message, '__proto__')).toBe(true)
    log.append(assistant(null, ['c1']))
    const event = log.append({ type: 'tool/result', data } as EventInput<'tool/result'>)
    const plugin = log.append({
      type: 'test/proto',
      data: JSON.parse(hostile) as unknown,
      ignorable: true,
    } as never)
    const derived = log.deriveMessages()[1]!
    expect(derived).toBe(event.data.message)
    expect(Object.prototype.hasOwnProperty.call(derived, '__proto__')).toBe(true)
    expect(Object.getPrototypeOf(derived)).toBe(Object.prototype)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(({} as Record<string, unknown>).x).toBeUndefined()
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeKeys)
    // Round-trips byte-equal through JSON, through a rebuild and through a snapshot.
    expect(JSON.stringify(event.data)).toBe(JSON.stringify(data))
    const rebuilt = createSessionLog({
      clock: steppingClock(),
      events: JSON.parse(JSON.stringify(log.events)) as LoggedEvent[],
    })
    expect(JSON.stringify(rebuilt.deriveMessages())).toBe(JSON.stringify(log.deriveMessages()))
    expect(JSON.stringify(rebuilt.events[2])).toBe(JSON.stringify(plugin))
    expect(JSON.stringify(rebuilt.projection.snapshot())).toBe(JSON.stringify(log.projection.snapshot()))
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeKeys)
  })
})

describe('toolResult helper', () => {
  it('builds a result citing its sources', () => {
    expect(toolResult('c', 'r', [1])).toMatchObject({ sourceEventSeqs: [1] })
  })
})
