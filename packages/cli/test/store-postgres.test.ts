/**
 * The CLI on a PostgreSQL store (`--store postgres://...`, `AGENT_LEDGER_STORE`), against a
 * real server (the global setup's throwaway cluster): every read command prints what it
 * prints for the same session in a JSONL directory apart from where the session is; write
 * commands work through the core store; file-only commands refuse with
 * UNSUPPORTED_BACKEND; the URL's password is never printed.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { createSessionStore } from '@agent-ledger/session-store'
import { openPostgresBackend } from '@agent-ledger/session-store-postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { testTime, waitUntil } from '../../../tooling/test-time.ts'
import { runCli } from '../src/index.ts'
import type { CliIo } from '../src/index.ts'
import { adminUrl, createDatabase, pgTitle, sqlOnce } from './support/pg.ts'
import { cli, testStore, writeCrashedSession, writeSession } from './support/sessions.ts'
import type { CliRun } from './support/sessions.ts'

const PASSWORD = 'pw-never-shown'
const outputs: string[] = []

/** Runs the CLI and keeps its output for the password check. */
async function run(argv: readonly string[], io: Partial<CliIo> = {}): Promise<CliRun> {
  const result = await cli(argv, { env: {}, ...io })
  outputs.push(result.stdout, result.stderr)
  return result
}

