/**
 * One PostgreSQL server for the run: the repository's shared global setup (tooling/pg):
 * `AGENT_LEDGER_PG_URL`, else a throwaway cluster stopped by its pid file; without server
 * binaries the PostgreSQL suites skip with one line locally and fail the run under `CI=true`.
 */
export { setup, teardown } from '../../../../tooling/pg/global-setup.ts'
