/**
 * The `search` capability: candidate event lines for `store.search`, narrowed in the
 * database by `line ILIKE '%fragment%'` per fragment (the `ledger_events_search` trigram
 * index of migration 2 serves these; without pg_trgm the same query scans), in
 * `(session_id COLLATE "C", seq)` order from the requested position. The core runs the
 * exact matcher over what comes back.
 */
import type { SearchCandidate, SearchCandidateQuery } from '@agent-ledger/session-store'

import type { Db } from './db.ts'

/** `%`, `_` and `\` literal in an ILIKE pattern (the default escape is `\`). */
function likePattern(fragment: string): string {
  return `%${fragment.replace(/[\\%_]/gu, '\\$&')}%`
}

/**
 * The statement of one batch: text and values.
 *
 * @param query - Fragments, start position, sessions, batch size.
 * @returns The SQL and its parameters.
 */
export function candidateStatement(query: SearchCandidateQuery): { text: string; values: unknown[] } {
  const values: unknown[] = [query.limit]
  const where: string[] = []
  const param = (value: unknown): string => {
    values.push(value)
    return `$${values.length}`
  }
  if (query.from !== null) {
    const id = param(query.from.sessionId)
    // A row comparison on the order index's columns: an index range, not a filter.
    where.push(`(session_id COLLATE "C", seq) >= (${id}::text COLLATE "C", ${param(query.from.seq)}::bigint)`)
  }
  if (query.sessionIds !== null) where.push(`session_id = ANY(${param(query.sessionIds)}::text[])`)
  // One ILIKE per fragment: each is an index condition the trigram index answers.
  for (const fragment of query.fragments) where.push(`line ILIKE ${param(likePattern(fragment))}`)
  const text = `SELECT session_id, seq, line FROM ledger_events
${where.length === 0 ? '' : `WHERE ${where.join('\n  AND ')}`}
ORDER BY session_id COLLATE "C", seq
LIMIT $1`
  return { text, values }
}

/**
 * One batch of candidates.
 *
 * @param db - The backend's pool.
 * @param query - Fragments, start position, sessions, batch size.
 * @returns The lines, and `done` when no more follow.
 */
export async function searchCandidates(
  db: Db,
  query: SearchCandidateQuery,
): Promise<{ readonly candidates: readonly SearchCandidate[]; readonly done: boolean }> {
  const { text, values } = candidateStatement(query)
  const result = await db.query<{ session_id: string; seq: string; line: string }>(
    db.context('search sessions'),
    text,
    values,
  )
  return {
    candidates: result.rows.map((row) => ({
      sessionId: row.session_id,
      stored: { seq: Number(row.seq), line: row.line, location: { file: 'ledger_events' } },
    })),
    done: result.rows.length < query.limit,
  }
}
