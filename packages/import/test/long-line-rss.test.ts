/**
 * Issue 25 (hostile sources): one record of many MB over the line limit is refused
 * (`LINE_TOO_LARGE`) or, lenient, skipped and counted, in memory bounded by the limit and a
 * chunk, not by the line: a child's peak RSS (`process.resourceUsage().maxRSS`) above the RSS
 * it started with stays under half the line's size (holding the line would take all of it
 * as one string, more parsed). Measured: ~40 MB above the start for a 96 MB and a 160 MB line
 * alike (read buffers and garbage of a 4 MiB limit, not the line). A bound on memory, never a time.
 */
import { spawnSync } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { afterAll, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'

const here = dirname(fileURLToPath(import.meta.url))
const scratch = mkdtempSync(join(tmpdir(), 'al-long-line-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

const MB = 1024 * 1024
const LINE_BYTES = 160 * MB
const LIMIT = 4 * MB

/** A Claude Code file: a prompt, one record of `LINE_BYTES` (a huge tool output), an answer. */
function writeSource(): string {
  const file = join(scratch, 'long.jsonl')
  const base = {
    parentUuid: null,
    sessionId: 's-long',
    version: '2.1.40',
    cwd: '/p',
    timestamp: '2026-01-01T00:00:00.000Z',
  }
  const fd = openSync(file, 'w')
  writeSync(
    fd,
    `${JSON.stringify({ ...base, type: 'user', uuid: 'u1', message: { role: 'user', content: 'go' } })}\n`,
  )
  const head = JSON.stringify({
    ...base,
    parentUuid: 'u1',
    type: 'user',
    uuid: 'u2',
    message: { role: 'user', content: '' },
  })
  const [before, after] = head.split('"content":""')
  writeSync(fd, `${before!}"content":"`)
  const block = 'x'.repeat(MB)
  for (let written = 0; written < LINE_BYTES; written += MB) writeSync(fd, block)
  writeSync(fd, `"${after!}\n`)
  writeSync(
    fd,
    `${JSON.stringify({ ...base, parentUuid: 'u2', type: 'assistant', uuid: 'a1', message: { id: 'm1', role: 'assistant', content: [{ type: 'text', text: 'done' }] } })}\n`,
  )
  closeSync(fd)
  return file
}

function child(file: string, mode: 'strict' | 'lenient') {
  const run = spawnSync(
    process.execPath,
    [
      '--conditions=@agent-ledger/source',
      '--import',
      'tsx',
      join(here, 'support', 'long-line-child.ts'),
      file,
      String(LIMIT),
      mode,
    ],
    { encoding: 'utf8', cwd: join(here, '..') },
  )
  expect(run.status, run.stderr).toBe(0)
  return JSON.parse(run.stdout.trim().split('\n').at(-1)!) as {
    outcome: { code?: string; message?: string; records?: number; skipped?: number }
    startRss: number
    maxRss: number
  }
}

describe('a line of many MB over the limit (issue 25)', () => {
  const file = writeSource()

  it(
    'strict: LINE_TOO_LARGE naming the line; lenient: skipped and counted, the rest imported; peak RSS under half the line',
    () => {
      const strict = child(file, 'strict')
      expect(strict.outcome.code).toBe('LINE_TOO_LARGE')
      expect(strict.outcome.message).toMatch(
        `long.jsonl line 2: expected a line of at most ${LIMIT} characters (the store's line limit), found one of`,
      )
      const lenient = child(file, 'lenient')
      expect(lenient.outcome).toEqual({ records: 2, skipped: 1 })
      for (const run of [strict, lenient]) expect(run.maxRss - run.startRss).toBeLessThan(LINE_BYTES / 2)
    },
    testTime(120_000),
  )
})
