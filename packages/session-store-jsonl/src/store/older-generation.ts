import type { SessionHeader } from '@agent-ledger/session-events'

import type { JsonlStoreError } from '../jsonl-store-error.ts'
import type { WriterLock } from '../writer-lock.ts'
import type { GenerationFile } from '../generations.ts'
import { detectGenerationFork, migrateSession } from '../migration/migrate-session.ts'
import type { MigrationProgress, MigrationWriteResult } from '../migration/migrate-session.ts'
import { isOlderGeneration, readOlderGeneration, resolveCurrentGeneration } from '../store-generations.ts'
import type { GenerationStoreContext } from '../store-generations.ts'
import type { SessionReadResult } from './api.ts'
import { ensureRoot, checkSessionDirectory } from './context.ts'
import type { StoreContext } from './context.ts'

export function generationContext(ctx: StoreContext): GenerationStoreContext {
  return { fs: ctx.fs, registry: ctx.registry, limits: ctx.limits }
}

/**
 * The session's current generation when it is older than v4 (read through migration),
 * else null. Checks the versions first: VERSION_TOO_NEW (by name or header) and
 * GENERATION_VERSION_MISMATCH are thrown before anything is locked or written.
 */
export async function olderGeneration(
  ctx: StoreContext,
  id: string,
  options: { readonly peek?: boolean } = {},
): Promise<{ readonly directory: string; readonly source: GenerationFile } | null> {
  await ensureRoot(ctx, false)
  const directory = await checkSessionDirectory(ctx, id, { write: false })
  const picked = await resolveCurrentGeneration(generationContext(ctx), {
    directory,
    id,
    ...(options.peek === undefined ? {} : { peek: options.peek }),
  })
  return isOlderGeneration(picked.current) ? { directory, source: picked.current } : null
}

/** A read-only open of an older generation: migrated in memory, nothing written. */
export async function readOlder(
  ctx: StoreContext,
  id: string,
  older: { readonly directory: string; readonly source: GenerationFile },
): Promise<SessionReadResult> {
  const { migration, projection, events } = await readOlderGeneration(generationContext(ctx), {
    directory: older.directory,
    id,
    source: older.source,
  })
  const { source } = migration
  return {
    header: migration.header,
    headerMissing: false,
    projection,
    lastSeq: migration.lastSeq,
    tornTail: source.tornTail,
    error: null,
    pendingToolCalls: projection.repairState.pendingCalls,
    stats: {
      goodLines: events + 1,
      events,
      ignoredUnknown: source.ignoredUnknown,
      projection: projection.stats,
    },
    file: source.file,
    bytes: source.migratedFrom.bytes,
    checkpoint: null,
  }
}

/**
 * I7: checks the generation a migrated header names. `read` compares sizes (cheap on
 * every read), `write` sizes and sha256. Returns the GENERATION_FORK error, or null; a
 * missing source (deleted by hand) is a warning on write.
 */
export async function generationFork(
  ctx: StoreContext,
  header: SessionHeader | null,
  where: { readonly id: string; readonly directory: string; readonly mode: 'read' | 'write' },
): Promise<JsonlStoreError | null> {
  if (header?.migratedFrom === undefined) return null
  const { id, directory, mode } = where
  const check = await detectGenerationFork({
    fs: ctx.fs,
    directory,
    sessionId: id,
    header,
    registry: ctx.registry,
    limits: ctx.limits,
    ...(mode === 'read' ? { check: 'size' as const } : {}),
  })
  if (check.status === 'missing' && mode === 'write') {
    ctx.logger.warn(
      `${check.file}, the generation ${id} was migrated from, is gone: it cannot be checked for events appended after the migration.`,
      { id, file: check.file },
    )
  }
  return check.status === 'forked' ? check.error : null
}

/** Publishes the v4 generation of an older one, under the writer lock the caller holds. */
export async function migrateUnderLock(
  ctx: StoreContext,
  request: {
    readonly id: string
    readonly directory: string
    readonly source: GenerationFile
    readonly lock: WriterLock
    readonly onProgress?: ((progress: MigrationProgress) => void) | undefined
  },
): Promise<MigrationWriteResult> {
  return migrateSession({
    mode: 'write',
    fs: ctx.fs,
    directory: request.directory,
    sessionId: request.id,
    source: request.source,
    registry: ctx.registry,
    limits: ctx.limits,
    lock: request.lock,
    randomHex: ctx.randomHex,
    ...(request.onProgress === undefined ? {} : { onProgress: request.onProgress }),
  })
}
