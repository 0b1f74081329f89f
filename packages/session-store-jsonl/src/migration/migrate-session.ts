/*
 * Migration of a session's current generation to the current format (issue 5).
 *
 * Two passes over the source, both streaming:
 *   1. scan: every check of the source format (a damaged source, or an unknown event type
 *      without `ignorable`, is refused before anything is written), while hashing every byte:
 *      this fixes `migratedFrom {file, version, sha256, lastSeq, bytes}` for the new header,
 *      which is the first line to write.
 *   2. migrate: read the good prefix again through the chain of edges; the bytes must hash
 *      to the same sha256, or the migration fails (the source changed under us).
 * Read mode stops there and hands the events out, writing nothing. Write mode streams the
 * new generation into `publishFile` (temp, fsync, verify by reading back through the
 * store's scanner and projection, source identity check, link, directory fsync).
 * The source file is only ever opened read-only: historical generations are immutable.
 */
import { createHash } from 'node:crypto'
import { constants } from 'node:fs'
import { basename, join } from 'node:path'

import { coreEventRegistry, SESSION_FORMAT_VERSION } from '@agent-ledger/session-events'
import type { EventRegistry, LoggedEvent, MigratedFrom, SessionHeader } from '@agent-ledger/session-events'
import { createProjection } from '@agent-ledger/session-projection'

import { errnoOf, toStoreError } from '../fs-errors.ts'
import { nodeFsOps } from '../fs-ops.ts'
import type { FileHandleOps, FsOps } from '../fs-ops.ts'
import {
  generationFileName,
  listGenerations,
  parseGenerationFileName,
  pickCurrentGeneration,
} from '../generations.ts'
import type { GenerationFile } from '../generations.ts'
import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import { resolveLimits } from '../limits.ts'
import type { StoreLimits } from '../limits.ts'
import { V4_FORMAT } from '../log-format.ts'
import type { TornTail } from '../log-scanner.ts'
import { publishFile } from '../publish.ts'
import type { PublishHooks, SourceIdentity } from '../publish.ts'
import { readFileChunks, scanLog } from '../read-log.ts'
import type { ByteSource } from '../read-log.ts'
import { assertSessionId } from '../session-id.ts'
import { GENERATION_READERS, sourceChangedError } from './generation-readers.ts'
import type { GenerationReader, SourceScan } from './generation-readers.ts'
import { applyMigrationPath, findMigrationPath } from './migration-edge.ts'
import type { EdgeContext, MigrationEdge, VersionedRecord } from './migration-edge.ts'
import { MIGRATION_EDGES } from './migration-edges.ts'

/** What {@link MigrateSessionOptions.onProgress} receives. */
export interface MigrationProgress {
  /** `scan`: validating the source; `migrate`: writing (or, read mode, handing out) migrated events; `verify`: reading the staged file back; `publish`: linked into place. */
  readonly phase: 'scan' | 'migrate' | 'verify' | 'publish'
  /** Events processed in this phase so far. */
  readonly eventsDone: number
  /** Events the phase will process, once known (after the scan), else null. */
  readonly eventsTotal: number | null
  /** Source bytes read so far (staged bytes in `verify`). */
  readonly bytesRead: number
  /** Size of the source (of the staged file in `verify`). */
  readonly bytesTotal: number
}

/** Options shared by both modes of {@link migrateSession}. */
export interface MigrateSessionOptions {
  /** The file-system seam. Default: the real file system. */
  readonly fs?: FsOps
  /** The session directory (absolute). */
  readonly directory: string
  /** The session id; default the directory's name. Checked before any file-system call. */
  readonly sessionId?: string
  /** The generation to migrate; default the directory's current one ({@link pickCurrentGeneration}). */
  readonly source?: GenerationFile
  /** The format to migrate to; default `SESSION_FORMAT_VERSION` (4). */
  readonly targetVersion?: number
  /** Known event types; default the core types. */
  readonly registry?: EventRegistry
  readonly limits?: Partial<StoreLimits>
  /** The migration edges; default {@link MIGRATION_EDGES}. */
  readonly edges?: readonly MigrationEdge[]
  /** Progress, every `progressEvery` events and at the end of each phase (the CLI shows it). */
  readonly onProgress?: (progress: MigrationProgress) => void
  /** Events between two progress calls; default 10,000. */
  readonly progressEvery?: number
}

