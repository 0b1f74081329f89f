/**
 * A create whose seed is a stream (an import, a copy): the session row and every batch of
 * lines in ONE transaction on one pooled connection, committed after the last batch. Other
 * connections see nothing until the commit (READ COMMITTED); a failure, an abort or a
 * client killed midway rolls it all back (the server aborts the transaction of a closed
 * connection), so nothing is published and the id stays free. See the README, "Streamed
 * create", for why a transaction rather than rows under a hidden state.
 */
import { seedBatches, SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type { CreateRequest } from '@agent-ledger/session-store'

import type { Db } from './db.ts'
import { isConnectionLoss, PostgresFailureReason, targetText, toStoreError } from './pg-errors.ts'
import * as sql from './sql.ts'

/**
 * Publishes a session whose seed is streamed (see the file comment).
 *
 * @param db - The pool.
 * @param request - A create request whose `lines` is an async iterable of batches.
 * @throws {@link SessionStoreError} `SESSION_EXISTS` (checked before the first batch and by the
 *   row's primary key, held to the commit), `ABORTED`, `DISK_FULL`, `BACKEND_FAILED`,
 *   `UNKNOWN_OUTCOME` never (a commit whose reply was lost is settled by reading the row);
 *   the stream's own error unchanged.
 */
export async function createStreamed(db: Db, request: CreateRequest): Promise<void> {
  const id = request.id
  const action = `create session ${id}`
  const context = db.context(action, id)
  const exists = (): SessionStoreError =>
    new SessionStoreError({
      code: SessionStoreErrorCode.SESSION_EXISTS,
      message: `${action}: a session with that id already exists in ${targetText(db.target)}; nothing was written`,
      sessionId: id,
    })
  // Before any batch is taken: an existing id costs the caller no work.
  if ((await db.query(context, sql.HEADER_SQL, [id])).rows.length > 0) throw exists()
  const seed = seedBatches(request, `Creating session ${id}`)
  const client = await db.connect(context)
  let broken: Error | undefined
  let committing = false
  try {
    await client.query('BEGIN')
    // The row first: its primary key is taken until the commit (a concurrent create of the
    // same id waits, then fails with SESSION_EXISTS); the head is written after the last batch.
    const created = await client.query(sql.CREATE_STREAM_ROW_SQL, [
      id,
      request.headerLine,
      request.header.parentSession ?? null,
      request.header.cwd ?? null,
    ])
    if (created.rowCount !== 1) throw exists()
    let next = 0
    for await (const batch of seed) {
      await client.query({
        name: sql.CREATE_STREAM_LINES.name,
        text: sql.CREATE_STREAM_LINES.text,
        values: [id, next, batch],
      })
      next += batch.length
    }
    await client.query(sql.CREATE_STREAM_HEAD_SQL, [id, next, seed.lastCrc()])
    committing = true
    await client.query('COMMIT')
  } catch (error) {
    if (isConnectionLoss(error)) broken = error instanceof Error ? error : new Error(String(error))
    else
      await client.query('ROLLBACK').catch((rollback: unknown) => {
        broken = rollback instanceof Error ? rollback : new Error(String(rollback))
      })
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- the caller's own error, unchanged (the port's contract)
    if (seed.streamError !== undefined) throw seed.streamError
    const failure = toStoreError(error, context)
    // The commit may have landed before the connection dropped: the same header and seed
    // count stored under this id means it did.
    if (
      committing &&
      failure.details.reason === PostgresFailureReason.CONNECTION_LOST &&
      (await landed(db, { id, headerLine: request.headerLine, count: seed.count }))
    ) {
      return
    }
    throw failure
  } finally {
    client.release(broken)
  }
}

async function landed(
  db: Db,
  expected: { readonly id: string; readonly headerLine: string; readonly count: number },
): Promise<boolean> {
  const result = await db.query<{ header_line: string; next_seq: string }>(
    db.context(`check whether session ${expected.id} was created`, expected.id),
    sql.HEADER_SQL,
    [expected.id],
  )
  const row = result.rows[0]
  return (
    row !== undefined && row.header_line === expected.headerLine && Number(row.next_seq) === expected.count
  )
}
