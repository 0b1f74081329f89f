/**
 * The JSONL backend's maintenance capabilities: `compress` runs `compressSession` and
 * `migrate` runs `migrateSession` in write mode (each takes the writer lock itself, never
 * waiting, so a live lease makes them `SESSION_LOCKED`; a dry run migrates in memory and
 * writes nothing), `quarantine` lists the `<log>.torn-<offset>` files acquire made.
 */
import { join } from 'node:path'

import { SESSION_FORMAT_VERSION } from '@agent-ledger/session-events'
import type { EventRegistry, SessionHeader } from '@agent-ledger/session-events'
import type {
  BackendProgress,
  CompressCapability,
  MaintenanceOptions,
  MigrateCapability,
  QuarantineCapability,
  QuarantineRecord,
  SignalOptions,
} from '@agent-ledger/session-store'
import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'

import { compressSession } from '../compress-session.ts'
import type { CompressOptions, CompressResult } from '../compress-session.ts'
import { errnoOf, toStoreError } from '../fs-errors.ts'
import type { FsOps } from '../fs-ops.ts'
import { listGenerations } from '../generations.ts'
import { JsonlErrorCode } from '../jsonl-store-error.ts'
import { isQuarantineFileName, LOG_FILE_NAME } from '../layout.ts'
import type { StoreLimits } from '../limits.ts'
import { migrateSession } from '../migration/migrate-session.ts'
import type { MigrationProgress } from '../migration/migrate-session.ts'
import { removeStaleTemps } from '../publish.ts'
import { assertSessionId } from '../session-id.ts'
import { readOlderGeneration } from '../store-generations.ts'
import type { MigrationReport } from '../store-generations.ts'
import { acquireWriterLock } from '../writer-lock.ts'
import type { LockOptions } from '../writer-lock.ts'
import { sessionLog } from '../zstd-session.ts'
import { throwIfAborted, toPortError } from './port-errors.ts'
import { sessionDirectory } from './session-dirs.ts'
import {
  checkSessionDirectory,
  generationContext,
  generationFork,
  isRefusal,
  olderGeneration,
  openCurrentLog,
  peekHeader,
  processWarnings,
} from './session-access.ts'
import type { AccessContext } from './session-access.ts'

/**
 * Options of the JSONL `compress` capability: the port's, plus the frame size and level of
 * the sealed frames and the crash-test seam (see `CompressOptions` of `compress-types.ts`).
 */
export interface JsonlCompressOptions extends MaintenanceOptions {
  /** Plain bytes per sealed frame (default 4 MiB). */
  readonly frameBytes?: number | undefined
  /** Compression level of the sealed frames (default 6; -5..9). */
  readonly level?: number | undefined
  /** Crash-test seam: called at the publish points and at `plain-unlinked` / `renamed`. */
  readonly hooks?: { at(point: string): Promise<void> | void } | undefined
}

/** The JSONL `compress` capability: the port's, taking {@link JsonlCompressOptions}. */
export interface JsonlCompressCapability extends CompressCapability {
  compress(
    id: string,
    options?: JsonlCompressOptions,
  ): Promise<{ readonly changed: boolean; readonly details?: Readonly<Record<string, unknown>> }>
}

/** What the maintenance capabilities need from the backend. */
export interface MaintenanceContext {
  readonly fs: FsOps
  readonly root: string
  readonly limits: StoreLimits
  /** Writer-lock settings, with the backend's `randomHex` (temp names) and `timeoutMs: 0`. */
  readonly lock: Partial<LockOptions> & { readonly randomHex: (byteCount: number) => string }
  readonly registry: EventRegistry
  /** Throws `BACKEND_CLOSED` after the backend's close. */
  readonly assertOpen: () => void
}

/** The file access of maintenance, with the writer-lock settings. */
interface MaintenanceAccess extends AccessContext {
  readonly lock: MaintenanceContext['lock']
}

function checkedId(id: string): string {
  try {
    return assertSessionId(id)
  } catch (error) {
    throw toPortError(error, { sessionId: id, action: `use session id ${JSON.stringify(id)}` })
  }
}

function reporter(
  options: MaintenanceOptions | undefined,
): ((progress: BackendProgress) => void) | undefined {
  const onProgress = options?.onProgress
  return onProgress === undefined ? undefined : (progress) => onProgress(progress)
}

/**
 * The `compress`, `migrate` and `quarantine` capabilities of a JSONL root.
 *
 * @param context - File system, root, limits, lock settings, registry.
 * @returns The capabilities.
 */
