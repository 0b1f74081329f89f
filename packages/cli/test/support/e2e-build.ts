/**
 * Global setup of the end-to-end tests: the built binary needs `dist/` of this package and
 * of every @agent-ledger package it imports. Under turbo (`TURBO_HASH` is set), the
 * `test:e2e` task depends on `build` (packages/cli/turbo.json), so builds are only checked for
 * presence. Run by hand (`pnpm test:e2e` in packages/cli), stale or missing builds are rebuilt
 * with `pnpm --filter @agent-ledger/cli... run build` first.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const packagesDirectory = fileURLToPath(new URL('../../../', import.meta.url))
const repositoryRoot = join(packagesDirectory, '..')
const BUILT = ['session-events', 'loop-repair', 'session-projection', 'session-store-jsonl', 'import', 'cli']

function newestSource(directory: string): number {
  let newest = 0
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name)
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path))
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs)
  }
  return newest
}

function buildState(name: string): 'fresh' | 'stale' | 'missing' {
  const output = join(packagesDirectory, name, 'dist', 'index.js')
  if (!existsSync(output)) return 'missing'
  return statSync(output).mtimeMs >= newestSource(join(packagesDirectory, name, 'src')) ? 'fresh' : 'stale'
}

/** Builds what the binary needs when it is missing or older than its sources. */
export default function setup(): void {
  const states = BUILT.map((name) => ({ name, state: buildState(name) }))
  const missing = states.filter((entry) => entry.state === 'missing').map((entry) => entry.name)
  const stale = states.filter((entry) => entry.state === 'stale').map((entry) => entry.name)
  if (process.env['TURBO_HASH'] !== undefined) {
    if (missing.length > 0) {
      throw new Error(
        `agent-ledger e2e: dist/ is missing in ${missing.join(', ')} under turbo: expected the test:e2e task to depend on build (see packages/cli/turbo.json)`,
      )
    }
    return
  }
  if (missing.length === 0 && stale.length === 0) return
  console.warn(`agent-ledger e2e: building (${[...missing, ...stale].join(', ')} missing or older than src/)`)
  execFileSync('pnpm', ['--filter', '@agent-ledger/cli...', 'run', 'build'], {
    cwd: repositoryRoot,
    stdio: 'inherit',
  })
}
