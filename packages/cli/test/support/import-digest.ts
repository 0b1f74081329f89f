/**
 * The bytes an `agent-ledger import` writes, as one digest per source: the import-speed work
 * must not change a byte of them. Used by `test/import-bytes.test.ts`, and run as a script
 * (`pnpm exec tsx --conditions=@agent-ledger/source packages/cli/test/support/import-digest.ts`
 * from the repository root) to print the digests that test records.
 *
 * Each source is copied into a fresh temp directory and imported with a relative path (the
 * header names the source file as shown), so the digests do not depend on where the
 * repository or the temp directory is.
 */
import { createHash } from 'node:crypto'
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { LOG_FILE_NAME } from '@agent-ledger/session-store-jsonl/format'

import { transcriptLines } from './claude-transcript.ts'
import { cli, makeRoot } from './sessions.ts'

const here = dirname(fileURLToPath(import.meta.url))
const IMPORT_TEST = join(here, '..', '..', '..', 'import', 'test')
/** The synthetic fixtures of `@agent-ledger/import`. */
const SYNTHETIC = join(IMPORT_TEST, 'fixtures')
/** The shared real recordings (beside the repository; absent outside CI and the team's machines). */
const SHARED = join(here, '..', '..', '..', '..', '..', 'shared', 'fixtures', 'import')

/** One source to import: a name (the file name it gets) and a way to write it. */
export interface DigestSource {
  readonly name: string
  readonly write: (path: string) => void
}

function copyOf(path: string): (target: string) => void {
  return (target) => copyFileSync(path, target)
}

function fixtureFiles(root: string, prefix: string): DigestSource[] {
  if (!existsSync(root)) return []
  const found: DigestSource[] = []
  for (const format of readdirSync(root, { withFileTypes: true })) {
    if (!format.isDirectory()) continue
    for (const file of readdirSync(join(root, format.name)).sort()) {
      if (!/\.jsonl?$/.test(file)) continue
      found.push({ name: `${prefix}-${format.name}-${file}`, write: copyOf(join(root, format.name, file)) })
    }
  }
  return found.sort((a, b) => (a.name < b.name ? -1 : 1))
}

/**
 * A generated transcript of 300 turns with 4 KB tool outputs (three batches of the default
 * 2,048 events), in which some strings look like secrets (the store's redaction rewrites them),
 * one line uses non-ASCII text and escapes, and one line is written with spaces after the
 * separators (its verbatim copy is then the line's text, not its record).
 */
function generatedLines(): string[] {
  const lines = transcriptLines({ turns: 300, outputBytes: 4096 })
  const prompts = lines.flatMap((line, index) => (line.includes('run the tests.') ? [index] : []))
  const edit = (prompt: number, text: string): void => {
    const index = prompts[prompt]!
    lines[index] = lines[index]!.replace('run the tests.', text)
  }
  edit(2, `run the tests with key sk-ant-api03-${'a1B2c3D4e5'.repeat(5)}.`)
  edit(3, 'run the tests (Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345).')
  edit(4, 'run the t\\u00e9sts: \\"naïve\\" café \\ud83d\\ude00 \\u2028 end.')
  const spaced = prompts[5]!
  lines[spaced] = JSON.stringify(JSON.parse(lines[spaced]!) as unknown, null, 1).replace(/\n/g, ' ')
  return lines
}

/** Every source the byte test imports: the synthetic fixtures, the shared ones when present, the generated one. */
export function digestSources(): DigestSource[] {
  return [
    ...fixtureFiles(SYNTHETIC, 'synthetic'),
    ...fixtureFiles(SHARED, 'shared'),
    {
      name: 'generated-claude-300-turns.jsonl',
      write: (path) => writeFileSync(path, `${generatedLines().join('\n')}\n`),
    },
  ]
}

/**
 * Imports one source with `agent-ledger import` into a fresh root and returns the SHA-256 of
 * every session log it wrote (session ids in order, each id then its log's bytes).
 */
export async function importDigest(source: DigestSource): Promise<string> {
  const { root, cleanup } = makeRoot('al-import-bytes-')
  try {
    mkdirSync(join(root, 'src'))
    source.write(join(root, 'src', source.name))
    const run = await cli(
      ['import', join('src', source.name), '--root', 'store', '--json', '--no-progress'],
      {
        cwd: root,
      },
    )
    if (run.code !== 0)
      throw new Error(`import of ${source.name} exited ${run.code}: ${run.stderr}${run.stdout}`)
    const hash = createHash('sha256')
    const store = join(root, 'store')
    for (const id of readdirSync(store).sort()) {
      const log = join(store, id, LOG_FILE_NAME)
      if (!existsSync(log)) continue
      hash.update(`${id}\n`)
      hash.update(readFileSync(log))
    }
    return hash.digest('hex')
  } finally {
    cleanup()
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const source of digestSources()) {
    console.log(`  '${basename(source.name)}': '${await importDigest(source)}',`)
  }
}
