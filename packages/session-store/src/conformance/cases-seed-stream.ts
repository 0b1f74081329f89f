/**
 * Conformance cases: a create whose seed is a stream of batches (port and store level):
 * byte-identical to the array seed, nothing visible before the publish, nothing published
 * when the stream throws or the signal aborts midway (and a retry then succeeds),
 * `SESSION_EXISTS` before the first batch is taken and at the publish.
 */
import type { LoggedEvent } from '@agent-ledger/session-events'

import { crc32c } from '../crc32c.ts'
import { DEFAULT_LIMITS } from '../event-codec.ts'
import { buildHeader } from '../header.ts'
import type { SessionBackend } from '../port.ts'
import type { SessionStore } from '../store-api.ts'
import { ConformanceError, deepEqual, equal, ok, rejects } from './assert.ts'
import { abortController, lines } from './harness.ts'
import type { Case } from './harness.ts'

/** A seed of `count` events: turns of a user message, a tool call and its result, an answer. */
function seedEvents(count: number): LoggedEvent[] {
  const out: Record<string, unknown>[] = []
  const time = (seq: number): string => new Date(Date.UTC(2026, 1, 1) + seq * 1000).toISOString()
  for (let turn = 1; out.length < count; turn += 1) {
    const callId = `call-${turn}`
    const turnEvents: Record<string, unknown>[] = [
      { type: 'turn/start', data: { turn } },
      {
        type: 'user/message',
        data: { message: { role: 'user', content: `step ${turn} ${'x'.repeat(turn % 40)}` } },
      },
      {
        type: 'assistant/message',
        data: {
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: callId, type: 'function', function: { name: 'ls', arguments: '{}' } }],
          },
        },
      },
      { type: 'tool/call', data: { callId, name: 'ls', arguments: '{}' } },
      { type: 'tool/result', data: { message: { role: 'tool', tool_call_id: callId, content: `r${turn}` } } },
      { type: 'assistant/message', data: { message: { role: 'assistant', content: `done ${turn}` } } },
      { type: 'turn/end', data: { turn, reason: 'completed' } },
    ]
    for (const event of turnEvents) out.push(event)
  }
  // Whole turns only (a seed cut inside a turn would be repaired on open: another test).
  while (out.length % 7 !== 0) out.pop()
  return out.map((event, seq) => ({ ...event, seq, time: time(seq) })) as unknown as LoggedEvent[]
}

/** Uneven batches (an empty one included) of `events`. */
function batchesOf<T>(items: readonly T[]): T[][] {
  const sizes = [1, 6, 0, 13, 2, 40]
  const out: T[][] = []
  let at = 0
  for (let index = 0; at < items.length; index += 1) {
    const size = sizes[index % sizes.length]!
    out.push(items.slice(at, at + size))
    at += size
  }
  return out
}

/**
 * An async iterable over `batches` that calls `pause(n)` before handing out batch `n`
 * (0-based), and counts how many batches were taken.
 */
function streamOf<T>(
  batches: readonly T[][],
  pause: (index: number) => Promise<void> | void = () => undefined,
): AsyncIterable<T[]> & { taken: number } {
  const stream = {
    taken: 0,
    async *[Symbol.asyncIterator](): AsyncGenerator<T[], void, undefined> {
      for (const [index, batch] of batches.entries()) {
        await pause(index)
        stream.taken += 1
        yield batch
      }
    },
  }
  return stream
}

/** Fails unless nothing of session `sid` is visible through `backend`. */
async function assertInvisible(backend: SessionBackend, sid: string, what: string): Promise<void> {
  await rejects(() => backend.head(sid), 'SESSION_NOT_FOUND', `${what}: head`)
  await rejects(() => backend.readHeader(sid), 'SESSION_NOT_FOUND', `${what}: readHeader`)
  const page = await backend.list({ limit: 1000 })
  ok(
    !page.entries.some((entry) => entry.id === sid),
    `${what}: list shows no entry (not even a problem) for ${sid}`,
  )
}

/** Creates `sid` with the whole seed as an array, closes it, and returns its lines. */
async function arrayCreated(
  { store, backend }: { readonly store: SessionStore; readonly backend: SessionBackend },
  sid: string,
  seed: LoggedEvent[],
) {
  const writer = await store.create({ id: sid, header: { cwd: '/seed' }, seed })
  await writer.close()
  return lines(backend, sid)
}

