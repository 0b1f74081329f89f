import { fc } from '@fast-check/vitest'
import { describe, expect, it } from 'vitest'

import { assertJsonValue } from '@agent-ledger/session-events'

import { createMemoryBackend, createSessionStore } from '../src/index.ts'
import { snapshotInput } from '../src/snapshot.ts'

const limits = { maxDepth: 8, maxEntries: 1000 }

describe('snapshotInput: the input is read once', () => {
  it('calls every getter exactly once and copies plain data', () => {
    let calls = 0
    const input = {
      get value(): number {
        calls += 1
        return calls
      },
      list: [
        1,
        {
          get inner(): string {
            calls += 1
            return 'x'
          },
        },
      ],
    }
    const copy = snapshotInput(input, limits).copy as { value: number; list: [number, { inner: string }] }
    expect(calls).toBe(2)
    expect(copy).toEqual({ value: 1, list: [1, { inner: 'x' }] })
    expect('get' in (Object.getOwnPropertyDescriptor(copy, 'value') ?? {})).toBe(false)
    expect(copy.value).toBe(1)
    expect(calls).toBe(2)
  })

  it('keeps an own __proto__ key as data, never as the prototype', () => {
    const input = JSON.parse('{"__proto__":{"polluted":true},"a":1}') as Record<string, unknown>
    const copy = snapshotInput(input, limits).copy as Record<string, unknown>
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype)
    expect(Object.hasOwn(copy, '__proto__')).toBe(true)
    expect(JSON.stringify(copy)).toBe('{"__proto__":{"polluted":true},"a":1}')
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined()
  })

  it('keeps class instances and cycles for the validator to refuse', () => {
    const date = new Date(0)
    expect((snapshotInput({ date }, limits).copy as { date: Date }).date).toBe(date)
    const cyclic: Record<string, unknown> = { a: 1 }
    cyclic['self'] = cyclic
    const copy = snapshotInput(cyclic, limits).copy as Record<string, unknown>
    expect(copy['self']).toBe(copy)
  })
})

describe('snapshotInput: nesting past the recursion bound', () => {
  /** `levels` objects nested in `{ next }`, innermost `{ leaf }`. */
  const nested = (levels: number): Record<string, unknown> => {
    let value: Record<string, unknown> = { leaf: 'secret sk-ant-0123456789abcdef' }
    for (let level = 1; level < levels; level += 1) value = { next: value, level }
    return value
  }
  const redaction = {
    policyVersion: 'test',
    redact: (text: string): string => text.replace(/sk-ant-\w+/, 'X'),
  }

  it('copies, redacts and freezes every level of a deep input, and stays plain within maxDepth', () => {
    const input = { seq: 0, data: nested(200) }
    const { copy, plain } = snapshotInput(
      input,
      { maxDepth: 256, maxEntries: 10_000 },
      { redaction, freeze: true },
    )
    expect(plain).toBe(true)
    let original = input.data
    let copied = (copy as { data: Record<string, unknown> }).data
    let levels = 0
    while (original['next'] !== undefined) {
      expect(copied).not.toBe(original)
      expect(Object.isFrozen(copied)).toBe(true)
      expect(copied['level']).toBe(original['level'])
      original = original['next'] as Record<string, unknown>
      copied = copied['next'] as Record<string, unknown>
      levels += 1
    }
    expect(levels).toBe(199)
    expect(copied['leaf']).toBe('secret X')
    expect(original['leaf']).toBe('secret sk-ant-0123456789abcdef')
  })

  it('refuses data deeper than maxDepth without growing the call stack (maxDepth 30,000)', () => {
    const input = { seq: 0, data: nested(40_000) }
    const { plain } = snapshotInput(input, { maxDepth: 30_000, maxEntries: 100_000 })
    expect(plain).toBe(false)
    const within = snapshotInput({ seq: 0, data: nested(20_000) }, { maxDepth: 30_000, maxEntries: 100_000 })
    expect(within.plain).toBe(true)
  })
})

