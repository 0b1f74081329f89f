/**
 * Issue 7 property: for random logs written through the store (appends, replaces, tool calls
 * and results, orphan results, turns, plugin and ignorable events, random flushes) and a
 * random checkpoint position N, opening with the checkpoint gives exactly what a full replay
 * gives: the header, lastSeq, torn tail, error, pending calls, every counter (scan and
 * projection), the snapshot, `deriveMessages()` and the repair state; and `readEvents` from
 * any seq gives the same events. Through the one store API (issue 23): the core over the
 * JSONL backend, its checkpoint `core.checkpoint`.
 */
import fc from 'fast-check'
import { z } from 'zod'
import { createEventRegistry, defineEventType } from '@agent-ledger/session-events'
import type { EventInput } from '@agent-ledger/session-events'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import type { SessionReadResult, SessionWriter } from '@agent-ledger/session-store'
import type { JsonlStoreOptions } from '../src/index.ts'
import { collect, coreTestStore, makeTempDir } from './support/sessions.ts'

const registry = createEventRegistry([
  defineEventType('test/note' as never, z.object({ text: z.string() }) as never),
])

type Step =
  | { readonly kind: 'system' | 'user' | 'plugin' | 'ignorable' | 'stray-result'; readonly text: string }
  | { readonly kind: 'assistant'; readonly calls: number; readonly text: string | null }
  | { readonly kind: 'tool-call' | 'tool-result'; readonly pick: number; readonly text: string }
  | { readonly kind: 'turn-start' | 'turn-end' | 'flush' }
  | { readonly kind: 'replace'; readonly from: number; readonly span: number; readonly text: string }
  | { readonly kind: 'tool-replace'; readonly pick: number; readonly text: string }

const text = fc.string({ unit: 'grapheme', maxLength: 24 })
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('user' as const), text }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('system' as const), text }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('assistant' as const),
      calls: fc.integer({ min: 0, max: 2 }),
      text: fc.option(text, { nil: null }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('tool-call' as const), pick: fc.nat(), text }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('tool-result' as const), pick: fc.nat(), text }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('stray-result' as const), text }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constantFrom('turn-start' as const, 'turn-end' as const) }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constantFrom('plugin' as const, 'ignorable' as const), text }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('flush' as const) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('replace' as const),
      from: fc.nat(),
      span: fc.integer({ min: 1, max: 3 }),
      text,
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('tool-replace' as const), pick: fc.nat(), text }) },
)

let turn = 0

/** The event a step stands for, given the writer's current state (null when it has nothing to act on). */
function inputFor(writer: SessionWriter, item: Step): EventInput | null {
  const projection = writer.projection
  const pending = projection.repairState.pendingCalls
  const seq = projection.nextSeq
  switch (item.kind) {
    case 'system':
      return { type: 'system/message', data: { message: { role: 'system', content: item.text } } }
    case 'user':
      return { type: 'user/message', data: { message: { role: 'user', content: item.text } } }
    case 'assistant': {
      const calls = Array.from({ length: item.calls }, (_, index) => ({
        id: `call_${seq}_${index}`,
        type: 'function' as const,
        function: { name: 'read_file', arguments: `{"n":${index}}` },
      }))
      return {
        type: 'assistant/message',
        data: {
          message:
            calls.length === 0
              ? { role: 'assistant', content: item.text ?? '' }
              : { role: 'assistant', content: item.text, tool_calls: calls },
        },
      }
    }
    case 'tool-call': {
      const call = pending[item.pick % Math.max(pending.length, 1)]
      if (call === undefined) return null
      return { type: 'tool/call', data: { callId: call.callId, name: call.name, arguments: call.arguments } }
    }
    case 'tool-result': {
      const call = pending[item.pick % Math.max(pending.length, 1)]
      if (call === undefined) return null
      return {
        type: 'tool/result',
        data: { message: { role: 'tool', tool_call_id: call.callId, content: item.text } },
      }
    }
    case 'stray-result':
      return {
        type: 'tool/result',
        data: { message: { role: 'tool', tool_call_id: 'nobody', content: item.text } },
      }
    case 'turn-start':
      turn += 1
      return { type: 'turn/start', data: { turn } }
    case 'turn-end':
      return { type: 'turn/end', data: { turn, reason: 'completed' } }
    case 'plugin':
      return { type: 'test/note' as never, data: { text: item.text } as never }
    case 'ignorable':
      return { type: 'future/thing' as never, data: { text: item.text } as never, ignorable: true }
    case 'replace': {
      const surface = projection.surface()
      if (surface.length === 0) return null
      const start = item.from % surface.length
      const end = Math.min(surface.length - 1, start + item.span - 1)
      const nodes = surface.slice(start, end + 1)
      const system = start === 0 && surface[0]!.type === 'system/message'
      return {
        type: system ? 'system/message' : 'user/message',
        data: { message: { role: system ? 'system' : 'user', content: `summary: ${item.text}` } },
        surfaceOp: { op: 'replace', startSeq: nodes[0]!.seq, endSeq: nodes.at(-1)!.seq },
        sourceEventSeqs: nodes.map((node) => node.seq),
      } as EventInput
    }
    case 'tool-replace': {
      const results = projection.surface().filter((node) => node.type === 'tool/result')
      const node = results[item.pick % Math.max(results.length, 1)]
      if (node === undefined) return null
      const message = node.message as { tool_call_id: string }
      return {
        type: 'tool/result',
        data: {
          message: { role: 'tool', tool_call_id: message.tool_call_id, content: `[cut] ${item.text}` },
        },
        surfaceOp: { op: 'replace', startSeq: node.seq, endSeq: node.seq },
        sourceEventSeqs: [node.seq],
      }
    }
    case 'flush':
      return null
  }
}

