/**
 * Opening a session's current log for the backend: the session directory (never a
 * symlink), the current v4 log in whichever encoding it has (`locateSessionLog`, which
 * under the writer lock also finishes an interrupted compress), opened without following
 * a symlink.
 */
import { constants } from 'node:fs'
import { join } from 'node:path'

import { SessionStoreErrorCode } from '@agent-ledger/session-store'

import { errnoOf, toStoreError } from '../fs-errors.ts'
import { NOT_REGULAR_ERRNO } from '../fs-ops.ts'
import type { FileHandleOps, FsOps } from '../fs-ops.ts'
import { listGenerations } from '../generations.ts'
import { JsonlErrorCode } from '../jsonl-store-error.ts'
import type { StoreLimits } from '../limits.ts'
import { locateSessionLog } from '../zstd-session.ts'
import type { SessionLog } from '../zstd-session.ts'
import { portError, toPortError } from './port-errors.ts'
import { sessionDirectory } from './session-dirs.ts'

/** An open log. */
export interface OpenedLog {
  readonly directory: string
  readonly log: SessionLog
  /** Absolute path of the log. */
  readonly path: string
  readonly handle: FileHandleOps
}

/**
 * Opens the current log of a session.
 *
 * @param context - File system, root and limits.
 * @param id - The session id (checked).
 * @param mode - `read`; `write` (read-write, `O_APPEND`; only under the writer lock).
 * @returns The open log; the caller closes it.
 * @throws {@link SessionStoreError} `SESSION_NOT_FOUND`, `UNSUPPORTED` (only an older generation:
 *   migrate first), `BACKEND_FAILED`.
 */
export async function openLog(
  context: { readonly fs: FsOps; readonly root: string; readonly limits: StoreLimits },
  id: string,
  mode: 'read' | 'write' = 'read',
): Promise<OpenedLog> {
  try {
    return await openLogOnce(context, id, mode)
  } catch (error) {
    // A compress may replace the plain log by its .zstd between the locate and the open (the
    // name found is gone): a second locate finds the new log.
    if (typeof error === 'object' && error !== null && vanished.has(error))
      return openLogOnce(context, id, mode)
    throw error
  }
}

/** Errors of an open whose located log name was gone at the open. */
const vanished = new WeakSet<object>()

async function openLogOnce(
  context: { readonly fs: FsOps; readonly root: string; readonly limits: StoreLimits },
  id: string,
  mode: 'read' | 'write',
): Promise<OpenedLog> {
  const { fs } = context
  const directory = await sessionDirectory(fs, context.root, id)
  let log: SessionLog
  try {
    log = await locateSessionLog({ fs, directory, id, mode, limits: context.limits })
  } catch (error) {
    throw toPortError(error, { sessionId: id, action: `find the log of session ${id}` })
  }
  const path = join(directory, log.name)
  let handle: FileHandleOps
  try {
    handle = await fs.open(
      path,
      // O_APPEND: two writers that bypassed the lock both land, and the next read reports it.
      (mode === 'write' ? constants.O_RDWR | constants.O_APPEND : constants.O_RDONLY) | constants.O_NOFOLLOW,
    )
  } catch (error) {
    if (errnoOf(error) !== 'ENOENT') {
      // A symbolic link or a special file at the log's name: typed naming the log
      // (`which: 'log'`, the file relative to the root).
      const errno = errnoOf(error)
      const typed =
        errno === 'ELOOP' || errno === NOT_REGULAR_ERRNO || errno === 'ENXIO'
          ? toStoreError(error, {
              op: 'open',
              file: log.file,
              which: 'log',
              fallback: JsonlErrorCode.READ_FAILED,
            })
          : error
      throw toPortError(typed, { sessionId: id, action: `open ${log.file}` })
    }
    const older = await listGenerations(fs, directory).catch(() => [])
    const refusal =
      older.length > 0
        ? portError(SessionStoreErrorCode.UNSUPPORTED, {
            sessionId: id,
            message: `Session ${id} is stored in an older format (${older.map((generation) => generation.file).join(', ')}): expected ${log.file}; migrate it first (capabilities.migrate).`,
            details: { capability: 'migrate' },
          })
        : portError(SessionStoreErrorCode.SESSION_NOT_FOUND, {
            sessionId: id,
            message: `Session ${id} was not found: expected ${log.file} under the store root.`,
            cause: error,
          })
    vanished.add(refusal)
    throw refusal
  }
  try {
    const stats = await handle.stat()
    if (!stats.isFile()) {
      throw portError(SessionStoreErrorCode.SESSION_NOT_FOUND, {
        sessionId: id,
        message: `Session ${id} was not found: expected a regular file at ${log.file}, found another kind of entry.`,
      })
    }
  } catch (error) {
    await handle.close().catch(() => undefined)
    throw toPortError(error, { sessionId: id, action: `stat ${log.file}` })
  }
  return { directory, log, path, handle }
}
