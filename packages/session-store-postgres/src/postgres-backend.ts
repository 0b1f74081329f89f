import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
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
import type { PoolClient, QueryResultRow } from 'pg'

import { AppendListener } from './follow.ts'
import { decodeListCursor, encodeListCursor } from './list-cursor.ts'
import { migrateWithClient, verifySchema } from './migrate.ts'
import type { MigrationReport } from './migrate.ts'
import { describeTarget, isConnectionLoss, PostgresFailureReason, targetText, toStoreError } from './pg-errors.ts'
import type { ConnectionTarget, FailureContext } from './pg-errors.ts'
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
  /** Apply pending schema migrations on open (default true); with false, an older schema is refused. */
  readonly migrate?: boolean | undefined
  /** `application_name` shown in `pg_stat_activity` (default `agent-ledger`). */
  readonly applicationName?: string | undefined
}

const DEFAULTS = {
  poolSize: 10,
  statementTimeoutMs: 30_000,
  commitTimeoutMs: 30_000,
  connectTimeoutMs: 10_000,
  readPageSize: 1000,
}

const ignore = (): void => undefined

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

interface Settings {
  readonly statementTimeoutMs: number
  readonly commitTimeoutMs: number
  readonly readPageSize: number
}

interface HeadRow {
  next_seq: string
  last_crc: string | null
  last_batch: string | null
  epoch: string
  owner: string | null
  updated_at: string
}

interface LockedHeadRow extends HeadRow {
  /** The owner column whether or not the lease is live. */
  holder: string | null
}

interface RefusalRow {
  epoch: string
  owner: string | null
  next_seq: string
  last_batch: string | null
}

/** The PostgreSQL {@link SessionBackend}: see the package README for the schema and the fencing contract. */
export class PostgresBackend implements SessionBackend {
  readonly name = 'postgres'
  readonly capabilities: BackendCapabilities
  /** Where it connects (no password), for messages. */
  readonly target: ConnectionTarget
  private readonly pool: pg.Pool
  private readonly listener: AppendListener
  private readonly settings: Settings
  private closed = false
  /** Sessions with an append whose outcome this instance could not settle: their head is read under the row lock. */
  private readonly unsettled = new Set<string>()

  /** Use {@link openPostgresBackend}, which also checks or migrates the schema. */
  constructor(options: PostgresBackendOptions) {
    const poolSize = positiveInteger('poolSize', options.poolSize, DEFAULTS.poolSize)
    this.settings = {
      statementTimeoutMs: positiveInteger('statementTimeoutMs', options.statementTimeoutMs, DEFAULTS.statementTimeoutMs),
      commitTimeoutMs: positiveInteger('commitTimeoutMs', options.commitTimeoutMs, DEFAULTS.commitTimeoutMs),
      readPageSize: positiveInteger('readPageSize', options.readPageSize, DEFAULTS.readPageSize),
    }
    const connectTimeoutMs = positiveInteger('connectTimeoutMs', options.connectTimeoutMs, DEFAULTS.connectTimeoutMs)
    this.target = describeTarget(options.connectionString)
    const clientConfig: pg.ClientConfig = {
      connectionString: options.connectionString,
      statement_timeout: this.settings.statementTimeoutMs,
      connectionTimeoutMillis: connectTimeoutMs,
      application_name: options.applicationName ?? 'agent-ledger',
      keepAlive: true,
    }
    this.pool = new pg.Pool({ ...clientConfig, max: poolSize })
    // An idle pooled connection dropped by the server (restart, failover) must not crash the
    // process: the pool discards it and the next call opens a fresh one.
    this.pool.on('error', () => undefined)
    this.listener = new AppendListener({ ...clientConfig, statement_timeout: false })
    this.capabilities = {
      follow: { waitForAppend: (id, waitOptions) => this.waitForAppend(id, waitOptions) },
      fork: { fork: (request) => this.fork(request) },
      checkpoints: {
        getCheckpoint: (id, checkpointOptions) => this.getCheckpoint(id, checkpointOptions),
        putCheckpoint: (lease, record, checkpointOptions) => this.putCheckpoint(lease, record, checkpointOptions),
      },
    }
  }