/** Read mode: migrate in memory, write nothing. */
export interface MigrateReadOptions extends MigrateSessionOptions {
  readonly mode: 'read'
}

/** Write mode: publish the new generation. */
export interface MigrateWriteOptions extends MigrateSessionOptions {
  readonly mode: 'write'
  /** Crash-test seam passed to {@link publishFile}. */
  readonly hooks?: PublishHooks
  /** Temp-name randomness seam passed to {@link publishFile}. */
  readonly randomHex?: (byteCount: number) => string
  /** The writer lock the caller holds; checked just before the link. */
  readonly lock?: { assertHeld(): Promise<void> }
  /** Return the read-write handle of the published file (outcome `published` only), for appends. */
  readonly keepHandle?: boolean
}

/** The source generation of a migration, as read. */
export interface MigrationSource {
  readonly generation: GenerationFile
  /** Relative to the store root (`<id>/<file>`). */
  readonly file: string
  /** Recorded in the new header. */
  readonly migratedFrom: MigratedFrom
  /** Identity when read (checked again before the link). */
  readonly identity: SourceIdentity & { readonly mode: number }
  /** Unacknowledged bytes at the source's end: left in the source (immutable), not migrated. */
  readonly tornTail: TornTail | null
  /** Events after the header. */
  readonly events: number
  /** Ignorable unknown events among them, carried verbatim. */
  readonly ignoredUnknown: number
}

/** What a read-mode migration returns. */
export interface MigrationReadResult {
  readonly mode: 'read'
  readonly source: MigrationSource
  /** The header the new generation would have. */
  readonly header: SessionHeader
  /** Seq of the last event in the new numbering (-1 when none). */
  readonly lastSeq: number
  /**
   * The migrated events, validated (`parseEvent`), streamed from the source (single use;
   * the source is opened when iteration starts and closed when it ends). Throws a typed
   * error naming the source line when an event cannot be migrated, or when the source
   * changed since the scan.
   */
  readonly events: AsyncIterable<LoggedEvent>
}

/** What a write-mode migration did. */
export interface MigrationWriteResult {
  readonly mode: 'write'
  /** `published`: we linked the new generation; `already-published`: another process published the same bytes first; `up-to-date`: nothing to do. */
  readonly outcome: 'published' | 'already-published' | 'up-to-date'
  /** The (new) current generation's file name. */
  readonly file: string
  /** Its absolute path. */
  readonly path: string
  /** Its header. */
  readonly header: SessionHeader
  /** Seq of its last event (-1 when none); for `up-to-date`, -1 unless known (the file is not scanned). */
  readonly lastSeq: number
  /** The migrated source; null when `up-to-date`. */
  readonly source: MigrationSource | null
  /** Bytes written (0 when `up-to-date`). */
  readonly size: number
  /** SHA-256 of the bytes written ('' when `up-to-date`). */
  readonly sha256: string
  /** The read-write handle of the published inode (with `keepHandle`, outcome `published`), else null. */
  readonly handle: FileHandleOps | null
}

interface Settings {
  readonly fs: FsOps
  readonly directory: string
  readonly sessionId: string
  readonly registry: EventRegistry
  readonly limits: StoreLimits
  readonly edges: readonly MigrationEdge[]
  readonly targetVersion: number
  readonly progress: Progress
}

/** Throttled progress reporting. */
class Progress {
  readonly #callback: ((progress: MigrationProgress) => void) | undefined
  readonly #every: number
  #next = 0

  constructor(options: MigrateSessionOptions) {
    this.#callback = options.onProgress
    this.#every = Math.max(1, options.progressEvery ?? 10_000)
  }

