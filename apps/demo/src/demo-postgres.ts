#!/usr/bin/env node
/**
 * `pnpm demo:postgres`: the demo story of `pnpm demo`, told on a throwaway PostgreSQL cluster
 * started with tooling/pg/cluster.ts (initdb in a temporary directory, loopback port, trust
 * auth for the test user only). It prints where the cluster is, runs the story with the
 * sessions in the database, then stops the server by the pid in its `postmaster.pid` and
 * removes its directory (`--keep`: leaves it running and prints how to stop it).
 */
import { pgUnavailableReason, startCluster } from '../../../tooling/pg/cluster.ts'
import { runDemo } from './demo.ts'

const out = (line: string): void => {
  process.stdout.write(`${line}\n`)
}
const keep = process.argv.slice(2).includes('--keep')
const unknown = process.argv.slice(2).filter((arg) => arg !== '--keep')
if (unknown.length > 0) {
  process.stderr.write(
    `demo:postgres: unknown argument ${JSON.stringify(unknown[0])}; expected none or --keep\n`,
  )
  process.exit(2)
}
const reason = pgUnavailableReason()
if (reason !== undefined) {
  process.stderr.write(
    `demo:postgres needs the PostgreSQL server binaries: ${reason}. (pnpm demo needs no database.)\n`,
  )
  process.exit(1)
}

out('starting a throwaway PostgreSQL cluster (initdb in a temporary directory, loopback only)...')
const cluster = await startCluster()
const stop = async (): Promise<void> => {
  out(`\nstopping the cluster by the pid in ${cluster.dataDir}/postmaster.pid and removing ${cluster.dir}`)
  await cluster.destroy()
}
process.once('SIGINT', () => {
  void stop().finally(() => process.exit(130))
})
out(`cluster directory: ${cluster.dir} (data: ${cluster.dataDir}, log: ${cluster.dir}/server.log)`)
out(`listening on 127.0.0.1:${cluster.port}; the store URL: ${cluster.url()}`)
let code: number
try {
  code = await runDemo({ out, storeUrl: cluster.url() })
} catch (error) {
  process.stderr.write(
    `demo:postgres: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  )
  code = 1
} finally {
  if (keep) {
    out(`\n--keep: the cluster is still running. Try:`)
    out(`  export AGENT_LEDGER_STORE=${cluster.url()}`)
    out('  pnpm agent-ledger list; pnpm mini-agent sessions')
    out(`stop it with: pnpm exec tsx tooling/pg/cli.ts stop ${cluster.dir}`)
  } else {
    await stop()
  }
}
process.exit(code)
