/**
 * A PostgreSQL primary with a synchronous standby (`s1`), for the chaos `failover` fault: each
 * failover SIGKILLs the primary and promotes the standby; before the next round the new primary
 * gets a new synchronous standby. Throwaway servers from tooling/pg (loopback, their own
 * temporary directories), stopped by their pids.
 */
import { startCluster } from '../../../tooling/pg/cluster.ts'
import type { PgCluster } from '../../../tooling/pg/cluster.ts'

/** A primary with a synchronous standby (`s1`) for the failover rows; each failover promotes it. */
export class FailoverPair {
  #primary: PgCluster | undefined
  #standby: PgCluster | undefined

  /** The primary's URL, after giving it a synchronous standby when it has none. */
  async prepare(): Promise<string> {
    this.#primary ??= await startCluster()
    if (this.#standby === undefined) {
      this.#standby = await this.#primary.createStandby('s1')
      await psql(this.#primary, "ALTER SYSTEM SET synchronous_standby_names = 's1'")
      await psql(this.#primary, 'SELECT pg_reload_conf()')
      while (
        (await psql(
          this.#primary,
          "SELECT sync_state FROM pg_stat_replication WHERE application_name = 's1'",
        )) !== 'sync'
      )
        await new Promise((resolve) => setTimeout(resolve, 100))
    }
    return this.#primary.url()
  }

  /** SIGKILLs the primary and promotes the standby; returns the new primary's URL. */
  async fail(): Promise<string> {
    const [old, standby] = [this.#primary!, this.#standby!]
    await old.stop('kill')
    await standby.promote()
    await old.destroy()
    this.#primary = standby
    this.#standby = undefined
    return standby.url()
  }

  async destroy(): Promise<void> {
    await this.#standby?.destroy()
    await this.#primary?.destroy()
  }
}

/** One statement through the cluster's own psql; its one value. */
async function psql(server: PgCluster, sql: string): Promise<string> {
  return (await server.exec('psql', [server.url(), '-Atc', sql])).trim()
}
