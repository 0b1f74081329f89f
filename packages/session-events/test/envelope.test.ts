import { describe, expect, it } from 'vitest'

import { envelopeSchema, parseEvent, SessionEventsError, SessionEventsErrorCode } from '../src/index.ts'

const valid = { seq: 0, time: '2025-01-01T00:00:00.000Z', type: 'turn/start', data: { turn: 1 } }

function refusal(value: unknown): SessionEventsError {
  try {
    parseEvent(value)
  } catch (error) {
    if (SessionEventsError.is(error)) return error
    throw error
  }
  throw new Error(`expected parseEvent to refuse ${JSON.stringify(value)}`)
}

describe('envelopeSchema', () => {
  it('accepts every envelope field, with optional ones absent or present', () => {
    expect(envelopeSchema.safeParse(valid).success).toBe(true)
    expect(
      envelopeSchema.safeParse({
        ...valid,
        surfaceOp: { op: 'replace', startSeq: 0, endSeq: 3 },
        sourceEventSeqs: [0, 1],
        ignorable: false,
      }).success,
    ).toBe(true)
    expect(envelopeSchema.safeParse({ ...valid, surfaceOp: 'append' }).success).toBe(true)
  })

  it.each([['2025-01-01T00:00:00Z'], ['2025-01-01T00:00:00.123456789Z'], ['2025-01-01T08:00:00+08:00']])(
    'accepts the ISO time %s',
    (time) => {
      expect(envelopeSchema.safeParse({ ...valid, time }).success).toBe(true)
    },
  )

  it('has data as any JSON value at the envelope level', () => {
    for (const data of [null, 0, 'x', [], {}])
      expect(envelopeSchema.safeParse({ ...valid, data }).success).toBe(true)
  })
})

describe('parseEvent envelope checks', () => {
  it.each([
    ['a missing seq', { ...valid, seq: undefined }, 'seq'],
    ['a negative seq', { ...valid, seq: -1 }, 'seq'],
    ['a fractional seq', { ...valid, seq: 1.5 }, 'seq'],
    ['an unsafe seq', { ...valid, seq: Number.MAX_SAFE_INTEGER + 1 }, 'seq'],
    ['a string seq', { ...valid, seq: '0' }, 'seq'],
    ['a missing time', { ...valid, time: undefined }, 'time'],
    ['W11: a NaN time', { ...valid, time: Number.NaN }, 'time'],
    ['a numeric time', { ...valid, time: 1735689600000 }, 'time'],
    ['a date-only time', { ...valid, time: '2025-01-01' }, 'time'],
    ['a time without zone', { ...valid, time: '2025-01-01T00:00:00' }, 'time'],
    ['an empty type', { ...valid, type: '' }, 'type'],
    ['a 201-character type', { ...valid, type: 'a'.repeat(201) }, 'type'],
    ['a missing data', { ...valid, data: undefined }, 'data'],
    ['an unknown surfaceOp', { ...valid, surfaceOp: 'prepend' }, 'surfaceOp'],
    ['a replace without endSeq', { ...valid, surfaceOp: { op: 'replace', startSeq: 0 } }, 'surfaceOp'],
    ['non-integer sourceEventSeqs', { ...valid, sourceEventSeqs: [0.5] }, 'sourceEventSeqs.0'],
    ['a string ignorable', { ...valid, ignorable: 'yes' }, 'ignorable'],
  ])('refuses %s with INVALID_EVENT naming the field', (_name, value, field) => {
    const error = refusal(value)
    expect(error.code).toBe(SessionEventsErrorCode.INVALID_EVENT)
    expect(error.field).toBe(field)
    expect(error.message).toContain(`"${field}"`)
  })

  it.each([null, 'line', 42, [], true])('refuses the non-object %j with INVALID_EVENT', (value) => {
    expect(refusal(value).code).toBe('INVALID_EVENT')
  })

  it('carries the seq and type of the refused event when they were readable', () => {
    const error = refusal({ ...valid, seq: 7, data: { turn: -1 } })
    expect(error).toMatchObject({ code: 'INVALID_EVENT', seq: 7, type: 'turn/start', field: 'data.turn' })
    expect(error.name).toBe('SessionEventsError')
    expect(error.message).toMatch(/^Event seq 7 \(turn\/start\) is invalid: field "data\.turn"/)
  })
})

describe('SessionEventsError', () => {
  it('is recognised by is() across copies (brand), and nothing else is', () => {
    const error = refusal({})
    expect(SessionEventsError.is(error)).toBe(true)
    expect(SessionEventsError.is(new Error('x'))).toBe(false)
    expect(SessionEventsError.is(null)).toBe(false)
    const brand = Symbol.for('@agent-ledger/session-events/SessionEventsError')
    expect(SessionEventsError.is({ [brand]: true })).toBe(true)
  })

  it('has string codes equal to their names', () => {
    for (const [name, value] of Object.entries(SessionEventsErrorCode)) expect(value).toBe(name)
  })
})
