/**
 * The `search` capability on PostgreSQL (issues 26 and 23): the block signatures of
 * migration 3 are written after the appends' commits (none of it on the append's
 * transaction), a database at schema 2 holding sessions migrates (its two indexes on
 * `ledger_events` dropped) and its sessions are found before and after they are caught up,
 * a tail no block covers is read by every search, and ASCII folding includes the two
 * characters the core's `/iu` matcher folds to ASCII.
 */
import { createSessionStore } from '@agent-ledger/session-store'
import type { SessionStore } from '@agent-ledger/session-store'
import { fragmentBits as requiredBits, SIGNATURE_BYTES } from '@agent-ledger/session-store/search-index'
import pg from 'pg'
import { expect, it } from 'vitest'

import { openPostgresBackend } from '../src/index.ts'
import { BLOCK_CHARS, buildBlocks } from '../src/search-index.ts'
import { describeOnServer, sqlOnce, useDatabase } from './support/pg.ts'

let tick = 0
const clock = (): string => new Date(Date.UTC(2026, 0, 1) + ++tick * 1000).toISOString()

function keys(page: Awaited<ReturnType<SessionStore['search']>>): string[] {
  return page.hits.map((hit) => `${hit.sessionId}:${hit.seq}:${hit.field}`)
}

/** Writes `count` user messages of about 400 characters, `word` in message `at` only. */
async function writeLong(store: SessionStore, id: string, count: number, word: { at: number; text: string }) {
  const writer = await store.create({ id })
  for (let index = 0; index < count; index++) {
    const content =
      index === word.at
        ? `the ${word.text} broke here`
        : `routine line ${index} ${'lorem ipsum dolor '.repeat(20)}`
    writer.append({ type: 'user/message', data: { message: { role: 'user', content } } })
    if (index % 50 === 49) await writer.flush()
  }
  await writer.close()
}

