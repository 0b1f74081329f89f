import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type { AppendBatch, WriterLease } from '@agent-ledger/session-store'

import type { Db, LockedHeadRow } from './db.ts'
import { isConnectionLoss, PostgresFailureReason, toStoreError } from './pg-errors.ts'
import * as sql from './sql.ts'

/** One append in progress. */
interface AppendCall {
  readonly db: Db
  readonly action: string
  readonly lease: WriterLease
  readonly batch: AppendBatch
  /**
   * The batch's lines joined by `\n` (the statement's one text parameter): the writer's
   * UTF-8 bytes of them when it offered them (sent as they are), else the joined string.
   */
  readonly text: string | Buffer
  /** Sessions whose outcome could not be settled (shared with `head()`). */
  readonly unsettled: Set<string>
}

type Attempt = 'committed' | 'refused' | SessionStoreError

/**
 * Appends one batch: one statement; on an unknown outcome, resolves it from `last_batch`
 * on a fresh connection and retries once if it did not land (the retry carries the same
 * epoch, seq and batch id, so it can never duplicate).
 */
export async function appendBatch(
  db: Db,
  request: { readonly lease: WriterLease; readonly batch: AppendBatch; readonly unsettled: Set<string> },
): Promise<void> {
  const { lease, batch } = request
  const last = batch.expectedSeq + batch.lines.length - 1
  const call: AppendCall = {
    ...request,
    text: batchText(lease.sessionId, batch),
    db,
    action: `append seqs ${batch.expectedSeq}..${last} to session ${lease.sessionId}`,
  }
  const outcome = await attempt(call)
  if (outcome === 'committed') return
  if (outcome === 'refused') throw await db.explainRefusal(call.action, lease, batch.expectedSeq)
  if ((await resolve(call, outcome)) === 'landed') return
  const retry = await attempt(call)
  if (retry === 'committed') return
  if (retry === 'refused') {
    if ((await resolve(call, undefined)) === 'landed') return
    throw await db.explainRefusal(call.action, lease, batch.expectedSeq)
  }
  throw unknown(call, { failure: retry })
}

/**
 * The batch as the statement's one text parameter: its lines joined by `\n`, split again by
 * the server. When the caller offers the batch's UTF-8 bytes (`AppendBatch.bytes`: every
 * line followed by `\n`; the core's writer encoded each line once, for its checksum), they
 * are sent as they are without the last `\n` (a `Buffer` parameter travels in binary
 * format, which for `text` is its UTF-8 bytes, verified by the server as any text), copied
 * because they are only valid until the append settles: no joined string to build and
 * encode again per flush. Either way a line holding a `\n` would become two rows: refused,
 * nothing sent.
 */
function batchText(id: string, batch: AppendBatch): string | Buffer {
  const { lines, bytes } = batch
  if (bytes instanceof Uint8Array && bytes.length > 0 && bytes[bytes.length - 1] === 0x0a) {
    const text = Buffer.from(bytes.subarray(0, bytes.length - 1))
    let newlines = 0
    for (let at = text.indexOf(0x0a); at !== -1; at = text.indexOf(0x0a, at + 1)) newlines += 1
    if (newlines !== lines.length - 1) throw newlineInLine(id, lines.length, newlines)
    return text
  }
  return joinedLines(id, lines)
}

function joinedLines(id: string, lines: readonly string[]): string {
  const text = lines.join('\n')
  let newlines = 0
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) newlines += 1
  if (newlines !== lines.length - 1) throw newlineInLine(id, lines.length, newlines)
  return text
}

function newlineInLine(id: string, lines: number, newlines: number): SessionStoreError {
  return new SessionStoreError({
    code: SessionStoreErrorCode.INVALID_OPTION,
    message: `append to session ${id}: expected ${lines} lines without a newline, found ${newlines - lines + 1} newline(s) inside them; nothing was written`,
    sessionId: id,
    details: { option: 'lines' },
  })
}

/**
 * Sends the one append statement on its own connection with a client-side deadline
 * (`commitTimeoutMs`: a commit waiting for a synchronous standby is not covered by
 * `statement_timeout`). A lost connection, a deadline passed or a "not replicated" warning
 * is an unknown outcome.
 */