  report(progress: MigrationProgress, force = false): void {
    if (this.#callback === undefined) return
    if (!force && progress.eventsDone < this.#next) return
    this.#next = (Math.floor(progress.eventsDone / this.#every) + 1) * this.#every
    this.#callback(progress)
  }

  reset(): void {
    this.#next = 0
  }
}

function display(settings: Settings, file: string): string {
  return `${settings.sessionId}/${file}`
}

function readerFor(generation: GenerationFile, file: string): GenerationReader {
  const reader = GENERATION_READERS.get(generation.version)
  if (reader === undefined || generation.encoding !== 'plain') {
    throw new JsonlStoreError({
      code: JsonlErrorCode.NO_MIGRATION_PATH,
      message: `Cannot migrate ${file}: expected a plain generation of a readable format (${[...GENERATION_READERS.keys()].map((version) => `v${version}`).join(', ')}), found ${generation.encoding === 'plain' ? `format v${generation.version}` : 'a zstd generation (decompress it first)'}.`,
      file,
      details: {
        from: generation.version,
        encoding: generation.encoding,
        reason: generation.encoding === 'plain' ? 'no-reader' : 'zstd-source',
      },
    })
  }
  return reader
}

async function openSource(settings: Settings, generation: GenerationFile): Promise<FileHandleOps> {
  const file = display(settings, generation.file)
  try {
    return await settings.fs.open(
      join(settings.directory, generation.file),
      constants.O_RDONLY | constants.O_NOFOLLOW,
    )
  } catch (error) {
    throw toStoreError(error, {
      op: 'open',
      file,
      which: 'log',
      fallback: errnoOf(error) === 'ENOENT' ? JsonlErrorCode.SESSION_NOT_FOUND : JsonlErrorCode.READ_FAILED,
    })
  }
}

/** A byte source that hashes and counts what passes through it. */
function hashing(source: ByteSource): {
  source: AsyncGenerator<Buffer, void, undefined>
  digest: () => { sha256: string; bytes: number }
  bytesSoFar: () => number
} {
  const hash = createHash('sha256')
  let bytes = 0
  async function* hashed(): AsyncGenerator<Buffer, void, undefined> {
    for await (const chunk of source) {
      hash.update(chunk)
      bytes += chunk.length
      yield chunk
    }
  }
  return { source: hashed(), digest: () => ({ sha256: hash.digest('hex'), bytes }), bytesSoFar: () => bytes }
}

/** The first `end` bytes of a source; the rest is still read (so a hashing source sees every byte). */
async function* prefixOf(source: ByteSource, end: number): AsyncGenerator<Buffer, void, undefined> {
  let position = 0
  for await (const chunk of source) {
    const start = position
    position += chunk.length
    if (start >= end) continue
    yield position <= end ? chunk : chunk.subarray(0, end - start)
  }
}

/** Pass 1: scan and hash the whole source. */
async function scanSource(
  settings: Settings,
  generation: GenerationFile,
): Promise<{ source: MigrationSource; scan: SourceScan; reader: GenerationReader }> {
  const file = display(settings, generation.file)
  const reader = readerFor(generation, file)
  const handle = await openSource(settings, generation)
  try {
    const stats = await handle.stat()
    if (!stats.isFile()) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.SESSION_NOT_FOUND,
        message: `Cannot migrate ${file}: expected a regular file, found another kind of entry.`,
        file,
      })
    }
    const identity = {
      path: join(settings.directory, generation.file),
      ino: stats.ino,
      size: stats.size,
      mtimeMs: stats.mtimeMs,
      mode: stats.mode & 0o7777,
    }
    const hashed = hashing(
      readFileChunks(handle, { chunkBytes: settings.limits.readChunkBytes, end: stats.size }),
    )
    let bytesSeen = 0
    async function* counted(): AsyncGenerator<Buffer, void, undefined> {
      for await (const chunk of hashed.source) {
        bytesSeen += chunk.length
        yield chunk
      }
    }
    settings.progress.reset()
    const scan = await reader.scan(counted(), {
      file,
      limits: settings.limits,
      registry: settings.registry,
      onChunk: (eventsDone) => {
        settings.progress.report({
          phase: 'scan',
          eventsDone,
          eventsTotal: null,
          bytesRead: bytesSeen,
          bytesTotal: stats.size,
        })
      },
    })
    const { sha256, bytes } = hashed.digest()
    settings.progress.report(
      {
        phase: 'scan',
        eventsDone: scan.events,
        eventsTotal: scan.events,
        bytesRead: bytes,
        bytesTotal: stats.size,
      },
      true,
    )
    if (bytes !== stats.size) throw sourceChangedError(file, { expectedBytes: stats.size, foundBytes: bytes })
    if (scan.damage !== null) throw scan.damage
    if (scan.header === null) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.INVALID_HEADER,
        message: `Cannot migrate ${file}: expected a valid header line, found ${stats.size === 0 ? 'an empty file' : 'a torn or damaged first line'}.`,
        file,
        line: 1,
        offset: 0,
        details: { headerMissing: true, bytes: stats.size },
      })
    }
    const migratedFrom: MigratedFrom = {
      file: generation.file,
      version: generation.version,
      sha256,
      lastSeq: scan.lastSeq,
      bytes: stats.size,
    }
    return {
      source: {
        generation,
        file,
        migratedFrom,
        identity,
        tornTail: scan.tornTail,
        events: scan.events,
        ignoredUnknown: scan.ignoredUnknown,
      },
      scan,
      reader,
    }
  } catch (error) {
    if (JsonlStoreError.is(error)) throw error
    throw toStoreError(error, { op: 'read', file, fallback: JsonlErrorCode.READ_FAILED })
  } finally {
    await handle.close().catch(() => undefined)
  }
}

