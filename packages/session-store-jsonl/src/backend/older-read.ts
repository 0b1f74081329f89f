/**
 * Reading a session whose only log is an older generation (a v0 `session.jsonl`) through
 * the port: migrated in memory by the `migrate`
 * capability's own code (`migrateSession` in read mode: every source line checked, every
 * event validated), handed to the core as the exact v4 lines a migration would write.
 * Nothing is written: no lock, no temp file, the old file untouched. A write open (`acquire`)
 * first publishes the v4 generation through the `migrate` capability, then appends there.
 */
import type { EventRegistry } from '@agent-ledger/session-events'
import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type { AbortSignalLike, StoredHeader, StoredLine, TornTailInfo } from '@agent-ledger/session-store'

import type { FsOps } from '../fs-ops.ts'
import type { StoreLimits } from '../limits.ts'
import { migrateSession } from '../migration/migrate-session.ts'
import type { MigrationProgress, MigrationReadResult } from '../migration/migration-context.ts'
import { throwIfAborted, toPortError } from './port-errors.ts'
import { sessionDirectory } from './session-dirs.ts'

/** What reading an older generation needs. */
export interface OlderReadContext {
  readonly fs: FsOps
  readonly root: string
  readonly limits: StoreLimits
  readonly registry: EventRegistry
}

/**
 * True for the error `openLog` throws when a session has only an older generation.
 *
 * @param error - What `openLog` threw.
 * @returns Whether the session can be read through migration.
 */
export function isOlderGeneration(error: unknown): boolean {
  return (
    SessionStoreError.is(error, SessionStoreErrorCode.UNSUPPORTED) &&
    (error.details as { capability?: unknown }).capability === 'migrate'
  )
}

/**
 * Migrates a session whose current generation is older in memory (`migrateSession` in read
 * mode: every source line checked; the events are validated as they are iterated).
 *
 * @param context - File system, root, limits, registry.
 * @param id - The checked session id.
 * @param onProgress - The migration's progress, if wanted.
 * @returns The migration: the header and lines a migration would write, the source.
 */
export async function migrated(
  context: OlderReadContext,
  id: string,
  onProgress?: (progress: MigrationProgress) => void,
): Promise<MigrationReadResult> {
  const directory = await sessionDirectory(context.fs, context.root, id)
  try {
    return await migrateSession({
      mode: 'read',
      fs: context.fs,
      directory,
      sessionId: id,
      registry: context.registry,
      limits: context.limits,
      ...(onProgress === undefined ? {} : { onProgress }),
    })
  } catch (error) {
    throw toPortError(error, { sessionId: id, action: `read the older generation of session ${id}` })
  }
}

/** The migrated header line, where an older generation has one. */
export async function readOlderHeader(context: OlderReadContext, id: string): Promise<StoredHeader> {
  const migration = await migrated(context, id)
  return { line: migration.headerLine, location: { file: migration.source.file, line: 1, offset: 0 } }
}

/** The migrated event lines `fromSeq..toSeq`, and the torn tail of the source (read, never repaired). */
export async function* readOlderLines(
  context: OlderReadContext,
  id: string,
  range: {
    readonly fromSeq: number
    readonly toSeq?: number | undefined
    readonly signal?: AbortSignalLike | undefined
    readonly onTornTail?: ((tail: TornTailInfo) => void) | undefined
  },
): AsyncGenerator<StoredLine, void, undefined> {
  const migration = await migrated(context, id)
  const file = migration.source.file
  let seq = 0
  try {
    for await (const batch of migration.lines) {
      throwIfAborted(range.signal, `Reading session ${id}`, id)
      for (const line of batch) {
        if (range.toSeq !== undefined && seq > range.toSeq) return
        if (seq >= range.fromSeq) yield { seq, line, location: { file } }
        seq += 1
      }
    }
  } catch (error) {
    throw toPortError(error, { sessionId: id, action: `read the older generation of session ${id}` })
  }
  const tail = migration.source.tornTail
  if (tail !== null && range.toSeq === undefined) {
    range.onTornTail?.({ reason: tail.reason, bytes: tail.bytes, location: { file, offset: tail.offset } })
  }
}

/** The head of an older generation: its migrated event count and last line's checksum. */
export async function olderHead(
  context: OlderReadContext,
  id: string,
): Promise<{ readonly nextSeq: number; readonly lastCrc: string | null }> {
  let nextSeq = 0
  let lastCrc: string | null = null
  for await (const stored of readOlderLines(context, id, { fromSeq: 0 })) {
    nextSeq = stored.seq + 1
    lastCrc = stored.line.slice(-10, -2)
  }
  return { nextSeq, lastCrc }
}
