/**
 * The root and session directories of the JSONL backend: created 0700, never through a
 * symlink, the root refused when other users could write into it (RELIABILITY S1).
 */
import { dirname, join } from 'node:path'

import { SessionStoreErrorCode } from '@agent-ledger/session-store'

import { errnoOf } from '../fs-errors.ts'
import type { FsOps } from '../fs-ops.ts'
import { JsonlErrorCode } from '../jsonl-store-error.ts'
import { portError, toPortError } from './port-errors.ts'

async function mkdirs(fs: FsOps, path: string): Promise<void> {
  try {
    await fs.mkdir(path, 0o700)
  } catch (error) {
    const code = errnoOf(error)
    if (code === 'EEXIST') return
    if (code !== 'ENOENT' || dirname(path) === path) throw error
    await mkdirs(fs, dirname(path))
    await mkdirs(fs, path)
    return
  }
  await fs.chmod(path, 0o700)
  await fs.fsyncDirectory(dirname(path)).catch(() => undefined)
}

/**
 * Checks the store root (creating it 0700 when `create`): a directory owned by this user and
 * writable only by it.
 *
 * @param fs - The file-system seam.
 * @param root - The absolute root.
 * @param create - Create it when missing.
 * @returns False when it does not exist (and `create` is false).
 * @throws {@link SessionStoreError} `BACKEND_FAILED` (details `reason: 'unsafe-root'`) for an unsafe root.
 */
export async function checkRoot(fs: FsOps, root: string, create: boolean): Promise<boolean> {
  let stats
  try {
    stats = await fs.stat(root)
  } catch (error) {
    if (errnoOf(error) !== 'ENOENT') throw toPortError(error, { action: `stat the store root ${root}` })
    if (!create) return false
    try {
      await mkdirs(fs, root)
      stats = await fs.stat(root)
    } catch (mkdirError) {
      throw toPortError(mkdirError, { action: `create the store root ${root}` })
    }
  }
  const uid = typeof process.getuid === 'function' ? process.getuid() : undefined
  const mode = stats.mode & 0o777
  if (!stats.isDirectory() || (mode & 0o022) !== 0 || (uid !== undefined && stats.uid !== uid)) {
    throw portError(JsonlErrorCode.UNSAFE_ROOT, {
      message: `The store root ${root} is unsafe: expected a directory owned by uid ${String(uid)} and writable only by it, found ${stats.isDirectory() ? 'a directory' : 'not a directory'} with mode ${mode.toString(8)} owned by uid ${stats.uid}.`,
      details: { reason: 'unsafe-root', jsonlCode: 'UNSAFE_ROOT', mode: mode.toString(8), owner: stats.uid },
    })
  }
  return true
}

/**
 * The directory of an existing session: a real directory (a symlink is refused).
 *
 * @param fs - The file-system seam.
 * @param root - The absolute root.
 * @param id - The session id (checked).
 * @returns Its absolute path.
 * @throws {@link SessionStoreError} `SESSION_NOT_FOUND`, `UNSAFE_ROOT`, `BACKEND_FAILED` (a symlink, an unreadable entry).
 */
export async function sessionDirectory(fs: FsOps, root: string, id: string): Promise<string> {
  // Every use of a session checks the root first (a root another user owns or can write is
  // refused for reads too): a missing root is a missing session.
  await checkRoot(fs, root, false)
  return directoryIn(fs, root, id)
}

/** {@link sessionDirectory} in a root already checked (a listing checks it once, for every session). */
export async function directoryIn(fs: FsOps, root: string, id: string): Promise<string> {
  const directory = join(root, id)
  let stats
  try {
    stats = await fs.lstat(directory)
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') {
      throw portError(SessionStoreErrorCode.SESSION_NOT_FOUND, {
        sessionId: id,
        message: `Session ${id} was not found: expected a directory ${id} under the store root ${root}.`,
      })
    }
    throw toPortError(error, { sessionId: id, action: `stat the directory of session ${id}` })
  }
  if (stats.isSymbolicLink()) {
    throw portError(JsonlErrorCode.SYMLINK_REFUSED, {
      sessionId: id,
      message: `The directory of session ${id} is a symbolic link: expected a real directory (never followed).`,
      details: { jsonlCode: 'SYMLINK_REFUSED', which: 'session-directory' },
    })
  }
  if (!stats.isDirectory()) {
    throw portError(SessionStoreErrorCode.SESSION_NOT_FOUND, {
      sessionId: id,
      message: `Session ${id} was not found: expected a directory at ${id}, found another kind of entry.`,
    })
  }
  return directory
}

/**
 * Creates (0700) or checks the directory of a session about to be created.
 *
 * @param fs - The file-system seam.
 * @param root - The absolute root (already checked).
 * @param id - The session id (checked).
 * @returns Its absolute path.
 */
export async function ensureSessionDirectory(
  fs: FsOps,
  root: string,
  id: string,
): Promise<{ readonly directory: string; readonly made: boolean }> {
  const directory = join(root, id)
  let made = false
  try {
    await fs.mkdir(directory, 0o700)
    made = true
    await fs.chmod(directory, 0o700)
    await fs.fsyncDirectory(root)
    return { directory, made }
  } catch (error) {
    if (made) await removeMadeDirectory(fs, root, directory)
    if (errnoOf(error) !== 'EEXIST') {
      throw toPortError(error, { sessionId: id, action: `create the directory of session ${id}` })
    }
  }
  return { directory: await sessionDirectory(fs, root, id), made: false }
}

/**
 * Removes the directory a create made, after the create failed (a full disk, a refused seed):
 * no empty folder is left for `list` to report. Only if it is empty (a concurrent create of
 * the same id that found it and wrote into it keeps it); best effort, never throws.
 */
export async function removeMadeDirectory(fs: FsOps, root: string, directory: string): Promise<void> {
  try {
    if ((await fs.readdir(directory)).length > 0) return
    await fs.rmdir(directory)
    await fs.fsyncDirectory(root)
  } catch {
    // Left as it is: the next create of that id uses it.
  }
}