/**
 * Pass 2: the migrated stream. Opens the source again (same inode, size and mtime, or it
 * fails), and checks at the end that the bytes hashed to pass 1's sha256.
 */
function migratedStream(
  settings: Settings,
  prepared: {
    source: MigrationSource
    scan: SourceScan
    reader: GenerationReader
    path: readonly MigrationEdge[]
    validate: boolean
  },
): {
  header: Record<string, unknown>
  headerLine: Buffer
  records: AsyncIterable<readonly VersionedRecord[]>
  /** Source bytes read so far by pass 2 (for progress). */
  bytesRead: () => number
} {
  const { source, scan, reader, path, validate } = prepared
  const context: EdgeContext = {
    sessionId: settings.sessionId,
    migratedFrom: source.migratedFrom,
    sourceFile: source.file,
    registry: settings.registry,
    limits: settings.limits,
    validate,
  }
  let handle: FileHandleOps | undefined
  let digest: (() => { sha256: string; bytes: number }) | undefined
  let bytesSoFar = (): number => 0
  async function* bytes(): AsyncGenerator<Buffer, void, undefined> {
    handle = await openSource(settings, source.generation)
    const stats = await handle.stat()
    const { identity } = source
    if (stats.ino !== identity.ino || stats.size !== identity.size || stats.mtimeMs !== identity.mtimeMs) {
      throw sourceChangedError(source.file, {
        expected: { ino: identity.ino, size: identity.size, mtimeMs: identity.mtimeMs },
        found: { ino: stats.ino, size: stats.size, mtimeMs: stats.mtimeMs },
      })
    }
    const hashed = hashing(
      readFileChunks(handle, { chunkBytes: settings.limits.readChunkBytes, end: identity.size }),
    )
    digest = hashed.digest
    bytesSoFar = hashed.bytesSoFar
    try {
      yield* prefixOf(hashed.source, scan.goodEndOffset)
    } catch (error) {
      throw toStoreError(error, { op: 'read', file: source.file, fallback: JsonlErrorCode.READ_FAILED })
    }
  }
  const input = reader.stream(bytes(), {
    file: source.file,
    limits: settings.limits,
    registry: settings.registry,
    scan,
  })
  const output = applyMigrationPath(input, path, context)
  async function* records(): AsyncGenerator<readonly VersionedRecord[], void, undefined> {
    try {
      yield* output.records
      const found = digest?.()
      if (
        found === undefined ||
        found.bytes !== source.migratedFrom.bytes ||
        found.sha256 !== source.migratedFrom.sha256
      ) {
        throw sourceChangedError(source.file, {
          expectedSha256: source.migratedFrom.sha256,
          foundSha256: found?.sha256 ?? null,
          expectedBytes: source.migratedFrom.bytes,
          foundBytes: found?.bytes ?? null,
        })
      }
    } finally {
      await handle?.close().catch(() => undefined)
    }
  }
  return {
    header: output.header,
    headerLine: output.headerLine,
    records: records(),
    bytesRead: () => bytesSoFar(),
  }
}

/** Expected last seq of the migrated generation: one less than the source's when the source was v0 (its header took seq 0). */
function expectedLastSeq(scan: SourceScan, targetVersion: number): number {
  return scan.version === 0 && targetVersion >= 1 ? scan.lastSeq - 1 : scan.lastSeq
}

