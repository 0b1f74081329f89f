/*
 * The backend's side of generations (issue 5): which generation a session's reads open,
 * the version checks made before any lock is taken (RELIABILITY V1, a file name whose
 * version differs from its header's), and read-only access to a session whose current
 * generation is older than the current format: migrated in memory, writing nothing (no
 * lock, no temp file, no chmod). The `migrate` capability publishes the new generation with
 * `migrateSession` in write mode, under the writer lock (src/backend/maintenance.ts).
 */
import { SESSION_FORMAT_VERSION } from '@agent-ledger/session-events'
import type { EventRegistry, LoggedEvent, SessionHeader } from '@agent-ledger/session-events'
import { createProjection, ProjectionError } from '@agent-ledger/session-projection'
import type { Projection } from '@agent-ledger/session-projection'

import type { FsOps } from './fs-ops.ts'
import {
  assertGenerationVersion,
  generationPath,
  listGenerations,
  peekHeaderVersion,
  pickCurrentGeneration,
} from './generations.ts'
import type { CurrentGeneration, GenerationFile } from './generations.ts'
import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'
import { LOG_FILE_NAME } from './layout.ts'
import type { StoreLimits } from './limits.ts'
import type { TornTail } from './log-scanner.ts'
import { migrateSession } from './migration/migrate-session.ts'
import type { MigrationProgress, MigrationReadResult } from './migration/migrate-session.ts'

/** What the store hands to these helpers. */
export interface GenerationStoreContext {
  readonly fs: FsOps
  readonly registry: EventRegistry
  readonly limits: StoreLimits
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

/**
 * The name of a generation of session `id` as errors and reports show it.
 *
 * @param id - The session id.
 * @param generation - The generation.
 * @returns `<id>/<file>`, relative to the store root.
 */
function generationDisplay(id: string, generation: GenerationFile): string {
  return `${id}/${generation.file}`
}

function versionTooNew(file: string, found: number): JsonlStoreError {
  return new JsonlStoreError({
    code: JsonlErrorCode.VERSION_TOO_NEW,
    message: `${file} was written by a newer agent-ledger (format version ${found}, this library reads up to ${SESSION_FORMAT_VERSION}): upgrade @agent-ledger/session-store-jsonl to open it.`,
    file,
    line: 1,
    offset: 0,
    details: { found, expected: SESSION_FORMAT_VERSION, supportedMax: SESSION_FORMAT_VERSION },
  })
}

/**
 * Picks a session's current generation (the numerically highest canonical name) and checks
 * its version before anything is locked or written: a newer version (by name or by header)
 * is `VERSION_TOO_NEW`, a header whose version differs from its file name is
 * `GENERATION_VERSION_MISMATCH`. Reads the directory listing and, for a plain generation,
 * line 1 only. A header that cannot be peeked (unreadable, not a number) is left to the
 * format's own reader, which reports it precisely.
 *
 * @param context - File system, registry and limits.
 * @param request - The session directory and id.
 * @returns The current generation and the rest of the listing.
 * @throws {@link JsonlStoreError} `SESSION_NOT_FOUND` (no generation), `MIXED_ENCODINGS`,
 *   `VERSION_TOO_NEW`, `GENERATION_VERSION_MISMATCH`, `ACCESS_DENIED` / `READ_FAILED` from the listing.
 */
export async function resolveCurrentGeneration(
  context: GenerationStoreContext,
  request: { readonly directory: string; readonly id: string },
): Promise<CurrentGeneration> {
  const { directory, id } = request
  const picked = pickCurrentGeneration(await listGenerations(context.fs, directory), id)
  if (picked === null) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.SESSION_NOT_FOUND,
      message: `Session ${id} was not found: expected ${id}/${LOG_FILE_NAME} (or an older generation such as ${id}/session.jsonl), found no session log.`,
      file: `${id}/${LOG_FILE_NAME}`,
    })
  }
  const { current } = picked
  const file = generationDisplay(id, current)
  let headerVersion: number | null = null
  if (current.encoding === 'plain') {
    const peek = await peekHeaderVersion(context.fs, generationPath(directory, current), {
      maxLineBytes: Math.min(context.limits.maxLineBytes, 1024 * 1024),
      display: file,
    }).catch(() => null)
    if (peek?.kind === 'version' && typeof peek.version === 'number' && Number.isInteger(peek.version)) {
      headerVersion = peek.version
    }
  }
  if (headerVersion !== null && headerVersion > SESSION_FORMAT_VERSION)
    throw versionTooNew(file, headerVersion)
  if (current.version > SESSION_FORMAT_VERSION) throw versionTooNew(file, headerVersion ?? current.version)
  if (headerVersion !== null) assertGenerationVersion(current, headerVersion, id)
  return picked
}

/**
 * True when a generation is older than the format this library writes: it is read through
 * migration (in memory when read-only, published as a new generation on a write open).
 *
 * @param generation - The current generation.
 * @returns True for a version below `SESSION_FORMAT_VERSION`.
 */
export function isOlderGeneration(generation: GenerationFile): boolean {
  return generation.version < SESSION_FORMAT_VERSION
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

/** A session read through migration: the migration (header, source) and the projection of every migrated event. */
export interface OlderGenerationRead {
  readonly migration: MigrationReadResult
  readonly projection: Projection
  /** Migrated events applied. */
  readonly events: number
}

/**
 * Reads a session whose current generation is older than the current format: migrates it
 * in memory (validating every event) and applies the events to a fresh projection. Writes
 * nothing: no lock, no temp file, no chmod.
 *
 * @param context - File system, registry and limits.
 * @param request - The session directory, id, the generation, and an optional progress callback.
 * @returns The migration and the projection.
 * @throws {@link JsonlStoreError} the source's damage codes (`CORRUPT_LINE`, `SEQ_GAP`...), `INVALID_HEADER`,
 *   `UNKNOWN_EVENT_TYPE`, `INVALID_EVENT` (no v4 form, or a session rule broken), `NO_MIGRATION_PATH`,
 *   `GENERATION_VERSION_MISMATCH`, `READ_FAILED`.
 */
export async function readOlderGeneration(
  context: GenerationStoreContext,
  request: {
    readonly directory: string
    readonly id: string
    readonly source: GenerationFile
    readonly onProgress?: ((progress: MigrationProgress) => void) | undefined
  },
): Promise<OlderGenerationRead> {
  const migration = await migrateSession({
    mode: 'read',
    fs: context.fs,
    directory: request.directory,
    sessionId: request.id,
    source: request.source,
    registry: context.registry,
    limits: context.limits,
    ...(request.onProgress === undefined ? {} : { onProgress: request.onProgress }),
  })
  const projection = createProjection({ registry: context.registry })
  let events = 0
  for await (const event of migration.events) {
    applyMigrated(projection, event, migration)
    events += 1
  }
  return { migration, projection, events }
}
