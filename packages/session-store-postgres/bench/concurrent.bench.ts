/**
 * 8 concurrent writers on 8 sessions (`pnpm bench --only session-store-postgres`), each a
 * `SessionWriter` of `createSessionStore` over its OWN backend instance (its own connection
 * pool, as 8 worker processes would have), appending and flushing batches of 10 events; the
 * floor is 8 bare streams of `JSON.stringify` of the same events + `INSERT ... SELECT unnest`
 * on 8 connections into a plain table with the same primary key, same server (fsync on,
 * loopback). Rounds alternate floor and ours; medians.
 *
 * - total events/s with 8 writers: ours vs the 8 bare streams (target >= 0.8);
 * - no cross-session blocking: the speed-up from 1 writer alone to 8 writers (total events/s
 *   with 8 / total events/s with 1), ours beside the same speed-up of the bare streams. A lock
 *   shared between sessions (a NOTIFY on every commit, a global sequence, a table lock) would
 *   serialize our writers and hold our speed-up near 1 while the floor's grows with group
 *   commit: target ours / floor >= 0.8;
 * - p99 flush latency with 8 writers, ours vs the bare streams' in the same rounds (target
 *   ours / floor <= 1.5; lower is better).
 *
 * Measured cause of the misses (one run, load average 28 to 36 on 2 cores, 2026-12-02): the
 * writers' client CPU per flush (printed), 0.88 ms against the bare streams' 0.33 ms, which
 * is the core writer's work per event. On a machine this busy the writers' process gets a
 * fraction of a core, so its CPU sets the throughput. The server side no longer does: with
 * migration 2's indexes on `ledger_events` the server spent 3.9x the bare insert's CPU per
 * flush, and migration 3 moved the search index off the append (`append.bench.ts`, server
 * CPU row).
 *
 * Before/after the append-path change of issue 23 (ADR 2026-12-02-postgres-append-path-cpu),
 * `nice -n 10 pnpm bench --only concurrent.bench`, main and this branch alternated, three
 * rounds, 2026-12-02 16:35-16:49 UTC, load average 19 to 35: total 0.475, 0.536, 0.286 on main
 * against 0.465, 0.619, 0.516 (all missed); speed-up ratio 0.554, 0.895, 0.587 against 0.704,
 * 0.839, 0.563. Client CPU per flush of 10, ours / bare: main 1.03 / 0.40, 1.08 / 0.52,
 * 1.02 / 0.38 ms; after 0.78 / 0.36, 1.20 / 0.52, 0.91 / 0.33 ms. The floor's table gained
 * `writer_epoch` (the columns of `ledger_events`) in the same change. The search catch-up
 * was a small part here (one per about 10 flushes of 10 events); what remains is the core
 * writer's CPU per event, all 8 writers in this one process.
 */
import type pg from 'pg'

import type { BenchResult } from '../../../tooling/bench/types.ts'
import type { CoreSession } from './support.ts'
import {
  bareClient,
  bareStream,
  coreSession,
  FLOOR_TABLE_SQL,
  median,
  percentile,
  withServer,
} from './support.ts'

const WRITERS = 8
const BATCH = 10
const FLUSHES = 60
const ROUNDS = 5

/** Writes events `from..from+count-1` and resolves when they are durable. */
type Flush = (from: number, count: number) => Promise<void>

/** Runs the writers at once, FLUSHES flushes each: total events/s, and every flush's latency in ms. */
async function drive(
  writers: readonly Flush[],
): Promise<{ eventsPerSecond: number; latencies: number[]; cpuMsPerFlush: number }> {
  const latencies: number[] = []
  const cpuBefore = process.cpuUsage()
  const started = performance.now()
  await Promise.all(
    writers.map(async (flush) => {
      for (let index = 0; index < FLUSHES; index++) {
        const before = performance.now()
        await flush(index * BATCH, BATCH)
        latencies.push(performance.now() - before)
      }
    }),
  )
  const seconds = (performance.now() - started) / 1000
  const cpu = process.cpuUsage(cpuBefore)
  return {
    eventsPerSecond: (writers.length * FLUSHES * BATCH) / seconds,
    latencies,
    // This process's CPU (the writers' side, not the server's) per flush.
    cpuMsPerFlush: (cpu.user + cpu.system) / 1000 / (writers.length * FLUSHES),
  }
}

/** Opens `count` core sessions (one backend each), runs them, closes them. */
async function driveCore(url: string, count: number): ReturnType<typeof drive> {
  const sessions: CoreSession[] = []
  try {
    for (let index = 0; index < count; index++) sessions.push(await coreSession(url, 2))
    return await drive(sessions.map((session) => (from, many) => session.write(from, many)))
  } finally {
    await Promise.all(sessions.map((session) => session.close()))
  }
}

interface Side {
  alone: number[]
  together: number[]
  latencies: number[]
  cpuMsPerFlush: number[]
}

/** Runs the figures (see the module comment). */
export async function run(): Promise<BenchResult[]> {
  return await withServer('session-store-postgres concurrent', async ({ url }) => {
    const clients: pg.Client[] = []
    try {
      for (let index = 0; index < WRITERS; index++) clients.push(await bareClient(url))
      await clients[0]!.query(FLOOR_TABLE_SQL)
      const ours: Side = { alone: [], together: [], latencies: [], cpuMsPerFlush: [] }
      const floor: Side = { alone: [], together: [], latencies: [], cpuMsPerFlush: [] }
      for (let round = 0; round < ROUNDS; round++) {
        floor.alone.push((await drive([bareStream(clients[0]!)])).eventsPerSecond)
        ours.alone.push((await driveCore(url, 1)).eventsPerSecond)
        const bareRun = await drive(clients.map((client) => bareStream(client)))
        floor.together.push(bareRun.eventsPerSecond)
        floor.latencies.push(...bareRun.latencies)
        floor.cpuMsPerFlush.push(bareRun.cpuMsPerFlush)
        const ourRun = await driveCore(url, WRITERS)
        ours.together.push(ourRun.eventsPerSecond)
        ours.latencies.push(...ourRun.latencies)
        ours.cpuMsPerFlush.push(ourRun.cpuMsPerFlush)
      }
      const total = median(ours.together) / median(floor.together)
      const ourSpeedup = median(ours.together) / median(ours.alone)
      const floorSpeedup = median(floor.together) / median(floor.alone)
      const ourP99 = percentile(ours.latencies, 0.99)
      const floorP99 = percentile(floor.latencies, 0.99)
      // The measured cause when the total is low on a busy machine: the writers' CPU per flush.
      console.error(
        `bench: ${WRITERS} writers: client CPU per flush (this process) ours ${median(ours.cpuMsPerFlush).toFixed(2)} ms, bare ${median(floor.cpuMsPerFlush).toFixed(2)} ms (medians)`,
      )
      console.error(
        `bench: 1 writer alone: ours ${median(ours.alone).toFixed(0)} events/s, bare ${median(floor.alone).toFixed(0)} events/s; p50 flush with ${WRITERS}: ours ${percentile(ours.latencies, 0.5).toFixed(1)} ms, bare ${percentile(floor.latencies, 0.5).toFixed(1)} ms`,
      )
      return [
        {
          name: `postgres ${WRITERS} writers on ${WRITERS} sessions through createSessionStore (${WRITERS} pools), batch ${BATCH}`,
          value: median(ours.together),
          unit: 'events/s',
          floor: {
            name: `${WRITERS} bare JSON.stringify + INSERT streams on ${WRITERS} connections`,
            value: median(floor.together),
          },
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
    }
  })
}