/** Reads only the header line of a v4 generation. */
async function peekV4Header(settings: Settings, generation: GenerationFile): Promise<SessionHeader> {
  const file = display(settings, generation.file)
  const handle = await openSource(settings, generation)
  try {
    const outcome = await scanLog(readFileChunks(handle, { chunkBytes: 64 * 1024 }), {
      format: V4_FORMAT,
      limits: settings.limits,
      registry: settings.registry,
      file,
      sessionId: settings.sessionId,
      onEvent: () => undefined,
      onHeader: () => true,
      stopBeforeLine: 2,
    })
    if (outcome.damage !== null) throw outcome.damage
    if (outcome.header === null) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.INVALID_HEADER,
        message: `${file} has no valid header line: expected a checksummed agent-ledger header, found a torn or empty first line.`,
        file,
        line: 1,
        offset: 0,
        details: { headerMissing: true },
      })
    }
    return outcome.header
  } finally {
    await handle.close().catch(() => undefined)
  }
}

async function resolveSettings(
  options: MigrateSessionOptions,
): Promise<{ settings: Settings; source: GenerationFile; target: string }> {
  const sessionId = assertSessionId(options.sessionId ?? basename(options.directory))
  const fs = options.fs ?? nodeFsOps
  const settings: Settings = {
    fs,
    directory: options.directory,
    sessionId,
    registry: options.registry ?? coreEventRegistry,
    limits: resolveLimits(options.limits),
    edges: options.edges ?? MIGRATION_EDGES,
    targetVersion: options.targetVersion ?? SESSION_FORMAT_VERSION,
    progress: new Progress(options),
  }
  let source = options.source
  if (source === undefined) {
    const picked = pickCurrentGeneration(await listGenerations(fs, options.directory), sessionId)
    if (picked === null) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.SESSION_NOT_FOUND,
        message: `Session ${sessionId} has no generation file: expected session.jsonl or session.vN.jsonl in its directory, found none.`,
        file: sessionId,
      })
    }
    source = picked.current
  }
  return { settings, source, target: generationFileName(settings.targetVersion) }
}

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
 *   `INVALID_EVENT` (an event that has no valid v4 form), `NO_MIGRATION_PATH`,
 *   `GENERATION_VERSION_MISMATCH`, `MIXED_ENCODINGS`, `MIGRATION_FAILED`, `MIGRATION_CONFLICT`, `GENERATION_FORK`.
 */
export async function migrateSession(options: MigrateReadOptions): Promise<MigrationReadResult>
export async function migrateSession(options: MigrateWriteOptions): Promise<MigrationWriteResult>
export async function migrateSession(
  options: MigrateReadOptions | MigrateWriteOptions,
): Promise<MigrationReadResult | MigrationWriteResult> {
  const { settings, source: generation, target } = await resolveSettings(options)
  const targetGeneration = parseGenerationFileName(target)!
  if (generation.version > settings.targetVersion) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.NO_MIGRATION_PATH,
      message: `Cannot migrate ${display(settings, generation.file)} to v${settings.targetVersion}: expected an older generation, found a newer one (v${generation.version}).`,
      file: display(settings, generation.file),
      details: { from: generation.version, to: settings.targetVersion, reason: 'newer-source' },
    })
  }
  if (options.mode === 'write' && generation.version === settings.targetVersion) {
    // Re-running after a migration (or on a session already in the current format): nothing to do.
    const header = await peekV4Header(settings, generation)
    return {
      mode: 'write',
      outcome: 'up-to-date',
      file: generation.file,
      path: join(settings.directory, generation.file),
      header,
      lastSeq: -1,
      source: null,
      size: 0,
      sha256: '',
      handle: null,
    }
  }
  const path = findMigrationPath(generation.version, settings.targetVersion, settings.edges)
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
  const lastSeq = expectedLastSeq(scanned.scan, settings.targetVersion)
  if (options.mode === 'read') {
    const stream = migratedStream(settings, { ...scanned, path, validate: true })
    const progress = settings.progress
    const total = scanned.scan.events
    const bytesTotal = scanned.source.migratedFrom.bytes
    progress.reset()
    async function* events(): AsyncGenerator<LoggedEvent, void, undefined> {
      let done = 0
      for await (const batch of stream.records) {
        for (const record of batch) yield record.event as unknown as LoggedEvent
        done += batch.length
        progress.report({
          phase: 'migrate',
          eventsDone: done,
          eventsTotal: total,
          bytesRead: stream.bytesRead(),
          bytesTotal,
        })
      }
      progress.report(
        { phase: 'migrate', eventsDone: done, eventsTotal: total, bytesRead: bytesTotal, bytesTotal },
        true,
      )
    }
    return {
      mode: 'read',
      source: scanned.source,
      header: stream.header as SessionHeader,
      lastSeq,
      events: events(),
    }
  }
  return publishMigration(settings, { options, scanned, path, target, lastSeq })
}

