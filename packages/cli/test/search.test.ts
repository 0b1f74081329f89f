import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { cli, makeRoot, testStore } from './support/sessions.ts'

let root: string
let cleanup: () => void

beforeAll(async () => {
  ;({ root, cleanup } = makeRoot())
  const store = testStore(root)
  const a = await store.create({ id: 'alpha' })
  a.append({
    type: 'user/message',
    data: { message: { role: 'user', content: 'The Migration broke on deploy' } },
  })
  a.append({
    type: 'tool/call',
    data: { callId: 'c1', name: 'psql', arguments: '{"sql":"ALTER TABLE runs"}' },
  })
  a.append({
    type: 'tool/result',
    data: {
      message: {
        role: 'tool',
        tool_call_id: 'c1',
        content: 'migration failed: \u001b[31m<script>x</script>',
      },
    },
  })
  await a.close()
  const b = await store.create({ id: 'beta' })
  b.append({
    type: 'user/message',
    data: { message: { role: 'user', content: 'another migration question' } },
  })
  await b.close()
  await store.close()
})
afterAll(() => cleanup())

describe('search', () => {
  it('prints each hit (session, seq, field, snippet with control characters made visible) and the count', async () => {
    const run = await cli(['search', 'migration', '--store', root])
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const lines = run.stdout.trimEnd().split('\n')
    expect(lines.map((line) => line.split('  ').slice(0, 3).join(' '))).toEqual([
      'alpha seq 0 text',
      'alpha seq 2 result',
      'beta seq 0 text',
      `3 hits in ${root}`,
    ])
    expect(lines[1]).toContain('migration failed: ')
    expect(lines[1]).toContain('<script>x</script>')
    expect(run.stdout).not.toContain('\u001b')
  })

  it('highlights the match on a terminal (not with NO_COLOR), and narrows to --session', async () => {
    const run = await cli(['search', '"alter table"', '--store', root, '--session', 'alpha,beta'], {
      stdoutIsTerminal: true,
      env: {},
    })
    expect(run.stdout.split('\n')[0]).toBe(
      'alpha  seq 1  arguments  {"sql":"\u001b[1;31mALTER TABLE\u001b[0m runs"}',
    )
    const plain = await cli(['search', 'migration', '--store', root, '--session', 'beta'], {
      stdoutIsTerminal: true,
      env: { NO_COLOR: '1' },
    })
    expect(plain.stdout).toBe(`beta  seq 0  text  another migration question\n1 hit in ${root}\n`)
  })

  it('--limit pages with the printed --cursor; --json has the hits verbatim with match offsets', async () => {
    const first = await cli(['search', 'migration', '--store', root, '--limit', '2', '--json'])
    const page = JSON.parse(first.stdout) as {
      hits: { sessionId: string; seq: number; snippet: string; match: { start: number; end: number } }[]
      nextCursor: string | null
    }
    expect(page.hits.map((hit) => `${hit.sessionId}:${hit.seq}`)).toEqual(['alpha:0', 'alpha:2'])
    expect(page.hits[1]?.snippet).toBe('migration failed: \u001b[31m<script>x</script>')
    expect(page.hits.map((hit) => hit.snippet.slice(hit.match.start, hit.match.end))).toEqual([
      'Migration',
      'migration',
    ])
    expect(page.nextCursor).not.toBeNull()
    const text = await cli(['search', 'migration', '--store', root, '--limit', '2'])
    expect(text.stdout).toContain(`2 hits in ${root}; more: --cursor ${page.nextCursor}\n`)
    const next = await cli(['search', 'migration', '--store', root, '--cursor', page.nextCursor!])
    expect(next.stdout).toBe(`beta  seq 0  text  another migration question\n1 hit in ${root}\n`)
  })

  it('refuses an empty query, a bad --limit or --cursor, and a missing store (exit 2, naming the input)', async () => {
    const empty = await cli(['search', '  ', '--store', root])
    expect(empty.code).toBe(2)
    expect(empty.stderr).toMatch(/INVALID_OPTION.*query/)
    const limit = await cli(['search', 'x', '--store', root, '--limit', '0'])
    expect(limit.code).toBe(2)
    expect(limit.stderr).toContain('--limit expects an integer from 1 to 1000, found "0"')
    const cursor = await cli(['search', 'x', '--store', root, '--cursor', 'bogus'])
    expect(cursor.code).toBe(2)
    expect(cursor.stderr).toMatch(/INVALID_OPTION.*cursor.*bogus/)
    const none = await cli(['search', 'x'], { env: {} })
    expect(none.code).toBe(2)
    expect(none.stderr).toContain('--store')
  })
})
