import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type { PoolClient } from 'pg'

import {
  MIGRATION_LOCK_KEY,
  MIGRATIONS_TABLE_SQL,
  migrationChecksum,
  planMigrations,
  SCHEMA_VERSION,
} from './migrations.ts'
import type { AppliedMigration, SchemaProblem } from './migrations.ts'
import type { MigrationReport } from './migration-report.ts'
import { PostgresFailureReason, targetText } from './pg-errors.ts'
import type { ConnectionTarget } from './pg-errors.ts'

/** Reads the applied migrations inside the caller's transaction (the table must exist). */
async function readApplied(client: PoolClient): Promise<AppliedMigration[]> {
  const result = await client.query<{ version: number; checksum: string }>(
    'SELECT version, checksum FROM ledger_schema_migrations ORDER BY version',
  )
  return result.rows
}

/** Whether the migrations table exists (without creating it). */
async function hasMigrationsTable(client: PoolClient): Promise<boolean> {
  const result = await client.query<{ present: boolean }>(
    "SELECT to_regclass('ledger_schema_migrations') IS NOT NULL AS present",
  )
  return result.rows[0]?.present === true
}

function problemError(problem: SchemaProblem, target: ConnectionTarget): SessionStoreError {
  const where = targetText(target)
  switch (problem.kind) {
    case 'too-new':
      return new SessionStoreError({
        code: SessionStoreErrorCode.BACKEND_FAILED,
        message: `the agent-ledger schema in ${where} is version ${problem.found}, newer than this library (${problem.known}); upgrade @agent-ledger/session-store-postgres`,
        details: { reason: PostgresFailureReason.SCHEMA_TOO_NEW, found: problem.found, known: problem.known },
      })
    case 'edited':
      return new SessionStoreError({
        code: SessionStoreErrorCode.BACKEND_FAILED,
        message: `migration ${problem.version} recorded in ${where} has checksum ${problem.recorded.slice(0, 12)}..., this library's is ${problem.expected.slice(0, 12)}...; the schema was made by a different build`,
        details: { reason: PostgresFailureReason.MIGRATION_EDITED, version: problem.version },
      })
    case 'behind':
      return new SessionStoreError({
        code: SessionStoreErrorCode.BACKEND_FAILED,
        message: `the agent-ledger schema in ${where} is version ${problem.found}, this library needs ${problem.known}; run \`agent-ledger db migrate --store <url>\``,
        details: { reason: PostgresFailureReason.SCHEMA_BEHIND, found: problem.found, known: problem.known },
      })
  }
}

/**
 * Applies every pending migration in ONE transaction under a transaction-scoped advisory
 * lock: concurrent runs serialize, and a failure leaves the schema as it was.
 */
export async function migrateWithClient(
  client: PoolClient,
  target: ConnectionTarget,
): Promise<MigrationReport> {
  await client.query('BEGIN')
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY])
    await client.query(MIGRATIONS_TABLE_SQL)
    const plan = planMigrations(await readApplied(client))
    if ('problem' in plan) throw problemError(plan.problem, target)
    for (const migration of plan.pending) {
      await client.query(migration.sql)
      await client.query(
        'INSERT INTO ledger_schema_migrations (version, name, checksum) VALUES ($1, $2, $3)',
        [migration.version, migration.name, migrationChecksum(migration)],
      )
    }
    await client.query('COMMIT')
    return { applied: plan.pending.map((migration) => migration.version), version: SCHEMA_VERSION }
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined)
    throw error
  }
}

/** Refuses a schema that is not exactly this library's (behind, too new or edited), without changing anything. */
export async function verifySchema(client: PoolClient, target: ConnectionTarget): Promise<void> {
  const applied = (await hasMigrationsTable(client)) ? await readApplied(client) : []
  const plan = planMigrations(applied)
  if ('problem' in plan) throw problemError(plan.problem, target)
  if (plan.pending.length > 0) {
    const found = applied.reduce((max, row) => Math.max(max, row.version), 0)
    throw problemError({ kind: 'behind', found, known: SCHEMA_VERSION }, target)
  }
}
