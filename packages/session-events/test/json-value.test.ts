import { describe, expect, it } from 'vitest'

import { assertJsonValue, deepFreeze, DEFAULT_JSON_LIMITS, SessionEventsError } from '../src/index.ts'
import type { JsonLimits } from '../src/index.ts'

function refusal(value: unknown, limits?: JsonLimits): SessionEventsError {
  try {
    assertJsonValue(value, limits)
  } catch (error) {
    if (SessionEventsError.is(error)) return error
    throw error
  }
  throw new Error('expected assertJsonValue to refuse the value')
}

function nestedArray(depth: number): unknown {
  let value: unknown = 'leaf'
  for (let level = 0; level < depth; level += 1) value = [value]
  return value
}

function nestedObject(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = { leaf: true }
  for (let level = 1; level < depth; level += 1) value = { child: value }
  return value
}

class Point {
  readonly x: number
  constructor(x: number) {
    this.x = x
  }
}

function sparseArray(): unknown[] {
  const sparse: unknown[] = [1]
  sparse[2] = 3
  return sparse
}

describe('assertJsonValue', () => {
  it('accepts plain JSON data, null-prototype objects and own __proto__ keys', () => {
    const nullPrototype = Object.create(null) as Record<string, unknown>
    nullPrototype['a'] = 1
    for (const value of [
      null,
      true,
      0,
      -1.5,
      '',
      'text',
      [],
      {},
      [1, 'a', null, { b: [false] }],
      nullPrototype,
      JSON.parse('{"__proto__":{"polluted":true}}'),
    ]) {
      expect(() => assertJsonValue(value)).not.toThrow()
    }
  })

  it('S9: refuses an array nested 10^5 deep with TOO_DEEP, not a RangeError', () => {
    const error = refusal(nestedArray(100_000))
    expect(error.code).toBe('TOO_DEEP')
    expect(error.message).toContain(`at most ${DEFAULT_JSON_LIMITS.maxDepth} levels`)
  })

  it('S9: walks a 10^5-deep value without recursion when the limit allows it', () => {
    expect(() =>
      assertJsonValue(nestedArray(100_000), { maxDepth: 100_001, maxEntries: 1_000_000 }),
    ).not.toThrow()
  })

  it('counts the top level as depth 1 and enforces maxDepth exactly', () => {
    const limits = { maxDepth: 3, maxEntries: 100 }
    expect(() => assertJsonValue(nestedObject(3), limits)).not.toThrow()
    expect(refusal(nestedObject(4), limits)).toMatchObject({
      code: 'TOO_DEEP',
      field: 'data.child.child.child',
    })
    expect(() => assertJsonValue([[['leaf']]], limits)).not.toThrow()
    expect(refusal([[[['leaf']]]], limits).code).toBe('TOO_DEEP')
  })

  it('S9: refuses a 200,001-key object over maxEntries with EVENT_TOO_LARGE', () => {
    // The row's 10^6 keys scaled down so the 2-core CI stays fast; the rule is the same: one over the limit.
    const wide: Record<number, number> = {}
    for (let index = 0; index < 200_001; index += 1) wide[index] = index
    expect(Object.keys(wide)).toHaveLength(200_001)
    expect(refusal(wide, { maxDepth: 10, maxEntries: 200_000 })).toMatchObject({
      code: 'EVENT_TOO_LARGE',
      field: 'data',
    })
  })

  it('counts array elements plus object keys over all levels against maxEntries', () => {
    const limits = { maxDepth: 10, maxEntries: 4 }
    expect(() => assertJsonValue({ a: [1, 2], b: 3 }, limits)).not.toThrow()
    expect(refusal({ a: [1, 2, 3], b: 3 }, limits).code).toBe('EVENT_TOO_LARGE')
  })

  it('S9: refuses a cycle with UNSERIALIZABLE_EVENT', () => {
    const cyclic: Record<string, unknown> = { a: { b: {} } }
    ;(cyclic['a'] as { b: Record<string, unknown> }).b['back'] = cyclic
    expect(refusal(cyclic)).toMatchObject({ code: 'UNSERIALIZABLE_EVENT', field: 'data.a.b.back' })
    const selfArray: unknown[] = []
    selfArray.push(selfArray)
    expect(refusal(selfArray).code).toBe('UNSERIALIZABLE_EVENT')
  })

  it('accepts a shared sub-object that is not a cycle', () => {
    const shared = { same: [1, 2] }
    expect(() => assertJsonValue({ first: shared, second: shared, list: [shared, shared] })).not.toThrow()
  })

  it.each([
    ['a BigInt', { n: 10n }, 'data.n'],
    ['NaN', { n: Number.NaN }, 'data.n'],
    ['Infinity', [Number.POSITIVE_INFINITY], 'data[0]'],
    ['a function', { f: () => 1 }, 'data.f'],
    ['a symbol', { s: Symbol('s') }, 'data.s'],
    ['a class instance', { p: new Point(1) }, 'data.p'],
    ['a Date', { d: new Date(0) }, 'data.d'],
    ['a Map', { m: new Map() }, 'data.m'],
    ['undefined in an array', [1, undefined], 'data[1]'],
    ['a sparse array', sparseArray(), 'data[1]'],
    ['undefined at the top', undefined, 'data'],
  ])('S9: refuses %s with UNSERIALIZABLE_EVENT naming the path', (_name, value, field) => {
    expect(refusal(value)).toMatchObject({ code: 'UNSERIALIZABLE_EVENT', field })
  })

  it('accepts an object property whose value is undefined (JSON omits it)', () => {
    expect(() => assertJsonValue({ a: undefined, b: 1 })).not.toThrow()
  })

  it('names the value with the path argument', () => {
    expect(refusal(undefined).field).toBe('data')
    try {
      assertJsonValue({ x: 1n }, DEFAULT_JSON_LIMITS, 'header.metadata')
      expect.unreachable()
    } catch (error) {
      expect(error).toMatchObject({ code: 'UNSERIALIZABLE_EVENT', field: 'header.metadata.x' })
    }
  })
})

