/**
 * The JSONL backend's `delete` capability (issue 27). A session is its directory; deleting
 * it is, in order:
 *
 * 1. finish an earlier delete of the same id that a crash interrupted (its tombstone);
 * 2. take the writer lock without waiting (a live writer: `SESSION_LOCKED` naming the holder
 *    and the lease's expiry; `force` skips this step), then measure the files and check
 *    `unchangedSince` against the logs' modification times;
 * 3. **rename** the directory to its tombstone `.deleted-<id>` in the store root and fsync
 *    the root: the one step that makes the session disappear, whole. A tombstone is not a
 *    session id (ids never start with `.`), so listing, opening and creating ignore it;
 * 4. unlink every file of the tombstone (generations, checkpoint, quarantined tails, lease,
 *    lock, temp files), remove it, fsync the root.
 *
 * A crash before step 3 leaves the session whole (a stale lock of a dead process is broken by
 * the next acquire); after it, gone (a half-emptied tombstone, removed by the next delete of
 * that id or the next `prune`). Forks copied their prefix: nothing of theirs is in the parent's directory.
 */
import { basename, join } from 'node:path'

import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type { DeleteCapability, DeleteOptions, DeleteResult } from '@agent-ledger/session-store'

import { errnoOf } from '../fs-errors.ts'
import type { FsOps } from '../fs-ops.ts'
import { listGenerations } from '../generations.ts'
import { WRITER_LOCK_FILE_NAME } from '../writer-lock.ts'
import type { WriterLock } from '../writer-lock.ts'
import { takeLock } from './held-lease.ts'
import type { LeaseContext } from './held-lease.ts'
import { readLease } from './lease-file.ts'
import { checkedSessionId, portError, throwIfAborted, toPortError } from './port-errors.ts'
import { checkRoot, sessionDirectory } from './session-dirs.ts'

/** The name prefix of a session directory being deleted, in the store root. */
export const TOMBSTONE_PREFIX = '.deleted-'

/** Options of the JSONL `delete`: the port's, plus the crash-test seam. */
export interface JsonlDeleteOptions extends DeleteOptions {
  /**
   * Crash-test seam: called at `locked`, `renamed`, `renamed-durable`, `unlinked:<file>`,
   * `removed` (the SIGKILL tests stop the process at each).
   */
  readonly hooks?: { at(point: string): Promise<void> | void } | undefined
}

/** The JSONL `delete` capability, taking {@link JsonlDeleteOptions}. */
export interface JsonlDeleteCapability extends DeleteCapability {
  delete(id: string, options?: JsonlDeleteOptions): Promise<DeleteResult>
  /**
   * Removes every tombstone a crashed delete left in the root (`prune` runs it first; an
   * instance's first delete too).
   *
   * @returns How many tombstones were removed.
   */
  sweep(): Promise<number>
}

/** What the delete capability needs from the backend. */
export interface DeleteContext {
  readonly fs: FsOps
  readonly root: string
  readonly leaseContext: LeaseContext
  readonly now: () => number
  /** Throws `BACKEND_CLOSED` after the backend's close. */
  readonly assertOpen: () => void
  /** Forget what the backend cached of the session (its head). */
  readonly forget: (id: string) => void
}

/**
 * Bytes of a directory tree; a file with other hard links frees nothing, and `skip` (the
 * lock file this delete made itself) is not counted.
 */
async function measure(fs: FsOps, path: string, skip?: string): Promise<number> {
  let bytes = 0
  for (const name of await fs.readdir(path)) {
    if (name === skip) continue
    const stats = await fs.lstat(join(path, name))
    if (stats.isDirectory()) bytes += await measure(fs, join(path, name))
    else if (!stats.isFile() || stats.nlink === 1) bytes += stats.size
  }
  return bytes
}

/**
 * Removes `path`: a file is unlinked (reported to `at`), a directory emptied depth first, then
 * removed. A missing path (or entry) is done.
 *
 * @returns False when `path` was missing.
 */
async function removeTree(fs: FsOps, path: string, at: (point: string) => Promise<void>): Promise<boolean> {
  const missing = (error: unknown): null => {
    if (errnoOf(error) === 'ENOENT') return null
    throw error
  }
  const stats = await fs.lstat(path).catch(missing)
  if (stats === null) return false
  if (stats.isDirectory()) {
    for (const name of ((await fs.readdir(path).catch(missing)) ?? []).sort()) {
      await removeTree(fs, join(path, name), at)
    }
    await fs.rmdir(path).catch(missing)
  } else {
    await fs.unlink(path).catch(missing)
    await at(`unlinked:${basename(path)}`)
  }
  return true
}

