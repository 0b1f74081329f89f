/**
 * The `search` capability: candidate event lines for `store.search`, in `(session id in
 * code-unit order, seq)` order from the requested position. Two statements per round:
 *
 * 1. the ranges to read, in one snapshot: the blocks of `ledger_search_blocks` whose
 *    signature has every bit the fragments' trigrams need (`search-index.ts`), and each
 *    session's tail past `ledger_search_progress.next_seq` (lines no block covers yet);
 * 2. the lines of those ranges that hold every fragment (`lower(line COLLATE "C") LIKE
 *    '%fragment%'`: ASCII case folding, whatever the database's collation; a line holding
 *    U+212A or U+017F, the two characters the core's `/iu` matcher folds to ASCII, is also
 *    tried with them translated to `k` and `s`).
 *
 * Lines are immutable and a block covers only committed lines, so reading the ranges' lines
 * in a later statement misses nothing. The core runs the exact matcher over what comes back.
 */
import type { SearchCandidate, SearchCandidateQuery } from '@agent-ledger/session-store'
import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import { fragmentBits } from '@agent-ledger/session-store/search-index'

import type { Db } from './db.ts'

/** The largest bigint: the end of a tail range, and the position past every line of a session. */
const END_SEQ = '9223372036854775807'
/**
 * Ranges per ranges statement: every signature is tested by each statement (a scan of the
 * block table), so one statement names the ranges of a whole batch; a query whose words are
 * on few blocks gets them all at once.
 */
const MOST_RANGES = 4096
/** Ranges of the first lines statement; the next ones are sized to the page's need, up to {@link MOST_LINE_RANGES}. */
const FIRST_LINE_RANGES = 8
const MOST_LINE_RANGES = 1024
/** A tail this long makes the search start a catch-up of its session (in the background). */
const LONG_TAIL_LINES = 500

/** `%`, `_` and `\` literal in a LIKE pattern (the default escape is `\`). */
function likePattern(fragment: string): string {
  return `%${fragment.replace(/[\\%_]/gu, '\\$&')}%`
}

/** A position: the first (session id, seq) still to read. */
interface Position {
  readonly sessionId: string
  readonly seq: string
}

/**
 * The ranges statement (text and values).
 *
 * @param query - Fragments and sessions.
 * @param from - The position.
 * @param limit - Most ranges.
 * @returns The SQL and its parameters.
 */
export function rangesStatement(
  query: Pick<SearchCandidateQuery, 'fragments' | 'sessionIds'>,
  from: Position,
  limit: number,
): { text: string; values: unknown[] } {
  const values: unknown[] = [limit, from.sessionId, from.seq]
  const blocks = ['(b.session_id, b.first_seq) >= ($2, 0)', '(b.session_id > $2 OR b.last_seq >= $3::bigint)']
  const tails = [
    's.next_seq > coalesce(p.next_seq, 0)',
    's.session_id COLLATE "C" >= $2',
    '(s.session_id COLLATE "C" > $2 OR s.next_seq > $3::bigint)',
  ]
  if (query.sessionIds !== null) {
    values.push(query.sessionIds)
    blocks.push(`b.session_id = ANY($${values.length}::text[])`)
    tails.push(`s.session_id = ANY($${values.length}::text[])`)
  }
  // Bit numbers are integers computed here, never input text.
  for (const bit of fragmentBits(query.fragments)) blocks.push(`get_bit(b.signature, ${bit}) = 1`)
  const text = `SELECT sid, lo::text AS lo, hi::text AS hi, head::text AS head FROM (
  SELECT b.session_id AS sid, b.first_seq AS lo, b.last_seq AS hi, NULL::bigint AS head
    FROM ledger_search_blocks b
   WHERE ${blocks.join('\n     AND ')}
  UNION ALL
  SELECT s.session_id COLLATE "C", coalesce(p.next_seq, 0), ${END_SEQ}, s.next_seq
    FROM ledger_sessions s LEFT JOIN ledger_search_progress p ON p.session_id = s.session_id COLLATE "C"
   WHERE ${tails.join('\n     AND ')}
) r
ORDER BY r.sid, r.lo
LIMIT $1`
  return { text, values }
}

