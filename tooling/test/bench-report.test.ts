import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { checkProblems, findBenchModules, formatTable, parseBenchArgs } from '../bench/report.ts'
import type { ModuleResult } from '../bench/report.ts'

let scratch: string
beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-bench-report-'))
})
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

const met: ModuleResult = {
  module: 'packages/a/bench/a.bench.ts',
  name: 'open 20 MB',
  value: 120,
  unit: 'MB/s',
  floor: { name: 'bare loop', value: 140 },
  ratio: 120 / 140,
  target: '>= 0.8',
  met: true,
}
const missed: ModuleResult = { ...met, name: 'append batch 100', ratio: 0.5, met: false }
const context: ModuleResult = { module: met.module, name: 'context row', value: 3, unit: 's' }

describe('pnpm bench arguments', () => {
  it('reads --large, --check and repeated --only', () => {
    expect(parseBenchArgs(['--check', '--only', 'open', '--only', 'append', '--large'])).toEqual({
      scale: 'large',
      only: ['open', 'append'],
      check: true,
    })
    expect(parseBenchArgs([])).toEqual({ scale: 'default', only: [], check: false })
  })

  it('refuses an unknown argument and a bare --only, naming them', () => {
    expect(() => parseBenchArgs(['--chek'])).toThrow(/unknown argument "--chek"/)
    expect(() => parseBenchArgs(['--only'])).toThrow(/after --only, found none/)
    expect(() => parseBenchArgs(['--only', '--check'])).toThrow(/after --only/)
  })
})

describe('bench modules are registered by their file name', () => {
  it('finds packages/*/bench/*.bench.ts and apps/*/bench/*.bench.ts, sorted, and filters by substring', () => {
    const root = join(scratch, 'repo')
    for (const file of [
      'packages/b/bench/open.bench.ts',
      'packages/a/bench/append.bench.ts',
      'packages/a/bench/support/helper.ts',
      'packages/a/bench/notes.md',
      'apps/demo/bench/demo.bench.ts',
      'packages/c/src/x.bench.ts',
    ]) {
      mkdirSync(join(root, file, '..'), { recursive: true })
      writeFileSync(join(root, file), '')
    }
    const found = findBenchModules(root).map((file) => file.slice(root.length + 1))
    expect(found).toEqual([
      'apps/demo/bench/demo.bench.ts',
      'packages/a/bench/append.bench.ts',
      'packages/b/bench/open.bench.ts',
    ])
    const filtered = findBenchModules(root, ['open', 'demo']).map((file) => file.slice(root.length + 1))
    expect(filtered).toEqual(['apps/demo/bench/demo.bench.ts', 'packages/b/bench/open.bench.ts'])
    // The substring is matched from the root: the root's own path ('repo') matches nothing.
    expect(findBenchModules(root, ['repo'])).toEqual([])
  })
})

describe('the table and the --check verdict', () => {
  it('prints every figure with its floor, ratio, target and met / MISSED', () => {
    const lines = formatTable([met, missed, context])
    expect(lines[0]).toMatch(/^figure +ours +floor \(same run\) +ratio +target +met$/)
    expect(lines[2]).toMatch(/^open 20 MB +120\.0 MB\/s +bare loop: 140\.0 +0\.857 +>= 0\.8 +met$/)
    expect(lines[3]).toMatch(/^append batch 100 .* 0\.500 +>= 0\.8 +MISSED$/)
    expect(lines[4]).toMatch(/^context row +3\.000 s$/)
  })

  it('fails the check for a missed target and for a module that threw, never for a context row', () => {
    expect(checkProblems([met, context], [])).toEqual([])
    expect(
      checkProblems(
        [met, missed, context],
        [{ module: 'packages/x/bench/x.bench.ts', error: 'Error: boom\n  at x' }],
      ),
    ).toEqual([
      { module: met.module, figure: 'append batch 100', message: 'expected ratio >= 0.8, found 0.500' },
      { module: 'packages/x/bench/x.bench.ts', figure: null, message: 'the module failed: Error: boom' },
    ])
  })
})
