/**
 * Finding and opening a session's current log for the backend's file views and maintenance
 * capabilities (`files`, `compress`, `migrate`), with the JSONL codes they have always
 * thrown (`SESSION_NOT_FOUND`, `SYMLINK_REFUSED`, `UNSAFE_ROOT`, `VERSION_TOO_NEW`,
 * `MIXED_ENCODINGS`...): the callers turn them into port errors (`toPortError`), which keeps
 * each code. Read-only, except that a write check narrows a session directory's mode.
 */
import { constants } from 'node:fs'
import { join } from 'node:path'

import type { EventRegistry, SessionHeader } from '@agent-ledger/session-events'

import { errnoOf, notRegularFile, toStoreError } from '../fs-errors.ts'
import { fileKind } from '../fs-ops.ts'
import type { FileHandleOps, FsOps } from '../fs-ops.ts'
import type { GenerationFile } from '../generations.ts'
import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import type { StoreLimits } from '../limits.ts'
import { logAdapter } from '../log-adapter.ts'
import type { LogAdapter } from '../log-adapter.ts'
import type { ScanOutcome } from '../log-scanner.ts'
import { detectGenerationFork } from '../migration/migrate-session.ts'
import { isOlderGeneration, resolveCurrentGeneration } from '../store-generations.ts'
import type { GenerationStoreContext } from '../store-generations.ts'
import type { StoreLogger } from '../store-logger.ts'
import { locateSessionLog } from '../zstd-session.ts'
import type { SessionLog } from '../zstd-session.ts'
import { sessionDirectory } from './session-dirs.ts'

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
 * The directory of an existing session, checked as every backend operation checks it (the
 * root safe, a real directory, never a symlink: `sessionDirectory`). A `write` check
 * narrows a mode open to group or others to the owner's bits (a warning says so).
 *
 * @param ctx - File system, root, logger.
 * @param id - The session id (checked by the caller).
 * @param options - `write`: the caller is about to write into it.
 * @returns Its absolute path.
 * @throws {@link SessionStoreError} `SESSION_NOT_FOUND`, `UNSAFE_ROOT`, `SYMLINK_REFUSED`, `BACKEND_FAILED`.
 */
export async function checkSessionDirectory(
  ctx: AccessContext,
  id: string,
  options: { readonly write: boolean },
): Promise<string> {
  const directory = await sessionDirectory(ctx.fs, ctx.root, id)
  if (!options.write) return directory
  const mode = (await ctx.fs.lstat(directory)).mode
  // Only ever narrow an existing mode (drop group/other bits): a deliberately read-only 0500 stays so.
  if ((mode & 0o077) !== 0) {
    const narrowed = mode & 0o700
    ctx.logger.warn(
      `Session directory ${id} had mode ${(mode & 0o777).toString(8)}; set to ${narrowed.toString(8)}.`,
      { id, mode: (mode & 0o777).toString(8) },
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
  const { directory, log } = await locateV4Log(ctx, id)
  const adapter = await logAdapter(id, log.encoding, ctx.limits)
  const file = log.file
  let handle: FileHandleOps
  try {
    handle = await ctx.fs.open(join(directory, log.name), constants.O_RDONLY | constants.O_NOFOLLOW)
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') {
      throw new JsonlStoreError({
        code: JsonlErrorCode.SESSION_NOT_FOUND,
        message: `Session ${id} was not found: expected ${file} under the store root.`,
        file,
        cause: error,
      })
    }
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
