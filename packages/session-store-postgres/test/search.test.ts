/**
 * The `search` capability on PostgreSQL (issue 26): migration 2 adds the trigram index
 * and the order index (also to a database that already holds sessions), the candidate
 * query is answered by them, and `store.search` over the capability finds what was written
 * before the migration.
 */
import { createSessionStore } from '@agent-ledger/session-store'
import pg from 'pg'
import { expect, it } from 'vitest'

import { openPostgresBackend } from '../src/index.ts'
import { candidateStatement } from '../src/search.ts'
import { describeOnServer, sqlOnce, useDatabase } from './support/pg.ts'

let tick = 0
const clock = (): string => new Date(Date.UTC(2026, 0, 1) + ++tick * 1000).toISOString()

describeOnServer('PostgreSQL search index', () => {
  let url: string

  useDatabase((database) => ({ url } = database))

  it('a database at schema 1 holding sessions migrates to the index, and search finds the sessions written before', async () => {
    const before = await openPostgresBackend({ connectionString: url })
    const store = createSessionStore({ backend: before, clock })
    const writer = await store.create({ id: 'old-session' })
    writer.append({
      type: 'user/message',
      data: { message: { role: 'user', content: 'the Zanzibar migration broke' } },
    })
    writer.append({
      type: 'tool/call',
      data: { callId: 'c1', name: 'psql_run', arguments: '{"sql":"VACUUM zanzibar_100%"}' },
    })
    await writer.close()
    await store.close()
    // Back to schema 1 with the sessions kept: what a database of the previous release holds.
    await sqlOnce(url, 'DROP INDEX ledger_events_search, ledger_events_search_order')
    await sqlOnce(url, 'DELETE FROM ledger_schema_migrations WHERE version = 2')

    const backend = await openPostgresBackend({ connectionString: url })
    const migrated = createSessionStore({ backend, clock })
    try {
      const indexes = await sqlOnce<{ indexdef: string }>(
        url,
        "SELECT indexdef FROM pg_indexes WHERE indexname = 'ledger_events_search'",
      )
      expect(indexes[0]?.indexdef).toContain('gin_trgm_ops')
      const page = await migrated.search('zanzibar')
      expect(page.hits.map((hit) => `${hit.sessionId}:${hit.seq}:${hit.field}`)).toEqual([
        'old-session:0:text',
        'old-session:1:arguments',
      ])
      // `%` and `_` are literal in the ILIKE pattern: this matches nothing, not everything.
      expect((await migrated.search('zanzibar_1000')).hits).toEqual([])
      expect((await migrated.search('zanzibar_100%')).hits.map((hit) => hit.field)).toEqual(['arguments'])
    } finally {
      await migrated.close()
    }
  })

  /** The plan of a candidate query, with the given planner methods priced out. */
  async function planOf(
    query: Parameters<typeof candidateStatement>[0],
    off: readonly string[],
  ): Promise<string> {
    const { text, values } = candidateStatement(query)
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      for (const method of off) await client.query(`SET ${method} = off`)
      return (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, values)).rows
        .map((row) => row['QUERY PLAN'])
        .join('\n')
    } finally {
      await client.end()
    }
  }

  // Sequential scans (and sorts) priced out: the tests ask whether an index CAN serve the
  // query shape, not what the planner picks for a table of two rows.
  it('the candidate query is answered by the trigram index ledger_events_search (one ILIKE per fragment)', async () => {
    const plan = await planOf(
      { fragments: ['zanzibar', 'migration'], from: null, sessionIds: null, limit: 256 },
      ['enable_seqscan', 'enable_indexscan'],
    )
    expect(plan).toContain('Bitmap Index Scan on ledger_events_search')
  })

  it('a later batch walks the order index from its position, whatever the database collation (no sort of every row)', async () => {
    const plan = await planOf(
      { fragments: [], from: { sessionId: 'a', seq: 3 }, sessionIds: null, limit: 256 },
      ['enable_seqscan', 'enable_sort', 'enable_bitmapscan'],
    )
    expect(plan).toContain('Index Scan using ledger_events_search_order')
    expect(plan).toContain('Index Cond')
    expect(plan).not.toContain('Sort')
  })
})
