/**
 * @packageDocumentation
 * The PostgreSQL backend of agent-ledger, for fleets of agent workers: a
 * {@link SessionBackend} (from `@agent-ledger/session-store`) whose writer lease carries a
 * fencing epoch checked inside every append, whose appends are one all-or-nothing statement
 * with dense seqs, whose unknown outcomes are resolved from the recorded batch id, with
 * server-side fork, keyset listing, paged reads, `LISTEN/NOTIFY` followers and projection
 * checkpoints. Schema migrations are versioned and applied by {@link migratePostgres} or on open.
 */
export { openPostgresBackend, PostgresBackend } from './postgres-backend.ts'
export type { PostgresBackendOptions } from './postgres-backend.ts'
export { migratePostgres } from './migrate-command.ts'
export type { MigrationReport } from './migration-report.ts'
export { SCHEMA_VERSION } from './migrations.ts'
export { describeConnection, PostgresFailureReason } from './pg-errors.ts'
export { APPEND_CHANNEL } from './sql.ts'
