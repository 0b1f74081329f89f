import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { Writable } from 'node:stream'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { runGate } from '../gate.ts'
import type { GateStep } from '../gate.ts'

const vitest = join(dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs')
let scratch: string

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'al-gate-test-'))
})
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** A fresh root for one run. */
function freshRoot(name: string): string {
  const root = join(scratch, name)
  mkdirSync(root)
  return root
}

/** Runs the gate over `steps` in `root`, collecting everything it prints. */
async function gate(
  root: string,
  steps: readonly GateStep[],
  slots?: number,
): Promise<{ code: number; output: string }> {
  let output = ''
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      output += chunk.toString('utf8')
      done()
    },
  })
  // The child vitest must not think it runs inside this test run.
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('VITEST')))
  const code = await runGate({
    root,
    steps,
    stdout: sink,
    stderr: sink,
    env,
    ...(slots === undefined ? {} : { slots }),
  })
  return { code, output }
}

/** A node one-liner as a step's command. */
function node(script: string): string[] {
  return [process.execPath, '-e', script]
}

/** A vitest JSON report, written by hand: `passed` passing tests in one file. */
function handReport(passed: number, failed = 0): string {
  return JSON.stringify({
    numPassedTests: passed,
    numFailedTests: failed,
    numPendingTests: 0,
    numTodoTests: 0,
    testResults: [],
  })
}

function lastLine(output: string): string {
  return output.trimEnd().split('\n').at(-1)!
}