describeOnServer('PostgreSQL search index', () => {
  let url: string

  useDatabase((database) => ({ url } = database))

  it('a signature has the bits of every folded ASCII trigram of its lines: a fragment held by a line needs only set bits', () => {
    const lines = ['{"text":"The ZANZIBAR migration"}', '{"text":"\u212Aelvin \u017Ftatus"}']
    const [block] = buildBlocks(lines.map((line, seq) => ({ seq, line })))
    expect(block?.signature.length).toBe(SIGNATURE_BYTES)
    const has = (bit: number): boolean => (block!.signature[bit >>> 3]! & (1 << (bit & 7))) !== 0
    for (const fragment of ['zanzibar', 'migration', 'kelvin', 'status', 'text"']) {
      expect(requiredBits([fragment]).length, fragment).toBeGreaterThan(0)
      expect(requiredBits([fragment]).every(has), fragment).toBe(true)
    }
    expect(requiredBits(['xq'])).toEqual([]) // under three characters: no trigram, every block is read
    expect(requiredBits(['qqqqzzzzwwww']).every(has)).toBe(false)
  })

  it('appends write no search row; a release catches the session up into blocks; search finds hits in blocks and in the tail', async () => {
    const backend = await openPostgresBackend({ connectionString: url })
    const store = createSessionStore({ backend, clock })
    try {
      const writer = await store.create({ id: 'blocks' })
      writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'zanzibar early' } } })
      await writer.flush()
      const rows = async (): Promise<number> =>
        (
          await sqlOnce<{ n: number }>(
            url,
            "SELECT (SELECT count(*) FROM ledger_search_blocks WHERE session_id = 'blocks') + (SELECT count(*) FROM ledger_search_progress WHERE session_id = 'blocks') AS n",
          )
        )[0]!.n
      expect(Number(await rows())).toBe(0)
      // Unindexed: the tail.
      expect(keys(await store.search('ZANZIBAR'))).toEqual(['blocks:0:text'])
      await writer.close()
      const progress = await sqlOnce<{ next_seq: string }>(
        url,
        "SELECT next_seq::text FROM ledger_search_progress WHERE session_id = 'blocks'",
      )
      expect(progress[0]?.next_seq).toBe('1')
      expect(keys(await store.search('ZANZIBAR'))).toEqual(['blocks:0:text'])
      await writeLong(store, 'blocks-long', 400, { at: 250, text: 'Zanzibar' })
      const blocks = await sqlOnce<{ first_seq: string; last_seq: string }>(
        url,
        "SELECT first_seq::text, last_seq::text FROM ledger_search_blocks WHERE session_id = 'blocks-long' ORDER BY ledger_search_blocks.first_seq",
      )
      expect(blocks.length).toBeGreaterThan(2)
      // Contiguous from 0 to the head (400 events: seqs 0..399).
      expect(blocks[0]?.first_seq).toBe('0')
      expect(blocks.at(-1)?.last_seq).toBe('399')
      for (let index = 1; index < blocks.length; index++)
        expect(Number(blocks[index]!.first_seq)).toBe(Number(blocks[index - 1]!.last_seq) + 1)
      expect(keys(await store.search('zanzibar'))).toEqual(['blocks:0:text', 'blocks-long:250:text'])
      // The index forgotten (as after a failed catch-up): the same hits, from the tail.
      await sqlOnce(url, "DELETE FROM ledger_search_blocks WHERE session_id = 'blocks-long'")
      await sqlOnce(url, "DELETE FROM ledger_search_progress WHERE session_id = 'blocks-long'")
      expect(keys(await store.search('zanzibar'))).toEqual(['blocks:0:text', 'blocks-long:250:text'])
      // A wrong signature (all zero bits) would hide the hit: the test can tell blocks from tail.
      await (await store.openWriter('blocks-long')).close()
      await sqlOnce(
        url,
        `UPDATE ledger_search_blocks SET signature = '\\x${'00'.repeat(SIGNATURE_BYTES)}'::bytea WHERE session_id = 'blocks-long'`,
      )
      expect(keys(await store.search('zanzibar'))).toEqual(['blocks:0:text'])
      expect(BLOCK_CHARS).toBeGreaterThan(0)
    } finally {
      await store.close()
    }
  })

  it('a search that meets a long tail starts its catch-up; deleting a session removes its search rows', async () => {
    const backend = await openPostgresBackend({ connectionString: url })
    const store = createSessionStore({ backend, clock })
    try {
      await writeLong(store, 'tail-long', 600, { at: 599, text: 'Kathmandu' })
      await sqlOnce(url, "DELETE FROM ledger_search_blocks WHERE session_id = 'tail-long'")
      await sqlOnce(url, "DELETE FROM ledger_search_progress WHERE session_id = 'tail-long'")
      expect(keys(await store.search('kathmandu'))).toEqual(['tail-long:599:text'])
      // In the background: full blocks only (the short last one waits for a release).
      let blocks = 0
      for (let attempt = 0; attempt < 200 && blocks <= 2; attempt++) {
        if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 50))
        const [count] = await sqlOnce<{ n: string }>(
          url,
          "SELECT count(*)::text AS n FROM ledger_search_blocks WHERE session_id = 'tail-long'",
        )
        blocks = Number(count?.n)
      }
      expect(blocks).toBeGreaterThan(2)
      expect(keys(await store.search('kathmandu'))).toEqual(['tail-long:599:text'])
      await store.delete('tail-long', { force: true })
      const [left] = await sqlOnce<{ n: string }>(
        url,
        "SELECT ((SELECT count(*) FROM ledger_search_blocks WHERE session_id = 'tail-long') + (SELECT count(*) FROM ledger_search_progress WHERE session_id = 'tail-long'))::text AS n",
      )
      expect(left?.n).toBe('0')
    } finally {
      await store.close()
    }
  })

  it('a catch-up whose server process is killed mid-transaction writes nothing: the release still succeeds and search reads the lines from the tail', async () => {
    const backend = await openPostgresBackend({ connectionString: url })
    const store = createSessionStore({ backend, clock })
    const holder = new pg.Client({ connectionString: url })
    await holder.connect()
    try {
      const writer = await store.create({ id: 'killed' })
      for (let index = 0; index < 200; index++) {
        const content = index === 199 ? 'the Timbuktu step' : `routine ${index} ${'lorem ipsum '.repeat(30)}`
        writer.append({ type: 'user/message', data: { message: { role: 'user', content } } })
        if (index % 50 === 49) await writer.flush()
      }
      await writer.flush()
      // Hold the progress row: the release's catch-up waits on it, and is killed there.
      await holder.query(
        "INSERT INTO ledger_search_progress (session_id, next_seq) VALUES ('killed', 0) ON CONFLICT DO NOTHING",
      )
      await holder.query('BEGIN')
      await holder.query("SELECT 1 FROM ledger_search_progress WHERE session_id = 'killed' FOR UPDATE")
      let closed = false
      const closing = writer.close().then(() => {
        closed = true
      })
      // Every catch-up waiting on the row is killed (a background one may be waiting too).
      let killed = 0
      for (let attempt = 0; attempt < 400 && !closed; attempt++) {
        const rows = await sqlOnce<{ ok: boolean }>(
          url,
          "SELECT pg_terminate_backend(pid, 10000) AS ok FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%ledger_search_progress%FOR UPDATE%'",
        )
        killed += rows.filter((row) => row.ok).length
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
      await closing
      expect(killed).toBeGreaterThan(0)
      await holder.query('ROLLBACK')
      const [progress] = await sqlOnce<{ next_seq: string }>(
        url,
        "SELECT next_seq::text FROM ledger_search_progress WHERE session_id = 'killed'",
      )
      expect(Number(progress?.next_seq)).toBeLessThan(200) // the last lines are the tail
      expect(keys(await store.search('timbuktu'))).toEqual(['killed:199:text'])
      await (await store.openWriter('killed')).close()
      const [after] = await sqlOnce<{ next_seq: string }>(
        url,
        "SELECT next_seq::text FROM ledger_search_progress WHERE session_id = 'killed'",
      )
      expect(after?.next_seq).toBe('200')
      expect(keys(await store.search('timbuktu'))).toEqual(['killed:199:text'])
    } finally {
      await holder.end()
      await store.close()
    }
  })

  it('U+212A KELVIN SIGN and U+017F LONG S are found by k and s (as the core matcher folds them), in blocks and in the tail', async () => {
    const backend = await openPostgresBackend({ connectionString: url })
    const store = createSessionStore({ backend, clock })
    try {
      const writer = await store.create({ id: 'fold' })
      writer.append({
        type: 'user/message',
        data: { message: { role: 'user', content: '\u212Aelvin reads the \u017Ftatus' } },
      })
      await writer.flush()
      expect(keys(await store.search('kelvin STATUS'))).toEqual(['fold:0:text'])
      await writer.close()
      expect(keys(await store.search('kelvin STATUS'))).toEqual(['fold:0:text'])
    } finally {
      await store.close()
    }
  })

  it('a database at schema 2 holding sessions migrates: its indexes on ledger_events go, and search finds the sessions written before', async () => {
    const before = await openPostgresBackend({ connectionString: url })
    const store = createSessionStore({ backend: before, clock })
    const writer = await store.create({ id: 'old-session' })
    writer.append({
      type: 'user/message',
      data: { message: { role: 'user', content: 'the Mombasa migration broke' } },
    })
    writer.append({
      type: 'tool/call',
      data: { callId: 'c1', name: 'psql_run', arguments: '{"sql":"VACUUM mombasa_100%"}' },
    })
    await writer.close()
    await writeLong(store, 'old-long', 300, { at: 120, text: 'mombasa' })
    await store.close()
    // Back to schema 2 with the sessions kept: what a database of the previous release holds.
    await sqlOnce(url, 'DROP TABLE ledger_search_blocks, ledger_search_progress')
    await sqlOnce(
      url,
      'CREATE INDEX ledger_events_search_order ON ledger_events (session_id COLLATE "C", seq)',
    )
    await sqlOnce(url, 'CREATE EXTENSION IF NOT EXISTS pg_trgm')
    await sqlOnce(url, 'CREATE INDEX ledger_events_search ON ledger_events USING gin (line gin_trgm_ops)')
    await sqlOnce(url, 'DELETE FROM ledger_schema_migrations WHERE version = 3')

    const backend = await openPostgresBackend({ connectionString: url })
    const migrated = createSessionStore({ backend, clock })
    try {
      const indexes = await sqlOnce<{ indexname: string }>(
        url,
        "SELECT indexname FROM pg_indexes WHERE tablename = 'ledger_events' ORDER BY indexname",
      )
      expect(indexes.map((row) => row.indexname)).toEqual(['ledger_events_pkey'])
      const expected = ['old-long:120:text', 'old-session:0:text', 'old-session:1:arguments']
      expect(keys(await migrated.search('mombasa'))).toEqual(expected)
      // `%` and `_` are literal in the ILIKE pattern: this matches nothing, not everything.
      expect((await migrated.search('mombasa_1000')).hits).toEqual([])
      expect((await migrated.search('mombasa_100%')).hits.map((hit) => hit.field)).toEqual(['arguments'])
      // Caught up (a writer's release), the same hits from the blocks.
      for (const id of ['old-session', 'old-long']) await (await migrated.openWriter(id)).close()
      const [covered] = await sqlOnce<{ n: string }>(
        url,
        "SELECT count(*)::text AS n FROM ledger_search_progress p JOIN ledger_sessions s ON s.session_id = p.session_id WHERE p.next_seq = s.next_seq AND s.session_id LIKE 'old-%'",
      )
      expect(covered?.n).toBe('2')
      expect(keys(await migrated.search('mombasa'))).toEqual(expected)
    } finally {
      await migrated.close()
    }
  })
})
