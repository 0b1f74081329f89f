/**
 * A throwaway PostgreSQL for manual work (the tests and `pnpm bench` start their own):
 *
 *   pnpm exec tsx tooling/pg/cli.ts start    prints `export AGENT_LEDGER_PG_URL=...` and the stop command
 *   pnpm exec tsx tooling/pg/cli.ts stop <dir>  stops it by the pid in <dir>/data/postmaster.pid, removes <dir>
 */
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'

import { startCluster } from './cluster.ts'

const [command, dir] = process.argv.slice(2)

if (command === 'start') {
  const cluster = await startCluster()
  console.log(`export AGENT_LEDGER_PG_URL=${cluster.url()}`)
  console.log(`# stop it with: pnpm exec tsx tooling/pg/cli.ts stop ${cluster.dir}`)
} else if (command === 'stop' && dir !== undefined) {
  const pid = Number(readFileSync(join(dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0])
  if (!Number.isInteger(pid) || pid <= 0)
    throw new Error(`no postmaster pid in ${join(dir, 'data', 'postmaster.pid')}`)
  process.kill(pid, 'SIGINT')
  for (;;) {
    try {
      process.kill(pid, 0)
    } catch {
      break
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  rmSync(dir, { recursive: true, force: true })
  console.log(`stopped postmaster ${pid}, removed ${dir}`)
} else {
  console.error('usage: tsx tooling/pg/cli.ts start | stop <dir>')
  process.exit(2)
}