/** A create whose seed is a stream: port and store contract. */
export const SEED_STREAM_CASES: readonly Case[] = [
  {
    title:
      'create with a streamed seed: the same lines, byte for byte, and head as the array seed (store and port)',
    plainOnly: 'sealed lines differ run to run (a random nonce per line)',
    run: async ({ store, backend, id }) => {
      const s = store()
      const seed = seedEvents(180)
      const expected = await arrayCreated({ store: s, backend }, id('array'), seed)
      const streamed = id('stream')
      const writer = await s.create({
        id: streamed,
        header: { cwd: '/seed' },
        seed: streamOf(batchesOf(seed)),
      })
      equal(writer.projection.nextSeq, seed.length, 'the writer continues after the streamed seed')
      await writer.close()
      deepEqual(await lines(backend, streamed), expected, 'streamed lines')
      const head = await backend.head(streamed)
      equal(head.nextSeq, seed.length, 'head nextSeq')
      equal(head.lastCrc, (await backend.head(id('array'))).lastCrc, 'head lastCrc')
      // The port itself: the same lines as an array and as a stream, lastCrc left to the backend.
      const portHeader = (portId: string) =>
        buildHeader(
          { cwd: '/seed' },
          {
            id: portId,
            createdAt: '2026-02-01T00:00:00.000Z',
            redaction: null,
            limits: DEFAULT_LIMITS,
            crc32c,
          },
        )
      const arrayId = id('port-array')
      const a = portHeader(arrayId)
      await backend.create({
        id: arrayId,
        headerLine: a.line,
        header: a.header,
        lines: expected,
        lastCrc: head.lastCrc,
      })
      const streamId = id('port-stream')
      const b = portHeader(streamId)
      await backend.create({
        id: streamId,
        headerLine: b.line,
        header: b.header,
        lines: streamOf(batchesOf(expected)),
      })
      deepEqual(await lines(backend, streamId), await lines(backend, arrayId), 'port-level streamed lines')
      equal((await backend.readHeader(streamId)).line, b.line, 'port-level header line')
      equal(
        (await backend.head(streamId)).lastCrc,
        head.lastCrc,
        'port-level lastCrc taken from the last line',
      )
      equal((await backend.head(streamId)).nextSeq, expected.length, 'port-level nextSeq')
      const verified = await s.verify(streamed)
      equal(verified.status, 'ok', 'the streamed session verifies')
    },
  },
  {
    title:
      'streamed seed: nothing visible before the publish; an iterable that throws midway publishes nothing and a retry succeeds',
    plainOnly:
      'it compares the lines of the retry byte for byte with those of another create (a random nonce per line)',
    run: async ({ store, backend, id, second }) => {
      const s = store()
      const seed = seedEvents(140)
      const sid = id('throws')
      const other = await second()
      const boom = new Error('the source broke at batch 4')
      const failing = streamOf(batchesOf(seed), async (index) => {
        if (index === 3) await assertInvisible(other, sid, 'mid-stream, from another instance')
        if (index === 4) throw boom
      })
      let caught: unknown
      try {
        await s.create({ id: sid, seed: failing })
      } catch (error) {
        caught = error
      }
      ok(caught === boom, `the iterable's own error is rethrown unchanged (found ${String(caught)})`)
      equal(failing.taken, 4, 'batches taken before the failure')
      await assertInvisible(backend, sid, 'after the failure')
      await assertInvisible(other, sid, 'after the failure, from another instance')
      const writer = await s.create({ id: sid, header: { cwd: '/seed' }, seed: streamOf(batchesOf(seed)) })
      await writer.close()
      deepEqual(
        await lines(backend, sid),
        await arrayCreated({ store: s, backend }, id('array'), seed),
        'the retry',
      )
    },
  },
  {
    title: 'streamed seed: an abort midway publishes nothing (ABORTED) and a retry succeeds',
    run: async ({ store, backend, id }) => {
      const s = store()
      const seed = seedEvents(140)
      const sid = id('abort')
      const controller = abortController()
      const stream = streamOf(batchesOf(seed), (index) => {
        if (index === 3) controller.abort(new Error('operator stop'))
      })
      await rejects(
        () => s.create({ id: sid, seed: stream, signal: controller.signal }),
        'ABORTED',
        'aborted create',
      )
      ok(stream.taken <= 4, `the stream stopped at the abort (took ${stream.taken} batches)`)
      await assertInvisible(backend, sid, 'after the abort')
      const writer = await s.create({ id: sid, header: { cwd: '/seed' }, seed: streamOf(batchesOf(seed)) })
      await writer.close()
      equal((await backend.head(sid)).nextSeq, seed.length, 'the retry published every event')
    },
  },
  {
    title:
      'streamed seed: SESSION_EXISTS before the first batch is taken, and at the publish when another create won',
    run: async ({ store, backend, id, second }) => {
      const s = store()
      const seed = seedEvents(70)
      const sid = id('exists')
      const expected = await arrayCreated({ store: s, backend }, sid, seed)
      const late = streamOf(batchesOf(seed))
      await rejects(() => s.create({ id: sid, seed: late }), 'SESSION_EXISTS', 'create over an existing id')
      equal(late.taken, 0, 'no batch was taken for an existing id')
      deepEqual(await lines(backend, sid), expected, 'the existing session is untouched')
      // Two creates of one new id: the first pauses mid-stream while the second runs.
      const race = id('race')
      const other = store('other', await second())
      let release!: () => void
      const gate = new Promise<void>((resolve) => {
        release = resolve
      })
      let paused!: () => void
      const reached = new Promise<void>((resolve) => {
        paused = resolve
      })
      const first = s.create({
        id: race,
        seed: streamOf(batchesOf(seed), async (index) => {
          if (index === 2) {
            paused()
            await gate
          }
        }),
      })
      await reached
      const secondCreate = other.create({ id: race, seed: streamOf(batchesOf(seedEvents(14))) })
      // Let the second run as far as it can (a backend may hold it at the id until the first ends).
      await Promise.race([
        secondCreate.then(
          () => undefined,
          () => undefined,
        ),
        new Promise<void>((resolve) => setTimeout(() => resolve(), 200)),
      ])
      release()
      const outcomes = await Promise.allSettled([first, secondCreate])
      const won = outcomes.filter((outcome) => outcome.status === 'fulfilled')
      equal(won.length, 1, 'exactly one create of the id succeeds')
      for (const outcome of outcomes) {
        if (outcome.status === 'fulfilled') await outcome.value.close()
        else if ((outcome.reason as { code?: unknown }).code !== 'SESSION_EXISTS') {
          throw new ConformanceError(
            `the losing create: expected SESSION_EXISTS, found ${String(outcome.reason)}`,
          )
        }
      }
      const stored = await lines(backend, race)
      ok(
        stored.length === seed.length || stored.length === 14,
        `the winner's seed, whole (found ${stored.length} lines)`,
      )
    },
  },
]

declare const setTimeout: (run: () => void, ms: number) => unknown
