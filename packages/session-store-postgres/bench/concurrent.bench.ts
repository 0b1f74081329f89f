/**
 * 8 concurrent writers on 8 sessions (`pnpm bench --only session-store-postgres`), each
 * through its OWN backend instance (its own connection pool, as 8 worker processes would
 * have), flushing batches of 10 events; the floor is 8 bare `INSERT ... SELECT unnest` streams
 * on 8 connections into a plain table with the same primary key, same lines, same server
 * (fsync on, loopback). Rounds alternate floor and ours; medians.
 *
 * - total events/s with 8 writers: ours vs the 8 bare streams (target >= 0.8);
 * - no cross-session blocking: the speed-up from 1 writer alone to 8 writers (total events/s
 *   with 8 / total events/s with 1), ours beside the same speed-up of the bare streams. A lock
 *   shared between sessions (a NOTIFY on every commit, a global sequence, a table lock) would
 *   serialize our writers and hold our speed-up near 1 while the floor's grows with group
 *   commit: target ours / floor >= 0.8;
 * - p99 flush latency with 8 writers, ours vs the bare streams' in the same rounds (target
 *   ours / floor <= 1.5; lower is better).
 */
import { randomBytes } from 'node:crypto'

import type pg from 'pg'

import type { BenchResult } from '../../../tooling/bench/types.ts'
import { openPostgresBackend } from '../src/index.ts'
import type { PostgresBackend } from '../src/index.ts'
import { createRequest, crcOf, seal } from '../test/support/lines.ts'
import { bareClient, FLOOR_INSERT_SQL, FLOOR_TABLE_SQL, median, percentile, withServer } from './support.ts'

const WRITERS = 8
const BATCH = 10
const FLUSHES = 60
const ROUNDS = 5

/** A ~350-byte event line (an assistant message with a tool call). */
function benchLine(seq: number): string {
  return seal(
    JSON.stringify({
      seq,
      time: '2026-01-01T00:00:00.000Z',
      type: 'assistant/message',
      data: {
        message: {
          role: 'assistant',
          content: `Reading the file to find where the flush policy is applied (step ${seq}).`,
          tool_calls: [{ id: `call_${seq}`, type: 'function', function: { name: 'read_file', arguments: '{"path":"src/writer.ts"}' } }],
        },
      },
    }),
  )
}

function batchAt(index: number): string[] {
  return Array.from({ length: BATCH }, (_, offset) => benchLine(index * BATCH + offset))
}

/** Writes one batch and resolves when it is durable. */
type Flush = (lines: string[]) => Promise<void>

async function ourWriter(backend: PostgresBackend): Promise<Flush> {
  const id = `bench-${randomBytes(5).toString('hex')}`
  await backend.create(createRequest(id))
  const { lease } = await backend.acquire(id, { owner: 'bench', leaseMs: 600_000 })
  let next = 0
  let counter = 0
  return async (lines) => {
    await backend.append(lease, {
      expectedSeq: next,
      lines,
      lastCrc: crcOf(lines[lines.length - 1] as string),
      batchId: `bench:${lease.epoch}:${counter++}`,
    })
    next += lines.length
  }
}

function bareWriter(client: pg.Client): Flush {
  const id = `floor-${randomBytes(5).toString('hex')}`
  let next = 0
  return async (lines) => {
    await client.query(FLOOR_INSERT_SQL, [id, next, lines])
    next += lines.length
  }
}

/** Runs the writers at once, FLUSHES flushes each: total events/s, and every flush's latency in ms. */
async function drive(writers: readonly Flush[]): Promise<{ eventsPerSecond: number; latencies: number[] }> {
  const latencies: number[] = []
  const started = performance.now()
  await Promise.all(
    writers.map(async (flush) => {
      for (let index = 0; index < FLUSHES; index++) {
        const lines = batchAt(index)
        const before = performance.now()
        await flush(lines)
        latencies.push(performance.now() - before)
      }
    }),
  )
  const seconds = (performance.now() - started) / 1000
  return { eventsPerSecond: (writers.length * FLUSHES * BATCH) / seconds, latencies }
}

interface Side {
  alone: number[]
  together: number[]
  latencies: number[]
}

/** Runs the figures (see the module comment). */
export async function run(): Promise<BenchResult[]> {
  return await withServer('session-store-postgres concurrent', async ({ url }) => {
    const backends: PostgresBackend[] = []
    const clients: pg.Client[] = []
    try {
      for (let index = 0; index < WRITERS; index++) {
        backends.push(await openPostgresBackend({ connectionString: url, poolSize: 2 }))
        clients.push(await bareClient(url))
      }
      await clients[0]!.query(FLOOR_TABLE_SQL)
      const ours: Side = { alone: [], together: [], latencies: [] }
      const floor: Side = { alone: [], together: [], latencies: [] }
      for (let round = 0; round < ROUNDS; round++) {
        floor.alone.push((await drive([bareWriter(clients[0]!)])).eventsPerSecond)
        ours.alone.push((await drive([await ourWriter(backends[0]!)])).eventsPerSecond)
        const bareRun = await drive(clients.map((client) => bareWriter(client)))
        floor.together.push(bareRun.eventsPerSecond)
        floor.latencies.push(...bareRun.latencies)
        const ourRun = await drive(await Promise.all(backends.map((backend) => ourWriter(backend))))
        ours.together.push(ourRun.eventsPerSecond)
        ours.latencies.push(...ourRun.latencies)
      }
      const total = median(ours.together) / median(floor.together)
      const ourSpeedup = median(ours.together) / median(ours.alone)
      const floorSpeedup = median(floor.together) / median(floor.alone)
      const ourP99 = percentile(ours.latencies, 0.99)
      const floorP99 = percentile(floor.latencies, 0.99)
      console.error(
        `bench: 1 writer alone: ours ${median(ours.alone).toFixed(0)} events/s, bare ${median(floor.alone).toFixed(0)} events/s; p50 flush with ${WRITERS}: ours ${percentile(ours.latencies, 0.5).toFixed(1)} ms, bare ${percentile(floor.latencies, 0.5).toFixed(1)} ms`,
      )
      return [
        {
          name: `postgres ${WRITERS} writers on ${WRITERS} sessions (${WRITERS} pools), batch ${BATCH}`,
          value: median(ours.together),
          unit: 'events/s',
          floor: { name: `${WRITERS} bare INSERT streams on ${WRITERS} connections`, value: median(floor.together) },
          ratio: total,
          target: '>= 0.8',
          met: total >= 0.8,
        },
        {
          name: `postgres no cross-session blocking: speed-up 1 -> ${WRITERS} writers`,
          value: ourSpeedup,
          unit: 'x',
          floor: { name: `speed-up of the bare INSERT streams, 1 -> ${WRITERS}`, value: floorSpeedup },
          ratio: ourSpeedup / floorSpeedup,
          target: '>= 0.8',
          met: ourSpeedup / floorSpeedup >= 0.8,
        },
        {
          name: `postgres p99 flush latency, ${WRITERS} writers, batch ${BATCH} (lower is better)`,
          value: ourP99,
          unit: 'ms',
          floor: { name: `p99 of the ${WRITERS} bare INSERT streams`, value: floorP99 },
          ratio: ourP99 / floorP99,
          target: '<= 1.5',
          met: ourP99 / floorP99 <= 1.5,
        },
      ]
    } finally {
      await clients[0]?.query('DROP TABLE IF EXISTS bench_floor').catch(() => undefined)
      await Promise.all(clients.map((client) => client.end()))
      await Promise.all(backends.map((backend) => backend.close()))
    }
  })
}
