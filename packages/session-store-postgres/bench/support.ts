/**
 * Shared by the PostgreSQL benchmark modules (`bench/*.bench.ts`): the server (a throwaway
 * cluster, or `AGENT_LEDGER_PG_URL`), timing helpers and the floor table.
 *
 * Not a `.bench.ts` file: the runner does not load it on its own.
 */
import { randomBytes } from 'node:crypto'

import type { EventInput } from '@agent-ledger/session-events'
import { createSessionStore } from '@agent-ledger/session-store'
import type { SessionStoreOptions } from '@agent-ledger/session-store'
import pg from 'pg'

import { pgUnavailableReason, startCluster } from '../../../tooling/pg/cluster.ts'
import type { PgCluster } from '../../../tooling/pg/cluster.ts'
import { openPostgresBackend } from '../src/index.ts'

export { median } from '../../../tooling/bench/support.ts'

/** A server for one benchmark module. */
export interface BenchServer {
  readonly url: string
  /** `undefined` when the module uses `AGENT_LEDGER_PG_URL`. */
  readonly cluster: PgCluster | undefined
}

/**
 * Runs `body` in a fresh database on the server of `AGENT_LEDGER_PG_URL`, else on a
 * throwaway cluster started and destroyed around it. Without PostgreSQL binaries it prints one line saying why and returns `[]`.
 *
 * @param module - The module's name, for the skip line.
 * @param body - The measurements.
 * @returns What `body` returned, or `[]` when skipped.
 */
export async function withServer<T>(
  module: string,
  body: (server: BenchServer) => Promise<T[]>,
): Promise<T[]> {
  const fromEnv = process.env.AGENT_LEDGER_PG_URL
  if (fromEnv !== undefined && fromEnv !== '') return await withFreshDatabase(fromEnv, body)
  const reason = pgUnavailableReason()
  if (reason !== undefined) {
    console.error(`bench: ${module} skipped: ${reason}`)
    return []
  }
  const cluster = await startCluster()
  try {
    return await body({ url: cluster.url(), cluster })
  } finally {
    await cluster.destroy()
  }
}

/**
 * Runs `body` in a database of its own on the server of `url` (a superuser URL, as for the
 * tests), dropped afterwards: figures such as `pg_total_relation_size` then count only
 * this module's rows, and a second run starts from an empty schema.
 */
async function withFreshDatabase<T>(url: string, body: (server: BenchServer) => Promise<T[]>): Promise<T[]> {
  const name = `bench_${randomBytes(6).toString('hex')}`
  const admin = await bareClient(url)
  try {
    await admin.query(`CREATE DATABASE ${name}`)
    const own = new URL(url)
    own.pathname = `/${name}`
    try {
      return await body({ url: own.toString(), cluster: undefined })
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    }
  } finally {
    await admin.end()
  }
}

/** A connected bare client (the floors' connection). */
export async function bareClient(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  return client
}

/** The value below which `fraction` of `values` fall (nearest rank). */
export function percentile(values: readonly number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  const rank = Math.max(1, Math.ceil(fraction * sorted.length))
  return sorted[rank - 1] ?? Number.NaN
}

/** Seconds `run` took. */
export async function timed(run: () => Promise<void>): Promise<number> {
  const start = performance.now()
  await run()
  return (performance.now() - start) / 1000
}

/**
 * The floor's plain table: the same columns and primary key as `ledger_events` (the row each
 * append stores), no check constraint, no session row. Until issue 23's append work it had
 * no `writer_epoch` column: a narrower row than ours.
 */
export const FLOOR_TABLE_SQL =
  'CREATE TABLE IF NOT EXISTS bench_floor (session_id text NOT NULL, seq bigint NOT NULL, line text NOT NULL, writer_epoch bigint NOT NULL, PRIMARY KEY (session_id, seq))'

/** The floor's insert: `$1` stream id, `$2` first seq, `$3` lines (epoch 1, as a writer's first lease). */
export const FLOOR_INSERT_SQL =
  'INSERT INTO bench_floor (session_id, seq, line, writer_epoch) SELECT $1, $2::bigint + o - 1, l, 1 FROM unnest($3::text[]) WITH ORDINALITY AS t(l, o)'

/** The events the through-the-core figures append: an assistant tool call, then its answer (~350 bytes each). */
function benchInput(seq: number): EventInput {
  const call = `call_${seq - (seq % 2)}`
  if (seq % 2 === 0) {
    return {
      type: 'assistant/message',
      data: {
        message: {
          role: 'assistant',
          content: `Reading the file to find where the flush policy is applied (step ${seq}).`,
          tool_calls: [
            {
              id: call,
              type: 'function',
              function: { name: 'read_file', arguments: '{"path":"src/writer.ts"}' },
            },
          ],
        },
      },
    }
  }
  return {
    type: 'tool/result',
    data: {
      message: {
        role: 'tool',
        tool_call_id: call,
        content: `export function flush(): void { /* step ${seq} */ }`,
      },
    },
  }
}

/** The clock of the through-the-core figures: fixed, so the floor stringifies the same events. */
const BENCH_TIME = '2026-01-01T00:00:00.000Z'

/** What a bare appender writes for event `seq`: `JSON.stringify` of the event, no checksum. */
function floorLine(seq: number): string {
  const input = benchInput(seq)
  return JSON.stringify({ seq, time: BENCH_TIME, type: input.type, data: input.data })
}

/** A writer through the session core over its own PostgreSQL backend (its own pool). */
export interface CoreSession {
  /** Appends events `from..from+count-1` and flushes once (resolves when committed). */
  write(from: number, count: number): Promise<void>
  close(): Promise<void>
}

/**
 * Opens `createSessionStore` over a new backend on `url` and creates one session.
 *
 * @param url - The server.
 * @param poolSize - The backend's pool size.
 * @param checkpoint - The store's checkpoint options (default: the store's defaults).
 * @returns The session's writer, and a close that closes the store (and its backend).
 */
export async function coreSession(
  url: string,
  poolSize: number,
  checkpoint?: SessionStoreOptions['checkpoint'],
): Promise<CoreSession> {
  const backend = await openPostgresBackend({ connectionString: url, poolSize })
  const store = createSessionStore({
    backend,
    clock: () => BENCH_TIME,
    owner: 'bench',
    ...(checkpoint === undefined ? {} : { checkpoint }),
  })
  const writer = await store.create({ id: `core-${randomBytes(5).toString('hex')}` })
  return {
    write: async (from, count) => {
      for (let seq = from; seq < from + count; seq++) writer.append(benchInput(seq))
      await writer.flush()
    },
    close: async () => {
      await writer.close()
      await store.close()
    },
  }
}

/** A bare stream on one connection: `JSON.stringify` of the same events + one INSERT unnest per batch. */
export function bareStream(client: pg.Client): (from: number, count: number) => Promise<void> {
  const id = `floor-${randomBytes(5).toString('hex')}`
  return async (from, count) => {
    const lines: string[] = []
    for (let seq = from; seq < from + count; seq++) lines.push(floorLine(seq))
    await client.query(FLOOR_INSERT_SQL, [id, from, lines])
  }
}
