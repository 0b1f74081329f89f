import { SESSION_FORMAT_VERSION } from '@agent-ledger/session-events'
import type { SessionHeader } from '@agent-ledger/session-events'

import { toStoreError } from '../fs-errors.ts'
import { JsonlErrorCode } from '../jsonl-store-error.ts'
import { LOG_FILE_NAME } from '../layout.ts'
import { assertSessionId } from '../session-id.ts'
import { acquireWriterLock } from '../writer-lock.ts'
import type { MigrationProgress } from '../migration/migrate-session.ts'
import { removeStaleTemps } from '../publish.ts'
import { readOlderGeneration } from '../store-generations.ts'
import type { MigrationReport } from '../store-generations.ts'
import { compressSession } from '../compress-session.ts'
import type { CompressOptions, CompressResult } from '../compress-session.ts'
import { checkSessionDirectory, isRefusal } from './context.ts'
import type { StoreContext } from './context.ts'
import { openLog, peekHeader } from './log-access.ts'
import { generationContext, olderGeneration, generationFork, migrateUnderLock } from './older-generation.ts'

export async function compress(
  ctx: StoreContext,
  id: string,
  options: CompressOptions = {},
): Promise<CompressResult> {
  assertSessionId(id)
  // V1: refuse a newer version before taking the lock or writing anything.
  {
    const { handle, adapter } = await openLog(ctx, id, { write: false })
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
      randomHex: ctx.randomHex,
    },
    options,
  )
}

export async function migrate(
  ctx: StoreContext,
  id: string,
  options: {
    readonly dryRun?: boolean
    readonly onProgress?: (progress: MigrationProgress) => void
  } = {},
): Promise<MigrationReport> {
  assertSessionId(id)
  const dryRun = options.dryRun === true
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
    result = await migrateUnderLock(ctx, {
      id,
      directory,
      source: older.source,
      lock,
      onProgress: options.onProgress,
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
async function upToDate(ctx: StoreContext, id: string, dryRun: boolean): Promise<MigrationReport> {
  const { handle, directory, ...opened } = await openLog(ctx, id, { write: false })
  let header: SessionHeader | null
  try {
    const peek = await peekHeader(ctx, { handle, adapter: opened.adapter, id })
    if (peek.damage !== null) throw peek.damage
    header = peek.header
  } finally {
    await handle.close().catch(() => undefined)
  }
  const fork = await generationFork(ctx, header, { id, directory, mode: 'write' })
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
