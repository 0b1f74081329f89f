import { randomBytes } from 'node:crypto'

import {
  assertSessionId,
  lineCrc,
  SessionStoreError,
  SessionStoreErrorCode,
} from '@agent-ledger/session-store'
import type {
  AcquireOptions,
  AcquireResult,
  AppendBatch,
  BackendCapabilities,
  CheckpointRecord,
  CreateRequest,
  ListPage,
  ListQuery,
  ReadOptions,
  ServerForkRequest,
  SessionBackend,
  SessionHead,
  SignalOptions,
  StoredHeader,
  StoredLine,
  WriterLease,
} from '@agent-ledger/session-store'
import pg from 'pg'

import { appendBatch } from './append.ts'
import { forkSession, readCheckpoint, writeCheckpoint } from './capabilities.ts'
import { deleteSession } from './delete.ts'
import { searchCandidates } from './search.ts'
import { SearchIndexer } from './search-index.ts'
import { createStreamed } from './create-stream.ts'
import { Db, LZ4_PROBE_SQL } from './db.ts'
import type { DbSettings, HeadRow } from './db.ts'
import { AppendListener } from './follow.ts'
import { decodeListCursor, encodeListCursor } from './list-cursor.ts'
import { migrateWithClient, verifySchema } from './migrate.ts'
import { nativeCrc32c } from './native-crc.ts'
import type { MigrationReport } from './migration-report.ts'
import { describeTarget, PostgresFailureReason, targetText, toStoreError } from './pg-errors.ts'
import type { ConnectionTarget } from './pg-errors.ts'
import * as sql from './sql.ts'

/** Options of {@link openPostgresBackend}. */
export interface PostgresBackendOptions {
  /** `postgres://user:password@host:port/database` (any libpq-style URL the `pg` client accepts). */
  readonly connectionString: string
  /** Most pooled connections (default 10); one more is opened for `LISTEN` when a follower waits. */
  readonly poolSize?: number | undefined
  /** Server-side `statement_timeout` of every statement, in ms (default 30 000). */
  readonly statementTimeoutMs?: number | undefined
  /**
   * Client-side limit on one append's round trip, commit included, in ms (default 30 000).
   * A commit waiting for a synchronous standby is not covered by `statement_timeout`: past
   * this limit the connection is dropped and the append ends as `UNKNOWN_OUTCOME` (never success).
   */
  readonly commitTimeoutMs?: number | undefined
  /** Connect timeout in ms (default 10 000). */
  readonly connectTimeoutMs?: number | undefined
  /** Rows per page when reading a session (default 1000): memory stays bounded by one page. */
  readonly readPageSize?: number | undefined
  /**
   * A follower (`capabilities.follow.waitForAppend`) re-reads the head at least this often,
   * in ms (default 2000), besides waking on NOTIFY: a notification that could not be sent or
   * received (a follower that joined during an append, a dropped LISTEN connection) costs
   * at most this much latency.
   */
  readonly followPollMs?: number | undefined
  /** Apply pending schema migrations on open (default true); with false, an older schema is refused. */
  readonly migrate?: boolean | undefined
  /** `application_name` shown in `pg_stat_activity` (default `agent-ledger`). */
  readonly applicationName?: string | undefined
}

/**
 * Marks a promise as handled now (a prefetched page may fail while its consumer is still
 * busy with the previous one: that must not be an unhandled rejection); whoever awaits it
 * later still gets the rejection.
 */
function handled<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined)
  return promise
}

const DEFAULTS = {
  poolSize: 10,
  statementTimeoutMs: 30_000,
  commitTimeoutMs: 30_000,
  connectTimeoutMs: 10_000,
  readPageSize: 1000,
  followPollMs: 2000,
}

/** How long a follower's announcement lives without a refresh, in seconds (refreshed at half). */
const FOLLOWER_TTL_SECONDS = 60

function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.INVALID_OPTION,
      message: `PostgreSQL backend option ${name}: expected a positive integer, found ${String(value)}`,
      details: { option: name },
    })
  }
  return value
}

