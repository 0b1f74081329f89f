import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import type { WireMessage } from '@agent-ledger/session-events'
import { COMPACTION_SUMMARY_PREFIX } from '@agent-ledger/session-projection'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import {
  cli,
  flipByteInLine,
  logPath,
  makeRoot,
  testStore,
  writeCrashedSession,
  writeSession,
} from './support/sessions.ts'

let root: string
let cleanup: () => void

beforeEach(() => {
  ;({ root, cleanup } = makeRoot())
})
afterEach(() => cleanup())

async function messagesJson(id: string, extra: readonly string[] = []): Promise<WireMessage[]> {
  const run = await cli(['messages', join(root, id), '--json', ...extra])
  expect(run.code).toBe(0)
  return JSON.parse(run.stdout) as WireMessage[]
}

describe('messages', () => {
  it('prints exactly what the projection derives (the next request)', async () => {
    const store = testStore(root)
    await writeSession(store, 'a1', { turns: 2 })
    const read = await store.openReader('a1')
    expect(await messagesJson('a1')).toEqual(read.projection.deriveMessages())
    const human = await cli(['messages', join(root, 'a1')])
    expect(human.stdout).toMatch(/^\[0\] system \(#0\)\n {4}You are a coding agent\.\n\[1\] user \(#2\)/)
    expect(human.stdout).toContain('    -> read_file(call_1) {"path":"f1.ts"}')
    expect(human.stdout).toContain('[3] tool (#5) answers call_1')
  })

  it('R1: read-only on a crashed session, with a note that repair happens on the next write open', async () => {
    await writeCrashedSession(testStore(root), 'c1')
    const before = readFileSync(logPath(root, 'c1'))
    const run = await cli(['messages', join(root, 'c1'), '--json'])
    expect(run.code).toBe(0)
    const messages = JSON.parse(run.stdout) as WireMessage[]
    expect(messages.at(-1)).toMatchObject({
      role: 'assistant',
      tool_calls: [{ id: 'call_rm' }, { id: 'call_ls' }],
    })
    expect(run.stderr).toContain('2 tool call(s) have no result yet')
    expect(run.stderr).toContain('the next write open appends isError placeholders')
    expect(readFileSync(logPath(root, 'c1')).equals(before)).toBe(true)
  })

  it('R1: --repaired shows in memory exactly what the model receives after the write open repairs', async () => {
    const store = testStore(root)
    await writeCrashedSession(store, 'c1')
    const before = readFileSync(logPath(root, 'c1'))
    const repaired = await messagesJson('c1', ['--repaired'])
    expect(readFileSync(logPath(root, 'c1')).equals(before)).toBe(true)
    const tools = repaired.filter((message) => message.role === 'tool').slice(-2)
    expect(tools.map((message) => message.tool_call_id)).toEqual(['call_rm', 'call_ls'])
    expect(tools[0]!.content).toContain('[TOOL_OUTCOME_UNKNOWN]')
    expect(tools[1]!.content).toContain('[TOOL_NOT_STARTED]')
    await (await store.openWriter('c1')).close()
    expect(await messagesJson('c1')).toEqual(repaired)
  })

  it('refuses a damaged log (exit 1): it cannot be resumed', async () => {
    await writeSession(testStore(root), 'a1', { turns: 2 })
    flipByteInLine(root, 'a1', 8)
    const run = await cli(['messages', join(root, 'a1'), '--json'])
    expect(run.code).toBe(1)
    expect((JSON.parse(run.stdout) as { error: { code: string } }).error.code).toBe('CORRUPT_LINE')
    expect(run.stderr).toMatch(/^agent-ledger: CORRUPT_LINE /)
  })
})

describe('fork', () => {
  it('forks at a seq into a new session whose messages are the prefix; the parent is untouched', async () => {
    await writeSession(testStore(root), 'a1', { turns: 2 })
    const parentBefore = readFileSync(logPath(root, 'a1'))
    const run = await cli(['fork', join(root, 'a1'), '--at', '7', '--id', 'a1-b', '--json'])
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout)).toMatchObject({ parent: 'a1', id: 'a1-b', atSeq: 7 })
    expect(readFileSync(logPath(root, 'a1')).equals(parentBefore)).toBe(true)
    const parent = await messagesJson('a1')
    expect(await messagesJson('a1-b')).toEqual(parent.slice(0, 5))
    const header = JSON.parse(readFileSync(logPath(root, 'a1-b'), 'utf8').split('\n')[0]!) as Record<
      string,
      unknown
    >
    expect(header).toMatchObject({ parentSession: 'a1', seeded: true })
  })

  it('closes a cut inside an open turn like a crash, or refuses it with --open-turn refuse (exit 1)', async () => {
    await writeSession(testStore(root), 'a1', { turns: 1 })
    const refused = await cli(['fork', join(root, 'a1'), '--at', '3', '--id', 'r1', '--open-turn', 'refuse'])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/^agent-ledger: FORK_REFUSED in .*a1\/session\.v4\.jsonl/)
    const closed = await cli(['fork', join(root, 'a1'), '--at', '3', '--id', 'c1'])
    expect(closed.code).toBe(0)
    const messages = await messagesJson('c1')
    expect(messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_1' })
    expect(messages.at(-1)!.content).toContain('[TOOL_NOT_STARTED]')
  })

  it('exits 2 when the new id is taken or invalid, and when --at is missing', async () => {
    const store = testStore(root)
    await writeSession(store, 'a1', { turns: 1 })
    await writeSession(store, 'b1', { turns: 1 })
    const taken = await cli(['fork', join(root, 'a1'), '--at', '2', '--id', 'b1'])
    expect(taken.code).toBe(2)
    expect(taken.stderr).toMatch(/^agent-ledger: SESSION_EXISTS /)
    expect((await cli(['fork', join(root, 'a1'), '--at', '2', '--id', '../x'])).code).toBe(2)
    expect((await cli(['fork', join(root, 'a1')])).stderr).toContain('expected --at <value>')
  })
})