export function maintenanceCapabilities(context: MaintenanceContext): {
  readonly compress: JsonlCompressCapability
  readonly migrate: MigrateCapability
  readonly quarantine: QuarantineCapability
} {
  const access: MaintenanceAccess = { ...context, logger: processWarnings }
  return {
    compress: {
      async compress(id, options) {
        context.assertOpen()
        const checked = checkedId(id)
        throwIfAborted(options?.signal, `Compressing session ${checked}`, checked)
        const report = reporter(options)
        try {
          const result = await compress(access, checked, {
            ...(options?.frameBytes === undefined ? {} : { frameBytes: options.frameBytes }),
            ...(options?.level === undefined ? {} : { level: options.level }),
            ...(options?.hooks === undefined ? {} : { hooks: options.hooks }),
            ...(report === undefined
              ? {}
              : {
                  onProgress: (progress) =>
                    report({ phase: progress.phase, done: progress.bytesRead, total: progress.bytesTotal }),
                }),
          })
          return { changed: result.outcome !== 'up-to-date', details: { ...result } }
        } catch (error) {
          throw toPortError(error, { sessionId: checked, action: `compress session ${checked}` })
        }
      },
    },
    migrate: {
      async needsMigration(id, options) {
        context.assertOpen()
        const checked = checkedId(id)
        throwIfAborted(options?.signal, `Checking session ${checked}`, checked)
        const directory = await sessionDirectory(context.fs, context.root, checked)
        const generations = await listGenerations(context.fs, directory).catch((error: unknown) => {
          throw toPortError(error, { sessionId: checked, action: `list the logs of session ${checked}` })
        })
        return generations.length > 0 && !generations.some((generation) => generation.version === 4)
      },
      async migrate(id, options) {
        context.assertOpen()
        const checked = checkedId(id)
        throwIfAborted(options?.signal, `Migrating session ${checked}`, checked)
        const report = reporter(options)
        try {
          const result = await migrate(access, checked, {
            dryRun: options?.dryRun === true,
            ...(report === undefined
              ? {}
              : {
                  onProgress: (progress) =>
                    report({
                      phase: progress.phase,
                      done: progress.eventsDone,
                      ...(progress.eventsTotal === null ? {} : { total: progress.eventsTotal }),
                    }),
                }),
          })
          return { changed: result.outcome === 'migrated', details: { ...result } }
        } catch (error) {
          throw toPortError(error, { sessionId: checked, action: `migrate session ${checked}` })
        }
      },
    },
    quarantine: {
      listQuarantine: (id, options) => listQuarantine(context, id, options),
    },
  }
}

async function listQuarantine(
  context: MaintenanceContext,
  id: string,
  options: SignalOptions | undefined,
): Promise<readonly QuarantineRecord[]> {
  context.assertOpen()
  const checked = checkedId(id)
  throwIfAborted(options?.signal, `Listing the quarantine of session ${checked}`, checked)
  const directory = await sessionDirectory(context.fs, context.root, checked)
  const logNames = [sessionLog(checked, 'plain').name, sessionLog(checked, 'zstd').name]
  const records: QuarantineRecord[] = []
  try {
    for (const name of (await context.fs.readdir(directory)).sort()) {
      if (!logNames.some((logName) => isQuarantineFileName(logName, name))) continue
      try {
        const stats = await context.fs.lstat(join(directory, name))
        if (!stats.isFile()) continue
        records.push({ name: `${checked}/${name}`, bytes: stats.size, createdAt: stats.mtime.toISOString() })
      } catch (error) {
        if (errnoOf(error) !== 'ENOENT') throw error
      }
    }
  } catch (error) {
    throw toPortError(error, { sessionId: checked, action: `list the quarantine of session ${checked}` })
  }
  return records
}

