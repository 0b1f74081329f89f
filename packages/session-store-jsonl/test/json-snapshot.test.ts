import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

import { snapshotJson } from '../src/json-snapshot.ts'

const LIMITS = { maxDepth: 256, maxEntries: 5_000_000 }

/** Every object and array inside `value` (the value itself included). */
function objectsOf(value: unknown, found = new Set<object>()): Set<object> {
  if (typeof value !== 'object' || value === null || found.has(value)) return found
  found.add(value)
  for (const key of Object.keys(value)) objectsOf((value as Record<string, unknown>)[key], found)
  return found
}

describe('snapshotJson (the append path copy)', () => {
  it('copies any JSON value exactly (same keys in the same order) and shares no object with it', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const copy = snapshotJson(value, LIMITS)
        expect(JSON.stringify(copy)).toBe(JSON.stringify(value))
        expect(copy).toEqual(value)
        const originals = objectsOf(value)
        for (const object of objectsOf(copy)) expect(originals.has(object)).toBe(false)
      }),
      { numRuns: 500 },
    )
  })

  it('freezes every copy it makes (the projection then stops its deep freeze at the root), never the caller objects', () => {
    const value = { a: [{ b: 1 }, 'x'], c: { d: { e: null } } }
    const copy = snapshotJson(value, LIMITS) as typeof value
    for (const object of objectsOf(copy)) expect(Object.isFrozen(object)).toBe(true)
    for (const object of objectsOf(value)) expect(Object.isFrozen(object)).toBe(false)
    const date = new Date(0)
    const kept = snapshotJson({ date }, LIMITS) as { date: Date }
    expect(kept.date).toBe(date)
    expect(Object.isFrozen(date)).toBe(false)
  })

  it('keeps an own "__proto__" key as data and a null prototype as null', () => {
    const parsed = JSON.parse('{"a":{"__proto__":{"polluted":true},"b":[1,{"__proto__":2}]}}') as unknown
    const copy = snapshotJson(parsed, LIMITS) as { a: Record<string, unknown> }
    expect(Object.getPrototypeOf(copy.a)).toBe(Object.prototype)
    expect(Object.keys(copy.a)).toEqual(['__proto__', 'b'])
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined()
    expect(JSON.stringify(copy)).toBe(JSON.stringify(parsed))
    const bare = Object.create(null) as Record<string, unknown>
    bare['x'] = { y: 1 }
    const copied = snapshotJson({ bare }, LIMITS) as { bare: Record<string, unknown> }
    expect(Object.getPrototypeOf(copied.bare)).toBeNull()
    expect(copied.bare).not.toBe(bare)
    expect(copied.bare['x']).toEqual({ y: 1 })
  })

  it('reads each property once, symbol keys included in no read, and copies no symbol key', () => {
    let reads = 0
    const symbol = Symbol('s')
    const source: Record<string | symbol, unknown> = { plain: 1 }
    Object.defineProperty(source, 'getter', {
      enumerable: true,
      get: () => {
        reads += 1
        return { n: reads }
      },
    })
    Object.defineProperty(source, symbol, {
      enumerable: true,
      get: () => {
        throw new Error('a symbol key must not be read')
      },
    })
    const copy = snapshotJson({ data: source }, LIMITS) as { data: Record<string | symbol, unknown> }
    expect(reads).toBe(1)
    expect(copy.data).toEqual({ plain: 1, getter: { n: 1 } })
    expect(Object.getOwnPropertySymbols(copy.data)).toEqual([])
    expect(Object.getOwnPropertyDescriptor(copy.data, 'getter')).toMatchObject({
      value: { n: 1 },
      enumerable: true,
    })
  })

  it('leaves what the JSON check refuses in place: class instances, cycles, and values past the limits', () => {
    const date = new Date(0)
    const cyclic: Record<string, unknown> = { a: 1 }
    cyclic['self'] = cyclic
    const copy = snapshotJson({ date, cyclic }, LIMITS) as { date: unknown; cyclic: Record<string, unknown> }
    expect(copy.date).toBe(date)
    expect(copy.cyclic).not.toBe(cyclic)
    expect(copy.cyclic['self']).toBe(cyclic)
    const deep = { a: { b: { c: { d: 1 } } } }
    const shallow = snapshotJson(deep, { maxDepth: 2, maxEntries: 100 }) as { a: { b: unknown } }
    expect(shallow).not.toBe(deep)
    expect(shallow.a).not.toBe(deep.a)
    expect(shallow.a.b).toBe(deep.a.b)
    const shared = { s: 1 }
    const dag = snapshotJson({ x: shared, y: shared }, LIMITS) as { x: unknown; y: unknown }
    expect(dag.x).not.toBe(shared)
    expect(dag.y).not.toBe(shared)
  })

  it('copies arrays element by element, holes becoming undefined elements (refused by the check)', () => {
    const holey = [1, , 3] // eslint-disable-line no-sparse-arrays
    const copy = snapshotJson({ holey }, LIMITS) as { holey: unknown[] }
    expect(copy.holey).toHaveLength(3)
    expect(1 in copy.holey).toBe(true)
    expect(copy.holey[1]).toBeUndefined()
  })
})
