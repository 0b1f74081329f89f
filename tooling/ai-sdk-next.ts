/**
 * Runs the @agent-ledger/ai-sdk suite on Node 22 with `ai` 7 (which declares Node >= 22),
 * beside the gate's run on Node 20 with `ai` 6. Installs a Node 22 binary (the registry's
 * `node-<platform>-<arch>` package) and `ai` 7 into a temporary directory with npm, then runs
 * vitest under that Node with `ai` (and `ai/test`) aliased to the installed copy; the crash
 * child follows the same `AI_SDK_DIR`. The store matrix runs over PostgreSQL here too (the
 * package's global setup: skipped locally without server binaries, a failure under CI=true).
 *
 * Part of `pnpm test` (after the outside-consumer test). Needs the npm registry: the install is
 * tried three times before the run fails. On a platform without a registry Node binary
 * (Windows, 32-bit) it prints one line and exits 0, except under `CI=true`, where it fails.
 *
 * Usage: `pnpm ai-sdk:next`. Prints `ai-sdk:next: N passed, N failed (Node v22..., ai 7...)`.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const NODE_VERSION = '22.23.5'
const AI_VERSION = '7.0.173'
const INSTALL_ATTEMPTS = 3
/** The vitest JSON report of this run (set in vitest.ai7.config.ts; test-output/ is gitignored). */
const REPORT = join('test-output', 'ai7-results.json')

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..')
const packageDirectory = join(root, 'packages', 'ai-sdk')

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
          `ai-sdk:next: npm install ${specs.join(' ')} failed ${INSTALL_ATTEMPTS} times; this step needs the npm registry`,
          { cause: error },
        )
      }
      console.warn(`ai-sdk:next: npm install failed (attempt ${attempt} of ${INSTALL_ATTEMPTS}), retrying`)
    }
  }
}

function main(): number {
  const binaryPackage = nodePackage()
  if (binaryPackage === undefined) {
    const reason = `no registry Node 22 binary for ${process.platform}-${process.arch}`
    if (process.env.CI === 'true') {
      console.error(`ai-sdk:next: cannot run under CI=true: ${reason}`)
      return 1
    }
    console.warn(`ai-sdk:next: skipped (${reason})`)
    return 0
  }
  const work = mkdtempSync(join(tmpdir(), 'agent-ledger-ai-next-'))
  try {
    writeFileSync(
      join(work, 'package.json'),
      JSON.stringify({ name: 'ai-next', private: true, type: 'module' }),
    )
    console.log(`ai-sdk:next: installing ${binaryPackage}@${NODE_VERSION} and ai@${AI_VERSION}`)
    install(work, [`${binaryPackage}@${NODE_VERSION}`, `ai@${AI_VERSION}`, 'zod@^4.1.0'])
    const node = join(work, 'node_modules', binaryPackage, 'bin', 'node')
    const vitest = join(
      dirname(createRequire(join(packageDirectory, 'package.json')).resolve('vitest/package.json')),
      'vitest.mjs',
    )
    const report = join(packageDirectory, REPORT)
    rmSync(report, { force: true })
    const result = spawnSync(node, [vitest, 'run', '--config', 'vitest.ai7.config.ts'], {
      cwd: packageDirectory,
      env: { ...process.env, AI_SDK_DIR: join(work, 'node_modules', 'ai') },
      stdio: 'inherit',
    })
    const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim()
    if (!existsSync(report)) {
      console.error(`ai-sdk:next: vitest wrote no report (exit ${result.status ?? result.signal})`)
      return 1
    }
    const counts = JSON.parse(readFileSync(report, 'utf8')) as {
      numPassedTests: number
      numFailedTests: number
    }
    console.log(
      `ai-sdk:next: ${counts.numPassedTests} passed, ${counts.numFailedTests} failed (Node ${version}, ai ${AI_VERSION})`,
    )
    if (counts.numPassedTests === 0) return 1
    return result.status ?? 1
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

process.exitCode = main()
