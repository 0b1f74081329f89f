/**
 * PostgreSQL backend benchmark (`pnpm bench --only session-store-postgres`), every figure
 * beside a floor measured in the same run on the same server (fsync on, loopback):
 *
 * - durable append at batch 1 and 100: events/s through `backend.append` (one statement:
 *   fencing check, head update, lines) vs a bare `INSERT ... SELECT unnest($1::text[])`
 *   of the same lines into a plain table with the same primary key, on one connection.
 *   ratio = ours / floor (target >= 0.8 at batch 100; none at batch 1, see the README);
 * - full read of 100 000 events (about 35 MB of lines; one read takes 1-4 s here): lines/s
 *   through `backend.read` (paged by primary key) + `JSON.parse` vs one bare
 *   `SELECT line ... ORDER BY seq` + `JSON.parse` (target >= 0.7).
 *
 * Rounds alternate floor and ours; medians. 8 writers: `concurrent.bench.ts`; cold open at
 * 1M events and bytes per row: `cold-open.bench.ts`. Uses AGENT_LEDGER_PG_URL, else a
 * throwaway cluster (tooling/pg/cluster.ts); without PostgreSQL binaries it prints why and
 * reports nothing.
 */
import { randomBytes } from 'node:crypto'

import type pg from 'pg'

import type { BenchResult } from '../../../tooling/bench/types.ts'
import { openPostgresBackend } from '../src/index.ts'
import type { PostgresBackend } from '../src/index.ts'
import { createRequest, crcOf, seal } from '../test/support/lines.ts'
import { bareClient, FLOOR_INSERT_SQL, FLOOR_TABLE_SQL, median, timed, withServer } from './support.ts'

/** Events in the full-read figure: enough that one read takes at least a second. */
const READ_EVENTS = 100_000

const ROUNDS = 5

/** A realistic-looking event line (~350 bytes: an assistant message with a tool call). */
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

function lines(from: number, count: number): string[] {
  return Array.from({ length: count }, (_, index) => benchLine(from + index))
}

interface Fixture {
  readonly backend: PostgresBackend
  readonly bare: pg.Client
}

async function newSession(fixture: Fixture): Promise<{ id: string; write: (batch: string[]) => Promise<void> }> {
  const id = `bench-${randomBytes(5).toString('hex')}`
  await fixture.backend.create(createRequest(id))
  const { lease } = await fixture.backend.acquire(id, { owner: 'bench', leaseMs: 600_000 })
  let next = 0
  let counter = 0
  return {
    id,
    write: async (batch) => {
      await fixture.backend.append(lease, {
        expectedSeq: next,
        lines: batch,
        lastCrc: crcOf(batch[batch.length - 1] as string),
        batchId: `bench:${lease.epoch}:${counter++}`,
      })
      next += batch.length
    },
  }
}

function bareWriter(client: pg.Client): (batch: string[]) => Promise<void> {
  const id = `floor-${randomBytes(5).toString('hex')}`
  let next = 0
  return async (batch) => {
    await client.query(FLOOR_INSERT_SQL, [id, next, batch])
    next += batch.length
  }
}

async function appendFigure(fixture: Fixture, batch: number, batches: number): Promise<BenchResult> {
  const ours: number[] = []
  const floor: number[] = []
  const ratios: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const write = bareWriter(fixture.bare)
    const floorSeconds = await timed(async () => {
      for (let index = 0; index < batches; index++) await write(lines(index * batch, batch))
    })
    const session = await newSession(fixture)
    const ourSeconds = await timed(async () => {
      for (let index = 0; index < batches; index++) await session.write(lines(index * batch, batch))
    })
    const events = batch * batches
    floor.push(events / floorSeconds)
    ours.push(events / ourSeconds)
    ratios.push(floorSeconds / ourSeconds)
  }
  const ratio = median(ratios)
  return {
    name: `postgres durable append, batch ${batch}`,
    value: median(ours),
    unit: 'events/s',
    floor: { name: 'bare INSERT unnest, same lines, same server', value: median(floor) },
    ratio,
    ...(batch === 100 ? { target: '>= 0.8', met: ratio >= 0.8 } : {}),
  }
}

async function readFigure(fixture: Fixture, count: number): Promise<BenchResult> {
  const session = await newSession(fixture)
  for (let start = 0; start < count; start += 1000) await session.write(lines(start, Math.min(1000, count - start)))
  const ours: number[] = []
  const floor: number[] = []
  const ratios: number[] = []
  let sink = 0
  for (let round = 0; round < ROUNDS; round++) {
    const floorSeconds = await timed(async () => {
      const result = await fixture.bare.query<{ line: string }>(
        'SELECT line FROM ledger_events WHERE session_id = $1 ORDER BY seq',
        [session.id],
      )
      for (const row of result.rows) sink += (JSON.parse(row.line) as { seq: number }).seq
    })
    const ourSeconds = await timed(async () => {
      for await (const stored of fixture.backend.read(session.id, { fromSeq: 0 })) {
        sink += (JSON.parse(stored.line) as { seq: number }).seq
      }
    })
    floor.push(count / floorSeconds)
    ours.push(count / ourSeconds)
    ratios.push(floorSeconds / ourSeconds)
  }
  if (sink < 0) console.error(sink)
  console.error(
    `bench: full read of ${count} events: ours ${(count / median(ours)).toFixed(2)} s, floor ${(count / median(floor)).toFixed(2)} s (medians of ${ROUNDS}); ratio per round ${ratios.map((value) => value.toFixed(2)).join(', ')}`,
  )
  const ratio = median(ratios)
  return {
    name: `postgres full read ${count} events (+ JSON.parse)`,
    value: median(ours),
    unit: 'lines/s',
    floor: { name: 'one bare SELECT line ORDER BY seq + JSON.parse', value: median(floor) },
    ratio,
    target: '>= 0.7',
    met: ratio >= 0.7,
  }
}

/** Runs the figures (see the module comment). */
export async function run(): Promise<BenchResult[]> {
  return await withServer('session-store-postgres append', async ({ url }) => {
    const backend = await openPostgresBackend({ connectionString: url, poolSize: 10 })
    const bare = await bareClient(url)
    try {
      await bare.query(FLOOR_TABLE_SQL)
      const fixture: Fixture = { backend, bare }
      const results: BenchResult[] = []
      results.push(await appendFigure(fixture, 1, 100))
      results.push(await appendFigure(fixture, 100, 20))
      results.push(await readFigure(fixture, READ_EVENTS))
      return results
    } finally {
      await bare.query('DROP TABLE IF EXISTS bench_floor').catch(() => undefined)
      await bare.end()
      await backend.close()
    }
  })
}
