/*
 * A held lock: its heartbeat, `assertHeld()`, and a `release()` that follows the claim
 * protocol and needs no free space.
 */
import { constants } from 'node:fs'
import { basename, join } from 'node:path'

import type { FileHandleOps } from './fs-ops.ts'
import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'
import type { LockRecord, BrokenLock, WriterLock, Context, Published } from './writer-lock-types.ts'
import { WRITER_LOCK_FILE_NAME, CLAIM_PREFIX } from './writer-lock-types.ts'
import { errnoOf } from './fs-errors.ts'
import { readEntry, recordBytes, makeRecord } from './writer-lock-record.ts'
import { publishExclusive } from './writer-lock-files.ts'

export function createHeldLock(
  context: Context,
  state: { record: LockRecord; handle: FileHandleOps; broken: readonly BrokenLock[] },
): WriterLock {
  const { fs, lockPath, options } = context
  let record = state.record
  let released = false
  let releasing: Promise<void> | undefined
  let beating: Promise<void> | undefined
  let writtenLength = recordBytes(record).length
  /** The device and inode of the lock file we hold open (read once), or null when fstat failed. */
  let ownIdentity: Promise<{ readonly dev: number; readonly ino: number } | null> | undefined

  const beat = async (): Promise<void> => {
    record = { ...record, heartbeatAt: new Date().toISOString() }
    const bytes = recordBytes(record)
    // Written through our own descriptor: if the lock was broken, this lands in the orphaned inode.
    await state.handle.write(bytes, 0)
    if (bytes.length < writtenLength) await state.handle.truncate(bytes.length)
    writtenLength = bytes.length
  }
  const timer =
    options.heartbeatMs > 0
      ? setInterval(() => {
          if (released || beating !== undefined) return
          // A failed heartbeat only makes the lock look stale to other hosts sooner.
          beating = beat()
            .catch(() => undefined)
            .finally(() => {
              beating = undefined
            })
        }, options.heartbeatMs)
      : undefined
  timer?.unref()

  const lost = (found: string): JsonlStoreError =>
    new JsonlStoreError({
      code: JsonlErrorCode.LOCK_LOST,
      message: `The writer lock of session ${basename(context.directory)} is no longer held: expected nonce ${record.nonce} in ${WRITER_LOCK_FILE_NAME}, found ${found}.`,
      file: context.displayFile,
      details: { lockFile: lockPath, nonce: record.nonce, found },
    })

  return {
    nonce: record.nonce,
    file: lockPath,
    brokenStaleLocks: state.broken,
    async assertHeld() {
      if (released) throw lost('it released')
      // Fast path, one lstat: the path still names the inode we created and hold open. An open
      // descriptor keeps its inode from being freed and reused, and a breaker never writes into
      // the holder's inode (it renames a new file over the name), so this inode still holds our
      // record. Anything else (another inode, a symlink, no file) gets the full read below,
      // which names what it found.
      ownIdentity ??= state.handle.stat().then(
        (stats) => ({ dev: stats.dev, ino: stats.ino }),
        () => null,
      )
      const [own, named] = await Promise.all([ownIdentity, fs.lstat(lockPath).catch(() => null)])
      if (
        own !== null &&
        named !== null &&
        named.isFile() &&
        named.ino === own.ino &&
        named.dev === own.dev
      ) {
        return
      }
      const entry = await readEntry(fs, lockPath)
      if (entry.kind === 'missing') throw lost('no lock file')
      if (entry.symlink) throw lost('a symbolic link')
      if (entry.token !== record.nonce) {
        throw lost(entry.record === undefined ? 'unreadable content' : `nonce ${entry.record.nonce}`)
      }
    },
    async forget() {
      if (timer !== undefined) clearInterval(timer)
      released = true
      await beating
      await state.handle.close().catch(() => undefined)
    },
    release() {
      if (released) return Promise.resolve()
      if (timer !== undefined) clearInterval(timer)
      // Retryable: a failed release leaves the lock held and the next call tries again.
      releasing ??= (async () => {
        await beating
        await releaseOwn(context, record.nonce)
        released = true
        await state.handle.close().catch(() => undefined)
      })().finally(() => {
        releasing = undefined
      })
      return releasing
    },
  }
}

function isDiskFull(error: unknown): boolean {
  if (JsonlStoreError.is(error)) return error.code === JsonlErrorCode.DISK_FULL
  const code = errnoOf(error)
  return code === 'ENOSPC' || code === 'EDQUOT' || code === 'EFBIG'
}

/**
 * Claims our own token with an EMPTY claim file (O_CREAT|O_EXCL, no data written): what a
 * release falls back to on a full disk, where the usual claim (a record written to a temp
 * file) cannot be written. An empty claim is judged by its mtime, like any unreadable one.
 */
async function emptyClaim(context: Context, claimPath: string): Promise<Published> {
  try {
    const handle = await context.fs.open(
      claimPath,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    )
    return { kind: 'created', handle }
  } catch (error) {
    if (errnoOf(error) === 'EEXIST') return { kind: 'exists' }
    throw error
  }
}

/**
 * Removes `writer.lock` if it still holds `nonce`, under the claim protocol (see the top of
 * this file). Needs no free space: on a full disk (ENOSPC, EDQUOT) the claim is an empty
 * file, and if even that cannot be created, the lock is moved aside and checked without a
 * claim (safe for a live holder: a breaker only claims a lock it judged stale, and a live
 * holder on this host never is).
 */
async function releaseOwn(context: Context, nonce: string): Promise<void> {
  const { fs, lockPath, options } = context
  // Same invariant as breaking: claim our own token before removing the name.
  const claimPath = join(context.directory, `${CLAIM_PREFIX}${nonce}`)
  let claim: Published | null
  try {
    claim = await publishExclusive(
      context,
      claimPath,
      recordBytes(makeRecord(context.self, options.randomHex(16), '')),
    )
  } catch (error) {
    if (!isDiskFull(error)) throw error
    try {
      claim = await emptyClaim(context, claimPath)
    } catch (again) {
      if (!isDiskFull(again)) throw again
      claim = null
    }
  }
  // EEXIST: someone judged us stale and is breaking the lock; it is theirs to remove.
  if (claim?.kind === 'exists') return
  await claim?.handle.close().catch(() => undefined)
  try {
    const entry = await readEntry(fs, lockPath)
    if (entry.kind !== 'present' || entry.token !== nonce) return
    if (claim !== null) {
      await fs.unlink(lockPath)
      return
    }
    const moved = join(context.directory, `.tmp-lockbreak-${options.randomHex(8)}`)
    await fs.rename(lockPath, moved)
    const check = await readEntry(fs, moved)
    if (check.kind === 'present' && check.token !== nonce)
      await fs.link(moved, lockPath).catch(() => undefined)
    await fs.unlink(moved)
  } finally {
    if (claim !== null) await fs.unlink(claimPath).catch(() => undefined)
  }
}