async function targetAlreadyThere(
  settings: Settings,
  request: { generation: GenerationFile; target: GenerationFile },
): Promise<MigrationWriteResult> {
  const header = await peekV4Header(settings, request.target)
  const file = display(settings, request.target.file)
  if (header.migratedFrom?.file !== request.generation.file) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.MIGRATION_CONFLICT,
      message: `Cannot migrate ${display(settings, request.generation.file)}: expected ${file} absent or migrated from it, found it ${header.migratedFrom === undefined ? 'not migrated' : `migrated from ${header.migratedFrom.file}`}.`,
      file,
      details: { reason: 'target-not-migrated-from-source', migratedFrom: header.migratedFrom ?? null },
    })
  }
  const fork = await detectGenerationFork({
    fs: settings.fs,
    directory: settings.directory,
    sessionId: settings.sessionId,
    header,
    registry: settings.registry,
    limits: settings.limits,
  })
  if (fork.status === 'forked') throw fork.error
  return {
    mode: 'write',
    outcome: 'up-to-date',
    file: request.target.file,
    path: join(settings.directory, request.target.file),
    header,
    lastSeq: -1,
    source: null,
    size: 0,
    sha256: '',
    handle: null,
  }
}

async function publishMigration(
  settings: Settings,
  request: {
    options: MigrateWriteOptions
    scanned: { source: MigrationSource; scan: SourceScan; reader: GenerationReader }
    path: readonly MigrationEdge[]
    target: string
    lastSeq: number
  },
): Promise<MigrationWriteResult> {
  const { options, scanned, path, target, lastSeq } = request
  const { source } = scanned
  const stream = migratedStream(settings, { ...scanned, path, validate: false })
  const progress = settings.progress
  const total = scanned.scan.events
  let written = -1
  let done = 0
  let stagedBytes = 0
  async function* content(): AsyncGenerator<Buffer, void, undefined> {
    progress.reset()
    const headerBytes = Buffer.concat([stream.headerLine, Buffer.from('\n')])
    stagedBytes += headerBytes.length
    yield headerBytes
    for await (const batch of stream.records) {
      let length = 0
      for (const record of batch) length += record.line.length + 1
      const bytes = Buffer.allocUnsafe(length)
      let position = 0
      for (const record of batch) {
        position += record.line.copy(bytes, position)
        bytes[position] = 0x0a
        position += 1
      }
      const last = batch[batch.length - 1]
      if (last !== undefined) written = last.event['seq'] as number
      done += batch.length
      progress.report({
        phase: 'migrate',
        eventsDone: done,
        eventsTotal: total,
        bytesRead: stream.bytesRead(),
        bytesTotal: source.migratedFrom.bytes,
      })
      stagedBytes += bytes.length
      yield bytes
    }
    progress.report(
      {
        phase: 'migrate',
        eventsDone: done,
        eventsTotal: total,
        bytesRead: source.migratedFrom.bytes,
        bytesTotal: source.migratedFrom.bytes,
      },
      true,
    )
  }
  const targetFile = display(settings, target)
  const verify = async (staged: ByteSource): Promise<void> => {
    const projection = createProjection({ registry: settings.registry })
    let verified = 0
    let bytesRead = 0
    async function* counted(): AsyncGenerator<Buffer, void, undefined> {
      for await (const chunk of staged) {
        bytesRead += chunk.length
        yield chunk
      }
    }
    progress.reset()
    const outcome = await scanLog(counted(), {
      format: V4_FORMAT,
      limits: settings.limits,
      registry: settings.registry,
      file: targetFile,
      onEvent: (event) => {
        projection.apply(event)
        verified += 1
        progress.report({
          phase: 'verify',
          eventsDone: verified,
          eventsTotal: total,
          bytesRead,
          bytesTotal: stagedBytes,
        })
      },
    })
    const damage = outcome.damage
    if (damage !== null) {
      // Name the source event too: the staged file is gone once the publish fails.
      const sourceSeq =
        damage.seq === undefined ? undefined : damage.seq + (scanned.scan.version === 0 ? 1 : 0)
      throw new JsonlStoreError({
        code: damage.code,
        message: `${damage.message} (migrated from ${source.file}${sourceSeq === undefined ? '' : ` seq ${sourceSeq}`})`,
        file: damage.file,
        line: damage.line,
        offset: damage.offset,
        seq: damage.seq,
        lastGoodSeq: damage.lastGoodSeq,
        details: { ...damage.details, sourceFile: source.file, sourceSeq: sourceSeq ?? null },
        cause: damage,
      })
    }
    const problem =
      outcome.header === null
        ? 'no header'
        : outcome.header.version !== settings.targetVersion
          ? `header version ${outcome.header.version}`
          : outcome.tornTail !== null
            ? `a torn tail at offset ${outcome.tornTail.offset}`
            : outcome.lastSeq !== written || outcome.lastSeq !== lastSeq
              ? `last seq ${outcome.lastSeq} (expected ${lastSeq}, wrote ${written})`
              : null
    if (problem !== null) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.INVALID_HEADER,
        message: `The staged ${targetFile} does not read back as written: expected a v${settings.targetVersion} header, ${lastSeq + 1} events and no tail, found ${problem}.`,
        file: targetFile,
        details: { reason: problem },
      })
    }
    progress.report(
      { phase: 'verify', eventsDone: verified, eventsTotal: total, bytesRead, bytesTotal: bytesRead },
      true,
    )
  }
  const published = await publishFile({
    fs: settings.fs,
    directory: settings.directory,
    target,
    kind: 'migrate',
    content,
    verify,
    source: source.identity,
    display: settings.sessionId,
    chunkBytes: settings.limits.readChunkBytes,
    ...(options.hooks === undefined ? {} : { hooks: options.hooks }),
    ...(options.randomHex === undefined ? {} : { randomHex: options.randomHex }),
    ...(options.lock === undefined ? {} : { lock: options.lock }),
    ...(options.keepHandle === undefined ? {} : { keepHandle: options.keepHandle }),
  })
  progress.report(
    {
      phase: 'publish',
      eventsDone: done,
      eventsTotal: total,
      bytesRead: published.size,
      bytesTotal: published.size,
    },
    true,
  )
  return {
    mode: 'write',
    outcome: published.outcome,
    file: target,
    path: published.path,
    header: stream.header as SessionHeader,
    lastSeq,
    source,
    size: published.size,
    sha256: published.sha256,
    handle: published.handle,
  }
}

