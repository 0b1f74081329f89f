/**
 * `agent-ledger copy` between a JSONL directory and a real PostgreSQL server (the global
 * setup's cluster): JSONL -> PostgreSQL -> JSONL gives byte-identical log files, compared
 * as bytes on disk and as rows in the database (not through our reader only).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { adminUrl, createDatabase, pgTitle, sqlOnce } from './support/pg.ts'
import {
  cli,
  flipByteInLine,
  logPath,
  testStore,
  writeCrashedSession,
  writeSession,
} from './support/sessions.ts'
import type { CliRun } from './support/sessions.ts'

const PASSWORD = 'copy-pw-never-shown'
const GOOD = ['a1', 'a1-fork', 'cmp', 'crashed', 'zs'] as const

async function run(argv: readonly string[], io: Parameters<typeof cli>[1] = {}): Promise<CliRun> {
  const result = await cli(argv, { env: {}, ...io })
  expect(result.stdout + result.stderr).not.toContain(PASSWORD)
  return result
}

/** A clock that advances 1.5 s per reading: every progress update is due. */
function fastClock(): () => number {
  let now = 0
  return () => (now += 1500)
}

interface CopyReport {
  readonly from: string
  readonly to: string
  readonly sessions: {
    readonly id: string
    readonly action: string
    readonly events: number
    readonly parentSession: string | null
    readonly error: { readonly code: string } | null
  }[]
  readonly copied: number
  readonly identical: number
  readonly failed: number
}