/** Compresses (plain -> zstd) or reseals one session, after the version check made before any lock. */
async function compress(
  ctx: MaintenanceAccess,
  id: string,
  options: CompressOptions,
): Promise<CompressResult> {
  // Only a v4 log is compressed: an older generation is migrated first, by its own capability.
  const older = await olderGeneration(ctx, id)
  if (older !== null) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.UNSUPPORTED,
      sessionId: id,
      message: `Cannot compress session ${id}: it is stored in an older format (${id}/${older.source.file}, format v${older.source.version}), expected a v4 log; migrate it first (capabilities.migrate). Nothing was written.`,
      details: { capability: 'migrate', fromVersion: older.source.version },
    })
  }
  // V1: refuse a newer version before taking the lock or writing anything.
  {
    const { handle, adapter } = await openCurrentLog(ctx, id)
    try {
      const peek = await peekHeader(ctx, { handle, adapter, id })
      if (peek.damage !== null && isRefusal(peek.damage)) throw peek.damage
    } finally {
      await handle.close().catch(() => undefined)
    }
  }
  const directory = await checkSessionDirectory(ctx, id, { write: true })
  return compressSession(
    {
      fs: ctx.fs,
      directory,
      id,
      limits: ctx.limits,
      registry: ctx.registry,
      logger: ctx.logger,
      lock: ctx.lock,
      randomHex: ctx.lock.randomHex,
    },
    options,
  )
}

/** Publishes the v4 generation of a session whose current one is older (or, with `dryRun`, migrates it in memory). */
async function migrate(
  ctx: MaintenanceAccess,
  id: string,
  options: {
    readonly dryRun: boolean
    readonly onProgress?: ((progress: MigrationProgress) => void) | undefined
  },
): Promise<MigrationReport> {
  const { dryRun } = options
  const target = `${id}/${LOG_FILE_NAME}`
  const older = await olderGeneration(ctx, id)
  if (older === null) return upToDate(ctx, id, dryRun)
  if (dryRun) {
    const { migration, events } = await readOlderGeneration(generationContext(ctx), {
      directory: older.directory,
      id,
      source: older.source,
      onProgress: options.onProgress,
    })
    return {
      id,
      dryRun,
      outcome: 'dry-run',
      from: migration.source.file,
      fromVersion: older.source.version,
      to: target,
      toVersion: SESSION_FORMAT_VERSION,
      events,
      lastSeq: migration.lastSeq,
      ignoredUnknown: migration.source.ignoredUnknown,
      bytesWritten: 0,
      sha256: null,
      sourceTornTail: migration.source.tornTail,
      header: migration.header,
    }
  }
  const directory = await checkSessionDirectory(ctx, id, { write: true })
  const lock = await acquireWriterLock(ctx.fs, directory, ctx.lock)
  let result
  try {
    await removeStaleTemps(ctx.fs, directory)
    result = await migrateSession({
      mode: 'write',
      fs: ctx.fs,
      directory,
      sessionId: id,
      source: older.source,
      registry: ctx.registry,
      limits: ctx.limits,
      lock,
      randomHex: ctx.lock.randomHex,
      ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
    })
  } catch (error) {
    throw toStoreError(error, {
      op: 'migrate',
      file: `${id}/${older.source.file}`,
      fallback: JsonlErrorCode.WRITE_FAILED,
    })
  } finally {
    await lock.release().catch(() => undefined)
  }
  const { source } = result
  return {
    id,
    dryRun,
    outcome: result.outcome === 'published' ? 'migrated' : result.outcome,
    from: source === null ? null : source.file,
    fromVersion: source === null ? null : source.generation.version,
    to: target,
    toVersion: SESSION_FORMAT_VERSION,
    events: source === null ? null : result.lastSeq + 1,
    lastSeq: source === null ? null : result.lastSeq,
    ignoredUnknown: source === null ? null : source.ignoredUnknown,
    bytesWritten: result.outcome === 'published' ? result.size : 0,
    sha256: result.outcome === 'published' ? result.sha256 : null,
    sourceTornTail: source === null ? null : source.tornTail,
    header: result.header,
  }
}

/** `migrate` of a session already in the current format: checked for a fork of its source, nothing written. */
async function upToDate(ctx: AccessContext, id: string, dryRun: boolean): Promise<MigrationReport> {
  const { handle, directory, adapter } = await openCurrentLog(ctx, id)
  let header: SessionHeader | null
  try {
    const peek = await peekHeader(ctx, { handle, adapter, id })
    if (peek.damage !== null) throw peek.damage
    header = peek.header
  } finally {
    await handle.close().catch(() => undefined)
  }
  const fork = await generationFork(ctx, header, { id, directory })
  if (fork !== null) throw fork
  return {
    id,
    dryRun,
    outcome: 'up-to-date',
    from: null,
    fromVersion: null,
    to: `${id}/${LOG_FILE_NAME}`,
    toVersion: SESSION_FORMAT_VERSION,
    events: null,
    lastSeq: null,
    ignoredUnknown: null,
    bytesWritten: 0,
    sha256: null,
    sourceTornTail: null,
    header,
  }
}
