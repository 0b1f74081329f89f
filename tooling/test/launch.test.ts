import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../..', import.meta.url))
const launcher = join(root, 'tooling', 'launch.mjs')
const cache = join(root, 'node_modules', '.cache', 'agent-ledger')
let work: string

interface Ran {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

function launch(entry: string, ...args: string[]): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [launcher, entry, ...args],
      { cwd: root, encoding: 'utf8' },
      (error, stdout, stderr) => {
        resolve({
          code: error === null ? 0 : typeof error.code === 'number' ? error.code : null,
          stdout,
          stderr,
        })
      },
    )
  })
}

beforeAll(() => {
  // Inside the repository (gitignored), so the entry resolves like the real ones do.
  mkdirSync(join(root, 'tooling', '.test-output'), { recursive: true })
  work = mkdtempSync(join(root, 'tooling', '.test-output', 'launch-'))
})
afterAll(() => {
  const name = relative(root, join(work, 'entry')).replaceAll('/', '__')
  for (const suffix of ['.mjs', '.mjs.map', '.json']) rmSync(join(cache, name + suffix), { force: true })
  rmSync(work, { recursive: true, force: true })
})

describe('tooling/launch.mjs', () => {
  it('runs the entry in process with its argv, exit code and source import.meta.url, and rebuilds when a source changes', async () => {
    const entry = join(work, 'entry.ts')
    const message = join(work, 'message.ts')
    writeFileSync(
      entry,
      [
        "import { message } from './message.ts'",
        "import { detail } from './detail'",
        'const args: string[] = process.argv.slice(2)',
        'console.log(`${message} ${detail} ${JSON.stringify(args)} ${import.meta.url}`)',
        'process.exitCode = Number(args[0])',
        '',
      ].join('\n'),
    )
    writeFileSync(message, "export const message: string = 'first'\n")
    mkdirSync(join(work, 'detail'))
    writeFileSync(join(work, 'detail', 'index.ts'), "export const detail = 'from-index'\n")

    const first = await launch(entry, '7', 'a b')
    expect(first.stderr).toBe('')
    expect(first.code).toBe(7)
    expect(first.stdout).toBe(`first from-index ["7","a b"] ${pathToFileURL(entry).href}\n`)

    // An edit of another size.
    writeFileSync(message, "export const message: string = 'second edit'\n")
    expect((await launch(entry, '0')).stdout).toMatch(/^second edit from-index /)

    // An edit of the same size, whose only trace is the mtime.
    writeFileSync(message, "export const message: string = 'thirdXedit'\n")
    expect((await launch(entry, '0')).stdout).toMatch(/^thirdXedit from-index /)
    const before = statSync(message).mtime
    writeFileSync(message, "export const message: string = 'thirdYedit'\n")
    utimesSync(message, before, new Date(before.getTime() + 5_000))
    expect((await launch(entry, '0')).stdout).toMatch(/^thirdYedit from-index /)

    // A new file that changes what an unchanged import resolves to.
    writeFileSync(join(work, 'detail.ts'), "export const detail = 'from-file'\n")
    expect((await launch(entry, '0')).stdout).toMatch(/^thirdYedit from-file /)
  })

  it('concurrent starts after an edit all run the new code', async () => {
    const entry = join(work, 'entry.ts')
    writeFileSync(join(work, 'message.ts'), "export const message: string = 'concurrent'\n")
    const runs = await Promise.all(Array.from({ length: 4 }, () => launch(entry, '0')))
    for (const run of runs) {
      expect(run.stderr).toBe('')
      expect(run.code).toBe(0)
      expect(run.stdout).toMatch(/^concurrent from-file /)
    }
  })

  it('reports a source that does not compile, naming it, and exits 1', async () => {
    const broken = join(work, 'broken.ts')
    writeFileSync(broken, 'const = 1\n')
    const run = await launch(broken)
    expect(run.code).toBe(1)
    expect(run.stderr).toMatch(/launch: cannot bundle .*broken\.ts/)
    for (const suffix of ['.mjs', '.mjs.map', '.json']) {
      rmSync(join(cache, relative(root, join(work, 'broken')).replaceAll('/', '__') + suffix), {
        force: true,
      })
    }
  })
})