describe('compact', () => {
  it('replaces a range of messages by the summary; messages shows it, the originals stay in the log', async () => {
    await writeSession(testStore(root), 'a1', { turns: 2 })
    const before = await messagesJson('a1')
    const run = await cli([
      'compact',
      join(root, 'a1'),
      '--from',
      '2',
      '--to',
      '6',
      '--summary',
      'Turn 1 read f1.ts, which says hello.',
      '--id',
      'k1',
      '--json',
    ])
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout)).toMatchObject({
      compactionId: 'k1',
      events: [15, 16, 17, 18],
      replacementSeq: 17,
      hiddenCount: 4,
    })
    const after = await messagesJson('a1')
    expect(after).toEqual([
      before[0],
      { role: 'user', content: `${COMPACTION_SUMMARY_PREFIX}Turn 1 read f1.ts, which says hello.` },
      ...before.slice(5),
    ])
    const cat = await cli(['cat', join(root, 'a1')])
    expect(cat.stdout).toContain('#2 ')
    expect(cat.stdout).toMatch(/#17 \S+ user\/message ".*" \[replaces 2\.\.6\] <- 2,3,5,6/)
    expect((await cli(['verify', join(root, 'a1')])).code).toBe(0)
  })

  it('repairs a crashed session first, as a resume would, and says so on stderr', async () => {
    await writeCrashedSession(testStore(root), 'c1')
    const run = await cli(['compact', join(root, 'c1'), '--from', '2', '--to', '6', '--summary', 'Turn 1.'])
    expect(run.code).toBe(0)
    expect(run.stderr).toContain('answered run_command(call_rm) with a TOOL_OUTCOME_UNKNOWN placeholder')
    expect(run.stderr).toContain('answered list_dir(call_ls) with a TOOL_NOT_STARTED placeholder')
    expect(run.stderr).toContain('closed turn 2 as interrupted')
  })

  it('refuses a range that is not a current surface range (exit 1, BAD_COMPACTION_RANGE)', async () => {
    await writeSession(testStore(root), 'a1', { turns: 2 })
    const before = readFileSync(logPath(root, 'a1'))
    const run = await cli(['compact', join(root, 'a1'), '--from', '4', '--to', '6', '--summary', 'x'])
    expect(run.code).toBe(1)
    expect(run.stderr).toMatch(/^agent-ledger: BAD_COMPACTION_RANGE: /)
    expect(run.stderr.split('\n')).toHaveLength(2)
    expect(readFileSync(logPath(root, 'a1')).equals(before)).toBe(true)
  })

  it('W3: refuses while another writer holds the session (exit 1, SESSION_LOCKED)', async () => {
    const store = testStore(root)
    await writeSession(store, 'a1', { turns: 1 })
    const writer = await store.openWriter('a1')
    try {
      const run = await cli(['compact', join(root, 'a1'), '--from', '2', '--to', '6', '--summary', 'x'])
      expect(run.code).toBe(1)
      expect(run.stderr).toMatch(/^agent-ledger: SESSION_LOCKED /)
    } finally {
      await writer.close()
    }
  })

  it('needs exactly one of --summary and --summary-file (exit 2), and reads the file', async () => {
    const store = testStore(root)
    await writeSession(store, 'a1', { turns: 1 })
    expect((await cli(['compact', join(root, 'a1'), '--from', '2', '--to', '6'])).code).toBe(2)
    const file = join(root, 'summary.txt')
    const { writeFileSync } = await import('node:fs')
    writeFileSync(file, 'from a file')
    const run = await cli(['compact', join(root, 'a1'), '--from', '2', '--to', '6', '--summary-file', file])
    expect(run.code).toBe(0)
    expect((await messagesJson('a1'))[1]).toEqual({
      role: 'user',
      content: `${COMPACTION_SUMMARY_PREFIX}from a file`,
    })
  })
})

describe('salvage', () => {
  it('I1: copies the good prefix of a damaged session into a new one that verifies clean', async () => {
    await writeSession(testStore(root), 'a1', { turns: 2 })
    flipByteInLine(root, 'a1', 8)
    const damaged = readFileSync(logPath(root, 'a1'))
    const run = await cli(['salvage', join(root, 'a1'), '--to', 'a1-saved', '--json'])
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout)).toMatchObject({
      from: 'a1',
      to: 'a1-saved',
      copiedEvents: 6,
      lastGoodSeq: 5,
      salvageSeq: 6,
      reason: 'CORRUPT_LINE',
      sourceError: { code: 'CORRUPT_LINE', line: 8 },
    })
    expect(readFileSync(logPath(root, 'a1')).equals(damaged)).toBe(true)
    expect((await cli(['verify', join(root, 'a1-saved')])).code).toBe(0)
    const cat = await cli(['cat', join(root, 'a1-saved')])
    expect(cat.stdout).toMatch(/#6 \S+ session\/salvage salvaged from a1: kept up to seq 5/)
  })
})