  // ---------------------------------------------------------------- plumbing

  private context(action: string, sessionId?: string): FailureContext {
    return { target: this.target, action, sessionId }
  }

  private checkOpen(action: string, signal?: SignalOptions['signal']): void {
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

  private async connect(context: FailureContext): Promise<PoolClient> {
    let client: PoolClient
    try {
      client = await this.pool.connect()
    } catch (error) {
      throw toStoreError(error, { ...context, connecting: true })
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

  /** Runs one statement on a pooled connection; errors become SessionStoreErrors. */
  private async query<TRow extends QueryResultRow>(
    context: FailureContext,
    text: string,
    values: readonly unknown[],
  ): Promise<pg.QueryResult<TRow>> {
    const client = await this.connect(context)
    let broken: Error | undefined
    try {
      return await client.query<TRow>(text, values as unknown[])
    } catch (error) {
      if (isConnectionLoss(error)) broken = error instanceof Error ? error : new Error(String(error))
      throw toStoreError(error, context)
    } finally {
      client.release(broken)
    }
  }

  /** Applies pending migrations (advisory-locked); used by {@link openPostgresBackend}. */
  async migrate(): Promise<MigrationReport> {
    const context = this.context('migrate the schema')
    const client = await this.connect(context)
    try {
      return await migrateWithClient(client, this.target)
    } catch (error) {
      throw toStoreError(error, context)
    } finally {
      client.release()
    }
  }

  /** Refuses a database whose schema is not exactly this library's (used with `migrate: false`). */
  async verifySchema(): Promise<void> {
    const context = this.context('check the schema')
    const client = await this.connect(context)
    try {
      await verifySchema(client, this.target)
    } catch (error) {
      throw toStoreError(error, context)
    } finally {
      client.release()
    }
  }

  // ---------------------------------------------------------------- create, lease

  async create(request: CreateRequest): Promise<void> {
    const action = `create session ${request.id}`
    this.checkOpen(action, request.signal)
    const values = [
      request.id,
      request.headerLine,
      request.header.parentSession ?? null,
      request.header.cwd ?? null,
      request.lines,
      request.lastCrc,
    ]
    let created: { created: number } | undefined
    try {
      created = (await this.query<{ created: number }>(this.context(action, request.id), sql.CREATE_SQL, values)).rows[0]
    } catch (error) {
      // The commit may have landed before the connection dropped: the same header and seed
      // count stored under this id means it did.
      if (!(SessionStoreError.is(error) && error.details.reason === PostgresFailureReason.CONNECTION_LOST)) throw error
      if (await this.landedAsCreated(request.id, request.headerLine, request.lines.length)) return
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
    const result = await this.query<{ header_line: string; next_seq: string }>(
      this.context(`check whether session ${id} was created`, id),
      sql.HEADER_SQL,
      [id],
    )
    const row = result.rows[0]
    return row !== undefined && row.header_line === headerLine && Number(row.next_seq) === count
  }

  async acquire(id: string, options: AcquireOptions): Promise<AcquireResult> {
    const action = `acquire the writer lease of session ${id}`
    this.checkOpen(action, options.signal)
    if (!Number.isSafeInteger(options.leaseMs) || options.leaseMs <= 0 || options.leaseMs > 2 ** 31 - 1) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.INVALID_OPTION,
        message: `${action}: leaseMs must be a positive integer below 2^31, found ${String(options.leaseMs)}`,
        sessionId: id,
        details: { option: 'leaseMs' },
      })
    }
    const context = this.context(action, id)
    const result = await this.query<{
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
        await this.query<{ writer_owner: string | null; expires_at: string | null }>(
          context,
          `SELECT writer_owner, to_char(lease_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS expires_at
             FROM ledger_sessions WHERE session_id = $1`,
          [id],
        )
      ).rows[0]
      if (holder === undefined) throw this.notFound(action, id)
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

  private notFound(action: string, id: string): SessionStoreError {
    return new SessionStoreError({
      code: SessionStoreErrorCode.SESSION_NOT_FOUND,
      message: `${action}: no session ${id} in ${targetText(this.target)}`,
      sessionId: id,
    })
  }

  /** Explains a write that matched nothing: not found, fenced (epoch or owner moved) or a head conflict. */
  private refusal(action: string, lease: WriterLease, row: RefusalRow | undefined, expectedSeq?: number): SessionStoreError {
    const id = lease.sessionId
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
      message: `${action}: the session's next seq is ${row.next_seq}, the batch starts at ${String(expectedSeq)}; nothing was written`,
      sessionId: id,
      details: { expected: expectedSeq, found: Number(row.next_seq) },
    })
  }