/** The PostgreSQL {@link SessionBackend}: see the package README for the schema and the fencing contract. */
export class PostgresBackend implements SessionBackend {
  readonly name = 'postgres'
  readonly capabilities: BackendCapabilities
  readonly crc32c = nativeCrc32c
  /** Where it connects (no password), for messages. */
  readonly target: ConnectionTarget
  private readonly db: Db
  private readonly listener: AppendListener
  /** Catch-ups of the search index, after the appends' commits (`search-index.ts`). */
  private readonly indexer: SearchIndexer
  private closed = false
  /** Sessions with an append whose outcome this instance could not settle: their head is read under the row lock. */
  private readonly unsettled = new Set<string>()
  private readonly followPollMs: number
  /** This instance's follower id (ledger_followers) and when each session's announcement was last refreshed (ms). */
  private readonly followerId = `${process.pid}-${randomBytes(6).toString('hex')}`
  private readonly announced = new Map<string, number>()

  /** Use {@link openPostgresBackend}, which also checks or migrates the schema. */
  constructor(options: PostgresBackendOptions) {
    const poolSize = positiveInteger('poolSize', options.poolSize, DEFAULTS.poolSize)
    const settings: DbSettings = {
      statementTimeoutMs: positiveInteger(
        'statementTimeoutMs',
        options.statementTimeoutMs,
        DEFAULTS.statementTimeoutMs,
      ),
      commitTimeoutMs: positiveInteger('commitTimeoutMs', options.commitTimeoutMs, DEFAULTS.commitTimeoutMs),
      readPageSize: positiveInteger('readPageSize', options.readPageSize, DEFAULTS.readPageSize),
    }
    this.followPollMs = positiveInteger('followPollMs', options.followPollMs, DEFAULTS.followPollMs)
    const connectTimeoutMs = positiveInteger(
      'connectTimeoutMs',
      options.connectTimeoutMs,
      DEFAULTS.connectTimeoutMs,
    )
    this.target = describeTarget(options.connectionString)
    const clientConfig: pg.ClientConfig = {
      connectionString: options.connectionString,
      statement_timeout: settings.statementTimeoutMs,
      connectionTimeoutMillis: connectTimeoutMs,
      application_name: options.applicationName ?? 'agent-ledger',
      keepAlive: true,
    }
    const pool = new pg.Pool({ ...clientConfig, max: poolSize })
    // An idle pooled connection dropped by the server (restart, failover) must not crash the
    // process: the pool discards it and the next call opens a fresh one.
    pool.on('error', () => undefined)
    this.db = new Db({ pool, target: this.target, settings })
    this.indexer = new SearchIndexer(this.db)
    this.listener = new AppendListener({ ...clientConfig, statement_timeout: false })
    this.capabilities = {
      follow: { waitForAppend: (id, waitOptions) => this.waitForAppend(id, waitOptions) },
      fork: { fork: (request) => this.fork(request) },
      checkpoints: {
        getCheckpoint: (id, checkpointOptions) => this.getCheckpoint(id, checkpointOptions),
        putCheckpoint: (lease, record, checkpointOptions) =>
          this.putCheckpoint(lease, record, checkpointOptions),
      },
      delete: {
        delete: async (id, deleteOptions = {}) => {
          this.checkOpen(`delete session ${id}`, deleteOptions.signal, id)
          return await deleteSession(this.db, id, deleteOptions)
        },
      },
      search: {
        candidates: async (query) => {
          this.checkOpen('search sessions', query.signal)
          return await searchCandidates(this.db, query, (id) => this.indexer.start(id))
        },
      },
    }
  }

  // ---------------------------------------------------------------- plumbing

