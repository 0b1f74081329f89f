/**
 * When the backend runs a writer's search catch-up (`SearchIndexer`, issue 23): not between
 * a writer's flushes but once its appends pause, or at once when many blocks are pending.
 * Each case drives one indexer over its own pool on a session whose lines were written with
 * no catch-up (`create` with lines), then `close()`s it, which waits for any catch-up it
 * started: whether search rows exist then says whether one was started. No timing verdict:
 * the pause case polls (bounded) for rows that must appear; the other cases use a pause
 * longer than any test run, so only the amount appended decides.
 */
import pg from 'pg'
import { beforeAll, expect, it } from 'vitest'

import { Db } from '../src/db.ts'
import { describeTarget } from '../src/pg-errors.ts'
import type { PostgresBackend } from '../src/postgres-backend.ts'
import { BLOCK_CHARS, BURST_CHARS, SearchIndexer } from '../src/search-index.ts'
import { createRequest, describeOnServer, eventLine, sessionId, sqlOnce, useDatabase } from './support/pg.ts'

/** Longer than any test: a catch-up these indexers start never waited for a pause. */
const NEVER_MS = 3_600_000

let url = ''
let backend: PostgresBackend

/** A session of `lines` lines of about 1 000 characters each, not indexed. */
async function session(lines: number): Promise<string> {
  const id = sessionId('sched')
  const request = createRequest(id)
  const text = 'lorem ipsum dolor sit amet '.repeat(37)
  const all = Array.from({ length: lines }, (_, seq) => eventLine(seq, `${seq} ${text}`))
  await backend.create({ ...request, lines: all, lastCrc: all.at(-1)!.slice(-10, -2) })
  return id
}

async function searchRows(id: string): Promise<number> {
  const [row] = await sqlOnce<{ n: string }>(
    url,
    'SELECT ((SELECT count(*) FROM ledger_search_blocks WHERE session_id = $1) + (SELECT count(*) FROM ledger_search_progress WHERE session_id = $1))::text AS n',
    [id],
  )
  return Number(row?.n)
}

/** Runs `body` with an indexer over a pool of its own, then closes both (close awaits started catch-ups). */
async function withIndexer(idleMs: number, body: (indexer: SearchIndexer) => void): Promise<void> {
  const { db, end } = ownDb()
  const indexer = new SearchIndexer(db, { idleMs })
  try {
    body(indexer)
  } finally {
    await indexer.close()
    await end()
  }
}

/** A `Db` over a pool of its own (not the backend's, whose indexer would schedule too). */
function ownDb(): { db: Db; end: () => Promise<void> } {
  const pool = new pg.Pool({ connectionString: url, max: 2 })
  const db = new Db({
    pool,
    target: describeTarget(url),
    settings: { statementTimeoutMs: 30_000, commitTimeoutMs: 30_000, readPageSize: 1000 },
  })
  return { db, end: () => pool.end() }
}

describeOnServer('PostgreSQL search catch-up schedule', () => {
  useDatabase((database) => ({ url, backend } = database))
  beforeAll(() => {
    expect(BURST_CHARS).toBeGreaterThan(4 * BLOCK_CHARS)
  })

  it('appends of several blocks in a row, short of the burst bound, start no catch-up while they keep coming', async () => {
    const id = await session(200)
    await withIndexer(NEVER_MS, (indexer) => {
      // Four flushes of a block's worth each: the old schedule started one after the first.
      for (let flush = 0; flush < 4; flush++) indexer.appended(id, BLOCK_CHARS)
    })
    expect(await searchRows(id)).toBe(0)
  })

  it('a writer that never pauses is caught up once the burst bound is pending', async () => {
    const id = await session(Math.ceil(BURST_CHARS / 1000) + 50)
    await withIndexer(NEVER_MS, (indexer) => {
      for (let flush = 0; flush < 4; flush++) indexer.appended(id, BURST_CHARS / 4)
    })
    expect(await searchRows(id)).toBeGreaterThan(1)
  })

  it('a block appended and then a pause starts the catch-up without a release', async () => {
    const id = await session(200)
    const { db, end } = ownDb()
    const indexer = new SearchIndexer(db, { idleMs: 1 })
    let rows = 0
    try {
      indexer.appended(id, BLOCK_CHARS)
      for (let attempt = 0; attempt < 400 && rows === 0; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 25))
        rows = await searchRows(id)
      }
    } finally {
      await indexer.close()
      await end()
    }
    expect(rows).toBeGreaterThan(1)
  })
})
