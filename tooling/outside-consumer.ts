/**
 * The outside-consumer test: packs every publishable package exactly as `pnpm publish`
 * would (`pnpm -r pack`, which rewrites `workspace:^` to real versions), installs the
 * tarballs with npm into a fresh project in the OS temp directory (outside the workspace),
 * runs an ESM program that imports every package and uses it, runs the session-store
 * backend conformance suite from its tarball (`conformance.mjs`), and type-checks a
 * TypeScript file against the published declarations.
 *
 * Fails (exit 1) when an export, a type, a file in `files` or a dependency is wrong.
 * Expects `pnpm build` to have run (the gate runs it through `check:package`).
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, cpSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..')
const fixture = join(root, 'tooling', 'outside-consumer')
const keep = process.argv.includes('--keep')

function run(command: string, args: readonly string[], cwd: string): string {
  try {
    return execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  } catch (error) {
    const failure = error as { stdout?: string; stderr?: string; message: string }
    console.error(`outside-consumer: "${command} ${args.join(' ')}" failed in ${cwd}`)
    if (failure.stdout) console.error(failure.stdout)
    if (failure.stderr) console.error(failure.stderr)
    throw error
  }
}

const work = mkdtempSync(join(tmpdir(), 'agent-ledger-consumer-'))
try {
  const packDirectory = join(work, 'tarballs')
  run('pnpm', ['-r', '--filter', './packages/*', 'pack', '--pack-destination', packDirectory], root)
  const tarballs = readdirSync(packDirectory)
    .filter((name) => name.endsWith('.tgz'))
    .map((name) => join(packDirectory, name))
  const expected = readdirSync(join(root, 'packages')).length
  if (tarballs.length !== expected) {
    throw new Error(`expected ${expected} tarballs, found ${tarballs.length}: ${tarballs.join(', ')}`)
  }
  const project = join(work, 'consumer')
  cpSync(fixture, project, { recursive: true })
  run(
    'npm',
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      ...tarballs,
      '@types/node@^20.19.0',
      // The adapters' frameworks, at the newest versions that run on Node 20 (peers of the adapters).
      'ai@6.0.325',
      '@openai/agents-core@0.14.3',
      'zod@^4.1.0',
    ],
    project,
  )
  const output = run('node', ['consume.mjs'], project)
  process.stdout.write(output)
  if (!output.includes('outside-consumer: ok')) throw new Error('consume.mjs did not report ok')
  // A third-party backend author's view: the conformance suite from the packed tarball.
  const conformance = run('node', ['conformance.mjs'], project)
  process.stdout.write(conformance)
  if (!/outside-consumer: conformance \d+ passed/.test(conformance)) {
    throw new Error('conformance.mjs did not report its cases passed')
  }
  // consume-types.ts leaves the adapters out: with skipLibCheck off, the AI SDK's own declarations
  // fail exactOptionalPropertyTypes. The adapters' declarations are checked by their packages'
  // typecheck and used at run time by consume.mjs above.
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  run('node', [tsc, '-p', 'tsconfig.json'], project)
  const bin = run('npx', ['--no-install', 'agent-ledger', '--help'], project)
  if (!bin.includes('agent-ledger')) throw new Error('the agent-ledger bin did not print its help')
  const manifest = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>
  }
  console.log(
    `outside-consumer: installed ${Object.keys(manifest.dependencies).length} packages from tarballs, ran consume.mjs and conformance.mjs, type-checked consume-types.ts, ran the agent-ledger bin`,
  )
} finally {
  if (keep) console.log(`outside-consumer: kept ${work}`)
  else rmSync(work, { recursive: true, force: true })
}
