import { appendFileSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

import type { LoggedEvent } from '@agent-ledger/session-events'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import {
  cli,
  flipByteInLine,
  logPath,
  makeRoot,
  tearLastLine,
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

async function collect(id: string): Promise<LoggedEvent[]> {
  const events: LoggedEvent[] = []
  for await (const event of testStore(root).readEvents(id)) events.push(event)
  return events
}

describe('inspect', () => {
  it('R1: reports turns, surface size and pending tool calls of a crashed session without repairing it', async () => {
    await writeCrashedSession(testStore(root), 'c1')
    const before = readFileSync(logPath(root, 'c1'))
    const run = await cli(['inspect', join(root, 'c1')])
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('events:      12 (seq 0..11)')
    expect(run.stdout).toContain('turns:       2, turn 2 open since #8')
    expect(run.stdout).toContain('surface:     7 model-visible messages')
    expect(run.stdout).toContain('pending:     2 unanswered tool call(s)')
    expect(run.stdout).toContain(
      'run_command(call_rm) asked at #10, started at #11 (would be answered TOOL_OUTCOME_UNKNOWN)',
    )
    expect(run.stdout).toContain(
      'list_dir(call_ls) asked at #10, not started (would be answered TOOL_NOT_STARTED)',
    )
    expect(run.stdout).toMatch(/session\.v4\.jsonl +\S+ \S+ +log v4 plain \(current generation\)/)
    expect(readFileSync(logPath(root, 'c1')).equals(before)).toBe(true)
  })

  it('--json gives the header, files, pending calls, open compaction and counters', async () => {
    await writeSession(testStore(root), 'a1', {
      turns: 1,
      extra: [{ type: 'compaction/start', data: { compactionId: 'k1', startSeq: 2, endSeq: 6 } }],
    })
    const run = await cli(['inspect', join(root, 'a1'), '--json'])
    expect(run.code).toBe(0)
    const report = JSON.parse(run.stdout) as Record<string, unknown>
    expect(report).toMatchObject({
      session: 'a1',
      header: { id: 'a1', version: 4, cwd: '/srv/demo' },
      events: 9,
      lastSeq: 8,
      turns: 1,
      surfaceSize: 5,
      pendingToolCalls: [],
      openCompaction: { compactionId: 'k1', seq: 8, startSeq: 2, endSeq: 6 },
      generation: { file: 'session.v4.jsonl', version: 4, encoding: 'plain' },
      tornTail: null,
      damage: null,
    })
  })

  it('T1: lists a quarantined torn tail after a write open repaired it', async () => {
    await writeSession(testStore(root), 'a1', { turns: 1 })
    tearLastLine(root, 'a1')
    const torn = await cli(['inspect', join(root, 'a1')])
    expect(torn.code).toBe(0)
    expect(torn.stdout).toMatch(/torn tail: +\d+ byte\(s\) at offset \d+ \(unterminated\)/)
    await (await testStore(root).openWriter('a1')).close()
    const repaired = await cli(['inspect', join(root, 'a1'), '--json'])
    const files = (JSON.parse(repaired.stdout) as { files: { name: string; kind: string }[] }).files
    expect(
      files.some((file) => file.kind === 'quarantine' && file.name.startsWith('session.v4.jsonl.torn-')),
    ).toBe(true)
  })

  it('I1: describes the good prefix of a damaged log and exits 1 with the typed error', async () => {
    await writeSession(testStore(root), 'a1', { turns: 2 })
    flipByteInLine(root, 'a1', 8)
    const run = await cli(['inspect', join(root, 'a1')])
    expect(run.code).toBe(1)
    expect(run.stdout).toContain('events:      6 (seq 0..5)')
    expect(run.stdout).toContain('damage:      CORRUPT_LINE')
    expect(run.stderr).toMatch(/^agent-ledger: CORRUPT_LINE in .* line 8 /)
  })
})

describe('cat', () => {
  it('prints one readable line per event, in seq order', async () => {
    await writeSession(testStore(root), 'a1', { turns: 1 })
    const run = await cli(['cat', join(root, 'a1')])
    expect(run.code).toBe(0)
    const lines = run.stdout.trimEnd().split('\n')
    expect(lines).toHaveLength(8)
    expect(lines[0]).toMatch(/^#0 2026-01-01T00:00:\d\d\.000Z system\/message "You are a coding agent\."$/)
    expect(lines[3]).toMatch(/^#3 \S+ assistant\/message "Reading f1\.ts" call read_file\(call_1\)$/)
    expect(lines[5]).toMatch(/^#5 \S+ tool\/result for call_1 "contents of f1\.ts"$/)
    expect(lines[7]).toMatch(/^#7 \S+ turn\/end turn 1 completed$/)
  })

  it('--json prints the logged events as JSON Lines, equal to what the store reads', async () => {
    await writeSession(testStore(root), 'a1', { turns: 2 })
    const run = await cli(['cat', join(root, 'a1'), '--json', '--from', '3', '--to', '9'])
    expect(run.code).toBe(0)
    const printed = run.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as LoggedEvent)
    expect(printed).toEqual((await collect('a1')).slice(3, 10))
    expect(run.stdout).not.toContain('"crc"')
  })

  it('S3: keeps own __proto__ keys of tool output as data in --json', async () => {
    const store = testStore(root)
    await writeSession(store, 'a1', {
      turns: 0,
      extra: [
        { type: 'turn/start', data: { turn: 1 } },
        JSON.parse(
          '{"type":"user/message","data":{"message":{"role":"user","content":"x","__proto__":{"polluted":true}}}}',
        ) as never,
      ],
    })
    const run = await cli(['cat', join(root, 'a1'), '--json'])
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('"__proto__":{"polluted":true}')
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined()
  })

  it('escapes terminal control sequences and bidi overrides from the log', async () => {
    await writeSession(testStore(root), 'a1', {
      turns: 0,
      extra: [
        { type: 'turn/start', data: { turn: 1 } },
        {
          type: 'user/message',
          data: { message: { role: 'user', content: 'red \u001b[31mALERT\u001b[0m \u202Eevil\u009b' } },
        },
      ],
    })
    const run = await cli(['cat', join(root, 'a1')])
    for (const raw of ['\u001b', '\u202e', '\u009b']) expect(run.stdout).not.toContain(raw)
    expect(run.stdout).toContain('red \\u001b[31mALERT\\u001b[0m \\u202eevil\\u009b')
  })

  it('I1: prints the good prefix, then the damage on stderr, exit 1', async () => {
    await writeSession(testStore(root), 'a1', { turns: 2 })
    flipByteInLine(root, 'a1', 8)
    const run = await cli(['cat', join(root, 'a1'), '--json'])
    expect(run.code).toBe(1)
    expect(run.stdout.trimEnd().split('\n')).toHaveLength(6)
    expect(run.stdout).not.toContain('"error"')
    expect(run.stderr).toMatch(
      /^agent-ledger: CORRUPT_LINE in .* line 8 \(offset \d+\): .*\[seq 6, last good seq 5\]\n$/,
    )
  })

  it('T5: treats an unterminated last line as in progress (no error)', async () => {
    await writeSession(testStore(root), 'a1', { turns: 1 })
    appendFileSync(logPath(root, 'a1'), '{"seq":8,"time":"2026-')
    const run = await cli(['cat', join(root, 'a1')])
    expect(run.code).toBe(0)
    expect(run.stdout.trimEnd().split('\n')).toHaveLength(8)
    expect(run.stderr).toBe('')
  })

  it('refuses --from after --to and a non-integer seq (exit 2)', async () => {
    await writeSession(testStore(root), 'a1', { turns: 1 })
    expect((await cli(['cat', join(root, 'a1'), '--from', '5', '--to', '2'])).code).toBe(2)
    const bad = await cli(['cat', join(root, 'a1'), '--from', '-1'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/^agent-ledger: USAGE: cat: /)
  })
})

describe('tail (without -f)', () => {
  it('prints the last N events', async () => {
    await writeSession(testStore(root), 'a1', { turns: 2 })
    const run = await cli(['tail', '-n', '3', join(root, 'a1'), '--json'])
    expect(run.code).toBe(0)
    const seqs = run.stdout
      .trimEnd()
      .split('\n')
      .map((line) => (JSON.parse(line) as LoggedEvent).seq)
    expect(seqs).toEqual([12, 13, 14])
  })
})
