import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import pg from 'pg'
import { beforeAll, describe, expect, it } from 'vitest'

import { migratePostgres, openPostgresBackend, PostgresFailureReason, SCHEMA_VERSION } from '../src/index.ts'
import { MIGRATION_LOCK_KEY } from '../src/migrations.ts'
import { startWorker } from './support/children.ts'
import { adminUrl, createDatabase, skipReason, sqlOnce } from './support/pg.ts'

async function failure(promise: Promise<unknown>): Promise<SessionStoreError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  )
  if (!SessionStoreError.is(error)) throw new Error(`expected a SessionStoreError, got ${String(error)}`)
  return error
}

describe.skipIf(adminUrl === null)(
  `PostgreSQL schema migrations${skipReason === null ? '' : ` (skipped: ${skipReason})`}`,
  () => {
    let url: string

    beforeAll(async () => {
      url = await createDatabase(adminUrl as string)
    })

    it('opening with migrate: false refuses an unmigrated database (SCHEMA_BEHIND, naming the command to run) and creates nothing', async () => {
      const error = await failure(openPostgresBackend({ connectionString: url, migrate: false }))
      expect(error.code).toBe(SessionStoreErrorCode.BACKEND_FAILED)
      expect(error.details).toMatchObject({
        reason: PostgresFailureReason.SCHEMA_BEHIND,
        found: 0,
        known: SCHEMA_VERSION,
      })
      expect(error.message).toContain('agent-ledger db migrate --store')
      const tables = await sqlOnce<{ n: number }>(
        url,
        "SELECT count(*)::int AS n FROM pg_tables WHERE tablename LIKE 'ledger_%'",
      )
      expect(tables[0]?.n).toBe(0)
    })

    it('three processes migrating one empty database at once: each migration applied exactly once, recorded with its checksum', async () => {
      // Hold the migration lock so that all three are provably waiting at the same time.
      const holder = new pg.Client({ connectionString: url })
      await holder.connect()
      await holder.query('BEGIN')
      await holder.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY])
      const workers = Array.from({ length: 3 }, () => startWorker([url, '-', '-', 'migrate', '-']))
      for (;;) {
        const waiting = await holder.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        )
        if (waiting.rows[0]?.n === 3) break
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      await holder.query('COMMIT')
      await holder.end()
      const exits = await Promise.all(workers.map((worker) => worker.exited))
      for (const exit of exits) expect(exit, exit.stderr).toMatchObject({ code: 0 })
      const reports = workers.map((worker) => worker.lines.find((line) => line.startsWith('migrated')))
      const applying = reports.filter((line) => line !== 'migrated ')
      expect(applying).toEqual([
        `migrated ${Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1).join(',')}`,
      ])
      const recorded = await sqlOnce<{ version: number; checksum: string }>(
        url,
        'SELECT version, checksum FROM ledger_schema_migrations',
      )
      expect(recorded.map((row) => row.version)).toEqual(
        Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1),
      )
      expect(recorded.every((row) => /^[0-9a-f]{64}$/.test(row.checksum))).toBe(true)
      expect(await migratePostgres(url)).toEqual({ applied: [], version: SCHEMA_VERSION })
      const backend = await openPostgresBackend({ connectionString: url, migrate: false })
      await backend.close()
    })

    it('a schema newer than the library (SCHEMA_TOO_NEW) and an edited migration (MIGRATION_EDITED) are refused, by open and by migrate', async () => {
      await sqlOnce(
        url,
        "INSERT INTO ledger_schema_migrations (version, name, checksum) VALUES (999, 'future', 'x')",
      )
      expect((await failure(openPostgresBackend({ connectionString: url }))).details).toMatchObject({
        reason: PostgresFailureReason.SCHEMA_TOO_NEW,
        found: 999,
      })
      expect((await failure(migratePostgres(url))).details).toMatchObject({
        reason: PostgresFailureReason.SCHEMA_TOO_NEW,
      })
      await sqlOnce(url, 'DELETE FROM ledger_schema_migrations WHERE version = 999')
      await sqlOnce(url, "UPDATE ledger_schema_migrations SET checksum = 'edited' WHERE version = 1")
      const edited = await failure(openPostgresBackend({ connectionString: url, migrate: false }))
      expect(edited.details).toMatchObject({ reason: PostgresFailureReason.MIGRATION_EDITED, version: 1 })
    })
  },
)
