/**
 * The leases of the JSONL backend: the writer lock taken (breaking a live holder only for a
 * takeover, the same owner or an expired lease), the log recovered under it (torn tail
 * quarantined and truncated), the fence checked around every append.
 */
import type { Stats } from 'node:fs'
import { join } from 'node:path'

import { SessionStoreErrorCode } from '@agent-ledger/session-store'
import type {
  AcquireOptions,
  AcquireRepair,
  AppendBatch,
  HeadScan,
  SessionStoreError,
} from '@agent-ledger/session-store'

import { appendDurably } from '../durable-append.ts'
import type { FileHandleOps, FsOps } from '../fs-ops.ts'
import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import type { StoreLimits } from '../limits.ts'
import { quarantineTail } from '../quarantine.ts'
import { acquireWriterLock, WRITER_LOCK_FILE_NAME } from '../writer-lock.ts'
import type { LockOptions, WriterLock } from '../writer-lock.ts'
import { readEntry } from '../writer-lock-record.ts'
import type { WriteOpenCheck } from './backend-options.ts'
import { isOwnLease, openOwnLease, readLease } from './lease-file.ts'
import type { LeaseRecord, OwnLeaseFile } from './lease-file.ts'
import { logAdapter } from '../log-adapter.ts'
import type { LogAdapter } from '../log-adapter.ts'
import { readSeekPoint } from './checkpoint-envelope.ts'
import { scanHead, scanHeadFrom, tornTailInfo } from './line-scan.ts'
import type { SeekPoint } from './seek-point.ts'
import type { OpenedLog } from './open-log.ts'
import { reusePublished } from './published-head.ts'
import type { PublishedHead, RecoveredHead } from './published-head.ts'
import { portError, throwIfAborted, toPortError } from './port-errors.ts'

/** What the lease functions need from the backend. */
export interface LeaseContext {
  readonly fs: FsOps
  readonly limits: StoreLimits
  readonly lock: Partial<LockOptions>
  readonly writeOpenCheck: WriteOpenCheck
}

/** A lease this backend instance granted and still holds: the lock, the open log and its durable end. */
export interface Held {
  readonly id: string
  readonly directory: string
  readonly path: string
  readonly adapter: LogAdapter
  readonly handle: FileHandleOps
  readonly lock: WriterLock
  readonly epoch: number
  record: LeaseRecord
  /** `writer.lease` as this holder last wrote it, held open (the one-`lstat` fence check); null: read it whole. */
  leaseFile: OwnLeaseFile | null
  offset: number
  /** Plain-content size of the log at the durable head when the lease was granted (a `.zstd` log's decompressed size). */
  readonly plainEnd: number
  /** Where a read of the last durable event can start, found by the acquire's scan (null: no event). */
  readonly tailSeek: SeekPoint | null
  nextSeq: number
  lastCrc: string | null
  /** Set when a failure left the log in a state no retry on this lease can fix. */
  failed: SessionStoreError | null
}

/** The writer lock; a live holder is broken only for a takeover, the same owner, or an expired lease. */
export async function takeLock(
  context: LeaseContext,
  id: string,
  state: {
    readonly directory: string
    readonly before: LeaseRecord | null
    readonly now: number
    readonly options: AcquireOptions
  },
): Promise<WriterLock> {
  const { before, now, options } = state
  try {
    return await acquireWriterLock(context.fs, state.directory, {
      ...context.lock,
      breakLive: ({ token }) => {
        if (options.takeover === true) return `taken over by ${options.owner}`
        if (before === null || before.nonce !== token) return null
        if (before.owner === options.owner) return `the same owner ${options.owner} acquired again`
        if (before.expiresAt <= now)
          return `the lease of ${before.owner} expired at ${new Date(before.expiresAt).toISOString()}`
        return null
      },
    })
  } catch (error) {
    if (!(JsonlStoreError.is(error) && error.code === JsonlErrorCode.SESSION_LOCKED)) {
      throw toPortError(error, { sessionId: id, action: `acquire session ${id}` })
    }
    const holder =
      before?.owner ?? `pid ${String(error.details['holderPid'])} on ${String(error.details['holderHost'])}`
    const expiresAt = before === null ? null : new Date(before.expiresAt).toISOString()
    throw portError(SessionStoreErrorCode.SESSION_LOCKED, {
      sessionId: id,
      message: `Session ${id} is being written by ${holder}${expiresAt === null ? '' : ` (lease until ${expiresAt})`}: expected no live lease; wait, or take over if that writer is dead.`,
      // The lock file, as the JSONL error names it.
      location: error.file === '' ? undefined : { file: error.file },
      details: { holder, expiresAt, lock: error.details },
      cause: error,
    })
  }
}

