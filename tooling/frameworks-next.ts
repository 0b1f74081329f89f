/**
 * Runs the framework adapters' suites on Node 22 against the frameworks' newer versions, which
 * declare Node >= 22, beside the gate's run on Node 20 (`ai` 6, `@openai/agents-core` 0.14):
 *
 * - `@agent-ledger/ai-sdk` with `ai` 7;
 * - `@agent-ledger/openai-agents` with the newest `@openai/agents-core` (0.15 and later depend
 *   on `openai` 7, which needs Node 22).
 *
 * Installs a Node 22 binary (the registry's `node-<platform>-<arch>` package) and the
 * frameworks into a temporary directory with npm, then runs each package's vitest under that
 * Node with the framework specifiers aliased to the installed copies
 * (AGENT_LEDGER_FRAMEWORK_ALIASES: the vitest aliases of tooling/next/vitest-next.ts, and the
 * resolve hook tooling/next/framework-aliases.mjs that the tests' crash children load).
 * The store matrices run over PostgreSQL here too, on one throwaway cluster for both suites
 * (or `AGENT_LEDGER_PG_URL`; without server binaries the suites' global setup skips them
 * locally and fails under CI=true).
 *
 * Part of `pnpm test` (after the outside-consumer test). Needs the npm registry: the install is
 * tried three times before the run fails. On a platform without a registry Node binary
 * (Windows, 32-bit) it prints one line and exits 0, except under `CI=true`, where it fails.
 *
 * Usage: `pnpm frameworks:next`. Prints one `frameworks:next: <package>: N passed, N failed`
 * line per suite.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { NEXT_REPORT } from './next/vitest-next.ts'
import { pgUnavailableReason, startCluster } from './pg/cluster.ts'
import type { PgCluster } from './pg/cluster.ts'

const NODE_VERSION = '22.23.5'
const INSTALL_ATTEMPTS = 3

/** One suite: the package, what to install for it, and its aliases (paths inside node_modules). */
interface NextRun {
  readonly package: string
  readonly framework: string
  readonly aliases: Readonly<Record<string, string>>
}

const RUNS: readonly NextRun[] = [
  {
    package: 'ai-sdk',
    framework: 'ai@7.0.173',
    aliases: { ai: 'ai/dist/index.js', 'ai/test': 'ai/dist/test/index.js' },
  },
  {
    package: 'openai-agents',
    framework: '@openai/agents-core@0.20.0',
    aliases: { '@openai/agents-core': '@openai/agents-core/dist/index.mjs' },
  },
]

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..')

/** The registry package holding a Node binary for this machine, or undefined when there is none. */
function nodePackage(): string | undefined {
  if (!['linux', 'darwin'].includes(process.platform)) return undefined
  if (!['x64', 'arm64'].includes(process.arch)) return undefined
  return `node-${process.platform}-${process.arch}`
}

/** npm install, tried {@link INSTALL_ATTEMPTS} times (a registry hiccup must not fail the gate). */
function install(work: string, specs: readonly string[]): void {
  for (let attempt = 1; ; attempt += 1) {
    try {
      execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...specs], {
        cwd: work,
        stdio: 'inherit',
      })
      return
    } catch (error) {
      if (attempt >= INSTALL_ATTEMPTS) {
        throw new Error(
          `frameworks:next: npm install ${specs.join(' ')} failed ${INSTALL_ATTEMPTS} times; this step needs the npm registry`,
          { cause: error },
        )
      }
      console.warn(
        `frameworks:next: npm install failed (attempt ${attempt} of ${INSTALL_ATTEMPTS}), retrying`,
      )
    }
  }
}

/** Runs one package's suite under `node`; returns its closing line and whether it passed. */
function runSuite(
  node: string,
  run: NextRun,
  environment: { readonly modules: string; readonly pgUrl: string | undefined },
): { line: string; ok: boolean } {
  const packageDirectory = join(root, 'packages', run.package)
  const vitest = join(
    dirname(createRequire(join(packageDirectory, 'package.json')).resolve('vitest/package.json')),
    'vitest.mjs',
  )
  const aliases = Object.fromEntries(
    Object.entries(run.aliases).map(([specifier, file]) => [specifier, join(environment.modules, file)]),
  )
  const report = join(packageDirectory, NEXT_REPORT)
  rmSync(report, { force: true })
  const result = spawnSync(node, [vitest, 'run', '--config', 'vitest.next.config.ts'], {
    cwd: packageDirectory,
    env: {
      ...process.env,
      AGENT_LEDGER_FRAMEWORK_ALIASES: JSON.stringify(aliases),
      ...(environment.pgUrl === undefined ? {} : { AGENT_LEDGER_PG_URL: environment.pgUrl }),
    },
    stdio: 'inherit',
  })
  const label = `frameworks:next: ${run.package} with ${run.framework}`
  if (!existsSync(report)) {
    return { line: `${label}: vitest wrote no report (exit ${result.status ?? result.signal})`, ok: false }
  }
  const counts = JSON.parse(readFileSync(report, 'utf8')) as {
    numPassedTests: number
    numFailedTests: number
  }
  return {
    line: `${label}: ${counts.numPassedTests} passed, ${counts.numFailedTests} failed`,
    ok: result.status === 0 && counts.numPassedTests > 0,
  }
}

/** The PostgreSQL URL the suites share: the environment's, a fresh cluster's, or none (they skip or fail). */
async function sharedPostgres(): Promise<{ url: string | undefined; cluster: PgCluster | undefined }> {
  const fromEnv = process.env.AGENT_LEDGER_PG_URL
  if (fromEnv !== undefined && fromEnv !== '') return { url: fromEnv, cluster: undefined }
  if (pgUnavailableReason() !== undefined) return { url: undefined, cluster: undefined }
  const cluster = await startCluster()
  return { url: cluster.url(), cluster }
}

async function main(): Promise<number> {
  const binaryPackage = nodePackage()
  if (binaryPackage === undefined) {
    const reason = `no registry Node 22 binary for ${process.platform}-${process.arch}`
    if (process.env.CI === 'true') {
      console.error(`frameworks:next: cannot run under CI=true: ${reason}`)
      return 1
    }
    console.warn(`frameworks:next: skipped (${reason})`)
    return 0
  }
  const work = mkdtempSync(join(tmpdir(), 'agent-ledger-frameworks-next-'))
  let cluster: PgCluster | undefined
  try {
    writeFileSync(
      join(work, 'package.json'),
      JSON.stringify({ name: 'frameworks-next', private: true, type: 'module' }),
    )
    const specs = [`${binaryPackage}@${NODE_VERSION}`, ...RUNS.map((run) => run.framework), 'zod@^4.1.0']
    console.log(`frameworks:next: installing ${specs.join(', ')}`)
    install(work, specs)
    const node = join(work, 'node_modules', binaryPackage, 'bin', 'node')
    const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim()
    const postgres = await sharedPostgres()
    cluster = postgres.cluster
    const environment = { modules: join(work, 'node_modules'), pgUrl: postgres.url }
    const results = RUNS.map((run) => runSuite(node, run, environment))
    for (const { line } of results) console.log(`${line} (Node ${version})`)
    return results.every((result) => result.ok) ? 0 : 1
  } finally {
    await cluster?.destroy()
    rmSync(work, { recursive: true, force: true })
  }
}

process.exitCode = await main()
