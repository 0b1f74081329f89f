import { PostgresBackend } from './postgres-backend.ts'
import type { MigrationReport } from './migration-report.ts'

/**
 * Applies the pending schema migrations to the database at `connectionString` and returns
 * what was applied. Idempotent; safe to run from several processes at once (an advisory
 * lock serializes them). This is what `agent-ledger db migrate --store <url>` runs.
 *
 * @param connectionString - `postgres://user:password@host:port/database`.
 * @returns The versions applied (empty when already current) and the schema version.
 * @throws SessionStoreError `BACKEND_FAILED` with `details.reason` `CONNECTION_FAILED`,
 *   `SCHEMA_TOO_NEW` or `MIGRATION_EDITED`.
 */
export async function migratePostgres(connectionString: string): Promise<MigrationReport> {
  const backend = new PostgresBackend({ connectionString, poolSize: 1 })
  try {
    return await backend.migrate()
  } finally {
    await backend.close()
  }
}