async function attempt(call: AppendCall): Promise<Attempt> {
  const { db, action, lease, batch, text } = call
  const context = db.context(action, lease.sessionId)
  const client = await db.connect(context)
  let warning: string | undefined
  const onNotice = (notice: { message?: string | undefined; detail?: string | undefined }): void => {
    const text = `${notice.message ?? ''} ${notice.detail ?? ''}`
    if (/synchronous replication|might not have been replicated/i.test(text)) warning = text.trim()
  }
  client.on('notice', onNotice)
  let broken: Error | undefined
  let timer: NodeJS.Timeout | undefined
  try {
    const running = client.query({
      ...sql.APPEND_STATEMENT,
      values: [
        lease.sessionId,
        lease.epoch,
        batch.expectedSeq,
        text,
        batch.lastCrc,
        batch.batchId,
        lease.owner,
        batch.lines.length,
      ],
    })
    running.catch(() => undefined) // after a deadline the dropped connection rejects it; nobody waits
    const deadline = new Promise<'timeout'>((resolveTimeout) => {
      timer = setTimeout(() => resolveTimeout('timeout'), db.settings.commitTimeoutMs)
    })
    const result = await Promise.race([running, deadline])
    if (result === 'timeout') {
      broken = new Error(`append exceeded commitTimeoutMs (${db.settings.commitTimeoutMs} ms)`)
      return new SessionStoreError({
        code: SessionStoreErrorCode.UNKNOWN_OUTCOME,
        message: `${action}: no answer within ${db.settings.commitTimeoutMs} ms (commitTimeoutMs); the connection was dropped`,
        sessionId: lease.sessionId,
        details: { reason: PostgresFailureReason.TIMEOUT, batchId: batch.batchId },
      })
    }
    if (warning !== undefined) {
      // Cancelled while waiting for a synchronous standby: committed locally, maybe never
      // replicated. Reporting success would break "acknowledged = durable".
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
 * `commitTimeoutMs`) for the row lock an orphaned in-flight append may still hold, so its
 * commit or abort is final; then the batch landed iff `last_batch` is its id. Never kills
 * the orphan: a backend terminated while waiting for a synchronous standby would make an
 * unreplicated commit visible.
 */
async function resolve(
  call: AppendCall,
  failure: SessionStoreError | undefined,
): Promise<'landed' | 'absent'> {
  const { db, action, lease, batch } = call
  let row: LockedHeadRow | undefined
  try {
    row = await db.lockedHead(db.context(action, lease.sessionId))
  } catch (error) {
    call.unsettled.add(lease.sessionId)
    throw unknown(call, { failure, resolveError: error })
  }
  call.unsettled.delete(lease.sessionId)
  if (row === undefined) throw db.notFound(action, lease.sessionId)
  const nextSeq = Number(row.next_seq)
  if (row.last_batch === batch.batchId && nextSeq === batch.expectedSeq + batch.lines.length) return 'landed'
  if (Number(row.epoch) !== lease.epoch || row.holder !== lease.owner || nextSeq !== batch.expectedSeq) {
    const refusal = {
      epoch: row.epoch,
      owner: row.holder,
      next_seq: row.next_seq,
      last_batch: row.last_batch,
    }
    throw db.refusal(action, lease, { row: refusal, expectedSeq: batch.expectedSeq })
  }
  return 'absent'
}

function unknown(
  call: AppendCall,
  why: { failure: SessionStoreError | undefined; resolveError?: unknown },
): SessionStoreError {
  const resolveError = why.resolveError
  const resolveText =
    resolveError === undefined
      ? ''
      : `; resolving it failed too (${resolveError instanceof Error ? resolveError.message : 'unknown error'})`
  return new SessionStoreError({
    code: SessionStoreErrorCode.UNKNOWN_OUTCOME,
    message: `${why.failure?.message ?? call.action}${resolveText}: head() of this backend answers once the outcome is final (or acquire again: it waits for the orphaned commit); the batch landed iff lastBatchId is ${call.batch.batchId}`,
    sessionId: call.lease.sessionId,
    details: { ...why.failure?.details, batchId: call.batch.batchId, resolved: false },
    cause: resolveError ?? why.failure,
  })
}