/** Runs steps through a writer; steps the session rules refuse are skipped (append throws, nothing changes). */
async function run(writer: SessionWriter, steps: readonly Step[]): Promise<void> {
  for (const item of steps) {
    if (item.kind === 'flush') {
      await writer.flush()
      continue
    }
    const input = inputFor(writer, item)
    if (input === null) continue
    try {
      writer.append(input)
    } catch {
      // Refused by the projection rules: the log is unchanged.
    }
  }
}

function comparable(read: SessionReadResult): Record<string, unknown> {
  const { projection, checkpoint: _checkpoint, error, ...rest } = read
  return {
    ...rest,
    error:
      error === null ? null : { code: error.code, location: error.location, lastGoodSeq: error.lastGoodSeq },
    snapshot: projection.snapshot(),
    messages: projection.deriveMessages(),
    repairState: projection.repairState,
  }
}

let temp: { path: string; cleanup: () => void }
let counter = 0

beforeAll(() => {
  temp = makeTempDir('al-ckpt-prop-')
})

afterAll(() => {
  temp.cleanup()
})

describe('checkpoint property (issue 7)', () => {
  it(
    'for random logs and random checkpoint positions, a checkpointed open and readEvents equal a full replay',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(step, { minLength: 1, maxLength: 60 }),
          fc.array(step, { minLength: 0, maxLength: 40 }),
          fc.boolean(),
          fc.nat(),
          async (before, after, secondWithCheckpoints, fromPick) => {
            counter += 1
            const id = `prop-${counter}`
            const base: Partial<Omit<JsonlStoreOptions, 'root'>> = { registry, redaction: null }
            const withCheckpoints = coreTestStore(temp.path, {
              ...base,
              checkpoint: { minLogBytes: 0, everyEvents: 1_000_000, minIntervalMs: 0, minGrowthRatio: 0 },
            })
            const without = coreTestStore(temp.path, { ...base, checkpoint: { enabled: false } })
            // Events 0..N through a checkpointing writer (its close writes the checkpoint at N)...
            const first = await withCheckpoints.store.create({ id })
            await run(first, before)
            await first.close()
            // ...then the rest, with or without checkpoints (a stale checkpoint, or a newer one).
            const second = await (secondWithCheckpoints ? withCheckpoints : without).store.openWriter(id)
            await run(second, after)
            await second.close()
            const read = await withCheckpoints.store.openReader(id, { allowDamaged: true })
            const full = await without.store.openReader(id, { allowDamaged: true })
            if (first.durableSeq >= 0) expect(read.checkpoint).toMatchObject({ used: true })
            expect(comparable(read)).toEqual(comparable(full))
            const fromSeq = read.lastSeq < 0 ? 0 : fromPick % (read.lastSeq + 1)
            const events = await collect(withCheckpoints.store.readEvents(id, { fromSeq }))
            const fullEvents = await collect(without.store.readEvents(id, { fromSeq }))
            expect(events).toEqual(fullEvents)
            expect(withCheckpoints.warnings).toEqual([])
          },
        ),
        { numRuns: 60 },
      )
    },
    testTime(120_000),
  )
})
