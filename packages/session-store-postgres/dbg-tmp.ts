import { createSessionStore } from '@agent-ledger/session-store'
import pg from 'pg'
import { startCluster } from '../../tooling/pg/cluster.ts'
import { corpusSessionId, RARE_WORD, writeCorpus } from '../../tooling/bench/search-corpus.ts'
import { openPostgresBackend } from './src/index.ts'
import { LINES_SQL, rangesStatement } from './src/search.ts'
const cluster = await startCluster()
try {
  const url = cluster.url()
  const backend = await openPostgresBackend({ connectionString: url })
  const store = createSessionStore({ backend, clock: () => new Date().toISOString(), redaction: null })
  const c = new pg.Client({ connectionString: url }); await c.connect()
  let n = 0
  await writeCorpus(store, 16 * 1024 * 1024, async () => { n++; return (await c.query("SELECT sum(octet_length(line))::float AS b FROM ledger_events")).rows[0].b ?? 0 })
  await c.query('ANALYZE')
  const r = rangesStatement({ fragments: [RARE_WORD], sessionIds: null }, { sessionId: '', seq: '0' }, 1e6)
  console.log((await c.query('EXPLAIN ANALYZE ' + r.text, r.values)).rows.map(x => x['QUERY PLAN']).join('\n'))
  const found = (await c.query(r.text, r.values)).rows
  console.log(found.length, found.slice(0, 12))
  const v = [found.map((x) => x.sid), found.map((x) => x.lo), found.map((x) => x.hi), 256, [`%${RARE_WORD}%`]]
  console.log((await c.query('EXPLAIN ANALYZE ' + LINES_SQL, v)).rows.map(x => x['QUERY PLAN']).join('\n'))
  for (let i = 0; i < 5; i++) { const t = performance.now(); const p = await store.search(RARE_WORD, { limit: 20 }); console.log('search', p.hits.length, (performance.now() - t).toFixed(1)) }
  console.log((await c.query("SELECT count(*) FROM ledger_search_blocks")).rows)
  await c.end()
  await store.close()
} finally { await cluster.destroy() }
