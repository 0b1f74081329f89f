/**
 * Finding and opening a session's current log for the backend's file views and maintenance
 * capabilities (`files`, `compress`, `migrate`), with the JSONL codes they have always
 * thrown (`SESSION_NOT_FOUND`, `SYMLINK_REFUSED`, `UNSAFE_ROOT`, `VERSION_TOO_NEW`,
 * `MIXED_ENCODINGS`...): the callers turn them into port errors (`toPortError`), which keeps
 * each code. Read-only, except that a write check narrows a session directory's mode.
 */
import type { Stats } from 'node:fs'
import { constants } from 'node:fs'
import { join } from 'node:path'

import type { EventRegistry, SessionHeader } from '@agent-ledger/session-events'

import { errnoOf, notRegularFile, toStoreError } from '../fs-errors.ts'
import { fileKind } from '../fs-ops.ts'
import type { FileHandleOps, FsOps } from '../fs-ops.ts'
import type { GenerationFile } from '../generations.ts'
import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import { LOG_FILE_NAME } from '../layout.ts'
import type { StoreLimits } from '../limits.ts'
import { logAdapter } from '../log-adapter.ts'
import type { LogAdapter } from '../log-adapter.ts'
import { V4_FORMAT } from '../log-format.ts'
import type { ScanOutcome } from '../log-scanner.ts'
import { detectGenerationFork } from '../migration/migrate-session.ts'
import { isOlderGeneration, resolveCurrentGeneration } from '../store-generations.ts'
import type { GenerationStoreContext } from '../store-generations.ts'
import type { StoreLogger } from '../store-logger.ts'
import { locateSessionLog } from '../zstd-session.ts'
import type { SessionLog } from '../zstd-session.ts'

/** What finding a session's log needs. */
export interface AccessContext {
  readonly fs: FsOps
  readonly root: string
  readonly limits: StoreLimits
  readonly registry: EventRegistry
  /** Receives the warnings of a write check (a narrowed directory mode, a missing migration source). */
  readonly logger: StoreLogger
}

/** The warnings of the file views and maintenance: process warnings, code `AGENT_LEDGER_STORE`. */
export const processWarnings: StoreLogger = {
  warn(message, details) {
    process.emitWarning(details === undefined ? message : `${message} ${JSON.stringify(details)}`, {
      code: 'AGENT_LEDGER_STORE',
    })
  },
}

/** An open v4 log (read-only): its handle, its directory, and the adapter of its encoding. */
export interface OpenedCurrentLog {
  readonly handle: FileHandleOps
  readonly directory: string
  readonly log: SessionLog
  readonly adapter: LogAdapter
}

const HEADER_PEEK_CHUNK = 64 * 1024

/** The context of the generation helpers. */
export function generationContext(ctx: AccessContext): GenerationStoreContext {
  return { fs: ctx.fs, registry: ctx.registry, limits: ctx.limits }
}

/** A refusal the header peek reports: a newer version, a name/header version mismatch, a header naming another session, no header. */
export function isRefusal(error: JsonlStoreError): boolean {
  return (
    error.code === JsonlErrorCode.VERSION_TOO_NEW ||
    error.code === JsonlErrorCode.GENERATION_VERSION_MISMATCH ||
    error.code === JsonlErrorCode.HEADER_ID_MISMATCH ||
    (error.code === JsonlErrorCode.INVALID_HEADER && error.line === 1)
  )
}

/**
 * Checks the store root: an existing directory owned by this user and writable only by it
 * (RELIABILITY S1).
 *
 * @param ctx - File system and root.
 * @throws {@link JsonlStoreError} `SESSION_NOT_FOUND` (no root), `UNSAFE_ROOT`, `READ_FAILED`.
 */
