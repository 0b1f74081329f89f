/**
 * The JSONL backend's maintenance capabilities, wrapping the store's existing code:
 * `compress` and `migrate` run the `SessionStoreImpl` operations of the same root (each
 * takes the writer lock itself, so a live lease makes them `SESSION_LOCKED`), `quarantine`
 * lists the `<log>.torn-<offset>` files acquire made.
 */
import { join } from 'node:path'

import type { EventRegistry } from '@agent-ledger/session-events'
import type {
  BackendProgress,
  CompressCapability,
  MaintenanceOptions,
  MigrateCapability,
  QuarantineCapability,
  QuarantineRecord,
  SignalOptions,
} from '@agent-ledger/session-store'

import { errnoOf } from '../fs-errors.ts'
import type { FsOps } from '../fs-ops.ts'
import { listGenerations } from '../generations.ts'
import { isQuarantineFileName } from '../layout.ts'
import type { StoreLimits } from '../limits.ts'
import { createSessionStore } from '../session-store.ts'
import { assertSessionId } from '../session-id.ts'
import type { LockOptions } from '../writer-lock.ts'
import { sessionLog } from '../zstd-session.ts'
import { throwIfAborted, toPortError } from './port-errors.ts'
import { sessionDirectory } from './session-dirs.ts'

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
  readonly lock: Partial<LockOptions>
  readonly registry: EventRegistry
  /** Throws `BACKEND_CLOSED` after the backend's close. */
  readonly assertOpen: () => void
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
  // One store of the same root, for the operations it already implements (never for writes).
  const store = createSessionStore({
    root: context.root,
    fs: context.fs,
    limits: context.limits,
    lock: context.lock,
    registry: context.registry,
  })
  return {
    compress: {
      async compress(id, options) {
        context.assertOpen()
        const checked = checkedId(id)
        throwIfAborted(options?.signal, `Compressing session ${checked}`, checked)
        const report = reporter(options)
        try {
          const result = await store.compress(checked, {
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
          const result = await store.migrate(checked, {
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
