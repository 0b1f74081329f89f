import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

import { coreEventSchemas } from '../src/core-events.ts'
import { envelopeSchema } from '../src/envelope.ts'
import { fastCoreData, fastEnvelope } from '../src/fast-validate.ts'
import { parseEvent, SessionEventsError } from '../src/index.ts'

/**
 * The fast path may only say "valid" where zod says valid: each check is held to its schema
 * on valid samples with random fields replaced by awkward values (wrong types, bounds, class
 * instances, null-prototype objects, missing keys).
 */

const time = '2026-01-01T00:00:00.000Z'

/** One valid `data` per core type the fast path knows, with every optional field present. */
const VALID: Readonly<Record<string, unknown>> = {
  'turn/start': { turn: 1 },
  'turn/end': { turn: 1, reason: 'completed' },
  'system/message': { message: { role: 'system', content: 'be brief', name: 'developer' } },
  'user/message': {
    message: {
      role: 'user',
      content: [
        { type: 'text', text: 'hi' },
        { type: 'text', text: '' },
      ],
      name: 'u',
    },
  },
  'assistant/message': {
    message: {
      role: 'assistant',
      content: 'ok',
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'bash', arguments: '{}' } }],
      reasoning_content: 'because',
      name: 'a',
    },
    usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, cached_tokens: 0 },
    interrupted: false,
  },
  'tool/call': { callId: 'c1', name: 'bash', arguments: '{"a":1}' },
  'tool/result': {
    message: { role: 'tool', tool_call_id: 'c1', content: 'out' },
    isError: true,
    code: 'TOOL_OUTCOME_UNKNOWN',
  },
  'compaction/start': { compactionId: 'k', startSeq: 0, endSeq: 2, reason: 'auto' },
  'compaction/summary': { compactionId: 'k', summary: 's', usage: { prompt_tokens: 5 } },
  'compaction/end': { compactionId: 'k', replacementSeq: 3, hiddenCount: 2 },
}

class Box {
  readonly turn = 1
}

/** Values a field may be replaced with: every JSON kind, bounds, and what only zod may judge. */
const awkward = fc.constantFrom<unknown>(
  undefined,
  null,
  '',
  'x',
  'completed',
  'function',
  'text',
  'image_url',
  'tool',
  'user',
  'assistant',
  'system',
  'replace',
  'append',
  0,
  -0,
  1,
  -1,
  1.5,
  2 ** 53,
  Number.MAX_SAFE_INTEGER,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  true,
  false,
  [],
  [1],
  [undefined],
  {},
  { type: 'text', text: 't' },
  { type: 'image_url', image_url: { url: 'u' } },
  new Date(0),
  new Box(),
  Object.create(null) as object,
  'x'.repeat(201),
)

/** Every path to a value inside `value` (the empty path is the value itself). */
function pathsOf(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  const found: (string | number)[][] = [prefix]
  if (typeof value !== 'object' || value === null) return found
  for (const key of Object.keys(value)) {
    const child = (value as Record<string, unknown>)[key]
    found.push(...pathsOf(child, [...prefix, Array.isArray(value) ? Number(key) : key]))
  }
  return found
}

/** A deep copy of `value` with the value at `path` replaced (or deleted, for `delete`). */
function replaced(value: unknown, path: readonly (string | number)[], by: unknown, remove: boolean): unknown {
  if (path.length === 0) return by
  const copy = (
    Array.isArray(value)
      ? [...(value as unknown[])]
      : Object.create(Object.getPrototypeOf(value) as object | null)
  ) as Record<string | number, unknown>
  if (!Array.isArray(value)) {
    for (const key of Object.keys(value as object)) {
      Object.defineProperty(copy, key, {
        value: (value as Record<string, unknown>)[key],
        enumerable: true,
        writable: true,
        configurable: true,
      })
    }
  }
  const [head, ...rest] = path
  if (remove && rest.length === 0) delete copy[head!]
  else copy[head!] = replaced(copy[head!], rest, by, remove)
  return copy
}

