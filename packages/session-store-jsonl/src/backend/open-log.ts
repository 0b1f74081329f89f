/**
 * Opening a session's current log for the backend: the session directory (never a
 * symlink), its generations checked (a newer one is `VERSION_TOO_NEW`, a header whose
 * version differs from its name `GENERATION_VERSION_MISMATCH`, only an older one
 * `UNSUPPORTED`: migrate first), the current v4 log in whichever encoding it has
 * (`locateSessionLog`, which under the writer lock also finishes an interrupted compress),
 * opened without following a symlink; a migrated log whose source was appended to since is
 * `GENERATION_FORK` (I7).
 */
import { constants } from 'node:fs'
import { join } from 'node:path'

import type { SessionHeader } from '@agent-ledger/session-events'
import { SessionStoreErrorCode } from '@agent-ledger/session-store'

import { errnoOf, toStoreError } from '../fs-errors.ts'
import { NOT_REGULAR_ERRNO } from '../fs-ops.ts'
import type { FileHandleOps, FsOps } from '../fs-ops.ts'
import { JsonlErrorCode } from '../jsonl-store-error.ts'
import type { StoreLimits } from '../limits.ts'
import { logAdapter } from '../log-adapter.ts'
import type { LogAdapter } from '../log-adapter.ts'
import { detectGenerationFork } from '../migration/generation-fork.ts'
import {
  isOlderGeneration as isOlderFile,
  listGenerations,
  resolveCurrentGeneration,
} from '../generations.ts'
import { locateSessionLog } from '../zstd-session.ts'
import type { SessionLog } from '../zstd-session.ts'
import { readHeaderLine } from './line-scan.ts'
import { portError, toPortError } from './port-errors.ts'
import { sessionDirectory } from './session-dirs.ts'

/** What the generation checks need. */
interface GenerationCheckContext {
  readonly fs: FsOps
  readonly limits: StoreLimits
}

/**
 * Checks a session's generations before its log is opened (and before a write open takes
 * anything): `VERSION_TOO_NEW` for a newer generation (by name or header),
 * `GENERATION_VERSION_MISMATCH`, `MIXED_ENCODINGS`, and `UNSUPPORTED` (`details.capability:
 * 'migrate'`) when the current generation is older than v4. Reads the listing and line 1.
 *
 * @param context - File system and limits.
 * @param id - The session id (checked).
 * @param directory - Its directory.
 * @returns Whether older generations lie beside the current one (a migrated session).
 * @throws {@link SessionStoreError} with the codes above, the JSONL code kept.
 */
export async function checkGenerations(
  context: GenerationCheckContext,
  id: string,
  directory: string,
): Promise<{ readonly migrated: boolean }> {
  let picked: Awaited<ReturnType<typeof resolveCurrentGeneration>>
  try {
    picked = await resolveCurrentGeneration(context, { directory, id })
  } catch (error) {
    // No generation at all: left to the open, which names the missing log.
    if ((error as { code?: unknown }).code === SessionStoreErrorCode.SESSION_NOT_FOUND)
      return { migrated: false }
    throw toPortError(error, { sessionId: id, action: `check the logs of session ${id}` })
  }
  if (isOlderFile(picked.current)) {
    throw portError(SessionStoreErrorCode.UNSUPPORTED, {
      sessionId: id,
      message: `Session ${id} is stored in an older format (${picked.current.file}): expected a v4 log; migrate it first (capabilities.migrate).`,
      details: { capability: 'migrate' },
    })
  }
  return { migrated: picked.history.some(isOlderFile) }
}

/** How a migrated log's source is compared with the migration's record: sizes, sizes and sha256, or not (the file views). */
export type ForkCheck = 'size' | 'sha256' | 'none'

/**
 * I7: a migrated log whose source generation changed since the migration (events appended,
 * rewritten, truncated) is refused (`GENERATION_FORK`).
 */
async function assertNotForked(
  context: GenerationCheckContext,
  opened: OpenedLog & { readonly id: string },
  forkCheck: Exclude<ForkCheck, 'none'>,
): Promise<void> {
  const { id, directory } = opened
  const { line } = await readHeaderLine(opened.adapter, opened.handle, id)
  let header: SessionHeader
  try {
    header = JSON.parse(line) as SessionHeader
  } catch {
    return // The core's header check reports a header that is not JSON.
  }
  if (typeof header !== 'object' || header === null || header.migratedFrom === undefined) return
  const check = await detectGenerationFork({
    fs: context.fs,
    directory,
    sessionId: id,
    header,
    limits: context.limits,
    check: forkCheck,
  }).catch((error: unknown) => {
    throw toPortError(error, { sessionId: id, action: `check the migrated source of session ${id}` })
  })
  if (check.status === 'forked') {
    throw toPortError(check.error, { sessionId: id, action: `open session ${id}` })
  }
}

/** An open log. */
export interface OpenedLog {
  readonly directory: string
  readonly log: SessionLog
  /** Absolute path of the log. */
  readonly path: string
  readonly handle: FileHandleOps
  /** Reads and writes the log in its encoding. */
  readonly adapter: LogAdapter
}

/**
 * Opens the current log of a session.
 *
 * @param context - File system, root and limits; `forkCheck`: how a migrated log's source is
 *   checked (default `size`; a write open checks `sha256` once, before it takes the lock).
 * @param id - The session id (checked).
 * @param mode - `read`; `write` (read-write, `O_APPEND`; only under the writer lock).
 * @returns The open log; the caller closes it.
 * @throws {@link SessionStoreError} `SESSION_NOT_FOUND`, `UNSUPPORTED` (only an older generation:
 *   migrate first), `VERSION_TOO_NEW`, `GENERATION_VERSION_MISMATCH`, `MIXED_ENCODINGS`,
 *   `GENERATION_FORK`, `BACKEND_FAILED`.
 */
export async function openLog(
  context: {
    readonly fs: FsOps
    readonly root: string
    readonly limits: StoreLimits
    readonly forkCheck?: ForkCheck | undefined
  },
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
  context: Parameters<typeof openLog>[0],
  id: string,
  mode: 'read' | 'write',
): Promise<OpenedLog> {
  const { fs } = context
  const directory = await sessionDirectory(fs, context.root, id)
  const { migrated } = await checkGenerations(context, id, directory)
  let log: SessionLog
  try {
    log = await locateSessionLog({ fs, directory, id, mode, limits: context.limits })
  } catch (error) {
    throw toPortError(error, { sessionId: id, action: `find the log of session ${id}` })
  }
  const adapter = await logAdapter(id, log.encoding, context.limits).catch((error: unknown) => {
    throw toPortError(error, { sessionId: id, action: `open session ${id}` })
  })
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
  const forkCheck = context.forkCheck ?? 'size'
  const opened = { directory, log, path, handle, adapter }
  if (migrated && forkCheck !== 'none') {
    try {
      await assertNotForked(context, { ...opened, id }, forkCheck)
    } catch (error) {
      await handle.close().catch(() => undefined)
      throw error
    }
  }
  return opened
}