describe('the gate runner', () => {
  it('after a failing test step runs the later steps, names the failing tests, ends with the closing line, exit 1', async () => {
    const root = freshRoot('failing')
    mkdirSync(join(root, 'tiny'))
    writeFileSync(
      join(root, 'tiny', 'sum.test.ts'),
      [
        "describe('sums', () => {",
        "  it('adds', () => expect(1 + 1).toBe(2))",
        "  it('adds wrongly', () => expect(1 + 1).toBe(3))",
        "  it.skip('later', () => expect(1).toBe(1))",
        '})',
        '',
      ].join('\n'),
    )
    writeFileSync(join(root, 'tiny', 'broken.test.ts'), "throw new Error('cannot load this file')\n")
    const { code, output } = await gate(root, [
      {
        name: 'tiny vitest',
        command: [
          process.execPath,
          vitest,
          'run',
          '--root',
          join(root, 'tiny'),
          '--globals',
          '--reporter=default',
          '--reporter=json',
          `--outputFile.json=${join(root, 'tiny', 'test-results.json')}`,
        ],
        reports: ['*/test-results.json'],
      },
      { name: 'later', command: node("console.log('the later step ran')") },
      { name: 'unused-code', command: node("console.error('knip: unused export foo'); process.exit(3)") },
    ])
    expect(code).toBe(1)
    expect(output).toContain('the later step ran')
    expect(lastLine(output)).toBe('1 passed, 2 failed, 1 skipped')
    const end = output.slice(output.lastIndexOf('== gate: steps'))
    expect(end).toMatch(/tiny vitest +\S+ s +FAILED +1 passed, 2 failed/)
    expect(end).toMatch(/later +\S+ s +ok/)
    expect(end).toMatch(/unused-code +\S+ s +FAILED/)
    // The failing step without a report shows the end of its output; the failing tests
    // are listed, file and name, just above the closing line.
    expect(end).toContain('== gate: unused-code failed (exit 3); the end of its output:')
    expect(end).toContain('| knip: unused export foo')
    // Between the heading and the closing line: each failure, in the order vitest ran the files.
    const failing = end.slice(end.indexOf('== gate: failing tests')).trimEnd().split('\n').slice(1, -1)
    expect(failing).toHaveLength(3)
    const wrong = failing.indexOf('  tiny/sum.test.ts > sums > adds wrongly')
    expect(wrong).toBeGreaterThanOrEqual(0)
    expect(failing[wrong + 1]).toMatch(/^ {4}AssertionError: expected 2 to be 3/)
    expect(
      failing.filter((line) =>
        /^ {2}tiny\/broken\.test\.ts \(the file failed before its tests: .*cannot load this file/.test(line),
      ),
    ).toHaveLength(1)
  })

  it('deletes the reports an earlier run left before the first step, so they never count', async () => {
    const root = freshRoot('stale')
    mkdirSync(join(root, 'a'))
    writeFileSync(join(root, 'a', 'test-results.json'), handReport(50, 2))
    writeFileSync(join(root, 'a', 'e2e-results.json'), handReport(7, 1))
    writeFileSync(join(root, 'fresh.json'), handReport(3))
    // The step writes a fresh unit report and no end-to-end report.
    const copy = `require('node:fs').copyFileSync('fresh.json', 'a/test-results.json')`
    const { code, output } = await gate(root, [
      { name: 'tests', command: node(copy), reports: ['*/test-results.json', '*/e2e-results.json'] },
    ])
    expect(lastLine(output)).toBe('3 passed, 0 failed')
    expect(code).toBe(0)
    expect(existsSync(join(root, 'a', 'e2e-results.json'))).toBe(false)
    expect(readFileSync(join(root, 'a', 'test-results.json'), 'utf8')).toBe(handReport(3))
  })

  it('shows a test step that ran no test and fails the run for it', async () => {
    const root = freshRoot('no-test')
    mkdirSync(join(root, 'p'))
    writeFileSync(join(root, 'fresh.json'), handReport(4))
    writeFileSync(join(root, 'p', 'e2e-results.json'), handReport(9))
    const copy = `require('node:fs').copyFileSync('fresh.json', 'p/test-results.json')`
    const { code, output } = await gate(root, [
      { name: 'unit', command: node(copy), reports: ['p/test-results.json'] },
      { name: 'e2e', command: node("console.log('no test files found')"), reports: ['p/e2e-results.json'] },
    ])
    expect(code).toBe(1)
    expect(lastLine(output)).toBe('4 passed, 0 failed')
    expect(output).toMatch(/e2e +\S+ s +NO TEST +ran no test/)
    expect(output).toContain('== gate: e2e failed (ran no test); the end of its output:')
    expect(output).toContain('| no test files found')
  })

  it('fails a run in which no step ran a test', async () => {
    const root = freshRoot('nothing')
    const { code, output } = await gate(root, [{ name: 'format', command: node('') }])
    expect(lastLine(output)).toBe('0 passed, 0 failed')
    expect(code).toBe(1)
  })

  it('reports a step that could not start by name', async () => {
    const root = freshRoot('missing')
    writeFileSync(join(root, 'fresh.json'), handReport(1))
    const copy = `require('node:fs').copyFileSync('fresh.json', 'test-results.json')`
    const { code, output } = await gate(root, [
      { name: 'ghost', command: [join(root, 'no-such-program')] },
      { name: 'unit', command: node(copy), reports: ['test-results.json'] },
    ])
    expect(code).toBe(1)
    expect(output).toMatch(/== gate: ghost failed \(could not start: .*ENOENT/)
    expect(lastLine(output)).toBe('1 passed, 0 failed')
  })

  it('with two slots runs steps side by side, each line behind its name; `after` and a two-slot step wait', async () => {
    const root = freshRoot('slots')
    writeFileSync(join(root, 'fresh.json'), handReport(2))
    // Each of `a` and `b` marks that it runs, then waits for the other's mark: the run ends
    // only when both run at once. Each removes its mark only once the other has said it saw
    // it (`.met`): removing it earlier could leave the other waiting for a mark already gone.
    // A sleep between polls keeps the CPU free.
    const waitFor = (file: string): string =>
      `while (!fs.existsSync('${file}')) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20)`
    const meet = (mine: string, theirs: string): string =>
      [
        "const fs = require('node:fs')",
        `fs.writeFileSync('${mine}.running', '')`,
        waitFor(`${theirs}.running`),
        `fs.writeFileSync('${mine}.met', '')`,
        `console.log('${mine} met ${theirs}'); process.stdout.write('no newline at the end')`,
        waitFor(`${theirs}.met`),
        `fs.rmSync('${mine}.running')`,
      ].join('\n')
    // `late` and `wide` each print whether a mark of another step is still there.
    const look = (name: string): string =>
      [
        "const fs = require('node:fs')",
        `console.log('${name} saw ' + JSON.stringify(fs.readdirSync('.').filter((file) => file.endsWith('.running'))))`,
      ].join('\n')
    const copy = `require('node:fs').copyFileSync('fresh.json', 'test-results.json')`
    const { code, output } = await gate(
      root,
      [
        { name: 'a', command: node(meet('a', 'b')) },
        { name: 'b', command: node(meet('b', 'a')) },
        { name: 'late', command: node(look('late')), after: ['a', 'b'] },
        { name: 'wide', command: node(`${look('wide')}\n${copy}`), slots: 2, reports: ['test-results.json'] },
      ],
      2,
    )
    expect(code).toBe(0)
    expect(output).toContain('[a] a met b\n')
    expect(output).toContain('[b] b met a\n')
    // A last line without its newline still comes out whole, behind its name.
    expect(output).toContain('[a] no newline at the end\n')
    expect(output).toContain('[late] late saw []\n')
    expect(output).toContain('[wide] wide saw []\n')
    // The run's wall time, the sum of the steps' own, and (Linux) the CPU time the steps used.
    expect(output).toMatch(
      /wall time: \S+ s \(the steps' own times add up to \S+ s; CPU time of the steps: \S+ s\)/,
    )
    expect(lastLine(output)).toBe('2 passed, 0 failed')
  })

  it('refuses a step that runs after a step that is not before it', async () => {
    const root = freshRoot('after-unknown')
    await expect(
      gate(root, [
        { name: 'first', command: node(''), after: ['second'] },
        { name: 'second', command: node('') },
      ]),
    ).rejects.toThrow('gate step "first" runs after "second", which is not an earlier step')
  })
})