  private async explainRefusal(action: string, lease: WriterLease, expectedSeq?: number): Promise<SessionStoreError> {
    const rows = await this.query<RefusalRow>(this.context(action, lease.sessionId), sql.APPEND_REFUSAL_SQL, [lease.sessionId])
    return this.refusal(action, lease, rows.rows[0], expectedSeq)
  }

  async renew(lease: WriterLease, options?: SignalOptions): Promise<WriterLease> {
    const action = `renew the lease of session ${lease.sessionId}`
    this.checkOpen(action, options?.signal)
    const result = await this.query<{ expires_at: string }>(this.context(action, lease.sessionId), sql.RENEW_SQL, [
      lease.sessionId,
      lease.epoch,
      lease.owner,
    ])
    const row = result.rows[0]
    if (row === undefined) throw await this.explainRefusal(action, lease)
    return { ...lease, expiresAt: row.expires_at }
  }

  async release(lease: WriterLease): Promise<void> {
    const action = `release the lease of session ${lease.sessionId}`
    this.checkOpen(action)
    await this.query(this.context(action, lease.sessionId), sql.RELEASE_SQL, [lease.sessionId, lease.epoch, lease.owner])
  }

  // ---------------------------------------------------------------- append

  async append(lease: WriterLease, batch: AppendBatch): Promise<void> {
    const id = lease.sessionId
    const action = `append seqs ${batch.expectedSeq}..${batch.expectedSeq + batch.lines.length - 1} to session ${id}`
    this.checkOpen(action, batch.signal)
    if (batch.lines.length === 0) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.INVALID_OPTION,
        message: `append to session ${id}: a batch needs at least one line, found none`,
        sessionId: id,
        details: { option: 'lines' },
      })
    }
    const outcome = await this.tryAppend(action, lease, batch)
    if (outcome === 'committed') return
    if (outcome === 'refused') throw await this.explainRefusal(action, lease, batch.expectedSeq)
    // Unknown: resolve from the recorded batch id on a fresh connection, then retry once if
    // it did not land (the retry carries the same epoch, seq and batch: it cannot duplicate).
    const resolution = await this.resolve(action, lease, batch, outcome)
    if (resolution === 'landed') return
    const retry = await this.tryAppend(action, lease, batch)
    if (retry === 'committed') return
    if (retry === 'refused') {
      const again = await this.resolve(action, lease, batch, undefined)
      if (again === 'landed') return
      throw await this.explainRefusal(action, lease, batch.expectedSeq)
    }
    throw this.unknown(action, lease, batch, retry)
  }

  /**
   * Sends the one append statement on its own connection with a client-side deadline.
   * A lost connection, a deadline passed or a "not replicated" warning is an unknown outcome.
   */
  private async tryAppend(
    action: string,
    lease: WriterLease,
    batch: AppendBatch,
  ): Promise<'committed' | 'refused' | SessionStoreError> {
    const context = this.context(action, lease.sessionId)
    const client = await this.connect(context)
    let warning: string | undefined
    const onNotice = (notice: { message?: string | undefined; detail?: string | undefined }): void => {
      const text = `${notice.message ?? ''} ${notice.detail ?? ''}`
      if (/synchronous replication|might not have been replicated/i.test(text)) warning = text.trim()
    }
    client.on('notice', onNotice)
    let broken: Error | undefined
    let timer: NodeJS.Timeout | undefined
    try {
      const running = client.query(sql.APPEND_SQL, [
        lease.sessionId,
        lease.epoch,
        batch.expectedSeq,
        batch.lines,
        batch.lastCrc,
        batch.batchId,
        lease.owner,
      ])
      running.catch(() => undefined) // after a deadline the dropped connection rejects it; nobody waits
      const deadline = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), this.settings.commitTimeoutMs)
      })
      const result = await Promise.race([running, deadline])
      if (result === 'timeout') {
        broken = new Error(`append exceeded commitTimeoutMs (${this.settings.commitTimeoutMs} ms)`)
        return new SessionStoreError({
          code: SessionStoreErrorCode.UNKNOWN_OUTCOME,
          message: `${action}: no answer within ${this.settings.commitTimeoutMs} ms (commitTimeoutMs); the connection was dropped`,
          sessionId: lease.sessionId,
          details: { reason: PostgresFailureReason.TIMEOUT, batchId: batch.batchId },
        })
      }
      if (warning !== undefined) {
        return new SessionStoreError({
          code: SessionStoreErrorCode.UNKNOWN_OUTCOME,
          message: `${action}: PostgreSQL committed locally but the wait for the synchronous standby was cancelled (${warning})`,
          sessionId: lease.sessionId,
          details: { reason: PostgresFailureReason.NOT_REPLICATED, batchId: batch.batchId },
        })
      }
      return result.rowCount === batch.lines.length ? 'committed' : 'refused'
    } catch (error) {
      if (!isConnectionLoss(error)) throw toStoreError(error, context)
      broken = error instanceof Error ? error : new Error(String(error))
      const lost = toStoreError(error, context)
      return new SessionStoreError({
        code: SessionStoreErrorCode.UNKNOWN_OUTCOME,
        message: `${action}: ${lost.message}; the batch may or may not have been committed`,
        sessionId: lease.sessionId,
        details: { ...lost.details, batchId: batch.batchId },
        cause: error,
      })
    } finally {
      clearTimeout(timer)
      client.off('notice', onNotice)
      client.release(broken)
    }
  }

  /**
   * Decides an unknown outcome on a fresh connection. First waits (bounded by
   * `commitTimeoutMs`) for the row lock any orphaned in-flight append still holds, so its
   * commit or abort is final; then the batch landed iff `last_batch` is its id. Never kills
   * the orphan: a backend terminated while waiting for a synchronous standby would make an
   * unreplicated commit visible.
   */
  private async resolve(
    action: string,
    lease: WriterLease,
    batch: AppendBatch,
    failure: SessionStoreError | undefined,
  ): Promise<'landed' | 'absent'> {
    let row: LockedHeadRow | undefined
    try {
      row = await this.lockedHead(this.context(action, lease.sessionId))
    } catch (error) {
      this.unsettled.add(lease.sessionId)
      throw this.unknown(action, lease, batch, failure, error)
    }
    this.unsettled.delete(lease.sessionId)
    if (row === undefined) throw this.notFound(action, lease.sessionId)
    if (row.last_batch === batch.batchId && Number(row.next_seq) === batch.expectedSeq + batch.lines.length) return 'landed'
    const refusal: RefusalRow = { epoch: row.epoch, owner: row.holder, next_seq: row.next_seq, last_batch: row.last_batch }
    if (Number(row.epoch) !== lease.epoch || row.holder !== lease.owner || Number(row.next_seq) !== batch.expectedSeq) {
      throw this.refusal(action, lease, refusal, batch.expectedSeq)
    }
    return 'absent'
  }

  /**
   * Reads the head after waiting (at most `commitTimeoutMs`) for the row lock of any
   * in-flight or orphaned append on the session: what it returns is final. Throws the raw
   * error (a lock timeout is SQLSTATE 55P03).
   */
  private async lockedHead(context: FailureContext): Promise<LockedHeadRow | undefined> {
    const client = await this.connect(context)
    let broken: Error | undefined
    try {
      await client.query('BEGIN')
      await client.query(`SET LOCAL lock_timeout = ${this.settings.commitTimeoutMs}`)
      const row = (await client.query<LockedHeadRow>(sql.HEAD_LOCKED_SQL, [context.sessionId])).rows[0]
      await client.query('COMMIT')
      return row
    } catch (error) {
      broken = error instanceof Error ? error : new Error(String(error))
      throw error
    } finally {
      client.release(broken)
    }
  }

  private unknown(
    action: string,
    lease: WriterLease,
    batch: AppendBatch,
    failure: SessionStoreError | undefined,
    resolveError?: unknown,
  ): SessionStoreError {
    return new SessionStoreError({
      code: SessionStoreErrorCode.UNKNOWN_OUTCOME,
      message: `${failure?.message ?? action}${resolveError === undefined ? '' : `; resolving it failed too (${resolveError instanceof Error ? resolveError.message : String(resolveError)})`}: acquire the lease again (it waits for the orphaned commit) and compare head().lastBatchId with ${batch.batchId}`,
      sessionId: lease.sessionId,
      details: { ...failure?.details, batchId: batch.batchId, resolved: false },
      cause: resolveError ?? failure,
    })
  }

  // ---------------------------------------------------------------- reads

  async head(id: string, options?: SignalOptions): Promise<SessionHead> {
    const action = `read the head of session ${id}`
    this.checkOpen(action, options?.signal)
    const context = this.context(action, id)
    let row: HeadRow | undefined
    if (this.unsettled.has(id)) {
      // An append of this backend ended UNKNOWN_OUTCOME without a final answer: its orphaned
      // commit may still hold the row (waiting for a synchronous standby). A plain read could
      // show the head from before that commit; wait for the lock so the answer is final.
      try {
        row = await this.lockedHead(context)
      } catch (error) {
        const state = (error as { code?: unknown }).code
        if (state !== '55P03') throw toStoreError(error, context)
        throw new SessionStoreError({
          code: SessionStoreErrorCode.BACKEND_FAILED,
          message: `${action}: an earlier append's commit still holds the session after ${this.settings.commitTimeoutMs} ms (a synchronous standby down?); the head is not final yet, try again later`,
          sessionId: id,
          details: { reason: PostgresFailureReason.TIMEOUT, sqlstate: state },
          cause: error,
        })
      }
      this.unsettled.delete(id)
    } else {
      row = (await this.query<HeadRow>(context, sql.HEAD_SQL, [id])).rows[0]
    }
    if (row === undefined) throw this.notFound(action, id)
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
    this.checkOpen(action, options?.signal)
    const row = (await this.query<{ header_line: string }>(this.context(action, id), sql.HEADER_SQL, [id])).rows[0]
    if (row === undefined) throw this.notFound(action, id)
    return { line: row.header_line, location: { file: 'ledger_sessions' } }
  }

  async *read(id: string, options: ReadOptions): AsyncIterable<StoredLine> {
    const action = `read session ${id}`
    this.checkOpen(action, options.signal)
    const head = (await this.query<{ next_seq: string }>(this.context(action, id), sql.HEADER_SQL, [id])).rows[0]
    if (head === undefined) throw this.notFound(action, id)
    const last = Math.min(options.toSeq ?? Number.MAX_SAFE_INTEGER, Number(head.next_seq) - 1)
    let next = options.fromSeq
    while (next <= last) {
      this.checkOpen(action, options.signal)
      const page = await this.query<{ seq: string; line: string }>(this.context(action, id), sql.READ_PAGE_SQL, [
        id,
        next,
        last,
        this.settings.readPageSize,
      ])
      for (const row of page.rows) {
        const seq = Number(row.seq)
        if (seq !== next) throw this.missingRows(id, next, seq)
        yield { seq, line: row.line, location: { file: 'ledger_events' } }
        next++
      }
      if (page.rows.length === 0) throw this.missingRows(id, next, undefined)
    }
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
    if (filter?.parentSession !== undefined) conditions.push(`parent_session = $${values.push(filter.parentSession)}`)
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
      await this.query<{ session_id: string; header_line: string; next_seq: string; updated_at: string; updated_us: string }>(
        this.context(action),
        text,
        values,
      )
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

  private async waitForAppend(id: string, options: { readonly nextSeq: number } & SignalOptions): Promise<void> {
    const action = `wait for appends to session ${id}`
    this.checkOpen(action, options.signal)
    try {
      await this.listener.wait(id, {
        nextSeq: options.nextSeq,
        signal: options.signal,
        check: async () => (await this.head(id, options)).nextSeq > options.nextSeq,
      })
    } catch (error) {
      throw toStoreError(error, { ...this.context(action, id), connecting: !SessionStoreError.is(error) })
    }
  }

  private async fork(request: ServerForkRequest): Promise<void> {
    const child = request.child
    const action = `fork session ${request.parentId} at seq ${request.boundarySeq} into ${child.id}`
    this.checkOpen(action, request.signal ?? child.signal)
    const context = this.context(action, child.id)
    const result = await this.query<{
      parent_found: number
      child_exists: number
      boundary_ok: number
      created: number
    }>(context, sql.FORK_SQL, [
      request.parentId,
      request.boundarySeq,
      request.boundaryCrc,
      child.id,
      child.headerLine,
      child.header.cwd ?? null,
      child.lines,
      child.lastCrc ?? request.boundaryCrc,
    ])
    const row = result.rows[0]
    if (row?.created === 1) return
    if (row?.parent_found !== 1) throw this.notFound(action, request.parentId)
    if (row.child_exists === 1) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.SESSION_EXISTS,
        message: `${action}: session ${child.id} already exists; nothing was written`,
        sessionId: child.id,
      })
    }
    const found = (
      await this.query<{ crc: string }>(context, sql.LINE_CRC_SQL, [request.parentId, request.boundarySeq])
    ).rows[0]
    throw new SessionStoreError({
      code: SessionStoreErrorCode.CONFLICT,
      message:
        found === undefined
          ? `${action}: the parent has no event at seq ${request.boundarySeq}; nothing was written`
          : `${action}: the parent's line at seq ${request.boundarySeq} has checksum ${found.crc}, expected ${request.boundaryCrc}; nothing was written`,
      sessionId: request.parentId,
      details: { expected: request.boundaryCrc, found: found?.crc ?? null },
    })
  }

  private async getCheckpoint(id: string, options?: SignalOptions): Promise<CheckpointRecord | null> {
    const action = `read the checkpoint of session ${id}`
    this.checkOpen(action, options?.signal)
    const row = (
      await this.query<{ seq: string; event_crc: string; header_crc: string; registry_digest: string; body: Buffer }>(
        this.context(action, id),
        sql.GET_CHECKPOINT_SQL,
        [id],
      )
    ).rows[0]
    if (row === undefined) return null
    return {
      seq: Number(row.seq),
      eventCrc: row.event_crc,
      headerCrc: row.header_crc,
      registryDigest: row.registry_digest,
      body: new Uint8Array(row.body.buffer, row.body.byteOffset, row.body.byteLength),
    }
  }

  private async putCheckpoint(lease: WriterLease, record: CheckpointRecord, options?: SignalOptions): Promise<void> {
    const action = `write the checkpoint of session ${lease.sessionId} at seq ${record.seq}`
    this.checkOpen(action, options?.signal)
    const result = await this.query(this.context(action, lease.sessionId), sql.PUT_CHECKPOINT_SQL, [
      lease.sessionId,
      lease.epoch,
      lease.owner,
      record.seq,
      record.eventCrc,
      record.headerCrc,
      record.registryDigest,
      Buffer.from(record.body.buffer, record.body.byteOffset, record.body.byteLength),
    ])
    if (result.rowCount === 1) return
    const error = await this.explainRefusal(action, lease)
    if (error.code !== SessionStoreErrorCode.CONFLICT) throw error
    throw new SessionStoreError({
      code: SessionStoreErrorCode.INVALID_OPTION,
      message: `${action}: the session has ${String(error.details.found)} events, so seq ${record.seq} is not durable`,
      sessionId: lease.sessionId,
      details: { option: 'seq', found: error.details.found },
    })
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.listener.close()
    await this.pool.end()
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
