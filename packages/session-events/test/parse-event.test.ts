import { describe, expect, it } from 'vitest'

import { coreEventRegistry, parseEvent, SessionEventsError } from '../src/index.ts'

const time = '2025-01-01T00:00:00Z'

function refusal(value: unknown): SessionEventsError {
  try {
    parseEvent(value)
  } catch (error) {
    if (SessionEventsError.is(error)) return error
    throw error
  }
  throw new Error(`expected parseEvent to refuse ${JSON.stringify(value)}`)
}

function prototypeKeys(): string[] {
  return Object.getOwnPropertyNames(Object.prototype).sort()
}

describe('parseEvent', () => {
  it('returns the same object, without rebuilding it, and keeps unknown keys', () => {
    const event = {
      seq: 1,
      time,
      type: 'tool/result',
      data: { message: { role: 'tool', tool_call_id: 'c', content: 'x', vendor: { a: 1 } }, extra: [1, 2] },
      sourceEventSeqs: [0],
      writer: 'future-version',
    }
    const parsed = parseEvent(event)
    expect(parsed).toBe(event)
    expect(parsed.data).toBe(event.data)
    expect(parsed).toHaveProperty('writer', 'future-version')
    expect(parsed.data).toHaveProperty('extra', [1, 2])
  })

  it('S3: keeps own __proto__ and constructor keys as data and pollutes no prototype', () => {
    const keysBefore = prototypeKeys()
    const line =
      '{"seq":4,"time":"2025-01-01T00:00:00Z","type":"tool/result","data":{"message":{"role":"tool","tool_call_id":"c",' +
      '"content":"{\\"__proto__\\":{\\"polluted\\":true}}","__proto__":{"polluted":true}},' +
      '"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}},"__proto__":{"seq":99,"polluted":true}}'
    const value = JSON.parse(line) as Record<string, unknown>
    const reference = JSON.parse(line) as unknown

    const parsed = parseEvent(value)

    expect(parsed).toBe(value)
    expect(parsed.seq).toBe(4)
    expect(Object.getOwnPropertyNames(parsed)).toContain('__proto__')
    expect(Object.getOwnPropertyNames(parsed.data)).toContain('__proto__')
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype)
    expect(Object.getPrototypeOf(parsed.data)).toBe(Object.prototype)
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined()
    expect((Object.prototype as Record<string, unknown>)['x']).toBeUndefined()
    expect(prototypeKeys()).toEqual(keysBefore)
    // toEqual, not toStrictEqual: the latter compares `.constructor`, which here is an own data key.
    expect(parsed).toEqual(reference)
    expect(JSON.stringify(parsed)).toBe(line)
  })

  it('S3: reads an own __proto__ key as data, never as the event fields', () => {
    const value = JSON.parse(
      '{"__proto__":{"seq":1,"time":"2025-01-01T00:00:00Z","type":"turn/start","data":{"turn":1}}}',
    ) as unknown
    expect(refusal(value)).toMatchObject({ code: 'INVALID_EVENT', field: 'seq' })
  })

  describe('known/ignorable rule', () => {
    it('V5: refuses an unknown type without ignorable with UNKNOWN_EVENT_TYPE', () => {
      for (const extra of [{}, { ignorable: false }]) {
        const error = refusal({ seq: 2, time, type: 'vendor/thing', data: {}, ...extra })
        expect(error).toMatchObject({
          code: 'UNKNOWN_EVENT_TYPE',
          field: 'type',
          seq: 2,
          type: 'vendor/thing',
        })
        expect(error.message).toContain('"vendor/thing"')
      }
    })

    it('V5: refuses unknown types named like Object.prototype members', () => {
      for (const type of ['constructor', '__proto__', 'toString']) {
        expect(refusal({ seq: 0, time, type, data: {} }).code).toBe('UNKNOWN_EVENT_TYPE')
      }
    })

    it('V6: keeps an unknown type marked ignorable verbatim, with any data', () => {
      const event = {
        seq: 2,
        time,
        type: 'vendor/thing',
        data: { anything: [1, { deep: null }] },
        ignorable: true,
        v: 2,
      }
      const kept = parseEvent(event)
      expect(kept).toBe(event)
      expect(kept).toStrictEqual({
        seq: 2,
        time,
        type: 'vendor/thing',
        data: { anything: [1, { deep: null }] },
        ignorable: true,
        v: 2,
      })
    })

    it('still validates a core type marked ignorable against its schema', () => {
      expect(refusal({ seq: 0, time, type: 'turn/start', data: {}, ignorable: true })).toMatchObject({
        code: 'INVALID_EVENT',
        field: 'data.turn',
      })
      const event = {
        seq: 0,
        time,
        type: 'compaction/start',
        data: { compactionId: 'c', startSeq: 0, endSeq: 0 },
        ignorable: true,
      }
      expect(parseEvent(event)).toBe(event)
    })

    it('uses the core registry by default', () => {
      const event = { seq: 0, time, type: 'turn/start', data: { turn: 1 } }
      expect(parseEvent(event, coreEventRegistry)).toBe(parseEvent(event))
    })
  })

  describe('surface rules', () => {
    const user = { role: 'user', content: 'x' }

    it('accepts surfaceOp and sourceEventSeqs on surface events citing unique earlier seqs', () => {
      const event = {
        seq: 10,
        time,
        type: 'user/message',
        data: { message: user },
        surfaceOp: { op: 'replace', startSeq: 2, endSeq: 9 },
        sourceEventSeqs: [2, 5, 9],
      }
      expect(parseEvent(event)).toBe(event)
    })

    it.each([
      ['surfaceOp', { surfaceOp: 'append' }],
      ['sourceEventSeqs', { sourceEventSeqs: [0] }],
    ])('refuses %s on a log-only event', (field, extra) => {
      expect(refusal({ seq: 3, time, type: 'turn/start', data: { turn: 1 }, ...extra })).toMatchObject({
        code: 'INVALID_EVENT',
        field,
      })
    })

    it('refuses surfaceOp and sourceEventSeqs on an ignorable unknown event', () => {
      expect(
        refusal({ seq: 3, time, type: 'vendor/x', data: {}, ignorable: true, surfaceOp: 'append' }).field,
      ).toBe('surfaceOp')
      expect(
        refusal({ seq: 3, time, type: 'vendor/x', data: {}, ignorable: true, sourceEventSeqs: [1] }).field,
      ).toBe('sourceEventSeqs')
    })

    it('refuses a surface event marked ignorable', () => {
      expect(
        refusal({ seq: 3, time, type: 'user/message', data: { message: user }, ignorable: true }),
      ).toMatchObject({
        code: 'INVALID_EVENT',
        field: 'ignorable',
      })
    })

    it.each([
      ['the seq itself', [3]],
      ['a later seq', [4]],
      ['a repeated seq', [1, 1]],
      ['nothing (an empty array)', []],
    ])('refuses sourceEventSeqs citing %s', (_name, sourceEventSeqs) => {
      expect(
        refusal({ seq: 3, time, type: 'user/message', data: { message: user }, sourceEventSeqs }),
      ).toMatchObject({
        code: 'INVALID_EVENT',
        field: 'sourceEventSeqs',
      })
    })

    it('refuses a replace range that reaches the event itself or later', () => {
      for (const surfaceOp of [
        { op: 'replace', startSeq: 1, endSeq: 3 },
        { op: 'replace', startSeq: 3, endSeq: 1 },
      ]) {
        expect(
          refusal({ seq: 3, time, type: 'user/message', data: { message: user }, surfaceOp }),
        ).toMatchObject({
          code: 'INVALID_EVENT',
          field: 'surfaceOp',
        })
      }
    })
  })
})

describe('an empty sourceEventSeqs', () => {
  it.each([
    [
      'a compaction summary message (replace)',
      'user/message',
      { message: { role: 'user', content: '[summary] x' } },
      { op: 'replace', startSeq: 1, endSeq: 2 },
    ],
    [
      'a tool result',
      'tool/result',
      { message: { role: 'tool', tool_call_id: 'c1', content: 'ok' } },
      undefined,
    ],
  ])('is refused on %s, naming the field and what was found', (_name, type, data, surfaceOp) => {
    const event = {
      seq: 3,
      time,
      type,
      data,
      sourceEventSeqs: [],
      ...(surfaceOp === undefined ? {} : { surfaceOp }),
    }
    let caught: unknown
    try {
      parseEvent(event)
    } catch (error) {
      caught = error
    }
    expect(SessionEventsError.is(caught)).toBe(true)
    expect(caught).toMatchObject({ code: 'INVALID_EVENT', field: 'sourceEventSeqs', seq: 3 })
    expect((caught as Error).message).toContain('found []')
  })
})
