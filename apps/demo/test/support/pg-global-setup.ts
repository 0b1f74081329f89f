import type { TestProject } from 'vitest/node'

import { pgUnavailableReason, startCluster } from '../../../../tooling/pg/cluster.ts'
import type { PgCluster } from '../../../../tooling/pg/cluster.ts'

declare module 'vitest' {
  export interface ProvidedContext {
    /** Admin URL of the PostgreSQL server mini-agent's PostgreSQL tests use, or null when none is available. */
    pgUrl: string | null
    /** Why there is none (printed once, and by each skipped suite). */
    pgSkipReason: string | null
  }
}

let cluster: PgCluster | undefined

/**
 * One server for the run, as in session-store-postgres: `AGENT_LEDGER_PG_URL` when set, else
 * a throwaway cluster from tooling/pg/cluster.ts (stopped by its pid file in teardown).
 * Without either, the PostgreSQL suites skip with one line locally and fail the run under
 * `CI=true`.
 */
export async function setup(project: TestProject): Promise<void> {
  const fromEnv = process.env.AGENT_LEDGER_PG_URL
  if (fromEnv !== undefined && fromEnv !== '') {
    project.provide('pgUrl', fromEnv)
    project.provide('pgSkipReason', null)
    return
  }
  const reason = pgUnavailableReason()
  if (reason !== undefined) {
    if (process.env.CI === 'true')
      throw new Error(`PostgreSQL tests cannot be skipped under CI=true: ${reason}`)
    console.warn(`demo: skipping the PostgreSQL suites: ${reason}`)
    project.provide('pgUrl', null)
    project.provide('pgSkipReason', reason)
    return
  }
  cluster = await startCluster()
  project.provide('pgUrl', cluster.url())
  project.provide('pgSkipReason', null)
}

export async function teardown(): Promise<void> {
  await cluster?.destroy()
}
