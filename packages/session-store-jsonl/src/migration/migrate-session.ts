/*
 * Migration of a session's current generation to the current format (issue 5).
 *
 * Two passes over the source, both streaming:
 *   1. scan: every check of the source format (a damaged source, or an unknown event type
 *      without `ignorable`, is refused before anything is written), while hashing every byte:
 *      this fixes `migratedFrom {file, version, sha256, lastSeq, bytes}` for the new header,
 *      which is the first line to write.
 *   2. migrate: read the good prefix again through the v0 to v4 step; the bytes must hash
 *      to the same sha256, or the migration fails (the source changed under us).
 * Read mode stops there and hands the events out, writing nothing. Write mode streams the
 * new generation into `publishFile` (temp, fsync, verify by reading back through the
 * store's scanner and projection, source identity check, link, directory fsync).
 * The source file is only ever opened read-only: historical generations are immutable.
 */
import { join } from 'node:path'

import { SESSION_FORMAT_VERSION } from '@agent-ledger/session-events'
import type { LoggedEvent, SessionHeader } from '@agent-ledger/session-events'

import { errnoOf, toStoreError } from '../fs-errors.ts'
import { parseGenerationFileName } from '../generations.ts'
import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import type {
  MigrateReadOptions,
  MigrateWriteOptions,
  MigrationReadResult,
  MigrationWriteResult,
} from './migration-context.ts'
import { display } from './migration-context.ts'
import { scanSource, migratedStream, peekV4Header, resolveSettings } from './migration-source.ts'
import { targetAlreadyThere, publishMigration, upToDate } from './publish-migration.ts'

/**
 * Migrates a session's generation to the current format.
 *
 * **Read mode** (`mode: 'read'`): scans the source, then returns the new header and a
 * stream of migrated, validated events. Writes nothing: no lock, no temp file, no chmod.
 *
 * **Write mode** (`mode: 'write'`): publishes `session.v<target>.jsonl` by link (see
 * {@link publishFile}); the source is never opened for writing. Re-running is a no-op
 * (`up-to-date`) once the current generation has the target version. Call it under the
 * session's writer lock (pass it as `lock`); without the lock, two racing migrations still
 * leave exactly one generation (the loser accepts the winner's identical bytes).
 *
 * Memory: bounded by a read chunk, one batch of events and, in write mode, the projection
 * the verification builds (what any open of the session builds).
 *
 * @param options - The session directory, the mode and seams; see {@link MigrateSessionOptions}.
 * @returns The read stream, or what was published.
 * @throws {@link JsonlStoreError} `INVALID_SESSION_ID`, `SESSION_NOT_FOUND`, `INVALID_HEADER`, damage codes of the
 *   source (`CORRUPT_LINE`, `SEQ_GAP`...), `UNKNOWN_EVENT_TYPE` (V6: an unknown type without `ignorable`),
 *   `INVALID_EVENT` (an event that has no valid v4 form), `NO_MIGRATION_PATH` (a newer, zstd or unreadable source),
 *   `GENERATION_VERSION_MISMATCH`, `MIXED_ENCODINGS`, `MIGRATION_FAILED`, `MIGRATION_CONFLICT`, `GENERATION_FORK`.
 */
export async function migrateSession(options: MigrateReadOptions): Promise<MigrationReadResult>
export async function migrateSession(options: MigrateWriteOptions): Promise<MigrationWriteResult>
export async function migrateSession(
  options: MigrateReadOptions | MigrateWriteOptions,
): Promise<MigrationReadResult | MigrationWriteResult> {
  const { settings, source: generation, target } = await resolveSettings(options)
  const targetGeneration = parseGenerationFileName(target)!
  if (generation.version > SESSION_FORMAT_VERSION) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.NO_MIGRATION_PATH,
      message: `Cannot migrate ${display(settings, generation.file)} to v${SESSION_FORMAT_VERSION}: expected an older generation, found a newer one (v${generation.version}).`,
      file: display(settings, generation.file),
      details: { from: generation.version, to: SESSION_FORMAT_VERSION, reason: 'newer-source' },
    })
  }
  if (options.mode === 'write' && generation.version === SESSION_FORMAT_VERSION) {
    // Re-running after a migration (or on a session already in the current format): nothing to do.
    return upToDate(settings, generation.file, await peekV4Header(settings, generation))
  }
  if (options.mode === 'write') {
    const existing = await settings.fs.lstat(join(settings.directory, target)).catch((error: unknown) => {
      if (errnoOf(error) === 'ENOENT') return null
      throw toStoreError(error, {
        op: 'stat',
        file: display(settings, target),
        fallback: JsonlErrorCode.READ_FAILED,
      })
    })
    if (existing !== null && existing.isFile() && !existing.isSymbolicLink()) {
      return targetAlreadyThere(settings, { generation, target: targetGeneration })
    }
  }
  const scanned = await scanSource(settings, generation)
  // v0's header took seq 0: the events move down by one.
  const lastSeq = scanned.scan.lastSeq - (scanned.scan.version === 0 ? 1 : 0)
  if (options.mode === 'read') {
    const stream = migratedStream(settings, { ...scanned, validate: true })
    async function* events(): AsyncGenerator<LoggedEvent, void, undefined> {
      for await (const batch of stream.records) {
        for (const record of batch) yield record.event as unknown as LoggedEvent
      }
    }
    async function* lines(): AsyncGenerator<readonly string[], void, undefined> {
      for await (const batch of stream.records) yield batch.map((record) => record.line.toString('utf8'))
    }
    return {
      mode: 'read',
      source: scanned.source,
      header: stream.header as SessionHeader,
      headerLine: stream.headerLine.toString('utf8'),
      lastSeq,
      events: events(),
      lines: lines(),
    }
  }
  return publishMigration(settings, { options, scanned, target, lastSeq })
}
