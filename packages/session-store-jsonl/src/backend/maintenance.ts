/**
 * The JSONL backend's maintenance capabilities: `compress` runs `compressSession` and
 * `migrate` runs `migrateSession` in write mode (each takes the writer lock itself, never
 * waiting, so a live lease makes them `SESSION_LOCKED`; a dry run migrates in memory and
 * writes nothing), `quarantine` lists the `<log>.torn-<offset>` files acquire made.
 */
import { join } from 'node:path'

import { SESSION_FORMAT_VERSION } from '@agent-ledger/session-events'
import type { EventRegistry, LoggedEvent, SessionHeader } from '@agent-ledger/session-events'
import { createProjection, ProjectionError } from '@agent-ledger/session-projection'
import type { Projection } from '@agent-ledger/session-projection'
import type {
  BackendProgress,
  CompressCapability,
  MaintenanceOptions,
  MigrateCapability,
  QuarantineCapability,
  QuarantineRecord,
  SignalOptions,
} from '@agent-ledger/session-store'

import { compressSession } from '../compress-session.ts'
import type { CompressOptions, CompressResult } from '../compress-types.ts'
import { errnoOf, toStoreError } from '../fs-errors.ts'
import type { FsOps } from '../fs-ops.ts'
import { listGenerations } from '../generations.ts'
import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import { isQuarantineFileName, LOG_FILE_NAME } from '../layout.ts'
import type { StoreLimits } from '../limits.ts'
import type { TornTail } from '../log-scanner.ts'
import { migrateSession } from '../migration/migrate-session.ts'
import type { MigrationProgress, MigrationReadResult } from '../migration/migration-context.ts'
import { removeStaleTemps } from '../publish.ts'
import { acquireWriterLock } from '../writer-lock.ts'
import type { LockOptions } from '../writer-lock.ts'
import { sessionLog } from '../zstd-session.ts'
import { checkedSessionId as checkedId, throwIfAborted, toPortError } from './port-errors.ts'
import { migrated } from './older-read.ts'
import { sessionDirectory } from './session-dirs.ts'
import {
  generationFork,
  olderGeneration,
  peekHeader,
  processWarnings,
  writableSessionDirectory,
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

/** What `capabilities.migrate.migrate` did (or, with `dryRun`, would do): its `details`. */
export interface MigrationReport {
  readonly id: string
  /** True: the migration ran in memory (read mode) and nothing was written. */
  readonly dryRun: boolean
  /**
   * `migrated`: the current-format generation was published now; `already-published`:
   * another process published the same bytes first; `up-to-date`: the current generation
   * already has the current format (nothing was read beyond its header, nothing written);
   * `dry-run`: an older generation was migrated in memory and validated, nothing written.
   */
  readonly outcome: 'migrated' | 'already-published' | 'up-to-date' | 'dry-run'
  /** The generation migrated from, relative to the store root (null when `up-to-date`). */
  readonly from: string | null
  /** Its format version (null when `up-to-date`). */
  readonly fromVersion: number | null
  /** The current-format generation, relative to the store root: written, found, or that would be written. */
  readonly to: string
  /** The current format version (4). */
  readonly toVersion: number
  /** Events in the current-format generation (null when `up-to-date`: the log is not scanned). */
  readonly events: number | null
  /** Seq of its last event in the new numbering, -1 when none (null when `up-to-date`). */
  readonly lastSeq: number | null
  /** Ignorable unknown events carried verbatim (RELIABILITY V5); null when `up-to-date`. */
  readonly ignoredUnknown: number | null
  /** Bytes written (0 for a dry run, `up-to-date` and `already-published`). */
  readonly bytesWritten: number
  /** SHA-256 of the bytes written, or null when nothing was written. */
  readonly sha256: string | null
  /** Unacknowledged bytes at the end of the source: left in it (old generations are never modified), not migrated. */
  readonly sourceTornTail: TornTail | null
  /** The header of the current-format generation (null for an up-to-date `.zstd` log, not decoded here). */
  readonly header: SessionHeader | null
}

/** Applies a migrated event to a projection, naming the source file when the session rules refuse it. */
function applyMigrated(projection: Projection, event: LoggedEvent, migration: MigrationReadResult): void {
  try {
    projection.apply(event)
  } catch (error) {
    const shift = migration.source.generation.version === 0 ? 1 : 0
    const sourceSeq = event.seq + shift
    throw new JsonlStoreError({
      code: JsonlErrorCode.INVALID_EVENT,
      message: `Event seq ${sourceSeq} of ${migration.source.file} breaks the session rules once migrated (seq ${event.seq}): ${error instanceof Error ? error.message : String(error)}.`,
      file: migration.source.file,
      seq: sourceSeq,
      lastGoodSeq: sourceSeq - 1,
      details: {
        projectionCode: ProjectionError.is(error) ? error.code : null,
        type: event.type,
        migratedSeq: event.seq,
      },
      cause: error,
    })
  }
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
  // V1: refuse a newer version before taking the lock or writing anything (and an older
  // generation: `UNSUPPORTED`, migrate it first, from the open).
  await peekHeader(ctx, id)
  const directory = await writableSessionDirectory(ctx, id)
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
    // Every event migrated in memory and applied to a projection (the session rules checked).
    const migration = await migrated(ctx, id, options.onProgress)
    const projection = createProjection({ registry: ctx.registry })
    let events = 0
    for await (const event of migration.events) {
      applyMigrated(projection, event, migration)
      events += 1
    }
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
  const directory = await writableSessionDirectory(ctx, id)
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
  const { header, directory } = await peekHeader(ctx, id, true)
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