async function checkStoreRoot(ctx: Pick<AccessContext, 'fs' | 'root'>): Promise<void> {
  let stats: Stats
  try {
    stats = await ctx.fs.stat(ctx.root)
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') {
      throw new JsonlStoreError({
        code: JsonlErrorCode.SESSION_NOT_FOUND,
        message: `The store root ${ctx.root} does not exist: expected a directory of sessions.`,
        file: '',
        details: { root: ctx.root },
        cause: error,
      })
    }
    throw toStoreError(error, { op: 'stat', file: ctx.root, fallback: JsonlErrorCode.READ_FAILED })
  }
  const uid = typeof process.getuid === 'function' ? process.getuid() : undefined
  const mode = stats.mode & 0o777
  if (!stats.isDirectory() || (mode & 0o022) !== 0 || (uid !== undefined && stats.uid !== uid)) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.UNSAFE_ROOT,
      message: `The store root ${ctx.root} is unsafe: expected a directory owned by uid ${String(uid)} and writable only by it, found ${stats.isDirectory() ? 'a directory' : 'not a directory'} with mode ${mode.toString(8)} owned by uid ${stats.uid}.`,
      file: '',
      details: {
        mode: mode.toString(8),
        owner: stats.uid,
        expectedOwner: uid ?? null,
        directory: stats.isDirectory(),
      },
    })
  }
}

/** `SESSION_NOT_FOUND` for a session without a directory or log. */
function notFound(id: string, cause: unknown): JsonlStoreError {
  return new JsonlStoreError({
    code: JsonlErrorCode.SESSION_NOT_FOUND,
    message: `Session ${id} was not found: expected ${id}/${LOG_FILE_NAME} under the store root.`,
    file: `${id}/${LOG_FILE_NAME}`,
    cause,
  })
}

/**
 * The directory of an existing session: a real directory, never a symlink. A `write` check
 * narrows a mode open to group or others to the owner's bits (a warning says so).
 *
 * @param ctx - File system, root, logger.
 * @param id - The session id (checked by the caller).
 * @param options - `write`: the caller is about to write into it.
 * @returns Its absolute path.
 * @throws {@link JsonlStoreError} `SESSION_NOT_FOUND`, `SYMLINK_REFUSED`, `READ_FAILED`.
 */
export async function checkSessionDirectory(
  ctx: AccessContext,
  id: string,
  options: { readonly write: boolean },
): Promise<string> {
  const directory = join(ctx.root, id)
  let stats: Stats
  try {
    stats = await ctx.fs.lstat(directory)
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') throw notFound(id, error)
    throw toStoreError(error, { op: 'stat', file: id, fallback: JsonlErrorCode.READ_FAILED })
  }
  if (stats.isSymbolicLink()) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.SYMLINK_REFUSED,
      message: `The directory of session ${id} is a symbolic link: expected a real directory (never followed).`,
      file: id,
      details: { which: 'session-directory' },
    })
  }
  if (!stats.isDirectory()) throw notFound(id, undefined)
  // Only ever narrow an existing mode (drop group/other bits): a deliberately read-only 0500 stays so.
  if (options.write && (stats.mode & 0o077) !== 0) {
    const narrowed = stats.mode & 0o700
    ctx.logger.warn(
      `Session directory ${id} had mode ${(stats.mode & 0o777).toString(8)}; set to ${narrowed.toString(8)}.`,
      { id, mode: (stats.mode & 0o777).toString(8) },
    )
    await ctx.fs.chmod(directory, narrowed)
  }
  return directory
}

/**
 * The session's current generation when it is older than v4 (read through migration), else
 * null. Checks the versions first: `VERSION_TOO_NEW` (by name or header) and
 * `GENERATION_VERSION_MISMATCH` are thrown before anything is locked or written.
 *
 * @param ctx - File system, root, limits, registry.
 * @param id - The session id (checked by the caller).
 * @returns The older generation and its directory, or null for a v4 session.
 */
export async function olderGeneration(
  ctx: AccessContext,
  id: string,
): Promise<{ readonly directory: string; readonly source: GenerationFile } | null> {
  await checkStoreRoot(ctx)
  const directory = await checkSessionDirectory(ctx, id, { write: false })
  const picked = await resolveCurrentGeneration(generationContext(ctx), { directory, id })
  return isOlderGeneration(picked.current) ? { directory, source: picked.current } : null
}

/**
 * Finds a session's v4 log for a read (plain or `.zstd`, checked like an open), without opening it.
 *
 * @param ctx - File system, root, limits, logger.
 * @param id - The session id (checked by the caller).
 * @returns The session directory and the log found there.
 */
