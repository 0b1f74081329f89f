/**
 * The PostgreSQL `delete` capability (issue 27): one transaction on one connection. It locks
 * the session row (`FOR UPDATE`, so it waits at most `commitTimeoutMs` for an append in
 * flight), refuses a live lease unless forced, checks `unchangedSince`, measures the bytes,
 * then deletes the session row **first** (an append waiting on that row then matches nothing
 * after the COMMIT: `SESSION_NOT_FOUND`, nothing written), its lines (a later statement of the
 * same transaction sees every line committed before the row was locked: no orphan), its
 * follower rows, its search blocks and progress (a catch-up locks the session row first, so
 * none is mid-write); its checkpoint goes with the row (`ON DELETE CASCADE`). A crash, a killed
 * server process or an error before COMMIT rolls all of it back: the session stays whole.
 */
import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type { DeleteOptions, DeleteResult } from '@agent-ledger/session-store'

import type { Db } from './db.ts'
import { toStoreError } from './pg-errors.ts'

const LOCK_SQL = `
SELECT writer_owner,
       to_char(lease_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS expires_at,
       (writer_owner IS NOT NULL AND lease_until > clock_timestamp()) AS live,
       (date_trunc('milliseconds', updated_at) > $2::timestamptz) AS changed,
       octet_length(header_line) + 1
         + coalesce((SELECT sum(octet_length(e.line) + 1) FROM ledger_events e WHERE e.session_id = $1), 0)
         + coalesce((SELECT octet_length(c.body) FROM ledger_checkpoints c WHERE c.session_id = $1), 0) AS bytes
  FROM ledger_sessions WHERE session_id = $1 FOR UPDATE`

/** The statements of the delete, in order (the session row first: see the module comment). */
const DELETE_STATEMENTS = [
  'DELETE FROM ledger_sessions WHERE session_id = $1',
  'DELETE FROM ledger_events WHERE session_id = $1',
  'DELETE FROM ledger_followers WHERE session_id = $1',
  'DELETE FROM ledger_search_blocks WHERE session_id = $1',
  'DELETE FROM ledger_search_progress WHERE session_id = $1',
] as const

/**
 * Deletes session `id` in one transaction (see the module comment).
 *
 * @param db - The pool and settings.
 * @param id - The session id (checked by the caller).
 * @param options - `force`, `unchangedSince`, `dryRun`.
 * @returns The outcome and the bytes of its header, lines and checkpoint.
 */
export async function deleteSession(db: Db, id: string, options: DeleteOptions): Promise<DeleteResult> {
  const action = `delete session ${id}`
  const context = db.context(action, id)
  const client = await db.connect(context)
  let broken: Error | undefined
  try {
    await client.query('BEGIN')
    await client.query(`SET LOCAL lock_timeout = ${db.settings.commitTimeoutMs}`)
    const row = (
      await client.query<{
        writer_owner: string | null
        expires_at: string | null
        live: boolean
        changed: boolean
        bytes: string
      }>(LOCK_SQL, [id, options.unchangedSince ?? 'infinity'])
    ).rows[0]
    if (row === undefined) {
      await client.query('ROLLBACK')
      return { outcome: 'missing', bytes: 0 }
    }
    if (row.live && options.force !== true) {
      await client.query('ROLLBACK')
      throw new SessionStoreError({
        code: SessionStoreErrorCode.SESSION_LOCKED,
        message: `${action}: ${row.writer_owner ?? 'another writer'} holds a live lease until ${row.expires_at ?? '?'}; expected none (close that writer, wait for the lease to expire, or force); nothing was removed`,
        sessionId: id,
        details: { holder: row.writer_owner, expiresAt: row.expires_at },
      })
    }
    if (row.changed) {
      await client.query('ROLLBACK')
      return { outcome: 'kept', bytes: 0 }
    }
    const bytes = Number(row.bytes)
    if (options.dryRun === true) {
      await client.query('ROLLBACK')
      return { outcome: 'deleted', bytes }
    }
    for (const statement of DELETE_STATEMENTS) await client.query(statement, [id])
    await client.query('COMMIT')
    return { outcome: 'deleted', bytes }
  } catch (error) {
    if (SessionStoreError.is(error)) throw error
    broken = error instanceof Error ? error : new Error(String(error))
    throw toStoreError(error, context)
  } finally {
    client.release(broken)
  }
}