/**
 * Scans the log under the new lease and repairs a torn tail (quarantined, truncated, durable).
 * The first lease after this instance's create reuses the head it published instead, while the
 * log is still what the create left (`published-head.ts`).
 */
export async function recoverLog(
  context: LeaseContext,
  id: string,
  state: {
    readonly opened: OpenedLog
    readonly lock: WriterLock
    readonly record: LeaseRecord
    /** The head this instance published, when no lease was ever granted on the session. */
    readonly published?: PublishedHead | undefined
  },
): Promise<{ held: Held; repaired: AcquireRepair[]; headScan: HeadScan }> {
  const { opened, lock, record } = state
  const { handle } = opened
  const stats = await handle.stat()
  if (stats.nlink !== 1) {
    throw portError(JsonlErrorCode.HARDLINK_REFUSED, {
      sessionId: id,
      message: `${opened.log.file} has ${stats.nlink} hard links: expected exactly one (another name could be a victim file); nothing was written.`,
      details: { jsonlCode: JsonlErrorCode.HARDLINK_REFUSED, nlink: stats.nlink },
    })
  }
  const repaired: AcquireRepair[] = []
  if ((stats.mode & 0o077) !== 0) {
    // A log others may read or write (copied in, restored from a backup) is narrowed to 0600 (S1).
    const narrowed = stats.mode & 0o700
    await handle.chmod(narrowed)
    repaired.push({
      kind: 'mode',
      description: `${opened.log.file} had mode ${(stats.mode & 0o777).toString(8)}; set to ${narrowed.toString(8)}.`,
    })
  }
  const adapter = await logAdapter(id, opened.log.encoding, context.limits)
  const { scanned, headScan } = await findHead(context, {
    opened,
    adapter,
    stats,
    published: state.published,
  })
  const { outcome } = scanned
  let failed: SessionStoreError | null = null
  if (outcome.damage !== null) {
    // Damage in the middle is the core's to report; this lease may not append after it.
    failed = toPortError(outcome.damage, { sessionId: id, action: `append to session ${id}` })
  } else if (stats.size > outcome.goodEndOffset && (outcome.tornTail !== null || outcome.headerMissing)) {
    const tail = outcome.tornTail
    const quarantined = await quarantineTail({
      fs: context.fs,
      directory: opened.directory,
      id,
      logName: opened.log.name,
      log: handle,
      offset: outcome.goodEndOffset,
      chunkBytes: context.limits.readChunkBytes,
      keep: context.limits.maxQuarantineFiles,
    })
    const dropped = stats.size - outcome.goodEndOffset
    repaired.push({
      kind: 'torn-tail',
      description: `Dropped ${dropped} unacknowledged bytes (${tail?.reason ?? 'tailGarbage'}) at the end of ${opened.log.file}, after ${scanned.nextSeq} events; kept in ${id}/${quarantined}.`,
      ...(tail === null ? {} : { location: tornTailInfo(adapter, tail).location }),
      droppedBytes: dropped,
      quarantinedTo: `${id}/${quarantined}`,
    })
  } else {
    // What a crashed writer left in the page cache becomes durable before anything builds on it.
    await handle.datasync()
  }
  const held: Held = {
    id,
    directory: opened.directory,
    path: opened.path,
    adapter,
    handle,
    lock,
    epoch: record.epoch,
    record,
    // Last: nothing after it can throw, so the descriptor is never leaked.
    leaseFile: await openOwnLease(context.fs, { directory: opened.directory, id }, record),
    offset: outcome.goodEndOffset,
    plainEnd: (outcome as { zstd?: { plainGoodEnd: number } }).zstd?.plainGoodEnd ?? outcome.goodEndOffset,
    tailSeek: scanned.lastStart,
    nextSeq: scanned.nextSeq,
    lastCrc: scanned.lastCrc,
    failed,
  }
  return { held, repaired, headScan }
}

