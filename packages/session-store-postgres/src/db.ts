import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type { WriterLease } from '@agent-ledger/session-store'
import type pg from 'pg'
import type { PoolClient, QueryResultRow } from 'pg'

import { isConnectionLoss, targetText, toStoreError } from './pg-errors.ts'
import type { ConnectionTarget, FailureContext } from './pg-errors.ts'
import * as sql from './sql.ts'

/** Limits every part of the backend reads. */
export interface DbSettings {
  readonly statementTimeoutMs: number
  readonly commitTimeoutMs: number
  readonly readPageSize: number
}

/** A head row as `HEAD_SQL` returns it (bigints as text). */
export interface HeadRow {
  next_seq: string
  last_crc: string | null
  last_batch: string | null
  epoch: string
  /** The owner of a live lease, or null. */
  owner: string | null
  updated_at: string
}

/** A head row read under the row lock (`HEAD_LOCKED_SQL`). */
export interface LockedHeadRow extends HeadRow {
  /** The owner column whether or not the lease is live. */
  holder: string | null
}

/** What explains a write that matched nothing (`APPEND_REFUSAL_SQL`). */
export interface RefusalRow {
  epoch: string
  owner: string | null
  next_seq: string
  last_batch: string | null
}

/** A statement prepared once per connection under `name` (a protocol-level prepared statement). */
export interface NamedStatement {
  readonly name: string
  readonly text: string
}

const ignore = (): void => undefined

/**
 * Sent once on each pooled connection when the server offers it: values large enough to be
 * TOASTed (a checkpoint body: about 840 KB at 4 000 events of the bench session) are
 * compressed with lz4 instead of the default pglz, which costs the server about five times
 * the time (`bench/append.bench.ts`, row `postgres checkpoint body insert`: 9.2 ms against
 * 48.3 ms for one body), for a value about 20% larger (63.9 KB against 52.8 KB).
 */
const LZ4_SQL = 'SET default_toast_compression = lz4'

/** Whether the server can compress TOASTed values with lz4 (PostgreSQL 14+ built with it). */
export const LZ4_PROBE_SQL = `
SELECT coalesce('lz4' = ANY(enumvals), false) AS lz4 FROM pg_settings WHERE name = 'default_toast_compression'`

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error))
}

/** The pool plus the error translation every statement goes through. */
export class Db {
  readonly pool: pg.Pool
  readonly target: ConnectionTarget
  readonly settings: DbSettings
  /** Set at open when the server offers lz4 ({@link LZ4_PROBE_SQL}): each connection is told to use it. */
  lz4 = false
  /** Connections already told ({@link LZ4_SQL}). */
  private readonly toldLz4 = new WeakSet<PoolClient>()

  constructor(init: { pool: pg.Pool; target: ConnectionTarget; settings: DbSettings }) {
    this.pool = init.pool
    this.target = init.target
    this.settings = init.settings
  }

  context(action: string, sessionId?: string): FailureContext {
    return { target: this.target, action, sessionId }
  }

  /** Checks out a connection; `release(error)` destroys it instead of pooling it. */
  async connect(context: FailureContext): Promise<PoolClient> {
    let client: PoolClient
    try {
      client = await this.pool.connect()
    } catch (error) {
      throw toStoreError(error, { ...context, connecting: true })
    }
    if (this.lz4 && !this.toldLz4.has(client)) {
      // Queued before the caller's first statement on this connection; a failure here
      // (a lost connection) fails that statement too, which is handled as usual.
      this.toldLz4.add(client)
      client.query(LZ4_SQL).catch(ignore)
    }
    // A checked-out client whose connection drops emits 'error' besides failing its query;
    // the query's rejection is what we act on, so the event is only kept from crashing the process.
    client.on('error', ignore)
    const release = client.release.bind(client)
    client.release = (error?: Error | boolean) => {
      client.off('error', ignore)
      if (error !== undefined && error !== false) client.on('error', ignore)
      release(error)
    }
    return client
  }

  /**
   * Runs one statement on a pooled connection; errors become SessionStoreErrors. A
   * {@link NamedStatement} is parsed and planned once per connection, then only bound and
   * executed (for the statements of the hot paths: append, read page).
   */
  async query<TRow extends QueryResultRow>(
    context: FailureContext,
    statement: string | NamedStatement,
    values: readonly unknown[],
  ): Promise<pg.QueryResult<TRow>> {
    const client = await this.connect(context)
    let broken: Error | undefined
    try {
      return typeof statement === 'string'
        ? await client.query<TRow>(statement, values as unknown[])
        : await client.query<TRow>({
            name: statement.name,
            text: statement.text,
            values: values as unknown[],
          })
    } catch (error) {
      if (isConnectionLoss(error)) broken = asError(error)
      throw toStoreError(error, context)
    } finally {
      client.release(broken)
    }
  }

  /**
   * Reads the head after waiting (at most `commitTimeoutMs`) for the row lock of any
   * in-flight or orphaned append on the session: what it returns is final. Throws the raw
   * error (a lock timeout is SQLSTATE 55P03).
   */
  async lockedHead(context: FailureContext): Promise<LockedHeadRow | undefined> {
    const client = await this.connect(context)
    let broken: Error | undefined
    try {
      await client.query('BEGIN')
      await client.query(`SET LOCAL lock_timeout = ${this.settings.commitTimeoutMs}`)
      const row = (await client.query<LockedHeadRow>(sql.HEAD_LOCKED_SQL, [context.sessionId])).rows[0]
      await client.query('COMMIT')
      return row
    } catch (error) {
      broken = asError(error)
      throw error
    } finally {
      client.release(broken)
    }
  }

  notFound(action: string, id: string): SessionStoreError {
    return new SessionStoreError({
      code: SessionStoreErrorCode.SESSION_NOT_FOUND,
      message: `${action}: no session ${id} in ${targetText(this.target)}`,
      sessionId: id,
    })
  }

  /** Explains a write that matched nothing: not found, fenced (epoch or owner moved) or a head conflict. */
  refusal(
    action: string,
    lease: WriterLease,
    found: { row: RefusalRow | undefined; expectedSeq?: number | undefined },
  ): SessionStoreError {
    const id = lease.sessionId
    const row = found.row
    if (row === undefined) return this.notFound(action, id)
    if (Number(row.epoch) !== lease.epoch || row.owner !== lease.owner) {
      return new SessionStoreError({
        code: SessionStoreErrorCode.FENCED,
        message:
          Number(row.epoch) !== lease.epoch
            ? `${action}: fenced: the session's epoch is ${row.epoch} (held by ${row.owner ?? 'nobody'}), this lease has epoch ${lease.epoch}; nothing was written`
            : `${action}: fenced: the lease of epoch ${lease.epoch} was released; nothing was written`,
        sessionId: id,
        details: { expected: lease.epoch, found: Number(row.epoch), holder: row.owner },
      })
    }
    return new SessionStoreError({
      code: SessionStoreErrorCode.CONFLICT,
      message: `${action}: the session's next seq is ${row.next_seq}, the write expected ${String(found.expectedSeq)}; nothing was written`,
      sessionId: id,
      details: { expected: found.expectedSeq, found: Number(row.next_seq) },
    })
  }

  /** Reads the session row and explains why a write matched nothing. */
  async explainRefusal(action: string, lease: WriterLease, expectedSeq?: number): Promise<SessionStoreError> {
    const rows = await this.query<RefusalRow>(this.context(action, lease.sessionId), sql.APPEND_REFUSAL_SQL, [
      lease.sessionId,
    ])
    return this.refusal(action, lease, { row: rows.rows[0], expectedSeq })
  }
}
