/*
 * The durable write of one flush, shared by the store's `SessionWriter` and the backend
 * port's `append` (`src/backend`): one `write`, a rollback (truncate + fdatasync) on a failed
 * write while the lease is still ours and nobody wrote past the batch, then one `fdatasync` together with the W5 checks (same inode at the path, one link,
 * the file ends where the batch ends) and the lock check, all before anything may be
 * acknowledged.
 */
import { errnoOf, toStoreError } from './fs-errors.ts'
import type { FileHandleOps, FsOps } from './fs-ops.ts'
import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'

/** One batch to make durable (internal). */
export interface DurableAppendRequest {
  readonly fs: FsOps
  /** The open log (read-write, `O_APPEND`). */
  readonly handle: FileHandleOps
  /** Absolute path of the log (for the same-file check). */
  readonly path: string
  /** The log relative to the store root (for messages). */
  readonly file: string
  /** Size known durable: where the batch starts. */
  readonly offset: number
  /** The bytes to write (plain lines, or whole zstd frames). */
  readonly bytes: Buffer
  /** Events in the batch, and the seq of its last one (for messages). */
  readonly count: number
  readonly lastSeq: number
  /** The writer lock (or a lease check), asserted after the fdatasync and before the ack. */
  readonly lock: { assertHeld(): Promise<void> }
  /** Marks the writer poisoned and returns the error to throw (a failure no retry can fix). */
  readonly poison: (error: JsonlStoreError) => JsonlStoreError
}

/**
 * Writes one batch durably. A failed write is rolled back to `offset` (retryable: nothing
 * was acknowledged) when the lease is still ours and the log ends within the batch; a lost
 * lease or another writer's bytes (no rollback), a failed rollback, a failed fdatasync, a replaced file, a concurrent
 * appender or a lost lock go through `poison`.
 *
 * @param request - The log, the batch and the checks.
 * @returns The new durable size.
 * @throws {@link JsonlStoreError} `DISK_FULL` / `WRITE_FAILED` (rolled back), or a poisoned failure
 *   (not rolled back: `LOCK_LOST`, `CONCURRENT_WRITE`; `FSYNC_FAILED`, `FILE_REPLACED`, `CONCURRENT_WRITE`, `LOCK_LOST`, a failed rollback).
 */
export async function appendDurably(request: DurableAppendRequest): Promise<number> {
  const { handle, file, offset, bytes, count, lastSeq } = request
  try {
    await handle.write(bytes, offset)
  } catch (error) {
    const failure = toStoreError(error, { op: 'write', file, fallback: JsonlErrorCode.WRITE_FAILED })
    await assertRollbackIsOurs(request, failure)
    try {
      await handle.truncate(offset)
      await handle.datasync()
    } catch (rollbackError) {
      throw request.poison(
        new JsonlStoreError({
          code: failure.code,
          message: `${failure.message} Rolling ${file} back to ${offset} bytes failed too (${errnoOf(rollbackError) ?? 'unknown'}); the writer is poisoned and the next open repairs the tail.`,
          file,
          offset,
          details: {
            ...failure.details,
            bytesAttempted: bytes.length,
            rollback: errnoOf(rollbackError) ?? 'unknown',
          },
          cause: error,
        }),
      )
    }
    throw new JsonlStoreError({
      code: failure.code,
      message: `${failure.message} ${file} was rolled back to ${offset} bytes; the ${count} events stay buffered with the same seqs.`,
      file,
      offset,
      details: { ...failure.details, bytesAttempted: bytes.length },
      cause: error,
    })
  }
  // The fdatasync, the W5 checks and the lock check are independent: the checks only need
  // the write to have happened (a writer that takes the lock later sees these bytes), so they
  // run while the fdatasync does: one round trip of latency after the write instead of two
  // or three. All must pass before the ack; the fdatasync failure is reported first, then W5.
  const [synced, sameFile, held] = await Promise.allSettled([
    handle.datasync(),
    assertSameFile(request, offset + bytes.length),
    request.lock.assertHeld(),
  ])
  if (synced.status === 'rejected') {
    const error: unknown = synced.reason
    throw request.poison(
      new JsonlStoreError({
        code: JsonlErrorCode.FSYNC_FAILED,
        message: `fdatasync of ${file} failed (${errnoOf(error) ?? 'unknown'}): the batch up to seq ${lastSeq} is not durable and can never be acknowledged; reopen the session.`,
        file,
        offset,
        details: { cause: errnoOf(error) ?? 'unknown', lastSeq },
        cause: error,
      }),
    )
  }
  if (sameFile.status === 'rejected') throw sameFile.reason
  if (held.status === 'rejected') {
    const error: unknown = held.reason
    throw request.poison(
      toStoreError(error, { op: 'check the lock of', file, fallback: JsonlErrorCode.LOCK_LOST }),
    )
  }
  return offset + bytes.length
}