/**
 * The durable head under a new lease: the head this instance published (nothing read), else
 * a scan from the stored checkpoint's seek point (unless every line is to be checked), else
 * a scan of every line.
 */
async function findHead(
  context: LeaseContext,
  found: {
    readonly opened: OpenedLog
    readonly adapter: LogAdapter
    readonly stats: Stats
    readonly published: PublishedHead | undefined
  },
): Promise<{ scanned: RecoveredHead; headScan: HeadScan }> {
  const { opened, adapter, stats } = found
  const { handle } = opened
  const published = await reusePublished(handle, stats, found.published)
  if (published !== null) {
    return { scanned: published, headScan: { from: 'published', fromSeq: published.nextSeq } }
  }
  if (context.writeOpenCheck === 'full') {
    return { scanned: await scanHead(adapter, handle), headScan: { from: 'start', fromSeq: 0 } }
  }
  const point = await readSeekPoint(context.fs, opened.directory, opened.log.name)
  let fallback: NonNullable<HeadScan['fallback']>
  if (point.seek === null) fallback = point.missing
  else {
    const resumed = await scanHeadFrom(adapter, handle, point.seek)
    if (resumed !== null) {
      return { scanned: resumed, headScan: { from: 'checkpoint', fromSeq: point.seek.fromSeq } }
    }
    fallback = 'binding-mismatch'
  }
  return { scanned: await scanHead(adapter, handle), headScan: { from: 'start', fromSeq: 0, fallback } }
}

/**
 * The lease is still this one: `writer.lease` holds its epoch and `writer.lock` its nonce.
 *
 * @throws {@link SessionStoreError} `FENCED`.
 */
export async function assertFence(context: LeaseContext, held: Held): Promise<void> {
  // Both checks at once: one round trip when writer.lease is still the file this holder wrote.
  const [own, lock] = await Promise.allSettled([
    isOwnLease(context.fs, held.directory, held.leaseFile),
    held.lock.assertHeld(),
  ])
  if (own.status !== 'fulfilled' || !own.value) {
    const current = await readLease(context.fs, held.directory, held.id)
    if (current === null || current.epoch !== held.epoch) {
      throw portError(SessionStoreErrorCode.FENCED, {
        sessionId: held.id,
        message: `The lease of ${held.record.owner} on session ${held.id} was fenced: expected epoch ${held.epoch}, found ${current?.epoch ?? 'none'} (held by ${current?.owner ?? 'nobody'}); nothing was written.`,
        details: { expected: held.epoch, found: current?.epoch ?? null, holder: current?.owner ?? null },
      })
    }
  }
  if (lock.status === 'rejected') {
    throw toPortError(lock.reason, {
      sessionId: held.id,
      action: `write session ${held.id} (epoch ${held.epoch})`,
    })
  }
}

/**
 * Appends one batch under a held lease: fence check, expected seq and size, the adapter's
 * bytes of the batch (its lines, each ended by `\n`, UTF-8), `appendDurably` (rechecking the
 * fence before the ack).
 *
 * @throws {@link SessionStoreError} `FENCED`, `CONFLICT`, `DISK_FULL`, `ABORTED`, `BACKEND_FAILED`.
 */