/** A valid sample with up to three random fields replaced, deleted, or moved to a null-prototype copy. */
function mutated(sample: unknown): fc.Arbitrary<unknown> {
  const paths = pathsOf(sample)
  const mutation = fc.record({
    path: fc.constantFrom(...paths),
    by: awkward,
    remove: fc.boolean(),
  })
  return fc.array(mutation, { maxLength: 3 }).map((mutations) => {
    let value = sample
    for (const { path, by, remove } of mutations) {
      const still = pathsOf(value).some((candidate) => candidate.join('\u0000') === path.join('\u0000'))
      if (still) value = replaced(value, path, by, remove)
    }
    return value
  })
}

function zodAccepts(type: string, data: unknown): boolean {
  return coreEventSchemas[type as keyof typeof coreEventSchemas].safeParse(data).success
}

const SAMPLE_ENVELOPE = {
  seq: 7,
  time,
  type: 'user/message',
  data: { x: 1 },
  surfaceOp: { op: 'replace', startSeq: 1, endSeq: 2 },
  sourceEventSeqs: [1, 2],
  ignorable: false,
}

describe('the fast validation path agrees with the zod schemas', () => {
  it('fastCoreData says valid only where the core schema accepts (every type, mutated samples)', () => {
    for (const [type, sample] of Object.entries(VALID)) {
      expect(fastCoreData(type, sample), type).toBe(true)
      expect(zodAccepts(type, sample), type).toBe(true)
      fc.assert(
        fc.property(mutated(sample), (data) => {
          if (fastCoreData(type, data)) expect(zodAccepts(type, data), `${type}: ${String(data)}`).toBe(true)
        }),
        { numRuns: 3000 },
      )
    }
  })

  it('fastCoreData accepts the common valid shapes and declines what it does not prove', () => {
    expect(fastCoreData('user/message', { message: { role: 'user', content: 'plain' } })).toBe(true)
    expect(fastCoreData('assistant/message', { message: { role: 'assistant', content: null } })).toBe(true)
    // Valid, but left to zod: an image part, a class instance, a rare or plugin type.
    const image = { message: { role: 'user', content: [{ type: 'image_url', image_url: { url: 'u' } }] } }
    expect(fastCoreData('user/message', image)).toBe(false)
    expect(zodAccepts('user/message', image)).toBe(true)
    expect(fastCoreData('turn/start', new Box())).toBe(false)
    expect(zodAccepts('turn/start', new Box())).toBe(true)
    expect(fastCoreData('session/end-seed', {})).toBe(false)
    expect(fastCoreData('import/source-record', {})).toBe(false)
    expect(fastCoreData('toString', {})).toBe(false)
  })

  it('fastEnvelope says valid only where the envelope schema accepts, and returns what zod returns', () => {
    expect(fastEnvelope(SAMPLE_ENVELOPE)).toBeDefined()
    fc.assert(
      fc.property(mutated(SAMPLE_ENVELOPE), (value) => {
        const fast = fastEnvelope(value)
        if (fast === undefined) return
        const parsed = envelopeSchema.safeParse(value)
        expect(parsed.success).toBe(true)
        if (parsed.success) expect(fast).toEqual(parsed.data)
      }),
      { numRuns: 5000 },
    )
  })

  it('parseEvent refuses exactly as before: zod words the error for what the fast path declines', () => {
    const refusal = (value: unknown): SessionEventsError => {
      try {
        parseEvent(value)
      } catch (error) {
        if (SessionEventsError.is(error)) return error
        throw error
      }
      throw new Error('expected a refusal')
    }
    const bad = refusal({ seq: 0, time, type: 'turn/end', data: { turn: 1, reason: 'bored' } })
    expect(bad).toMatchObject({ code: 'INVALID_EVENT', field: 'data.reason' })
    expect(refusal({ seq: 1.5, time, type: 'turn/start', data: { turn: 1 } })).toMatchObject({
      code: 'INVALID_EVENT',
      field: 'seq',
    })
    const event = { seq: 3, time, type: 'turn/start', data: { turn: 1 } }
    expect(parseEvent(event)).toBe(event)
  })

  it('checks every time, whatever time it accepted just before (the last accepted one is remembered)', () => {
    const envelope = (at: unknown): unknown =>
      fastEnvelope({ seq: 0, time: at, type: 'turn/start', data: {} })
    for (const bad of ['', '2026-01-01', `${time} `, 'yesterday']) {
      expect(envelope(time)).toBeDefined()
      expect(envelope(bad)).toBeUndefined()
      expect(envelope(time)).toBeDefined()
      expect(envelope(bad)).toBeUndefined()
    }
  })
})
