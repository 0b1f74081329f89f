import { randomBytes } from 'node:crypto'

import pg from 'pg'
import { afterAll, beforeAll, describe, inject } from 'vitest'

import { pgUnavailableReason } from '../../../../tooling/pg/cluster.ts'
import { openPostgresBackend } from '../../src/index.ts'
import type { PostgresBackend, PostgresBackendOptions } from '../../src/index.ts'

export { createRequest, crcOf, eventLine, eventLines, sessionId } from './lines.ts'

/** The admin URL from the global setup, or null (then suites skip; CI already failed in setup). */
export const adminUrl: string | null = inject('pgUrl')
/** Why PostgreSQL suites skip here, or null. */
export const skipReason: string | null = inject('pgSkipReason')

/** Why suites that start their own clusters (kill, failover) skip here, or null. */
export function ownClusterSkipReason(): string | null {
  const reason = pgUnavailableReason()
  if (reason !== undefined && process.env.CI === 'true') {
    throw new Error(`PostgreSQL fault tests cannot be skipped under CI=true: ${reason}`)
  }
  return reason ?? null
}

/** Replaces the database of a postgres URL. */
function withDatabase(url: string, database: string): string {
  const parsed = new URL(url)
  parsed.pathname = `/${database}`
  return parsed.toString()
}

/** Creates an empty database on the server of `url` and returns its URL (one per test file: a fresh schema). */
export async function createDatabase(url: string): Promise<string> {
  const name = `t_${randomBytes(6).toString('hex')}`
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`CREATE DATABASE ${name}`)
  } finally {
    await client.end()
  }
  return withDatabase(url, name)
}

/**
 * The conformance harness's backend factory over one migrated database: each call opens a new
 * backend on it (`reopen` opens another, as a second process would), and `cleanup` closes every
 * backend it opened.
 *
 * @param url - The database (already migrated).
 */
export async function postgresHarnessBackends(url: string): Promise<{
  backend: PostgresBackend
  reopen: () => Promise<PostgresBackend>
  cleanup: () => Promise<void>
}> {
  const instances: PostgresBackend[] = []
  const make = async (): Promise<PostgresBackend> => {
    const backend = await openPostgresBackend({ connectionString: url, poolSize: 4, migrate: false })
    instances.push(backend)
    return backend
  }
  return {
    backend: await make(),
    reopen: make,
    cleanup: async () => {
      for (const instance of instances) await instance.close()
    },
  }
}

/** Runs one statement on a fresh connection (the test's own view of the database). */
export async function sqlOnce<TRow extends pg.QueryResultRow>(
  url: string,
  text: string,
  values: unknown[] = [],
): Promise<TRow[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query<TRow>(text, values)).rows
  } finally {
    await client.end()
  }
}

/** Every stored (seq, line, epoch) of a session, in seq order, read directly. */
export async function storedRows(
  url: string,
  id: string,
): Promise<{ seq: number; line: string; epoch: number }[]> {
  const rows = await sqlOnce<{ seq: string; line: string; writer_epoch: string }>(
    url,
    'SELECT seq, line, writer_epoch FROM ledger_events WHERE session_id = $1 ORDER BY seq',
    [id],
  )
  return rows.map((row) => ({ seq: Number(row.seq), line: row.line, epoch: Number(row.writer_epoch) }))
}

/**
 * A `describe` of tests that need the shared server: skipped, with the reason in its title,
 * when there is none (CI already failed in the global setup).
 *
 * @param title - The block's title.
 * @param body - Its tests.
 */
export function describeOnServer(title: string, body: () => void): void {
  describe.skipIf(adminUrl === null)(
    `${title}${skipReason === null ? '' : ` (skipped: ${skipReason})`}`,
    body,
  )
}

/** A fresh database and a backend on it. */
export interface TestDatabase {
  readonly url: string
  readonly backend: PostgresBackend
}

/**
 * In the current `describe`: before its tests, creates a database of its own and opens a
 * backend on it (`onOpen` receives both); after them, closes the backend.
 *
 * @param onOpen - Receives the database's URL and the backend.
 * @param options - Backend options besides the connection string.
 */
export function useDatabase(
  onOpen: (database: TestDatabase) => void,
  options: Omit<PostgresBackendOptions, 'connectionString'> = {},
): void {
  let backend: PostgresBackend | undefined
  beforeAll(async () => {
    const url = await createDatabase(adminUrl as string)
    backend = await openPostgresBackend({ connectionString: url, ...options })
    onOpen({ url, backend })
  })
  afterAll(async () => {
    await backend?.close()
  })
}