/** The outcome of {@link detectGenerationFork}. */
export type GenerationForkCheck =
  /** The current generation was not written by migration (no `migratedFrom`). */
  | { readonly status: 'not-migrated' }
  /** The source generation is byte-identical to what was migrated. */
  | { readonly status: 'intact' }
  /** The source generation is gone (a historical file was deleted by hand): nothing to compare. */
  | { readonly status: 'missing'; readonly file: string }
  /** The source generation changed after the migration (RELIABILITY I7). */
  | { readonly status: 'forked'; readonly error: JsonlStoreError }

/**
 * Checks the generation a migrated header names (`migratedFrom`) against what was migrated
 * (RELIABILITY I7): same size and sha256, or a fork. A fork is reported, never merged or
 * ignored: events appended to the old generation after the migration would otherwise be
 * lost silently.
 *
 * Cost: one read of the old generation (hashing; a full scan only when it differs). With
 * `check: 'size'`, an unchanged size is trusted without hashing.
 *
 * @param options - The session directory, the current generation's header, and seams.
 * @returns `not-migrated`, `intact`, `missing`, or `forked` with a `GENERATION_FORK` error
 *   (details `version`, `lastSeq` in the old numbering, `migratedFromLastSeq`, `reason`:
 *   'appended' | 'truncated' | 'rewritten', `bytes`, `migratedFromBytes`).
 * @throws {@link JsonlStoreError} `READ_FAILED` / `ACCESS_DENIED` / `SYMLINK_REFUSED` when the old generation cannot be read.
 */
