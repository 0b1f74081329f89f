/**
 * The vitest global setup of every suite that runs against PostgreSQL (the postgres backend's
 * own tests, the framework adapters' store matrix): one server for the whole run.
 *
 * `AGENT_LEDGER_PG_URL` when set, else a throwaway cluster from ./cluster.ts. Without either,
 * the PostgreSQL suites skip with one line locally and fail the run under `CI=true`.
 *
 * Use: `globalSetup: ['<relative path>/tooling/pg/global-setup.ts']` in a package's vitest
 * config; tests read `inject('pgUrl')` (null when skipped) and `inject('pgSkipReason')`.
 */
import { basename } from 'node:path'

import type { TestProject } from 'vitest/node'

import { pgUnavailableReason, startCluster } from './cluster.ts'
import type { PgCluster } from './cluster.ts'

declare module 'vitest' {
  export interface ProvidedContext {
    /** Admin URL of the PostgreSQL server the tests use, or null when none is available. */
    pgUrl: string | null
    /** Why there is none (printed once, and by each skipped suite). */
    pgSkipReason: string | null
  }
}

let cluster: PgCluster | undefined

/** Provides `pgUrl` and `pgSkipReason` to the run; starts a cluster when no URL is given. */
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
    console.warn(`${basename(project.config.root)}: skipping the PostgreSQL suites: ${reason}`)
    project.provide('pgUrl', null)
    project.provide('pgSkipReason', reason)
    return
  }
  cluster = await startCluster()
  project.provide('pgUrl', cluster.url())
  project.provide('pgSkipReason', null)
}

/** Stops the cluster this run started (none when the URL came from the environment). */
export async function teardown(): Promise<void> {
  await cluster?.destroy()
}