/** The newest modification time (whole ms) among the session's log generations, or null when it has none. */
async function lastUpdate(fs: FsOps, directory: string): Promise<number | null> {
  let newest: number | null = null
  for (const generation of await listGenerations(fs, directory)) {
    const mtime = Math.floor((await fs.lstat(join(directory, generation.file))).mtimeMs)
    newest = newest === null ? mtime : Math.max(newest, mtime)
  }
  return newest
}

/**
 * The `delete` capability of a JSONL root (see the module comment for the steps).
 *
 * @param context - File system, root, lease settings, clock.
 * @returns The capability.
 */
export function deleteCapability(context: DeleteContext): JsonlDeleteCapability {
  const { fs, root } = context
  const tombstone = (id: string): string => join(root, `${TOMBSTONE_PREFIX}${id}`)
  const finish = async (path: string): Promise<boolean> => {
    if (!(await removeTree(fs, path, () => Promise.resolve()))) return false
    await fs.fsyncDirectory(root)
    return true
  }

  async function remove(id: string, options: JsonlDeleteOptions): Promise<DeleteResult> {
    const at = async (point: string): Promise<void> => {
      await options.hooks?.at(point)
    }
    if (!(await checkRoot(fs, root, false))) return { outcome: 'missing', bytes: 0 }
    await finish(tombstone(id))
    let directory: string
    try {
      directory = await sessionDirectory(fs, root, id)
    } catch (error) {
      if (SessionStoreError.is(error, SessionStoreErrorCode.SESSION_NOT_FOUND))
        return { outcome: 'missing', bytes: 0 }
      throw error
    }
    let lock: WriterLock | null = null
    if (options.force !== true) {
      const before = await readLease(fs, directory, id)
      try {
        lock = await takeLock(context.leaseContext, id, {
          directory,
          before,
          now: context.now(),
          // An owner no writer has: a delete never takes over a live lease, even its own store's.
          options: { owner: '\u0000agent-ledger-delete', leaseMs: 1 },
        })
      } catch (error) {
        if (!SessionStoreError.is(error, SessionStoreErrorCode.SESSION_LOCKED)) throw error
        const holder = error.details['holder']
        const expiresAt = error.details['expiresAt']
        throw portError(SessionStoreErrorCode.SESSION_LOCKED, {
          sessionId: id,
          message: `Cannot delete session ${id}: ${typeof holder === 'string' ? holder : 'another writer'} holds a live lease${typeof expiresAt === 'string' ? ` until ${expiresAt}` : ''}; expected none (close that writer, wait for the lease to expire, or force); nothing was removed.`,
          location: error.location,
          details: error.details,
          cause: error,
        })
      }
    }
    let renamed = false
    try {
      await at('locked')
      const bytes = await measure(fs, directory, lock === null ? undefined : WRITER_LOCK_FILE_NAME)
      if (options.unchangedSince !== undefined) {
        const updated = await lastUpdate(fs, directory)
        if (updated !== null && updated > Date.parse(options.unchangedSince))
          return { outcome: 'kept', bytes: 0 }
      }
      if (options.dryRun === true) return { outcome: 'deleted', bytes }
      throwIfAborted(options.signal, `Deleting session ${id}`, id)
      // The commit point: one rename takes the whole directory out of the store's names.
      await fs.rename(directory, tombstone(id))
      renamed = true
      context.forget(id)
      await at('renamed')
      await fs.fsyncDirectory(root)
      await at('renamed-durable')
      await removeTree(fs, tombstone(id), at)
      await fs.fsyncDirectory(root)
      await at('removed')
      return { outcome: 'deleted', bytes }
    } finally {
      if (lock !== null) {
        // Its lock file went with the directory; before the rename it is still ours to remove.
        await (renamed ? lock.forget() : lock.release()).catch(() => undefined)
      }
    }
  }

  let swept = false
  const capability: JsonlDeleteCapability = {
    async delete(id, options = {}) {
      context.assertOpen()
      // An instance's first delete (so every prune) first finishes what crashed deletes left.
      if (!swept) {
        swept = true
        await capability.sweep().catch(() => undefined)
      }
      const checked = checkedSessionId(id)
      throwIfAborted(options.signal, `Deleting session ${checked}`, checked)
      try {
        return await remove(checked, options)
      } catch (error) {
        throw toPortError(error, { sessionId: checked, action: `delete session ${checked}` })
      }
    },
    async sweep() {
      context.assertOpen()
      swept = true
      try {
        if (!(await checkRoot(fs, root, false))) return 0
        let removed = 0
        for (const name of await fs.readdir(root)) {
          if (!name.startsWith(TOMBSTONE_PREFIX)) continue
          if (await finish(join(root, name))) removed += 1
        }
        return removed
      } catch (error) {
        throw toPortError(error, { sessionId: undefined, action: 'finish the deletes a crash interrupted' })
      }
    },
  }
  return capability
}
