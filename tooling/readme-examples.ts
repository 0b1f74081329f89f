/**
 * Compiles and runs every TypeScript example in every README (root, `packages/*`,
 * `apps/*`), so a README cannot drift from the code it documents.
 *
 * A fenced block whose info string is `ts` (or `typescript`) is an example: all of them are
 * type-checked together in ONE TypeScript program (the repository's strict options, sibling
 * packages resolved to their sources), then each runs in its own `tsx` process with a fresh
 * temporary directory as its working directory and `HOME`. A run fails when it exits
 * non-zero or leaves a `writer.lock` behind (an example must close what it opens).
 *
 * A block that is deliberately a piece of a larger program says so: ```` ```ts fragment ````.
 * A fragment is only parsed (syntax errors fail the check); it is neither type-checked nor
 * run, because it uses names the surrounding prose defines.
 *
 * Each example is written to `.readme-examples/<run>/` beside its README (gitignored, removed
 * afterwards; `<run>` is this run's own, so two runs at once, such as the gate's and the
 * tooling tests' own, never remove each other's files) so that its imports resolve through
 * that package's dependencies; the root README's examples resolve from `apps/demo`, which
 * depends on every package.
 *
 * Then the root README's ```` ```sh walk ```` blocks are run in a scratch clone of HEAD, which
 * must stay clean (`tooling/readme-walk.ts`).
 *
 * Usage: `tsx tooling/readme-examples.ts` (exit 1 on any failure; part of `pnpm test`).
 */
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

import ts from 'typescript'

import { walkReadme } from './readme-walk.ts'

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..')
const EXAMPLES_DIRECTORY = '.readme-examples'
const TS_LANGUAGES = new Set(['ts', 'typescript', 'mts'])
const ATTRIBUTES = new Set(['fragment'])

/** One fenced TypeScript block of a README. */
export interface ReadmeBlock {
  /** 1-based line of the first line of code (the line after the fence). */
  readonly line: number
  readonly info: string
  readonly code: string
  readonly fragment: boolean
}

/** A README to check, and the directory whose dependencies its examples import from. */
export interface ReadmeInput {
  readonly readme: string
  readonly resolveFrom: string
}

/**
 * The fenced TypeScript blocks of a Markdown text, in order.
 *
 * @param markdown - The README.
 * @returns Its blocks; throws on an unknown attribute in a `ts` info string (a typo would
 *   otherwise turn a check off silently).
 */
export function extractBlocks(markdown: string): ReadmeBlock[] {
  const lines = markdown.split('\n')
  const blocks: ReadmeBlock[] = []
  for (let index = 0; index < lines.length; index += 1) {
    const open = /^ {0,3}(`{3,}|~{3,})\s*(.*)$/.exec(lines[index]!)
    if (open === null) continue
    const fence = open[1]!
    const info = open[2]!.trim()
    const body: string[] = []
    let end = index + 1
    while (end < lines.length && !lines[end]!.trimStart().startsWith(fence)) {
      body.push(lines[end]!)
      end += 1
    }
    const [language = '', ...attributes] = info.split(/\s+/)
    if (TS_LANGUAGES.has(language)) {
      const unknown = attributes.filter((attribute) => !ATTRIBUTES.has(attribute))
      if (unknown.length > 0) {
        throw new Error(
          `line ${index + 1}: unknown attribute ${unknown.map((word) => JSON.stringify(word)).join(', ')} in \`\`\`${info} (expected nothing or "fragment")`,
        )
      }
      blocks.push({ line: index + 2, info, code: body.join('\n'), fragment: attributes.includes('fragment') })
    }
    index = end
  }
  return blocks
}

/** Every README the check covers. */
export function repositoryReadmes(): ReadmeInput[] {
  const inputs: ReadmeInput[] = [{ readme: join(root, 'README.md'), resolveFrom: join(root, 'apps', 'demo') }]
  for (const group of ['packages', 'apps']) {
    for (const entry of readdirSync(join(root, group))) {
      const readme = join(root, group, entry, 'README.md')
      if (existsSync(readme)) inputs.push({ readme, resolveFrom: join(root, group, entry) })
    }
  }
  return inputs
}

interface Placed {
  readonly input: ReadmeInput
  readonly block: ReadmeBlock
  readonly file: string
}

function where(placed: Placed, offset = 0): string {
  return `${relative(root, placed.input.readme)}:${placed.block.line + offset}`
}

function files(directory: string, name: string): string[] {
  if (!existsSync(directory)) return []
  return readdirSync(directory, { recursive: true, encoding: 'utf8' })
    .filter((entry) => basename(entry) === name)
    .map((entry) => join(directory, entry))
}