  /** Refuses a closed backend, an aborted signal and an id that breaks the one session-id rule (`INVALID_SESSION_ID`). */
  private checkOpen(action: string, signal?: SignalOptions['signal'], ...ids: readonly string[]): void {
    for (const id of ids) assertSessionId(id)
    if (this.closed) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.BACKEND_CLOSED,
        message: `${action}: the PostgreSQL backend for ${targetText(this.target)} is closed`,
      })
    }
    if (signal?.aborted === true) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.ABORTED,
        message: `${action}: aborted before anything was sent`,
        cause: signal.reason,
      })
    }
  }

  /** Applies pending migrations (advisory-locked); used by {@link openPostgresBackend}. */
  async migrate(): Promise<MigrationReport> {
    const context = this.db.context('migrate the schema')
    const client = await this.db.connect(context)
    try {
      const report = await migrateWithClient(client, this.target)
      await this.probeLz4(client)
      return report
    } catch (error) {
      throw toStoreError(error, context)
    } finally {
      client.release()
    }
  }

  /** Refuses a database whose schema is not exactly this library's (used with `migrate: false`). */
  async verifySchema(): Promise<void> {
    const context = this.db.context('check the schema')
    const client = await this.db.connect(context)
    try {
      await verifySchema(client, this.target)
      await this.probeLz4(client)
    } catch (error) {
      throw toStoreError(error, context)
    } finally {
      client.release()
    }
  }

  /** Whether the server compresses large values with lz4 on this backend's connections (`db.ts`). */
  private async probeLz4(client: pg.PoolClient): Promise<void> {
    const row = (await client.query<{ lz4: boolean }>(LZ4_PROBE_SQL)).rows[0]
    this.db.lz4 = row?.lz4 === true
  }

  // ---------------------------------------------------------------- create, lease

  async create(request: CreateRequest): Promise<void> {
    const action = `create session ${request.id}`
    this.checkOpen(action, request.signal, request.id)
    if (!Array.isArray(request.lines)) {
      await createStreamed(this.db, request)
      this.indexer.start(request.id) // an import: index it now, in the background
      return
    }
    const lines = request.lines as readonly string[]
    const values = [
      request.id,
      request.headerLine,
      request.header.parentSession ?? null,
      request.header.cwd ?? null,
      lines,
      request.lastCrc ?? (lines.length === 0 ? null : lineCrc(lines.at(-1)!)),
    ]
    let created: { created: number } | undefined
    try {
      created = (
        await this.db.query<{ created: number }>(this.db.context(action, request.id), sql.CREATE_SQL, values)
      ).rows[0]
    } catch (error) {
      // The commit may have landed before the connection dropped: the same header and seed
      // count stored under this id means it did.
      if (!(SessionStoreError.is(error) && error.details.reason === PostgresFailureReason.CONNECTION_LOST))
        throw error
      if (await this.landedAsCreated(request.id, request.headerLine, lines.length)) return
      throw error
    }
    if (created?.created !== 1) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.SESSION_EXISTS,
        message: `create session ${request.id}: a session with that id already exists in ${targetText(this.target)}; nothing was written`,
        sessionId: request.id,
      })
    }
  }

  private async landedAsCreated(id: string, headerLine: string, count: number): Promise<boolean> {
    const result = await this.db.query<{ header_line: string; next_seq: string }>(
      this.db.context(`check whether session ${id} was created`, id),
      sql.HEADER_SQL,
      [id],
    )
    const row = result.rows[0]
    return row !== undefined && row.header_line === headerLine && Number(row.next_seq) === count
  }

  async acquire(id: string, options: AcquireOptions): Promise<AcquireResult> {
    const action = `acquire the writer lease of session ${id}`
    this.checkOpen(action, options.signal, id)
    if (!Number.isSafeInteger(options.leaseMs) || options.leaseMs <= 0 || options.leaseMs > 2 ** 31 - 1) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.INVALID_OPTION,
        message: `${action}: leaseMs must be a positive integer below 2^31, found ${String(options.leaseMs)}`,
        sessionId: id,
        details: { option: 'leaseMs' },
      })
    }
    const context = this.db.context(action, id)
    const result = await this.db.query<{
      epoch: string
      next_seq: string
      last_crc: string | null
      last_batch: string | null
      expires_at: string
      updated_at: string
    }>(context, sql.ACQUIRE_SQL, [id, options.owner, options.leaseMs, options.takeover === true])
    const row = result.rows[0]
    if (row === undefined) {
      const holder = (
        await this.db.query<{ writer_owner: string | null; expires_at: string | null }>(
          context,
          `SELECT writer_owner, to_char(lease_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS expires_at
             FROM ledger_sessions WHERE session_id = $1`,
          [id],
        )
      ).rows[0]
      if (holder === undefined) throw this.db.notFound(action, id)
      throw new SessionStoreError({
        code: SessionStoreErrorCode.SESSION_LOCKED,
        message: `${action}: ${holder.writer_owner ?? 'another writer'} holds a live lease until ${holder.expires_at ?? '?'}; wait for it to expire or take over`,
        sessionId: id,
        details: { holder: holder.writer_owner, expiresAt: holder.expires_at },
      })
    }
    const epoch = Number(row.epoch)
    return {
      lease: { sessionId: id, owner: options.owner, epoch, expiresAt: row.expires_at },
      head: {
        nextSeq: Number(row.next_seq),
        lastCrc: row.last_crc,
        lastBatchId: row.last_batch,
        epoch,
        owner: options.owner,
        updatedAt: row.updated_at,
      },
      repaired: [],
    }
  }

  async renew(lease: WriterLease, options?: SignalOptions): Promise<WriterLease> {
    const action = `renew the lease of session ${lease.sessionId}`
    this.checkOpen(action, options?.signal)
    const result = await this.db.query<{ expires_at: string }>(
      this.db.context(action, lease.sessionId),
      sql.RENEW_SQL,
      [lease.sessionId, lease.epoch, lease.owner],
    )
    const row = result.rows[0]
    if (row === undefined) throw await this.db.explainRefusal(action, lease)
    return { ...lease, expiresAt: row.expires_at }
  }

  async release(lease: WriterLease): Promise<void> {
    const action = `release the lease of session ${lease.sessionId}`
    this.checkOpen(action)
    await this.db.query(this.db.context(action, lease.sessionId), sql.RELEASE_SQL, [
      lease.sessionId,
      lease.epoch,
      lease.owner,
    ])
    // A released session is fully indexed when this returns (unless the catch-up failed:
    // then its tail stays where every search reads it).
    await this.indexer.settle(lease.sessionId)
  }

  // ---------------------------------------------------------------- append

  async append(lease: WriterLease, batch: AppendBatch): Promise<void> {
    const id = lease.sessionId
    this.checkOpen(`append to session ${id}`, batch.signal)
    if (batch.lines.length === 0) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.INVALID_OPTION,
        message: `append to session ${id}: a batch needs at least one line, found none`,
        sessionId: id,
        details: { option: 'lines' },
      })
    }
    await appendBatch(this.db, { lease, batch, unsettled: this.unsettled })
    let chars = 0
    for (const line of batch.lines) chars += line.length + 1
    this.indexer.appended(id, chars)
  }

  // ---------------------------------------------------------------- reads

  async head(id: string, options?: SignalOptions): Promise<SessionHead> {
    const action = `read the head of session ${id}`
    this.checkOpen(action, options?.signal, id)
    const context = this.db.context(action, id)
    let row: HeadRow | undefined
    if (this.unsettled.has(id)) {
      // An append of this backend ended UNKNOWN_OUTCOME without a final answer: its orphaned
      // commit may still hold the row (waiting for a synchronous standby). A plain read could
      // show the head from before that commit; wait for the lock so the answer is final.
      try {
        row = await this.db.lockedHead(context)
      } catch (error) {
        const state = (error as { code?: unknown }).code
        if (state !== '55P03') throw toStoreError(error, context)
        throw new SessionStoreError({
          code: SessionStoreErrorCode.BACKEND_FAILED,
          message: `${action}: an earlier append's commit still holds the session after ${this.db.settings.commitTimeoutMs} ms (a synchronous standby down?); the head is not final yet, try again later`,
          sessionId: id,
          details: { reason: PostgresFailureReason.TIMEOUT, sqlstate: state },
          cause: error,
        })
      }
      this.unsettled.delete(id)
    } else {
      row = (await this.db.query<HeadRow>(context, sql.HEAD_SQL, [id])).rows[0]
    }
    if (row === undefined) throw this.db.notFound(action, id)
    return {
      nextSeq: Number(row.next_seq),
      lastCrc: row.last_crc,
      lastBatchId: row.last_batch,
      epoch: Number(row.epoch),
      owner: row.owner,
      updatedAt: row.updated_at,
    }
  }

  async readHeader(id: string, options?: SignalOptions): Promise<StoredHeader> {
    const action = `read the header of session ${id}`
    this.checkOpen(action, options?.signal, id)
    const row = (
      await this.db.query<{ header_line: string }>(this.db.context(action, id), sql.HEADER_SQL, [id])
    ).rows[0]
    if (row === undefined) throw this.db.notFound(action, id)
    return { line: row.header_line, location: { file: 'ledger_sessions' } }
  }

  async *read(id: string, options: ReadOptions): AsyncIterable<StoredLine> {
    const action = `read session ${id}`
    this.checkOpen(action, options.signal, id)
    const head = (
      await this.db.query<{ next_seq: string }>(this.db.context(action, id), sql.HEADER_SQL, [id])
    ).rows[0]
    if (head === undefined) throw this.db.notFound(action, id)
    const last = Math.min(options.toSeq ?? Number.MAX_SAFE_INTEGER, Number(head.next_seq) - 1)
    let next = options.fromSeq
    // The next page is requested before this one's lines are handed out: the server reads
    // and sends it while the consumer parses (at most two pages are held).
    let pending = next <= last ? handled(this.readPage({ action, id, first: next, last })) : undefined
    try {
      while (pending !== undefined) {
        const page = await pending
        pending =
          page.end < last ? handled(this.readPage({ action, id, first: page.end + 1, last })) : undefined
        this.checkOpen(action, options.signal)
        for (const row of page.rows) {
          const seq = Number(row.seq)
          if (seq !== next) throw this.missingRows(id, next, seq)
          yield { seq, line: row.line, location: { file: 'ledger_events' } }
          next++
        }
        if (next <= page.end) throw this.missingRows(id, next, undefined)
      }
    } finally {
      // Stopped early (a break, an error, damage): let the prefetched page finish so its
      // connection goes back to the pool before the caller moves on (or closes the backend).
      await pending?.catch(() => undefined)
    }
  }

  /** One page of at most `readPageSize` lines from `first`, never past `last`. */
  private async readPage(page: {
    action: string
    id: string
    first: number
    last: number
  }): Promise<{ end: number; rows: { seq: string; line: string }[] }> {
    const end = Math.min(page.last, page.first + this.db.settings.readPageSize - 1)
    const result = await this.db.query<{ seq: string; line: string }>(
      this.db.context(page.action, page.id),
      sql.READ_PAGE_STATEMENT,
      [page.id, page.first, end],
    )
    return { end, rows: result.rows }
  }

  private missingRows(id: string, expected: number, found: number | undefined): SessionStoreError {
    return new SessionStoreError({
      code: SessionStoreErrorCode.CORRUPT_LINE,
      message: `read session ${id}: ledger_events has no row for seq ${expected} below the session's head (found ${found === undefined ? 'none' : `seq ${found}`} next); rows were deleted outside the backend`,
      sessionId: id,
      seq: expected,
      lastGoodSeq: expected > 0 ? expected - 1 : undefined,
      location: { file: 'ledger_events' },
      details: { expected, found: found ?? null },
    })
  }

  async list(query: ListQuery): Promise<ListPage> {
    const action = 'list sessions'
    this.checkOpen(action, query.signal)
    if (!Number.isSafeInteger(query.limit) || query.limit <= 0) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.INVALID_OPTION,
        message: `${action}: limit must be a positive integer, found ${String(query.limit)}`,
        details: { option: 'limit' },
      })
    }
    const limit = Math.min(query.limit, 1000)
    const conditions: string[] = []
    const values: unknown[] = []
    const filter = query.filter
    if (filter?.cwd !== undefined) conditions.push(`cwd = $${values.push(filter.cwd)}`)
    if (filter?.parentSession !== undefined)
      conditions.push(`parent_session = $${values.push(filter.parentSession)}`)
    if (filter?.updatedSince !== undefined) {
      if (Number.isNaN(Date.parse(filter.updatedSince))) {
        throw new SessionStoreError({
          code: SessionStoreErrorCode.INVALID_OPTION,
          message: `${action}: filter.updatedSince must be an ISO-8601 time, found ${JSON.stringify(filter.updatedSince)}`,
          details: { option: 'filter.updatedSince' },
        })
      }
      conditions.push(`updated_at >= $${values.push(filter.updatedSince)}::timestamptz`)
    }
    if (query.cursor !== undefined) {
      const cursor = decodeListCursor(query.cursor)
      conditions.push(sql.LIST_AFTER(`$${values.push(cursor.updatedUs)}`, `$${values.push(cursor.id)}`))
    }
    const text = `SELECT ${sql.LIST_COLUMNS} FROM ledger_sessions
      ${conditions.length === 0 ? '' : `WHERE ${conditions.join(' AND ')}`}
      ORDER BY ledger_sessions.updated_at DESC, ledger_sessions.session_id DESC LIMIT $${values.push(limit + 1)}`
    const rows = (
      await this.db.query<{
        session_id: string
        header_line: string
        next_seq: string
        updated_at: string
        updated_us: string
      }>(this.db.context(action), text, values)
    ).rows
    const page = rows.slice(0, limit)
    const lastRow = page[page.length - 1]
    return {
      entries: page.map((row) => ({
        id: row.session_id,
        headerLine: row.header_line,
        nextSeq: Number(row.next_seq),
        updatedAt: row.updated_at,
        location: { file: 'ledger_sessions' },
      })),
      cursor:
        rows.length > limit && lastRow !== undefined
          ? encodeListCursor({ updatedUs: lastRow.updated_us, id: lastRow.session_id })
          : null,
    }
  }

  // ---------------------------------------------------------------- capabilities

  private async waitForAppend(
    id: string,
    options: { readonly nextSeq: number } & SignalOptions,
  ): Promise<void> {
    const action = `wait for appends to session ${id}`
    this.checkOpen(action, options.signal)
    await this.announceFollower(id, action)
    try {
      await this.listener.wait(id, {
        nextSeq: options.nextSeq,
        signal: options.signal,
        pollMs: this.followPollMs,
        check: async () => (await this.head(id, options)).nextSeq > options.nextSeq,
      })
    } catch (error) {
      throw toStoreError(error, { ...this.db.context(action, id), connecting: !SessionStoreError.is(error) })
    }
  }

  /** Announces this instance as a follower of `id` (appends then NOTIFY it); refreshed at half its lifetime. */
  private async announceFollower(id: string, action: string): Promise<void> {
    const now = performance.now()
    const last = this.announced.get(id)
    if (last !== undefined && now - last < (FOLLOWER_TTL_SECONDS * 1000) / 2) return
    await this.db.query(this.db.context(action, id), sql.FOLLOWER_SQL, [
      id,
      this.followerId,
      FOLLOWER_TTL_SECONDS,
    ])
    this.announced.set(id, now)
  }

  private async fork(request: ServerForkRequest): Promise<void> {
    this.checkOpen(
      `fork session ${request.parentId}`,
      request.signal ?? request.child.signal,
      request.parentId,
      request.child.id,
    )
    await forkSession(this.db, request)
    this.indexer.start(request.child.id) // the copied prefix, in the background
  }

  private async getCheckpoint(id: string, options?: SignalOptions): Promise<CheckpointRecord | null> {
    this.checkOpen(`read the checkpoint of session ${id}`, options?.signal)
    return await readCheckpoint(this.db, id)
  }

  private async putCheckpoint(
    lease: WriterLease,
    record: CheckpointRecord,
    options?: SignalOptions,
  ): Promise<void> {
    this.checkOpen(`write the checkpoint of session ${lease.sessionId}`, options?.signal)
    await writeCheckpoint(this.db, { lease, record })
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.indexer.close()
    await this.listener.close()
    if (this.announced.size > 0) {
      // Best effort: a follower that cannot say goodbye expires after FOLLOWER_TTL_SECONDS.
      await this.db
        .query(this.db.context('remove this follower'), sql.FOLLOWER_GONE_SQL, [this.followerId])
        .catch(() => undefined)
    }
    await this.db.pool.end()
  }
}

/**
 * Opens the PostgreSQL backend: a connection pool, then the schema migrated (default) or
 * checked (`migrate: false`).
 *
 * @param options - The connection string and limits.
 * @returns The backend; call `close()` when done.
 * @throws SessionStoreError `BACKEND_FAILED` (`details.reason` from {@link PostgresFailureReason}:
 *   `CONNECTION_FAILED` naming host and database, `SCHEMA_TOO_NEW`, `SCHEMA_BEHIND`,
 *   `MIGRATION_EDITED`), `INVALID_OPTION`.
 */
export async function openPostgresBackend(options: PostgresBackendOptions): Promise<PostgresBackend> {
  const backend = new PostgresBackend(options)
  try {
    if (options.migrate === false) await backend.verifySchema()
    else await backend.migrate()
  } catch (error) {
    await backend.close()
    throw error
  }
  return backend
}