/** The lines statement: `$1` session ids, `$2` first seqs, `$3` last seqs, `$4` limit, `$5` patterns. */
export const LINES_SQL = `
SELECT r.sid AS session_id, e.seq::text AS seq, e.line
  FROM unnest($1::text[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS r(sid, lo, hi, o)
  CROSS JOIN LATERAL (
    SELECT seq, line FROM ledger_events
     WHERE session_id = r.sid AND seq >= r.lo AND seq <= r.hi
       AND (lower(line COLLATE "C") LIKE ALL ($5::text[])
            OR ((strpos(line, U&'\\212A') > 0 OR strpos(line, U&'\\017F') > 0)
                AND lower(translate(line, U&'\\212A\\017F', 'ks') COLLATE "C") LIKE ALL ($5::text[])))) e
 ORDER BY r.o, e.seq
 LIMIT $4`

interface RangeRow {
  sid: string
  lo: string
  hi: string
  head: string | null
}

/**
 * One batch of candidates.
 *
 * @param db - The backend's pool.
 * @param query - Fragments, start position, sessions, batch size.
 * @param onLongTail - Called with a session whose tail has {@link LONG_TAIL_LINES} or more lines.
 * @returns The lines, and `done` when no more follow.
 */
export async function searchCandidates(
  db: Db,
  query: SearchCandidateQuery,
  onLongTail: (sessionId: string) => void,
): Promise<{ readonly candidates: readonly SearchCandidate[]; readonly done: boolean }> {
  const context = db.context('search sessions')
  const patterns = query.fragments.map(likePattern)
  const candidates: SearchCandidate[] = []
  let from: Position =
    query.from === null
      ? { sessionId: '', seq: '0' }
      : { sessionId: query.from.sessionId, seq: String(query.from.seq) }
  for (;;) {
    if (query.signal?.aborted === true) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.ABORTED,
        message: 'search sessions: aborted between batches of candidates',
        cause: query.signal.reason,
      })
    }
    const { text, values } = rangesStatement(query, from, MOST_RANGES)
    const ranges = (await db.query<RangeRow>(context, text, values)).rows
    for (const range of ranges) {
      if (range.head !== null && Number(range.head) - Number(range.lo) >= LONG_TAIL_LINES)
        onLongTail(range.sid)
    }
    // The ranges' lines in slices: the first of FIRST_LINE_RANGES, each next one sized by the
    // candidates per range so far to what the page still needs (four times as many when none
    // were found), so a page filled from the first blocks reads no more.
    let size = FIRST_LINE_RANGES
    for (let next = 0; next < ranges.length;) {
      const slice = ranges.slice(next, next + size)
      next += slice.length
      // The first range may start before the position (a block or tail of its session).
      const firsts = slice.map((range) =>
        range.sid === from.sessionId && BigInt(range.lo) < BigInt(from.seq) ? from.seq : range.lo,
      )
      const rows = (
        await db.query<{ session_id: string; seq: string; line: string }>(context, LINES_SQL, [
          slice.map((range) => range.sid),
          firsts,
          slice.map((range) => range.hi),
          query.limit - candidates.length,
          patterns,
        ])
      ).rows
      for (const row of rows) {
        candidates.push({
          sessionId: row.session_id,
          stored: { seq: Number(row.seq), line: row.line, location: { file: 'ledger_events' } },
        })
      }
      // Full: the core asks again from the last candidate if its page needs more.
      if (candidates.length >= query.limit) return { candidates, done: false }
      const wanted =
        rows.length === 0
          ? size * 4
          : Math.ceil(((query.limit - candidates.length) * slice.length * 1.25) / rows.length)
      size = Math.min(MOST_LINE_RANGES, Math.max(FIRST_LINE_RANGES, wanted))
    }
    if (ranges.length < MOST_RANGES) return { candidates, done: true }
    const last = ranges.at(-1)!
    from = { sessionId: last.sid, seq: last.hi === END_SEQ ? END_SEQ : String(BigInt(last.hi) + 1n) }
  }
}
