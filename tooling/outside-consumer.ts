/**
 * The outside-consumer test: packs every publishable package exactly as `pnpm publish`
 * would (`pnpm -r pack`, which rewrites `workspace:^` to real versions), installs the
 * tarballs with npm into a fresh project in the OS temp directory (outside the workspace),
 * runs an ESM program that imports every package and uses it, runs the session-store
 * backend conformance suite from its tarball (`conformance.mjs`), type-checks a
 * TypeScript file against the published declarations, and compiles and runs the usage
 * example of each framework adapter's README verbatim, beside the framework (`ai`,
 * `@openai/agents-core`, `@anthropic-ai/claude-agent-sdk`) installed from the registry.
 *
 * Fails (exit 1) when an export, a type, a file in `files` or a dependency is wrong.
 * Expects `pnpm build` to have run (the gate runs it through `check:package`).
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, cpSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { extractBlocks } from './readme-examples.ts'

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

/**
 * The adapters' README examples: each package's first runnable TypeScript block, and a line
 * its output must contain (what the example's comments promise).
 */
const ADAPTER_EXAMPLES: readonly { readonly name: string; readonly expect: string }[] = [
  { name: 'ai-sdk', expect: 'Sunny in Paris.' },
  { name: 'openai-agents', expect: 'Sunny in Paris.\n4' },
  { name: 'claude-agent-sdk', expect: 'u1 a1' },
]

/**
 * Copies each adapter README's first runnable example into the project, compiles them with
 * tsc (`tsconfig.adapters.json`) against the installed packages and runs each in its own
 * empty directory with node.
 */
function runAdapterExamples(project: string, tsc: string): string[] {
  mkdirSync(join(project, 'readme-examples'))
  for (const { name } of ADAPTER_EXAMPLES) {
    const readme = readFileSync(join(root, 'packages', name, 'README.md'), 'utf8')
    const example = extractBlocks(readme).find((block) => !block.fragment)
    if (example === undefined) throw new Error(`packages/${name}/README.md has no runnable ts example`)
    writeFileSync(join(project, 'readme-examples', `${name}.ts`), `${example.code}\n`)
  }
  run('node', [tsc, '-p', 'tsconfig.adapters.json'], project)
  const ran: string[] = []
  for (const { name, expect } of ADAPTER_EXAMPLES) {
    const directory = join(project, 'runs', name)
    mkdirSync(directory, { recursive: true })
    const output = run('node', [join(project, 'readme-examples', 'out', `${name}.js`)], directory)
    if (!output.includes(expect)) {
      throw new Error(
        `the README example of packages/${name} printed ${JSON.stringify(output)}, expected it to contain ${JSON.stringify(expect)}`,
      )
    }
    ran.push(name)
  }
  return ran
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
      '@anthropic-ai/claude-agent-sdk@0.3.333',
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
  const examples = runAdapterExamples(project, tsc)
  console.log(`outside-consumer: compiled and ran the README examples of ${examples.join(', ')}`)
  const bin = run('npx', ['--no-install', 'agent-ledger', '--help'], project)
  if (!bin.includes('agent-ledger')) throw new Error('the agent-ledger bin did not print its help')
  const manifest = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>
  }
  console.log(
    `outside-consumer: installed ${Object.keys(manifest.dependencies).length} packages from tarballs, ran consume.mjs and conformance.mjs, type-checked consume-types.ts, ran the adapters' README examples and the agent-ledger bin`,
  )
} finally {
  if (keep) console.log(`outside-consumer: kept ${work}`)
  else rmSync(work, { recursive: true, force: true })
}
