import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { childEnv, runMiniAgent } from './support/mini-agent-process.ts'

const REPOSITORY_ROOT = path.join(import.meta.dirname, '..', '..', '..')
let tmp: string

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'mini-agent-e2e-demo-'))
})

afterAll(async () => {
  await rm(tmp, { recursive: true, force: true })
})

describe('mini-agent demo (the pnpm demo story, as a child process)', () => {
  it('R1: runs the whole story, exit 0: tools, a real SIGKILL, the TOOL_OUTCOME_UNKNOWN placeholder, fork, compaction, verify, export, compress', async () => {
    const run = await runMiniAgent(['demo'], { env: childEnv({ TMPDIR: tmp }) })
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0)
    const out = run.stdout
    for (const title of [
      '== 1. A session that calls tools ==',
      '== 2. A crash in the middle of a tool call ==',
      '== 3. Resume: the repair and the placeholder the model receives ==',
      '== 4. A continued turn ==',
      '== 5. A fork at an earlier seq ==',
      '== 6. A compaction ==',
      '== 7. Verify ==',
      '== 8. Export ==',
      '== 9. Compress ==',
    ]) {
      expect(out).toContain(title)
    }
    expect(out).toContain('the child process was killed by SIGKILL')
    expect(out).toContain('"role": "tool"')
    expect(out).toMatch(
      /"content": "Error: the previous run was interrupted after tool call .*\[TOOL_OUTCOME_UNKNOWN\]"/,
    )
    expect(out).toContain('provider check of the derived history: 0 issue(s).')
    expect(out).toContain('turn/end turn 3 completed')
    expect(out).toContain(
      '  - todo.txt.summary.md is missing, so the interrupted write had not happened. Writing it now.',
    )
    expect(out).toMatch(/demo: ok, \d+ events/)
    expect(out).toMatch(/demo-fork: ok, \d+ events/)
    expect(out).not.toContain('DEMO FAILED')

    const [base] = await readdir(tmp)
    const demoDirectory = path.join(tmp, base!)
    expect(out).toMatch(/compress the session: \d+ bytes -> \d+ bytes/)
    expect(existsSync(path.join(demoDirectory, 'sessions', 'demo', 'session.v4.jsonl.zstd'))).toBe(true)
    expect(existsSync(path.join(demoDirectory, 'sessions', 'demo', 'session.v4.jsonl'))).toBe(false)
    expect(existsSync(path.join(demoDirectory, 'sessions', 'demo-fork', 'session.v4.jsonl'))).toBe(true)
    expect(existsSync(path.join(demoDirectory, 'workspace', 'todo.txt.summary.md'))).toBe(true)
    const markdown = await readFile(path.join(demoDirectory, 'demo.md'), 'utf8')
    expect(markdown).toContain('Repair placeholder `TOOL_OUTCOME_UNKNOWN`')
    expect(markdown).toContain('(compaction summary)')
    expect(markdown).toMatch(/> \*\*Replaces\*\* messages #\d+\.\.#\d+/)
    expect(markdown).toContain('the interrupted write had not happened')

    // Every hint works as printed, pasted into a shell at the repository root.
    const hints = out
      .split('\n')
      .filter((line) => line.startsWith('try: '))
      .map((line) => line.slice('try: '.length))
    expect(hints).toEqual([
      `pnpm mini-agent sessions --root ${path.join(demoDirectory, 'sessions')}`,
      `pnpm agent-ledger export ${path.join(demoDirectory, 'sessions', 'demo')} --format html -o ${path.join(demoDirectory, 'demo.html')}`,
    ])
    const sessions = await shell(hints[0]!)
    expect(sessions.code, sessions.stderr).toBe(0)
    expect(sessions.stdout).toMatch(/^demo {2}created /m)
    expect(sessions.stdout).toMatch(/^demo-fork {2}created .*forked from demo$/m)
    const exported = await shell(hints[1]!)
    expect(exported.code, exported.stderr).toBe(0)
    expect(await readFile(path.join(demoDirectory, 'demo.html'), 'utf8')).toContain('<h1>Session demo</h1>')
  })
})

/** Runs a command line as a person would paste it, in a shell at the repository root. */
function shell(line: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      'sh',
      ['-c', line],
      { cwd: REPOSITORY_ROOT, encoding: 'utf8', timeout: testTime(120_000) },
      (error, stdout, stderr) => {
        resolve({
          code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1,
          stdout,
          stderr,
        })
      },
    )
  })
}