export async function locateV4Log(
  ctx: AccessContext,
  id: string,
): Promise<{ readonly directory: string; readonly log: Awaited<ReturnType<typeof locateSessionLog>> }> {
  const directory = await checkSessionDirectory(ctx, id, { write: false })
  const log = await locateSessionLog({
    fs: ctx.fs,
    directory,
    id,
    mode: 'read',
    limits: ctx.limits,
    logger: ctx.logger,
  })
  return { directory, log }
}

/**
 * Opens a session's v4 log (`session.v4.jsonl` or `session.v4.jsonl.zstd`) read-only, with
 * the adapter of its encoding; the caller closes it.
 *
 * @param ctx - File system, root, limits, logger.
 * @param id - The session id (checked by the caller).
 * @returns The open log.
 * @throws {@link JsonlStoreError} `SESSION_NOT_FOUND`, `SYMLINK_REFUSED`, `MIXED_ENCODINGS`, `READ_FAILED`...
 */
export async function openCurrentLog(ctx: AccessContext, id: string): Promise<OpenedCurrentLog> {
  await checkStoreRoot(ctx)
  const { directory, log } = await locateV4Log(ctx, id)
  const adapter = await logAdapter(id, log.encoding, ctx.limits)
  const file = log.file
  let handle: FileHandleOps
  try {
    handle = await ctx.fs.open(join(directory, log.name), constants.O_RDONLY | constants.O_NOFOLLOW)
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') throw notFound(id, error)
    throw toStoreError(error, { op: 'open', file, which: 'log', fallback: JsonlErrorCode.READ_FAILED })
  }
  try {
    const stats = await handle.stat()
    // nodeFsOps already refuses these; a custom FsOps may not.
    if (!stats.isFile()) throw notRegularFile({ file, which: 'log', kind: fileKind(stats), op: 'open' })
  } catch (error) {
    await handle.close().catch(() => undefined)
    throw toStoreError(error, { op: 'stat', file, fallback: JsonlErrorCode.READ_FAILED })
  }
  return { handle, directory, log, adapter }
}

/**
 * Reads only the header line of an open log (bounded): the version checks before a lock is
 * taken, and the header the file views show.
 *
 * @param ctx - Registry.
 * @param opened - The open log and the session id.
 * @returns The scan's outcome (its `header`, and `damage` when line 1 is refused).
 */
export async function peekHeader(
  ctx: Pick<AccessContext, 'registry'>,
  opened: Pick<OpenedCurrentLog, 'handle' | 'adapter'> & { readonly id: string },
): Promise<ScanOutcome> {
  const file = opened.adapter.log.file
  try {
    return await opened.adapter.scanEvents(opened.handle, {
      format: V4_FORMAT,
      registry: ctx.registry,
      file,
      sessionId: opened.id,
      onEvent: () => undefined,
      onHeader: () => true,
      stopBeforeLine: 2,
      chunkBytes: HEADER_PEEK_CHUNK,
    })
  } catch (error) {
    throw toStoreError(error, { op: 'read', file, fallback: JsonlErrorCode.READ_FAILED })
  }
}

/**
 * I7: checks the generation a migrated header names (sizes and sha256). Returns the
 * `GENERATION_FORK` error, or null; a missing source (deleted by hand) is a warning.
 *
 * @param ctx - File system, limits, registry, logger.
 * @param header - The v4 header (its `migratedFrom`).
 * @param where - The session id and directory.
 * @returns The fork error, or null.
 */
export async function generationFork(
  ctx: AccessContext,
  header: SessionHeader | null,
  where: { readonly id: string; readonly directory: string },
): Promise<JsonlStoreError | null> {
  if (header?.migratedFrom === undefined) return null
  const { id, directory } = where
  const check = await detectGenerationFork({
    fs: ctx.fs,
    directory,
    sessionId: id,
    header,
    registry: ctx.registry,
    limits: ctx.limits,
  })
  if (check.status === 'missing') {
    ctx.logger.warn(
      `${check.file}, the generation ${id} was migrated from, is gone: it cannot be checked for events appended after the migration.`,
      { id, file: check.file },
    )
  }
  return check.status === 'forked' ? check.error : null
}
