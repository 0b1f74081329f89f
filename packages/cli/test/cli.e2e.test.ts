import {
  appendFileSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import type { EventInput, WireMessage } from '@agent-ledger/session-events'
import { COMPACTION_SUMMARY_PREFIX } from '@agent-ledger/session-projection'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import type { JsonlStore } from '@agent-ledger/session-store-jsonl'
import { LOG_FILE_NAME } from '@agent-ledger/session-store-jsonl/format'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { runBin, spawnBin } from './support/bin.ts'

let root: string
let store: JsonlStore

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'al-cli-e2e-'))
  store = createJsonlStore({ root })
})
afterEach(async () => {
  await store.close()
  rmSync(root, { recursive: true, force: true })
})

function turn(number: number): EventInput[] {
  const callId = `call_${number}`
  return [
    { type: 'turn/start', data: { turn: number } },
    { type: 'user/message', data: { message: { role: 'user', content: `Question ${number}?` } } },
    {
      type: 'assistant/message',
      data: {
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: callId, type: 'function', function: { name: 'list_dir', arguments: '{"path":"."}' } },
          ],
        },
      },
    },
    { type: 'tool/call', data: { callId, name: 'list_dir', arguments: '{"path":"."}' } },
    {
      type: 'tool/result',
      data: { message: { role: 'tool', tool_call_id: callId, content: `a.ts\nb${number}.ts` } },
    },
    { type: 'assistant/message', data: { message: { role: 'assistant', content: `Answer ${number}.` } } },
    { type: 'turn/end', data: { turn: number, reason: 'completed' } },
  ]
}

async function writeSession(id: string, turns = 3): Promise<string> {
  const writer = await store.create({ id })
  writer.append({ type: 'system/message', data: { message: { role: 'system', content: 'You are terse.' } } })
  for (let number = 1; number <= turns; number += 1) for (const input of turn(number)) writer.append(input)
  await writer.close()
  return join(root, id)
}

function log(id: string): string {
  return join(root, id, LOG_FILE_NAME)
}

describe('agent-ledger (built binary)', () => {
  it('prints its help and exits 0', async () => {
    const run = await runBin(['--help'])
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('Usage: agent-ledger <command> [options]')
  })

  it('verify: 0 on an intact log', async () => {
    const session = await writeSession('a1')
    const run = await runBin(['verify', session])
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/^ok: .*: 22 events, last seq 21/)
  })

  it('T1: verify on a torn log (last line truncated): 0 with a TORN_TAIL warning, 1 with --strict, file untouched', async () => {
    const session = await writeSession('a1')
    const size = statSync(log('a1')).size
    truncateSync(log('a1'), size - 7)
    const before = readFileSync(log('a1'))
    const run = await runBin(['verify', session])
    expect(run.code).toBe(0)
    expect(run.stderr).toMatch(
      /^agent-ledger: warning: TORN_TAIL in .*session\.v4\.jsonl line 23 \(offset \d+\): /,
    )
    const strict = await runBin(['verify', session, '--strict'])
    expect(strict.code).toBe(1)
    expect(readFileSync(log('a1')).equals(before)).toBe(true)
  })

  it('I1: verify on a corrupted log (a byte flipped in a middle line): 1 with code, line, offset, seq, last good seq', async () => {
    const session = await writeSession('a1')
    const bytes = readFileSync(log('a1'))
    let offset = 0
    for (let line = 1; line < 10; line += 1) offset = bytes.indexOf(0x0a, offset) + 1
    const position = bytes.indexOf('"type":"', offset) + 9
    bytes[position] = bytes[position]! ^ 0x01
    writeFileSync(log('a1'), bytes)
    const run = await runBin(['verify', session, '--json'])
    expect(run.code).toBe(1)
    const report = JSON.parse(run.stdout) as { status: string; damage: Record<string, unknown> }
    expect(report.status).toBe('damaged')
    expect(report.damage).toMatchObject({ code: 'CORRUPT_LINE', line: 10, offset, seq: 8, lastGoodSeq: 7 })
    expect(run.stderr).toMatch(
      new RegExp(
        `^agent-ledger: CORRUPT_LINE in .*session\\.v4\\.jsonl line 10 \\(offset ${offset}\\): .*\\[seq 8, last good seq 7\\]\\n$`,
      ),
    )
  })

  it('verify: 2 on a usage or I/O error', async () => {
    expect((await runBin(['verify', join(root, 'missing')])).code).toBe(2)
    expect((await runBin(['verify'])).code).toBe(2)
    expect((await runBin(['verify', '--bogus', root])).code).toBe(2)
  })

  it('fork and compaction are visible through messages', async () => {
    const session = await writeSession('a1')
    const parent = JSON.parse((await runBin(['messages', session, '--json'])).stdout) as WireMessage[]
    const fork = await runBin(['fork', session, '--at', '7', '--id', 'a1-fork'])
    expect(fork.code).toBe(0)
    expect(fork.stdout).toContain('forked a1 at seq 7 into a1-fork')
    const forked = JSON.parse(
      (await runBin(['messages', join(root, 'a1-fork'), '--json'])).stdout,
    ) as WireMessage[]
    expect(forked).toEqual(parent.slice(0, 5))
    const compact = await runBin([
      'compact',
      session,
      '--from',
      '2',
      '--to',
      '13',
      '--summary',
      'Two questions answered.',
    ])
    expect(compact.code).toBe(0)
    const compacted = JSON.parse((await runBin(['messages', session, '--json'])).stdout) as WireMessage[]
    expect(compacted).toEqual([
      parent[0],
      { role: 'user', content: `${COMPACTION_SUMMARY_PREFIX}Two questions answered.` },
      ...parent.slice(9),
    ])
    const human = await runBin(['messages', session])
    expect(human.stdout).toContain('Two questions answered.')
    expect((await runBin(['verify', join(root, 'a1-fork')])).code).toBe(0)
  })

  it('T5: tail -f sees appends made by another process, never writes, and exits 0 on SIGINT', async () => {
    const session = await writeSession('a1', 1)
    const tail = spawnBin(['tail', '-f', '-n', '1', '--interval', '50', '--json', session])
    await tail.waitFor('the last existing event', (out) => out.includes('"seq":7'))
    const writer = await store.openWriter('a1')
    writer.append({ type: 'turn/start', data: { turn: 2 } })
    writer.append({
      type: 'user/message',
      data: { message: { role: 'user', content: 'appended by the test process' } },
    })
    await writer.flush()
    await tail.waitFor('the appended message', (out) => out.includes('appended by the test process'))
    // A half-written line is a write in progress: not an error, printed once complete.
    const sizeBefore = statSync(log('a1')).size
    writer.append({ type: 'turn/end', data: { turn: 2, reason: 'completed' } })
    await writer.close()
    const full = readFileSync(log('a1')).subarray(sizeBefore)
    truncateSync(log('a1'), sizeBefore)
    appendFileSync(log('a1'), full.subarray(0, 10))
    await new Promise((resolve) => setTimeout(resolve, 300))
    appendFileSync(log('a1'), full.subarray(10))
    await tail.waitFor('the completed line', (out) => out.includes('"type":"turn/end","data":{"turn":2'))
    tail.child.kill('SIGINT')
    expect(await tail.exited).toEqual({ code: 0, signal: null })
    const seqs = tail
      .stdout()
      .trimEnd()
      .split('\n')
      .map((line) => (JSON.parse(line) as { seq: number }).seq)
    expect(seqs).toEqual([7, 8, 9, 10])
    expect(tail.stderr()).toBe('')
  })
})