export async function appendToHeld(
  context: LeaseContext,
  held: Held,
  append: { readonly batch: AppendBatch; readonly bytes: Buffer },
): Promise<void> {
  const { batch } = append
  const { id } = held
  if (held.failed !== null) throw held.failed
  // The fence and the log's size are independent reads: together, one round trip (the
  // fence's refusal first, as when they ran one after the other).
  const [fence, stats] = await Promise.allSettled([assertFence(context, held), held.handle.stat()])
  if (fence.status === 'rejected') throw fence.reason
  if (batch.expectedSeq !== held.nextSeq) {
    throw portError(SessionStoreErrorCode.CONFLICT, {
      sessionId: id,
      message: `Cannot append to session ${id}: expected the next seq to be ${batch.expectedSeq}, found ${held.nextSeq}; nothing was written.`,
      details: { expected: batch.expectedSeq, found: held.nextSeq },
    })
  }
  if (stats.status === 'rejected')
    throw toPortError(stats.reason, { sessionId: id, action: `append to session ${id}` })
  const size = stats.value.size
  if (size !== held.offset) {
    throw portError(SessionStoreErrorCode.CONFLICT, {
      sessionId: id,
      message: `Cannot append to session ${id}: expected ${held.adapter.log.file} to end at byte ${held.offset}, found ${size} bytes (written outside this lease); nothing was written.`,
      details: { expectedSize: held.offset, foundSize: size },
    })
  }
  const action = `append to session ${id}`
  let bytes: Buffer
  try {
    // The batch joined and encoded once by the caller (its lines, each ended by `\n`).
    bytes = held.adapter.batch(append.bytes)
  } catch (error) {
    throw toPortError(error, { sessionId: id, action })
  }
  throwIfAborted(batch.signal, `Appending to session ${id}`, id)
  let poisoned: JsonlStoreError | null = null
  try {
    held.offset = await appendDurably({
      fs: context.fs,
      handle: held.handle,
      path: held.path,
      file: held.adapter.log.file,
      offset: held.offset,
      bytes,
      count: batch.lines.length,
      lastSeq: batch.expectedSeq + batch.lines.length - 1,
      lock: { assertHeld: () => assertFence(context, held) },
      poison: (error) => {
        poisoned = error
        return error
      },
    })
  } catch (error) {
    throw await appendFailure(held, { error, poisoned, end: held.offset + bytes.length })
  }
  held.nextSeq += batch.lines.length
  held.lastCrc = batch.lastCrc
}

/** A failed append: rolled back (retryable), fenced after the write (withdrawn when still ours), or fatal for this lease. */
async function appendFailure(
  held: Held,
  failure: { readonly error: unknown; readonly poisoned: JsonlStoreError | null; readonly end: number },
): Promise<SessionStoreError> {
  const action = `append to session ${held.id}`
  const mapped = toPortError(failure.error, { sessionId: held.id, action })
  if (failure.poisoned === null) return mapped
  if (mapped.code === SessionStoreErrorCode.FENCED) {
    // Fenced between the write and the ack: withdraw our bytes if nobody wrote after them.
    const size = await held.handle.stat().then(
      (stats) => stats.size,
      () => -1,
    )
    if (size === failure.end) {
      await held.handle
        .truncate(held.offset)
        .then(() => held.handle.datasync())
        .catch(() => undefined)
    }
    held.failed = mapped
    return mapped
  }
  // The first failure's code is kept (FSYNC_FAILED, FILE_REPLACED...), except a full disk:
  // freeing space cannot revive this lease, so `DISK_FULL` (retryable) would mislead.
  held.failed = portError(
    mapped.code === SessionStoreErrorCode.DISK_FULL ? JsonlErrorCode.WRITER_FAILED : mapped.code,
    {
      sessionId: held.id,
      message: `${mapped.message} This lease can no longer append (the next acquire repairs the log); acquire again.`,
      details: { ...mapped.details, poisoned: true },
      cause: failure.error,
    },
  )
  return held.failed
}

/** The nonce in `writer.lock`, read as the lock reads it (never through a symlink), or null when there is no lock record. */
export async function lockNonce(fs: FsOps, directory: string): Promise<string | null> {
  const entry = await readEntry(fs, join(directory, WRITER_LOCK_FILE_NAME)).catch(() => null)
  return entry?.kind === 'present' ? (entry.record?.nonce ?? null) : null
}
