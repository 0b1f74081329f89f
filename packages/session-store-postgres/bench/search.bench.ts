/**
 * `store.search` on PostgreSQL (issue 26): p50 of one query over a corpus of
 * `AGENT_LEDGER_SEARCH_MB` megabytes of lines (default 16; `--large`: 1024, the 1 GB;
 * `tooling/bench/search-corpus.ts`), written through the session core (the block signatures of
 * migration 3 written by the catch-ups after the appends, `src/search-index.ts`; each writer's
 * release waits for its session's), then `ANALYZE`d.
 *
 * - Ours: `createSessionStore({ backend }).search(RARE_WORD, { limit: 20 })`: the `search`
 *   capability's two statements (the blocks whose signature may hold the word and every
 *   tail, then those ranges' lines with a LIKE per word), then the core's checks and matcher.
 * - Floor: the same two statements on a bare client, one round: the ratio is what the core,
 *   the driver and the capability's rounds add.
 * - Target: p50 <= 200 ms (the issue's, over 1 GB).
 * - Index build cost: bytes of the search tables (`pg_total_relation_size` of
 *   `ledger_search_blocks` and `ledger_search_progress`: heap, primary keys, TOAST) per byte
 *   of the lines; target <= 0.3 (the issue: log plus index <= 1.3x the log).
 *
 * One run (2026-12-02, load average 28 to 36 on 2 cores), `AGENT_LEDGER_SEARCH_MB=128`:
 * p50 307.5 ms, the bare two SELECTs 196.5 ms in the same run, so the 200 ms target was
 * MISSED at 128 MB. The floor alone was near the target, so the machine's load is most of
 * it. What grows with the store is the ranges statement, which tests every block signature
 * (about 32 per MB of lines), and the lines statement, which reads the whole block of each
 * block that passes (about 130 lines each here) to find one hit. 1 GB (`--large`) was not
 * run: writing its corpus through the core takes over an hour at that load. The index was
 * 0.039 bytes per line byte (target 0.3, met); with migration 2's trigram and order indexes
 * it was 1.55.
 *
 * Run alone with `pnpm bench --only session-store-postgres/bench/search.bench`.
 */
import { createSessionStore } from '@agent-ledger/session-store'

import { corpusBytes, corpusSessionId, RARE_WORD, writeCorpus } from '../../../tooling/bench/search-corpus.ts'
import type { BenchResult } from '../../../tooling/bench/types.ts'
import { openPostgresBackend } from '../src/index.ts'
import { LINES_SQL, rangesStatement } from '../src/search.ts'
import { bareClient, median, withServer } from './support.ts'

const ROUNDS = 7
const TARGET_MS = 200
const INDEX_TARGET = 0.3

export async function run(options: { scale?: 'default' | 'large' } = {}): Promise<BenchResult[]> {
  const bytes = corpusBytes(options.scale ?? 'default')
  return await withServer('search', async ({ url }) => {
    const backend = await openPostgresBackend({ connectionString: url })
    const store = createSessionStore({ backend, clock: () => new Date().toISOString(), redaction: null })
    const client = await bareClient(url)
    try {
      let written = 0
      let last = 0
      const corpus = await writeCorpus(store, bytes, async () => {
        const rows = await client.query<{ bytes: string | null }>(
          `SELECT sum(octet_length(line))::text AS bytes FROM ledger_events WHERE session_id = $1`,
          [corpusSessionId(last)],
        )
        written += Number(rows.rows[0]?.bytes ?? 0)
        last += 1
        return written
      })
      await client.query('ANALYZE ledger_events')
      const sizes = (
        await client.query<{ lines: string; index: string }>(
          `SELECT sum(octet_length(line))::text AS lines, (pg_total_relation_size('ledger_search_blocks') + pg_total_relation_size('ledger_search_progress'))::text AS index FROM ledger_events`,
        )
      ).rows[0]
      const lineBytes = Number(sizes?.lines)
      const indexBytes = Number(sizes?.index)
      const ranges = rangesStatement(
        { fragments: [RARE_WORD], sessionIds: null },
        { sessionId: '', seq: '0' },
        1e6,
      )
      const ours: number[] = []
      const floor: number[] = []
      let hits = 0
      let rows = 0
      const runOurs = async (): Promise<void> => {
        const started = performance.now()
        hits = (await store.search(RARE_WORD, { limit: 20 })).hits.length
        ours.push(performance.now() - started)
      }
      const runFloor = async (): Promise<void> => {
        const started = performance.now()
        const found = (
          await client.query<{ sid: string; lo: string; hi: string }>(ranges.text, ranges.values)
        ).rows
        rows = (
          await client.query(LINES_SQL, [
            found.map((range) => range.sid),
            found.map((range) => range.lo),
            found.map((range) => range.hi),
            256,
            [`%${RARE_WORD}%`],
          ])
        ).rows.length
        floor.push(performance.now() - started)
      }
      await runFloor()
      await runOurs()
      ours.length = 0
      floor.length = 0
      for (let round = 0; round < ROUNDS; round += 1) {
        if (round % 2 === 0) {
          await runFloor()
          await runOurs()
        } else {
          await runOurs()
          await runFloor()
        }
      }
      const expected = Math.min(corpus.planted, 20)
      if (hits !== expected || rows !== corpus.planted) {
        throw new Error(
          `search bench: expected ${expected} hits and ${corpus.planted} rows, found ${hits} and ${rows}`,
        )
      }
      const mb = (lineBytes / 1024 / 1024).toFixed(0)
      const p50 = median(ours)
      const bare = median(floor)
      return [
        {
          name: `search p50, PostgreSQL block signatures, ${mb} MB (${corpus.sessions} sessions, ${hits} hits)`,
          value: p50,
          unit: 'ms',
          floor: { name: 'the same two SELECTs (ranges, lines) on a bare client', value: bare },
          ratio: p50 / bare,
          target: `p50 <= ${TARGET_MS} ms`,
          met: p50 <= TARGET_MS,
        },
        {
          name: `search index bytes per line byte, PostgreSQL, ${mb} MB`,
          value: indexBytes / lineBytes,
          unit: 'x',
          floor: { name: 'line bytes (MB)', value: lineBytes / 1024 / 1024 },
          ratio: indexBytes / lineBytes,
          target: `<= ${INDEX_TARGET}`,
          met: indexBytes / lineBytes <= INDEX_TARGET,
        },
      ]
    } finally {
      await client.end()
      await store.close()
    }
  })
}