describe('snapshotInput: the plain flag (the append fast path)', () => {
  /** Key order and values, as the line holds them: what the fast path may skip reproducing. */
  const sameAsParsedBack = (copy: unknown): boolean => {
    const back: unknown = JSON.parse(JSON.stringify(copy))
    const walk = (left: unknown, right: unknown): boolean => {
      if (typeof left !== 'object' || left === null) return Object.is(left, right)
      if (typeof right !== 'object' || right === null || Array.isArray(left) !== Array.isArray(right))
        return false
      const leftKeys = Object.keys(left)
      const rightKeys = Object.keys(right)
      if (leftKeys.join('\u0000') !== rightKeys.join('\u0000')) return false
      return leftKeys.every((key) =>
        walk((left as Record<string, unknown>)[key], (right as Record<string, unknown>)[key]),
      )
    }
    return walk(copy, back)
  }

  it('answers plain only for data the JSON check accepts and a parse-back reproduces exactly', () => {
    const value = fc.oneof(
      fc.jsonValue({ maxDepth: 5 }),
      fc.anything({
        maxDepth: 4,
        withBigInt: true,
        withDate: true,
        withNullPrototype: true,
        withSparseArray: true,
      }),
    )
    fc.assert(
      fc.property(value, (input) => {
        const { copy, plain } = snapshotInput({ seq: 0, data: input }, { maxDepth: 5, maxEntries: 40 })
        if (!plain) return
        expect(() => assertJsonValue(copy, { maxDepth: 5, maxEntries: 40 }, 'event')).not.toThrow()
        expect(sameAsParsedBack(copy)).toBe(true)
      }),
      { numRuns: 2000 },
    )
  })

  it('is not plain for -0, undefined members, a shared object, or data past the limits', () => {
    const shared = { a: 1 }
    const cases: unknown[] = [
      { n: -0 },
      { u: undefined },
      [1, undefined],
      { x: shared, y: shared },
      { a: { b: { c: { d: 1 } } } },
      Array.from({ length: 50 }, (_, index) => index),
      { n: Number.POSITIVE_INFINITY },
      { f: () => 1 },
    ]
    for (const data of cases) {
      expect(snapshotInput({ data }, { maxDepth: 3, maxEntries: 40 }).plain).toBe(false)
    }
    expect(
      snapshotInput({ data: { a: [1, 'x', true, null, { b: 2.5 }] } }, { maxDepth: 4, maxEntries: 40 }).plain,
    ).toBe(true)
  })
})

describe('append refuses what JSON cannot hold, reading the input once', () => {
  it('refuses NaN, BigInt, class instances, cycles, undefined in arrays and too deep data', async () => {
    const store = createSessionStore({
      backend: createMemoryBackend(),
      clock: () => '2026-01-01T00:00:00.000Z',
      limits: { maxDepth: 6 },
    })
    const writer = await store.create({ id: 'json' })
    const cyclic: Record<string, unknown> = {}
    cyclic['self'] = cyclic
    const deep = { a: { b: { c: { d: { e: { f: 1 } } } } } }
    const cases: [unknown, string][] = [
      [{ turn: Number.NaN }, 'UNSERIALIZABLE_EVENT'],
      [{ turn: 1n }, 'UNSERIALIZABLE_EVENT'],
      [{ turn: new Date(0) }, 'UNSERIALIZABLE_EVENT'],
      [cyclic, 'UNSERIALIZABLE_EVENT'],
      [{ turn: 1, list: [undefined] }, 'UNSERIALIZABLE_EVENT'],
      [{ turn: 1, deep }, 'TOO_DEEP'],
    ]
    for (const [data, code] of cases) {
      expect(() => writer.append({ type: 'turn/start', data } as never)).toThrow(
        expect.objectContaining({ code }),
      )
    }
    expect(writer.projection.nextSeq).toBe(0)
    await writer.close()
  })
})