/**
 * W14: before a failed write is rolled back to `offset`, the lease must still be ours and the
 * log must end within this batch. A writer stopped between its checks and its `write()` can
 * resume after another owner took the session over and appended: its `O_APPEND` write (or
 * what of it landed) is after that owner's events, and a truncate to `offset` would cut them,
 * acknowledged. Then nothing is truncated: the writer is poisoned, and its bytes, if any, are a
 * torn or repeated-seq tail the next write open quarantines.
 */
async function assertRollbackIsOurs(request: DurableAppendRequest, failure: JsonlStoreError): Promise<void> {
  const { handle, file, offset, bytes, lastSeq } = request
  const [held, stats] = await Promise.allSettled([request.lock.assertHeld(), handle.stat()])
  const notRolledBack = `${failure.message} ${file} was not rolled back to ${offset} bytes`
  if (held.status === 'rejected') {
    const lost = toStoreError(held.reason, {
      op: 'check the lock of',
      file,
      fallback: JsonlErrorCode.LOCK_LOST,
    })
    throw request.poison(
      new JsonlStoreError({
        code: lost.code,
        message: `${notRolledBack}: the lease is no longer this writer's (${lost.message}), so the bytes past ${offset} may be another owner's; the batch up to seq ${lastSeq} is not acknowledged.`,
        file,
        offset,
        details: { ...lost.details, writeFailure: failure.code, bytesAttempted: bytes.length },
        cause: held.reason,
      }),
    )
  }
  if (stats.status === 'rejected') {
    throw request.poison(
      toStoreError(stats.reason, { op: 'stat', file, fallback: JsonlErrorCode.WRITE_FAILED }),
    )
  }
  const size = stats.value.size
  if (size >= offset && size <= offset + bytes.length) return
  throw request.poison(
    new JsonlStoreError({
      code: JsonlErrorCode.CONCURRENT_WRITE,
      message: `${notRolledBack}: expected it to end between byte ${offset} and ${offset + bytes.length}, found ${size} bytes (someone else wrote); the batch up to seq ${lastSeq} is not acknowledged.`,
      file,
      offset,
      details: { expectedSize: offset, foundSize: size, lastSeq, writeFailure: failure.code },
    }),
  )
}

/**
 * W5: the inode we write must still be the one at the path, with no other name; and it
 * must end where our batch ends (a longer file means another writer appended too).
 */
async function assertSameFile(request: DurableAppendRequest, expectedSize: number): Promise<void> {
  const { fs, handle, path, file, lastSeq } = request
  // Independent reads: together, one round trip (a failed fstat is reported before the lstat).
  const [opened, named] = await Promise.allSettled([handle.stat(), fs.lstat(path)])
  for (const outcome of [opened, named]) {
    if (outcome.status === 'rejected' && errnoOf(outcome.reason) !== 'ENOENT') {
      throw request.poison(
        toStoreError(outcome.reason, { op: 'stat', file, fallback: JsonlErrorCode.FILE_REPLACED }),
      )
    }
  }
  const own = opened.status === 'fulfilled' ? opened.value : null
  const at = named.status === 'fulfilled' ? named.value : null
  const expectedIno = own?.ino ?? null
  const foundIno = own !== null && at !== null && at.isFile() && at.dev === own.dev ? at.ino : null
  const nlink = own?.nlink ?? 0
  if (own !== null && foundIno === own.ino && nlink === 1) {
    const size = own.size
    if (size === expectedSize) return
    throw request.poison(
      new JsonlStoreError({
        code: JsonlErrorCode.CONCURRENT_WRITE,
        message: `${file} was appended to by someone else: expected it to end at byte ${expectedSize} after this batch, found ${size} bytes; the batch up to seq ${lastSeq} is not acknowledged.`,
        file,
        details: { expectedSize, foundSize: size, lastSeq },
      }),
    )
  }
  throw request.poison(
    new JsonlStoreError({
      code: JsonlErrorCode.FILE_REPLACED,
      message: `${file} changed under its writer: expected inode ${String(expectedIno)} with one link at the path, found ${foundIno === null ? 'no such file' : `inode ${foundIno}`} and ${nlink} link(s); the batch up to seq ${lastSeq} is not acknowledged.`,
      file,
      details: { expectedIno, foundIno, nlink, lastSeq },
    }),
  )
}