describe('deepFreeze', () => {
  it('freezes every nested object and array and returns the same value', () => {
    const value = { a: { b: [{ c: 1 }, [2]] }, d: 'x' }
    expect(deepFreeze(value)).toBe(value)
    expect(Object.isFrozen(value)).toBe(true)
    expect(Object.isFrozen(value.a)).toBe(true)
    expect(Object.isFrozen(value.a.b)).toBe(true)
    expect(Object.isFrozen(value.a.b[0])).toBe(true)
    expect(Object.isFrozen(value.a.b[1])).toBe(true)
    expect(() => {
      ;(value.a.b[0] as { c: number }).c = 2
    }).toThrow(TypeError)
  })

  it('freezes a value nested 10^5 deep without recursion', () => {
    const deep = nestedArray(100_000)
    deepFreeze(deep)
    let cursor: unknown = deep
    let levels = 0
    let frozen = 0
    while (Array.isArray(cursor)) {
      if (Object.isFrozen(cursor)) frozen += 1
      cursor = cursor[0]
      levels += 1
    }
    expect(levels).toBe(100_000)
    expect(frozen).toBe(100_000)
  })

  it('freezes own __proto__ keys as data and leaves Object.prototype alone', () => {
    const value = JSON.parse('{"__proto__":{"inner":{}}}') as Record<string, { inner: object }>
    deepFreeze(value)
    const own = Object.getOwnPropertyDescriptor(value, '__proto__')?.value as { inner: object }
    expect(Object.isFrozen(own)).toBe(true)
    expect(Object.isFrozen(own.inner)).toBe(true)
    expect(Object.isFrozen(Object.prototype)).toBe(false)
  })

  it('leaves primitives untouched and handles shared subtrees', () => {
    expect(deepFreeze(3)).toBe(3)
    expect(deepFreeze(null)).toBeNull()
    const shared = { x: [1] }
    const value = deepFreeze({ a: shared, b: shared })
    expect(Object.isFrozen(value.b.x)).toBe(true)
  })
})
