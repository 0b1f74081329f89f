/**
 * Shared by the PostgreSQL benchmark modules (`bench/*.bench.ts`): the server (a throwaway
 * cluster, or `AGENT_LEDGER_PG_URL`), timing helpers and the floor table.
 *
 * Not a `.bench.ts` file: the runner does not load it on its own.
 */
import { randomBytes } from 'node:crypto'

import pg from 'pg'

import { pgUnavailableReason, startCluster } from '../../../tooling/pg/cluster.ts'
import type { PgCluster } from '../../../tooling/pg/cluster.ts'

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
export async function withServer<T>(module: string, body: (server: BenchServer) => Promise<T[]>): Promise<T[]> {
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

/** The floor's plain table: the same primary key and line column as `ledger_events`, nothing else. */
export const FLOOR_TABLE_SQL =
  'CREATE TABLE IF NOT EXISTS bench_floor (session_id text NOT NULL, seq bigint NOT NULL, line text NOT NULL, PRIMARY KEY (session_id, seq))'

/** The floor's insert: `$1` stream id, `$2` first seq, `$3` lines. */
export const FLOOR_INSERT_SQL =
  'INSERT INTO bench_floor (session_id, seq, line) SELECT $1, $2::bigint + o - 1, l FROM unnest($3::text[]) WITH ORDINALITY AS t(l, o)'