describe.skipIf(adminUrl === null)(pgTitle('agent-ledger copy'), () => {
  const made: string[] = []
  let source: string
  let url: string
  /** The log bytes of each good session as they were written (zs: before it was compressed). */
  const expected = new Map<string, Buffer>()

  function tempRoot(): string {
    const root = mkdtempSync(join(tmpdir(), 'al-cli-copy-'))
    made.push(root)
    return root
  }

  beforeAll(async () => {
    source = tempRoot()
    const store = testStore(source)
    await writeSession(store, 'a1')
    await writeCrashedSession(store, 'crashed')
    await writeSession(store, 'cmp', { turns: 3 })
    await writeSession(store, 'zs', { turns: 2 })
    await writeSession(store, 'bad')
    expect((await run(['fork', join(source, 'a1'), '--at', '5', '--id', 'a1-fork'])).code).toBe(0)
    const compacted = await run([
      'compact',
      join(source, 'cmp'),
      '--from',
      '2',
      '--to',
      '6',
      '--summary',
      'Turn 1 done.',
      '--id',
      'k1',
    ])
    expect(compacted.code).toBe(0)
    expected.set('zs', readFileSync(logPath(source, 'zs')))
    expect((await run(['compress', join(source, 'zs'), '--no-progress'])).code).toBe(0)
    for (const id of ['a1', 'a1-fork', 'cmp', 'crashed']) expected.set(id, readFileSync(logPath(source, id)))
    flipByteInLine(source, 'bad', 5)
    url = await createDatabase(adminUrl!, PASSWORD)
  }, testTime(60_000))

  afterAll(() => {
    for (const root of made) rmSync(root, { recursive: true, force: true })
  })

  it(
    'JSONL -> PostgreSQL -> JSONL: every log byte-identical; forks keep parentSession; a damaged session is reported, not copied',
    async () => {
      const first = await run(['copy', source, url, '--json', '--no-progress'])
      expect(first.code).toBe(1)
      const report = JSON.parse(first.stdout) as CopyReport
      expect(report.from).toBe(source)
      expect(report.to).toMatch(/^postgres ledger@127\.0\.0\.1:\d+\/cli_[0-9a-f]+$/)
      expect(report).toMatchObject({ copied: 5, identical: 0, failed: 1 })
      const byId = new Map(report.sessions.map((session) => [session.id, session]))
      expect(byId.get('bad')).toMatchObject({ action: 'failed', error: { code: 'CORRUPT_LINE' } })
      expect(byId.get('a1-fork')).toMatchObject({ action: 'copied', events: 8, parentSession: 'a1' })
      expect(byId.get('zs')).toMatchObject({ action: 'copied', events: 15 })
      const order = report.sessions.map((session) => session.id)
      expect(order.indexOf('a1')).toBeLessThan(order.indexOf('a1-fork'))
      expect(first.stderr).toMatch(
        /^agent-ledger: bad not copied: CORRUPT_LINE in .*bad\/session\.v4\.jsonl line 5 \(offset \d+\): .*\[seq 3, last good seq 2\]$/m,
      )

      // In the database, read with plain SQL: the header and every line, byte for byte.
      for (const id of GOOD) {
        const [head] = await sqlOnce<{ header_line: string; parent_session: string | null }>(
          url,
          'SELECT header_line, parent_session FROM ledger_sessions WHERE session_id = $1',
          [id],
        )
        const rows = await sqlOnce<{ line: string }>(
          url,
          'SELECT line FROM ledger_events WHERE session_id = $1 ORDER BY seq',
          [id],
        )
        const text = `${[head!.header_line, ...rows.map((row) => row.line)].join('\n')}\n`
        expect(Buffer.from(text, 'utf8').equals(expected.get(id)!), id).toBe(true)
        expect(head!.parent_session, id).toBe(id === 'a1-fork' ? 'a1' : null)
      }
      expect(await sqlOnce(url, "SELECT 1 FROM ledger_sessions WHERE session_id = 'bad'")).toEqual([])

      // Back into a new directory: every log file has the source's bytes.
      const back = tempRoot()
      const second = await run(['copy', url, back, '--no-progress'])
      expect(second.code).toBe(0)
      expect(second.stdout).toMatch(
        /^copied 5 sessions \(\d+ events\) from postgres .* to .*; 0 already identical; 0 failed\n$/m,
      )
      for (const id of GOOD) {
        expect(readFileSync(logPath(back, id)).equals(expected.get(id)!), id).toBe(true)
      }
      const verified = await run(['verify', join(back, 'a1-fork'), '--json'])
      expect(JSON.parse(verified.stdout)).toMatchObject({ status: 'ok', events: 8 })
    },
    testTime(60_000),
  )

  it('is idempotent: identical sessions are skipped; progress goes to stderr', async () => {
    const target = tempRoot()
    expect((await run(['copy', url, target, '--no-progress'])).code).toBe(0)
    const again = await run(['copy', url, target], { now: fastClock() })
    expect(again.code).toBe(0)
    for (const id of GOOD) expect(again.stdout).toContain(`skipped ${id}: already identical in the target\n`)
    expect(again.stdout).toMatch(/copied 0 sessions \(0 events\) .*; 5 already identical; 0 failed\n$/)
    expect(again.stderr).toMatch(/^copy \(5\/5 sessions\): 0 events$/m)
    const intoDb = await run(['copy', source, url, '--json', '--no-progress'])
    expect(JSON.parse(intoDb.stdout)).toMatchObject({ copied: 0, identical: 5, failed: 1 })
  })

  it('refuses to overwrite a different session with the same id (TARGET_EXISTS), writing nothing', async () => {
    const target = tempRoot()
    await writeSession(testStore(target), 'a1', { turns: 1 })
    const before = readFileSync(logPath(target, 'a1'))
    const refused = await run(['copy', url, target, '--session', 'a1', '--no-progress'])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(
      /^agent-ledger: a1 not copied: TARGET_EXISTS: session a1 already exists in .* with other content \(the source has 15 events, the target 8\): expected no session or an identical one; nothing was written/,
    )
    expect(readFileSync(logPath(target, 'a1')).equals(before)).toBe(true)
    const json = await run(['copy', url, target, '--session', 'a1', '--json', '--no-progress'])
    expect(JSON.parse(json.stdout)).toMatchObject({
      sessions: [{ id: 'a1', action: 'failed', error: { code: 'TARGET_EXISTS' } }],
    })
  })

  it('--session copies one session (a fork without its parent too); errors are typed', async () => {
    const db = await createDatabase(adminUrl!, PASSWORD)
    const one = await run(['copy', source, db, '--session', 'a1-fork', '--no-progress'])
    expect(one).toMatchObject({ code: 0, stderr: '' })
    expect(one.stdout).toContain('copied a1-fork: 8 events\n')
    const listed = await run(['list', '--store', db, '--json'])
    expect(
      (JSON.parse(listed.stdout) as { sessions: { id: string; parentSession: string }[] }).sessions,
    ).toMatchObject([{ id: 'a1-fork', parentSession: 'a1' }])
    const missing = await run(['copy', source, db, '--session', 'nope'])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toMatch(/SESSION_NOT_FOUND/)
    const same = await run(['copy', source, `${source}/`])
    expect(same.code).toBe(2)
    expect(same.stderr).toContain('copy: expected two different stores, found')
    const nowhere = await run(['copy', join(source, 'no-such-dir'), db])
    expect(nowhere.code).toBe(2)
    expect(nowhere.stderr).toMatch(/NOT_A_SESSION: .*no-such-dir does not exist: expected a store root/)
    const scheme = await run(['copy', source, 'mysql://x@h/db'])
    expect(scheme.code).toBe(2)
    expect(scheme.stderr).toContain('found a mysql:// URL')
  })
})
