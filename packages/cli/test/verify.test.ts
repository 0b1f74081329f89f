import { createHash } from 'node:crypto'
import { readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import { encodeJsonLine } from '@agent-ledger/session-store-jsonl/format'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import {
  cli,
  flipByteInLine,
  logLines,
  logPath,
  makeRoot,
  tearLastLine,
  testStore,
  writeSession,
} from './support/sessions.ts'

let root: string
let cleanup: () => void

beforeEach(async () => {
  ;({ root, cleanup } = makeRoot())
  await writeSession(testStore(root), 'a1', { turns: 2 })
})
afterEach(() => cleanup())

function fingerprint(path: string): { sha: string; size: number; mtimeMs: number; ino: number } {
  const stats = statSync(path)
  return {
    sha: createHash('sha256').update(readFileSync(path)).digest('hex'),
    size: stats.size,
    mtimeMs: stats.mtimeMs,
    ino: stats.ino,
  }
}

describe('verify', () => {
  it('exits 0 on an intact session and reports its events', async () => {
    const run = await cli(['verify', join(root, 'a1')])
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/^ok: .*a1\/session\.v4\.jsonl: 15 events, last seq 14, /)
    expect(run.stderr).toBe('')
  })

  it('accepts the log file path as <session> (the root is the session directory parent)', async () => {
    const run = await cli(['verify', logPath(root, 'a1'), '--json'])
    expect(run.code).toBe(0)
    const report = JSON.parse(run.stdout) as { status: string; session: string; events: number }
    expect(report).toMatchObject({ status: 'ok', session: 'a1', events: 15 })
  })

  it('resolves a relative <session> against the working directory and prints relative paths', async () => {
    const run = await cli(['verify', 'a1'], { cwd: root })
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/^ok: a1\/session\.v4\.jsonl:/)
  })

  it('T1/T2: reports a torn tail read-only, exit 0 with one warning line, and changes nothing', async () => {
    const { keptBytes } = tearLastLine(root, 'a1')
    const before = fingerprint(logPath(root, 'a1'))
    const run = await cli(['verify', join(root, 'a1')])
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(
      /^torn tail: .*: 14 good events \(last good seq 13\), then an unacknowledged tail/,
    )
    const lines = run.stderr.split('\n').filter((line) => line !== '')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(
      /^agent-ledger: warning: TORN_TAIL in .*a1\/session\.v4\.jsonl line 16 \(offset \d+\): .*unterminated/,
    )
    expect(lines[0]).toContain(`(offset ${keptBytes})`)
    expect(fingerprint(logPath(root, 'a1'))).toEqual(before)
  })

  it('T1: --strict makes a torn tail a failure (exit 1)', async () => {
    tearLastLine(root, 'a1')
    const run = await cli(['verify', join(root, 'a1'), '--strict', '--json'])
    expect(run.code).toBe(1)
    const report = JSON.parse(run.stdout) as {
      status: string
      tornTail: { reason: string }
      exitCode: number
    }
    expect(report.status).toBe('torn-tail')
    expect(report.tornTail.reason).toBe('unterminated')
    expect(report.exitCode).toBe(1)
  })

  it('I1: a flipped byte in a middle line exits 1 with code, line, offset, seq and last good seq on ONE line', async () => {
    const { offset } = flipByteInLine(root, 'a1', 8)
    const before = fingerprint(logPath(root, 'a1'))
    const run = await cli(['verify', join(root, 'a1')])
    expect(run.code).toBe(1)
    expect(run.stdout).toMatch(/^damaged: .*: 6 good events \(last good seq 5\) before the damage/)
    expect(run.stderr.endsWith('\n')).toBe(true)
    expect(run.stderr.split('\n')).toHaveLength(2)
    expect(run.stderr).toMatch(
      new RegExp(
        `^agent-ledger: CORRUPT_LINE in .*a1/session\\.v4\\.jsonl line 8 \\(offset ${offset}\\): .*checksum.*\\[seq 6, last good seq 5\\]\\n$`,
      ),
    )
    expect(fingerprint(logPath(root, 'a1'))).toEqual(before)
  })

  it('I1: --json carries the typed damage (code, line, offset, seq, lastGoodSeq)', async () => {
    const { offset } = flipByteInLine(root, 'a1', 8)
    const run = await cli(['verify', join(root, 'a1'), '--json'])
    expect(run.code).toBe(1)
    const report = JSON.parse(run.stdout) as { status: string; damage: Record<string, unknown> }
    expect(report.status).toBe('damaged')
    expect(report.damage).toMatchObject({ code: 'CORRUPT_LINE', line: 8, offset, seq: 6, lastGoodSeq: 5 })
    expect(report.damage['details']).toMatchObject({ reason: 'checksum' })
  })

  it('I4: a deleted middle line is a SEQ_GAP naming expected and found', async () => {
    const lines = logLines(root, 'a1')
    lines.splice(6, 1)
    writeFileSync(logPath(root, 'a1'), lines.join('\n'))
    const run = await cli(['verify', join(root, 'a1')])
    expect(run.code).toBe(1)
    expect(run.stderr).toMatch(
      /^agent-ledger: SEQ_GAP in .* line 7 \(offset \d+\): skips events: expected "seq" to be 5, found 6 \[seq 6, last good seq 4\]\n$/,
    )
  })

  it('V1: a header written by a newer version is refused (exit 1) and the file is untouched', async () => {
    const lines = logLines(root, 'a1')
    const header = JSON.parse(lines[0]!) as Record<string, unknown>
    delete header['crc']
    header['version'] = 99
    lines[0] = encodeJsonLine(JSON.stringify(header)).toString('utf8').trimEnd()
    writeFileSync(logPath(root, 'a1'), lines.join('\n'))
    const before = fingerprint(logPath(root, 'a1'))
    const run = await cli(['verify', join(root, 'a1')])
    expect(run.code).toBe(1)
    expect(run.stderr).toMatch(
      /^agent-ledger: VERSION_TOO_NEW in .*a1\/session\.v4\.jsonl line 1 \(offset 0\): .*upgrade/,
    )
    expect(fingerprint(logPath(root, 'a1'))).toEqual(before)
  })

  it('exits 2 with NOT_A_SESSION for a missing path, a store root, and a file that is not a log', async () => {
    const missing = await cli(['verify', join(root, 'nope')])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toMatch(/^agent-ledger: NOT_A_SESSION: .*nope does not exist/)
    const rootRun = await cli(['verify', root])
    expect(rootRun.code).toBe(2)
    expect(rootRun.stderr).toContain('is a store root (1 session inside)')
    writeFileSync(join(root, 'a1', 'notes.txt'), 'hello')
    const other = await cli(['verify', join(root, 'a1', 'notes.txt')])
    expect(other.code).toBe(2)
    expect(other.stderr).toContain('is not a session log')
  })

  it('prints progress lines on stderr for long scans, and none with --no-progress', async () => {
    let now = 0
    const clock = (): number => (now += 1500)
    const run = await cli(['verify', join(root, 'a1')], { now: clock })
    expect(run.code).toBe(0)
    expect(run.stderr).toMatch(/^verify: 100% \(\d+(\.\d)? kB \/ \d+(\.\d)? kB\)$/m)
    now = 0
    const quiet = await cli(['verify', join(root, 'a1'), '--no-progress'], { now: clock })
    expect(quiet.stderr).toBe('')
  })
})