export async function detectGenerationFork(options: {
  readonly fs?: FsOps
  readonly directory: string
  readonly sessionId?: string
  readonly header: SessionHeader
  readonly registry?: EventRegistry
  readonly limits?: Partial<StoreLimits>
  readonly check?: 'sha256' | 'size'
}): Promise<GenerationForkCheck> {
  const migratedFrom = options.header.migratedFrom
  if (migratedFrom === undefined) return { status: 'not-migrated' }
  const fs = options.fs ?? nodeFsOps
  const sessionId = assertSessionId(options.sessionId ?? basename(options.directory))
  const limits = resolveLimits(options.limits)
  const registry = options.registry ?? coreEventRegistry
  const file = `${sessionId}/${migratedFrom.file}`
  const generation = parseGenerationFileName(migratedFrom.file)
  let handle: FileHandleOps
  try {
    handle = await fs.open(
      join(options.directory, migratedFrom.file),
      constants.O_RDONLY | constants.O_NOFOLLOW,
    )
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') return { status: 'missing', file }
    throw toStoreError(error, { op: 'open', file, which: 'log', fallback: JsonlErrorCode.READ_FAILED })
  }
  try {
    const size = (await handle.stat()).size
    if (size === migratedFrom.bytes && options.check === 'size') return { status: 'intact' }
    const whole = createHash('sha256')
    const prefix = createHash('sha256')
    let position = 0
    async function* hashed(): AsyncGenerator<Buffer, void, undefined> {
      for await (const chunk of readFileChunks(handle, { chunkBytes: limits.readChunkBytes })) {
        whole.update(chunk)
        const start = position
        position += chunk.length
        if (start < migratedFrom!.bytes)
          prefix.update(
            position <= migratedFrom!.bytes ? chunk : chunk.subarray(0, migratedFrom!.bytes - start),
          )
        yield chunk
      }
    }
    const reader = generation === null ? undefined : GENERATION_READERS.get(generation.version)
    let lastSeq: number | null = null
    if (size === migratedFrom.bytes || reader === undefined || generation?.encoding !== 'plain') {
      for await (const _chunk of hashed()) {
        // hash only
      }
    } else {
      lastSeq = (await reader.scan(hashed(), { file, limits, registry })).lastSeq
    }
    const sha256 = whole.digest('hex')
    if (size === migratedFrom.bytes && sha256 === migratedFrom.sha256) return { status: 'intact' }
    if (lastSeq === null && reader !== undefined && generation?.encoding === 'plain') {
      // Same size, other bytes: scan it to report its last seq.
      const again = await fs.open(
        join(options.directory, migratedFrom.file),
        constants.O_RDONLY | constants.O_NOFOLLOW,
      )
      try {
        lastSeq = (
          await reader.scan(readFileChunks(again, { chunkBytes: limits.readChunkBytes }), {
            file,
            limits,
            registry,
          })
        ).lastSeq
      } finally {
        await again.close().catch(() => undefined)
      }
    }
    const prefixIntact = size >= migratedFrom.bytes && prefix.digest('hex') === migratedFrom.sha256
    const reason = size < migratedFrom.bytes ? 'truncated' : prefixIntact ? 'appended' : 'rewritten'
    return {
      status: 'forked',
      error: new JsonlStoreError({
        code: JsonlErrorCode.GENERATION_FORK,
        message: `${file} changed after ${sessionId}/${generationFileName(options.header.version)} was migrated from it: expected ${migratedFrom.bytes} bytes up to seq ${migratedFrom.lastSeq} with sha256 ${migratedFrom.sha256.slice(0, 12)}…, found ${size} bytes${lastSeq === null ? '' : ` up to seq ${lastSeq}`} (${reason}); the extra events are neither merged nor ignored.`,
        file,
        details: {
          version: migratedFrom.version,
          lastSeq,
          migratedFromLastSeq: migratedFrom.lastSeq,
          reason,
          bytes: size,
          migratedFromBytes: migratedFrom.bytes,
        },
      }),
    }
  } catch (error) {
    if (JsonlStoreError.is(error)) throw error
    throw toStoreError(error, { op: 'read', file, fallback: JsonlErrorCode.READ_FAILED })
  } finally {
    await handle.close().catch(() => undefined)
  }
}
