/**
 * Finding and opening a session's current log for the backend's file views and maintenance
 * capabilities (`files`, `compress`, `migrate`), with the JSONL codes they have always
 * thrown (`SESSION_NOT_FOUND`, `SYMLINK_REFUSED`, `UNSAFE_ROOT`, `VERSION_TOO_NEW`,
 * `MIXED_ENCODINGS`...): the callers turn them into port errors (`toPortError`), which keeps
 * each code. Read-only, except that a write check narrows a session directory's mode.
 */
import type { EventRegistry, SessionHeader } from '@agent-ledger/session-events'

import { toStoreError } from '../fs-errors.ts'
import type { FsOps } from '../fs-ops.ts'
import { JsonlErrorCode } from '../jsonl-store-error.ts'
import type { JsonlStoreError } from '../jsonl-store-error.ts'
import type { StoreLimits } from '../limits.ts'
import type { ScanOutcome } from '../log-scanner.ts'
import { detectGenerationFork } from '../migration/generation-fork.ts'
import { isOlderGeneration, resolveCurrentGeneration } from '../generations.ts'
import type { GenerationFile } from '../generations.ts'
import type { StoreLogger } from '../store-logger.ts'
import type { SessionLog } from '../zstd-session.ts'
import { openLog } from './open-log.ts'
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

const HEADER_PEEK_CHUNK = 64 * 1024

/** A refusal the header peek reports: a newer version, a name/header version mismatch, a header naming another session, no header. */
function isRefusal(error: JsonlStoreError): boolean {
  return (
    error.code === JsonlErrorCode.VERSION_TOO_NEW ||
    error.code === JsonlErrorCode.GENERATION_VERSION_MISMATCH ||
    error.code === JsonlErrorCode.HEADER_ID_MISMATCH ||
    (error.code === JsonlErrorCode.INVALID_HEADER && error.line === 1)
  )
}

/**
 * The directory of an existing session about to be written (`sessionDirectory`: the root
 * safe, a real directory, never a symlink), its mode narrowed to the owner's bits when open
 * to group or others (a warning says so).
 *
 * @param ctx - File system, root, logger.
 * @param id - The session id (checked by the caller).
 * @returns Its absolute path.
 * @throws {@link SessionStoreError} `SESSION_NOT_FOUND`, `UNSAFE_ROOT`, `SYMLINK_REFUSED`, `BACKEND_FAILED`.
 */
export async function writableSessionDirectory(ctx: AccessContext, id: string): Promise<string> {
  const directory = await sessionDirectory(ctx.fs, ctx.root, id)
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
  const directory = await sessionDirectory(ctx.fs, ctx.root, id)
  const picked = await resolveCurrentGeneration(ctx, { directory, id })
  return isOlderGeneration(picked.current) ? { directory, source: picked.current } : null
}

/**
 * Reads only the header line of a session's v4 log (bounded; the log is not scanned), opened
 * as every read opens it (`openLog`, without the fork check): the version checks made before
 * a lock is taken, and the header the file views show.
 *
 * @param ctx - File system, root, limits, registry.
 * @param id - The session id (checked by the caller).
 * @param strict - Throw any damage of line 1, not only the refusals ({@link isRefusal}).
 * @returns The header (null when line 1 is damaged but not refused), the directory and the log.
 * @throws {@link SessionStoreError} as `openLog`; {@link JsonlStoreError} the refusals of line 1.
 */
export async function peekHeader(
  ctx: AccessContext,
  id: string,
  strict = false,
): Promise<{ readonly header: SessionHeader | null; readonly directory: string; readonly log: SessionLog }> {
  const { handle, adapter, directory, log } = await openLog({ ...ctx, forkCheck: 'none' }, id)
  let outcome: ScanOutcome
  try {
    outcome = await adapter.scanEvents(handle, {
      registry: ctx.registry,
      file: log.file,
      sessionId: id,
      onEvent: () => undefined,
      onHeader: () => true,
      stopBeforeLine: 2,
      chunkBytes: HEADER_PEEK_CHUNK,
    })
  } catch (error) {
    throw toStoreError(error, { op: 'read', file: log.file, fallback: JsonlErrorCode.READ_FAILED })
  } finally {
    await handle.close().catch(() => undefined)
  }
  if (outcome.damage !== null && (strict || isRefusal(outcome.damage))) throw outcome.damage
  return { header: outcome.header, directory, log }
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