describe.skipIf(adminUrl === null)(pgTitle('agent-ledger commands on a PostgreSQL store'), () => {
  let root: string
  let url: string
  /** `postgres user@host:port/database`, as the CLI names the store. */
  let where: string

  /** Output with the session's location (a JSONL log path, or the database) replaced by `<where>`. */
  function located(text: string, id: string): string {
    return (
      text
        .split(join(root, id, 'session.v4.jsonl'))
        .join('<where>')
        .split(`session ${id} in ${where}`)
        .join('<where>')
        // An export names the log relative to its store, or only the session (no machine path,
        // no database address): `<id>/session.v4.jsonl` on JSONL, `session <id>` on PostgreSQL.
        .split(`${id}/session.v4.jsonl`)
        .join('<where>')
        .split(`session ${id}`)
        .join('<where>')
    )
  }

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'al-cli-pg-'))
    const store = testStore(root)
    await writeSession(store, 's1', { turns: 3 })
    await writeCrashedSession(store, 'c1')
    url = await createDatabase(adminUrl!, PASSWORD)
    const parsed = new URL(url)
    where = `postgres ${parsed.username}@${parsed.hostname}:${parsed.port}${parsed.pathname}`
    const copied = await run(['copy', root, url, '--no-progress'])
    expect(copied).toMatchObject({ code: 0, stderr: '' })
  }, testTime(60_000))

  afterAll(() => {
    rmSync(root, { recursive: true, force: true })
  })

  const READS: readonly (readonly string[])[] = [
    ['cat'],
    ['cat', '--json'],
    ['cat', '--from', '3', '--to', '6'],
    ['cat', '--seq', '4'],
    ['tail', '-n', '3'],
    ['tail', '--json', '-n', '2'],
    ['messages'],
    ['messages', '--json'],
    ['messages', '--repaired', '--json'],
    ['export', '--format', 'md'],
    ['export', '--format', 'html'],
    ['export', '--format', 'openai'],
    ['export', '--format', 'anthropic'],
    ['stats'],
    ['stats', '--json'],
  ]

  it.each(['s1', 'c1'])(
    'read commands on %s print what they print for the JSONL session, apart from where it is',
    async (id) => {
      for (const [command, ...rest] of READS) {
        const files = await run([command!, join(root, id), ...rest])
        const database = await run([command!, id, ...rest, '--store', url])
        expect(files.code, `${command} ${rest.join(' ')}`).toBe(0)
        expect(database.code, `${command} ${rest.join(' ')}`).toBe(0)
        expect(located(database.stdout, id), `${command} ${rest.join(' ')}`).toBe(located(files.stdout, id))
        expect(located(database.stderr, id), `${command} ${rest.join(' ')}`).toBe(located(files.stderr, id))
      }
      // What tells the two apart is only where the session is; an export names no database.
      const md = await run(['export', id, '--format', 'md', '--store', url])
      expect(md.stdout).toContain(`- log: \`session ${id}\``)
      expect(md.stdout).not.toContain(where)
    },
  )

  it('verify and list name the store instead of a file; --json carries the same facts', async () => {
    const ok = await run(['verify', 's1', '--store', url])
    expect(ok).toEqual({
      code: 0,
      stdout: `ok: session s1 in ${where}: 22 events, last seq 21\n`,
      stderr: '',
    })
    const json = JSON.parse((await run(['verify', 'c1', '--store', url, '--json'])).stdout) as Record<
      string,
      unknown
    >
    expect(json).toMatchObject({ status: 'ok', session: 'c1', store: where, events: 12, lastSeq: 11 })
    const list = await run(['list', '--store', url])
    expect(list.code).toBe(0)
    expect(list.stdout).toMatch(/^s1 {2}created 2026-01-01T00:00:00\.000Z {2}22 events {2}modified \S+$/m)
    expect(list.stdout).toMatch(/^c1 {2}created \S+ {2}12 events {2}modified \S+$/m)
    expect(list.stdout).toMatch(new RegExp(`^2 sessions in ${where.replace(/[.]/g, '\\.')}\\n$`, 'm'))
  })

  it(
    'fork, compact and salvage write through the core store: the same events as on JSONL',
    async () => {
      const files = mkdtempSync(join(tmpdir(), 'al-cli-pg-w-'))
      cpSync(root, files, { recursive: true })
      const db = await createDatabase(adminUrl!, PASSWORD)
      expect((await run(['copy', root, db, '--no-progress'])).code).toBe(0)
      const steps: readonly (readonly string[])[] = [
        ['fork', '--at', '9', '--id', 's1-fork'],
        ['compact', '--from', '2', '--to', '9', '--summary', 'Turn 1 listed src.', '--id', 'k1'],
        ['salvage', '--to', 's1-saved'],
      ]
      for (const [command, ...rest] of steps) {
        const onFiles = await run([command!, join(files, 's1'), ...rest])
        const onDb = await run([command!, 's1', ...rest, '--store', db])
        expect(onFiles.code, command).toBe(0)
        expect(onDb.code, command).toBe(0)
        if (command === 'compact') expect(onDb).toEqual(onFiles)
      }
      // The crashed session: the write open's repairs are reported the same way.
      const repairFiles = await run([
        'compact',
        join(files, 'c1'),
        '--from',
        '2',
        '--to',
        '6',
        '--summary',
        'x',
        '--id',
        'k2',
      ])
      const repairDb = await run([
        'compact',
        'c1',
        '--from',
        '2',
        '--to',
        '6',
        '--summary',
        'x',
        '--id',
        'k2',
        '--store',
        db,
      ])
      expect(repairDb).toEqual(repairFiles)
      expect(repairDb.stderr).toContain('with a TOOL_OUTCOME_UNKNOWN placeholder')
      // Same events (times and the salvage's source file name are the clock's and the store's).
      const comparable = (text: string): string =>
        text
          .replace(/"time":"[^"]+"/g, '"time":"<t>"')
          .replace(/"sourceFile":"[^"]+"/g, '"sourceFile":"<f>"')
          .replace(/"droppedFromOffset":\d+/g, '"droppedFromOffset":<n>')
      for (const id of ['s1', 's1-fork', 's1-saved', 'c1']) {
        const a = await run(['cat', join(files, id), '--json'])
        const b = await run(['cat', id, '--json', '--store', db])
        expect(b.code, id).toBe(0)
        expect(comparable(b.stdout), id).toBe(comparable(a.stdout))
      }
      const parents = await sqlOnce<{ session_id: string; parent_session: string | null }>(
        db,
        "SELECT session_id, parent_session FROM ledger_sessions WHERE session_id = 's1-fork'",
      )
      expect(parents).toEqual([{ session_id: 's1-fork', parent_session: 's1' }])
      const taken = await run(['fork', 's1', '--at', '3', '--id', 's1-fork', '--store', db])
      expect(taken.code).toBe(2)
      // The core names where the session in the way is: its header row's table on PostgreSQL.
      expect(taken.stderr).toMatch(
        /^agent-ledger: SESSION_EXISTS in ledger_sessions: .*expected no session s1-fork/,
      )
      rmSync(files, { recursive: true, force: true })
    },
    testTime(60_000),
  )

  it(
    'import --store writes the same sessions into PostgreSQL as into a root; importing again changes nothing',
    async () => {
      const source = fileURLToPath(new URL('../../import/test/fixtures/claude-code', import.meta.url))
      const db = await createDatabase(adminUrl!, PASSWORD)
      const files = mkdtempSync(join(tmpdir(), 'al-cli-pg-i-'))
      const intoFiles = await run(['import', source, '--root', files, '--json', '--no-progress', '--lenient'])
      const intoDb = await run(['import', source, '--store', db, '--json', '--no-progress', '--lenient'])
      expect(intoDb.code).toBe(intoFiles.code)
      const filesReport = JSON.parse(intoFiles.stdout) as {
        root: string
        sources: { sessions: { id: string; action: string }[] }[]
      }
      const dbReport = JSON.parse(intoDb.stdout) as typeof filesReport
      expect(dbReport.root).toBe(where.replace(/\/cli_[0-9a-f]+$/, `/${new URL(db).pathname.slice(1)}`))
      expect(dbReport.sources).toEqual(filesReport.sources)
      const ids = dbReport.sources.flatMap((source) => source.sessions.map((session) => session.id))
      expect(ids.length).toBeGreaterThan(0)
      for (const id of ids) {
        const a = await run(['cat', join(files, id), '--json'])
        const b = await run(['cat', id, '--json', '--store', db])
        expect(b.code, id).toBe(0)
        expect(b.stdout, id).toBe(a.stdout)
      }
      const again = await run(['import', source, '--store', db, '--json', '--no-progress', '--lenient'])
      const actions = (JSON.parse(again.stdout) as typeof filesReport).sources.flatMap((item) =>
        item.sessions.map((session) => session.action),
      )
      expect(new Set(actions)).toEqual(new Set(['unchanged']))
      rmSync(files, { recursive: true, force: true })
    },
    testTime(60_000),
  )

  it('tail -f on PostgreSQL prints the events another writer appends, then exits 0 on abort', async () => {
    const db = await createDatabase(adminUrl!, PASSWORD)
    expect((await run(['copy', root, db, '--session', 's1', '--no-progress'])).code).toBe(0)
    let stdout = ''
    const controller = new AbortController()
    const following = runCli(['tail', '-f', '-n', '1', 's1', '--store', db, '--interval', '50'], {
      stdout: (text) => {
        stdout += text
      },
      stderr: (text) => outputs.push(text),
      signal: controller.signal,
      env: {},
    })
    const until = (predicate: () => boolean): Promise<void> =>
      waitUntil('the followed output', predicate, { pollMs: 25, detail: () => stdout })
    await until(() => stdout.includes('#21 '))
    const writerStore = createSessionStore({
      backend: await openPostgresBackend({ connectionString: db }),
      clock: () => '2026-03-01T00:00:00.000Z',
      owner: 'another-worker',
    })
    const writer = await writerStore.openWriter('s1')
    writer.append({ type: 'turn/start', data: { turn: 4 } })
    writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'From elsewhere.' } } })
    await writer.flush()
    await until(() => stdout.includes('"From elsewhere."'))
    controller.abort()
    expect(await following).toBe(0)
    await writerStore.close()
    expect(stdout.split('\n').filter((line) => line !== '')).toEqual([
      expect.stringMatching(/^#21 .* turn\/end turn 3 completed$/),
      '#22 2026-03-01T00:00:00.000Z turn/start turn 4',
      '#23 2026-03-01T00:00:00.000Z user/message "From elsewhere."',
    ])
  })

  it('inspect, migrate and compress refuse a database store with UNSUPPORTED_BACKEND naming the command and the store', async () => {
    for (const command of ['inspect', 'migrate', 'compress']) {
      const refused = await run([command, 's1', '--store', url])
      expect(refused.code, command).toBe(2)
      expect(refused.stdout).toBe('')
      expect(refused.stderr).toBe(
        `agent-ledger: UNSUPPORTED_BACKEND: ${command} works on JSONL session files only, found the store ${where}: run it on a session directory, or copy the session to one first (agent-ledger copy <store> <dir> --session s1)\n`,
      )
    }
    const json = await run(['inspect', 's1', '--store', url, '--json'])
    expect(JSON.parse(json.stdout)).toMatchObject({
      error: { code: 'UNSUPPORTED_BACKEND', details: { command: 'inspect', store: where } },
    })
    // A store directory is fine for them: <session> is an id in it.
    expect((await run(['inspect', 's1', '--store', root])).code).toBe(0)
  })

  it('AGENT_LEDGER_STORE is the store when --store is absent; --store wins; a path still names a session directory', async () => {
    const env = { AGENT_LEDGER_STORE: url }
    expect((await run(['verify', 's1'], { env })).stdout).toBe(
      `ok: session s1 in ${where}: 22 events, last seq 21\n`,
    )
    const flagWins = await run(['verify', 's1', '--store', root], { env })
    expect(flagWins.stdout).toMatch(/^ok: \/.*\/s1\/session\.v4\.jsonl: 22 events/)
    const path = await run(['verify', join(root, 's1')], { env })
    expect(path.stdout).toMatch(/^ok: \/.*\/s1\/session\.v4\.jsonl: 22 events/)
    const listed = await run(['list'], { env })
    expect(listed.stdout).toContain(`2 sessions in ${where}`)
    const stats = await run(['stats', '--json'], { env })
    expect(JSON.parse(stats.stdout)).toMatchObject({ root: where, totals: { id: 'TOTAL', turns: 5 } })
    const mixed = await run(['verify', join(root, 's1'), '--store', url])
    expect(mixed.code).toBe(2)
    expect(mixed.stderr).toContain('with --store, <session> is a session id in that store, found the path')
    const neither = await run(['list'])
    expect(neither.code).toBe(2)
    expect(neither.stderr).toContain(
      'expected a store root argument, --store <url|dir> or AGENT_LEDGER_STORE',
    )
  })

  it('an unreachable store is named by host and database, never by its password', async () => {
    const down = await run(['cat', 's1', '--store', 'postgres://ops:hunter2-secret@127.0.0.1:1/fleet'])
    expect(down.code).toBe(2)
    expect(down.stderr).toMatch(/^agent-ledger: BACKEND_FAILED: .*127\.0\.0\.1:1.*fleet/)
    expect(down.stderr).not.toContain('hunter2')
    const missing = await run(['cat', 'nope', '--store', url])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toMatch(/^agent-ledger: SESSION_NOT_FOUND: /)
  })

  it('no output of any run in this file shows the password of the store URL', () => {
    expect(outputs.length).toBeGreaterThan(50)
    for (const text of outputs) expect(text).not.toContain(PASSWORD)
  })
})