function typeCheck(placed: readonly Placed[]): string[] {
  if (placed.length === 0) return []
  const base = ts.readConfigFile(join(root, 'tsconfig.base.json'), (file) => ts.sys.readFile(file))
  const parsed = ts.parseJsonConfigFileContent(base.config, ts.sys, root)
  const options: ts.CompilerOptions = {
    ...parsed.options,
    noEmit: true,
    // Examples show a value and stop: an unused result is normal there.
    noUnusedLocals: false,
    noUnusedParameters: false,
    types: ['node'],
    typeRoots: [join(root, 'node_modules', '@types')],
  }
  const program = ts.createProgram(
    placed.map((entry) => entry.file),
    options,
  )
  const byFile = new Map(placed.map((entry) => [entry.file, entry]))
  // Only the examples' own diagnostics: each package type-checks its sources with its own
  // options, and one example's module augmentation must not fail another package's switch.
  const diagnostics = [
    ...program.getOptionsDiagnostics(),
    ...program.getGlobalDiagnostics(),
    ...placed.flatMap((entry) => {
      const source = program.getSourceFile(entry.file)
      return source === undefined
        ? []
        : [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]
    }),
  ]
  return diagnostics.map((diagnostic) => {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')
    const owner = diagnostic.file === undefined ? undefined : byFile.get(diagnostic.file.fileName)
    if (owner === undefined || diagnostic.start === undefined) {
      return `${diagnostic.file === undefined ? '(options)' : relative(root, diagnostic.file.fileName)}: TS${diagnostic.code}: ${message}`
    }
    const { line } = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start)
    return `${where(owner, line)}: TS${diagnostic.code}: ${message}`
  })
}

function parseFragment(input: ReadmeInput, block: ReadmeBlock): string[] {
  const output = ts.transpileModule(block.code, {
    reportDiagnostics: true,
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext },
  })
  return (output.diagnostics ?? []).map((diagnostic) => {
    const line =
      diagnostic.file === undefined || diagnostic.start === undefined
        ? 0
        : diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start).line
    return `${relative(root, input.readme)}:${block.line + line}: fragment does not parse: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`
  })
}

function runOne(placed: Placed): Promise<string[]> {
  const cwd = mkdtempSync(join(tmpdir(), 'al-readme-'))
  const tsx = join(root, 'node_modules', '.bin', 'tsx')
  return new Promise((resolve) => {
    execFile(
      tsx,
      ['--conditions=@agent-ledger/source', placed.file],
      { cwd, env: { ...process.env, HOME: cwd }, timeout: 60_000, encoding: 'utf8' },
      (error, _stdout, stderr) => {
        const problems: string[] = []
        if (error !== null) {
          problems.push(
            `${where(placed, -1)}: the example failed when run: ${stderr.trim() || error.message}`,
          )
        }
        const locks = files(cwd, 'writer.lock')
        if (locks.length > 0) {
          problems.push(
            `${where(placed, -1)}: the example left ${locks.map((lock) => relative(cwd, lock)).join(', ')} behind: close every writer it opens`,
          )
        }
        rmSync(cwd, { recursive: true, force: true })
        resolve(problems)
      },
    )
  })
}

/**
 * Checks the examples of the given READMEs.
 *
 * @param inputs - READMEs and where their imports resolve from.
 * @returns One line per problem (empty when every example compiles and runs), and counts.
 */
export async function checkReadmes(
  inputs: readonly ReadmeInput[],
): Promise<{ problems: string[]; ran: number; fragments: number }> {
  const problems: string[] = []
  const placed: Placed[] = []
  let fragments = 0
  const directories = new Set<string>()
  const run = `run-${process.pid}-${randomBytes(4).toString('hex')}`
  try {
    for (const input of inputs) {
      let blocks: ReadmeBlock[]
      try {
        blocks = extractBlocks(readFileSync(input.readme, 'utf8'))
      } catch (error) {
        problems.push(`${relative(root, input.readme)}: ${(error as Error).message}`)
        continue
      }
      for (const block of blocks) {
        if (block.fragment) {
          fragments += 1
          problems.push(...parseFragment(input, block))
          continue
        }
        const directory = join(input.resolveFrom, EXAMPLES_DIRECTORY, run)
        directories.add(directory)
        mkdirSync(directory, { recursive: true })
        const name = `${basename(input.readme, '.md').toLowerCase()}-${basename(dirname(input.readme))}-line${block.line}.ts`
        const file = join(directory, name)
        writeFileSync(file, `${block.code}\n`)
        placed.push({ input, block, file })
      }
    }
    const typeErrors = typeCheck(placed)
    problems.push(...typeErrors)
    if (typeErrors.length === 0) {
      for (const entry of placed) problems.push(...(await runOne(entry)))
    }
  } finally {
    for (const directory of directories) {
      rmSync(directory, { recursive: true, force: true })
      try {
        rmdirSync(dirname(directory))
      } catch {
        // Another run's examples are still there (or it is gone already): theirs to remove.
      }
    }
  }
  return { problems, ran: placed.length, fragments }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { problems, ran, fragments } = await checkReadmes(repositoryReadmes())
  const walk = await walkReadme({ repository: root })
  problems.push(...walk.problems)
  for (const problem of problems) console.error(problem)
  if (problems.length > 0) {
    console.error(`readme-examples: ${problems.length} problem(s)`)
    process.exit(1)
  }
  console.log(
    `readme-examples: ${ran} example(s) type-checked and run, ${fragments} fragment(s) parsed, ${walk.ran} README command(s) walked in a clean clone of HEAD`,
  )
}
