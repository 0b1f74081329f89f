/*
 * Reading the source generation of a migration: open it, scan and hash it (pass 1), and
 * stream it again, through the v0 to v4 step for a v0 source (pass 2); the settings a
 * migration resolves from its options.
 */
import { createHash } from 'node:crypto'
import { basename, join } from 'node:path'

import { coreEventRegistry, SESSION_FORMAT_VERSION } from '@agent-ledger/session-events'
import type { MigratedFrom, SessionHeader } from '@agent-ledger/session-events'

import { openLogForRead, toStoreError } from '../fs-errors.ts'
import { nodeFsOps } from '../fs-ops.ts'
import type { FileHandleOps } from '../fs-ops.ts'
import { generationFileName, listGenerations, pickCurrentGeneration } from '../generations.ts'
import type { GenerationFile } from '../generations.ts'
import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import { resolveLimits } from '../limits.ts'
import { readFileChunks, scanLog, tapped } from '../read-log.ts'
import type { ByteSource } from '../read-log.ts'
import { assertSessionId } from '../session-id.ts'
import {
  READABLE_VERSIONS,
  readGeneration,
  scanGeneration,
  sourceChangedError,
  streamGeneration,
} from './generation-readers.ts'
import type { MigrateSessionOptions, MigrationSource, Settings } from './migration-context.ts'
import { Progress, display } from './migration-context.ts'
import type { SourceRecord, SourceScan } from './source-record.ts'
import { v0ToV4 } from './v0-to-v4.ts'

function assertReadable(generation: GenerationFile, file: string): void {
  if (!READABLE_VERSIONS.includes(generation.version) || generation.encoding !== 'plain') {
    throw new JsonlStoreError({
      code: JsonlErrorCode.NO_MIGRATION_PATH,
      message: `Cannot migrate ${file}: expected a plain generation of a readable format (${READABLE_VERSIONS.map((version) => `v${version}`).join(', ')}), found ${generation.encoding === 'plain' ? `format v${generation.version}` : 'a zstd generation (decompress it first)'}.`,
      file,
      details: {
        from: generation.version,
        encoding: generation.encoding,
        reason: generation.encoding === 'plain' ? 'no-reader' : 'zstd-source',
      },
    })
  }
}

function openSource(settings: Settings, generation: GenerationFile): Promise<FileHandleOps> {
  return openLogForRead(
    settings.fs,
    join(settings.directory, generation.file),
    display(settings, generation.file),
  )
}

/** A byte source that hashes and counts what passes through it. */
function hashing(source: ByteSource): {
  source: AsyncGenerator<Buffer, void, undefined>
  digest: () => { sha256: string; bytes: number }
  bytesSoFar: () => number
} {
  const hash = createHash('sha256')
  let bytes = 0
  const hashed = tapped(source, (chunk) => {
    hash.update(chunk)
    bytes += chunk.length
  })
  return { source: hashed, digest: () => ({ sha256: hash.digest('hex'), bytes }), bytesSoFar: () => bytes }
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
export async function scanSource(
  settings: Settings,
  generation: GenerationFile,
): Promise<{ source: MigrationSource; scan: SourceScan }> {
  const file = display(settings, generation.file)
  assertReadable(generation, file)
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
    const { limits, registry, progress } = settings
    const phase = { phase: 'scan', bytesTotal: stats.size } as const
    progress.reset()
    const chunks = readGeneration(generation.version, hashed.source, { file, limits, registry })
    const scan = await scanGeneration(chunks, (eventsDone) =>
      progress.report({ ...phase, eventsDone, eventsTotal: null, bytesRead: hashed.bytesSoFar() }),
    )
    const { sha256, bytes } = hashed.digest()
    progress.report({ ...phase, eventsDone: scan.events, eventsTotal: scan.events, bytesRead: bytes }, true)
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
    }
  } catch (error) {
    if (JsonlStoreError.is(error)) throw error
    throw toStoreError(error, { op: 'read', file, fallback: JsonlErrorCode.READ_FAILED })
  } finally {
    await handle.close().catch(() => undefined)
  }
}

/**
 * Pass 2: the migrated stream, reporting the `migrate` phase as its records are iterated
 * (single use). Opens the source again (same inode, size and mtime, or it fails), and checks
 * at the end that the bytes hashed to pass 1's sha256.
 */
export function migratedStream(
  settings: Settings,
  prepared: { source: MigrationSource; scan: SourceScan; validate: boolean },
): {
  header: Record<string, unknown>
  headerLine: Buffer
  records: AsyncIterable<readonly SourceRecord[]>
} {
  const { source, scan, validate } = prepared
  const { limits, registry } = settings
  // A v4 source (a read-mode migration that finds v4 current) is read as it is.
  const step = scan.version === 0 ? v0ToV4(scan.header!, { settings, source, validate }) : null
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
  const input = streamGeneration(
    readGeneration(scan.version, bytes(), { file: source.file, limits, registry }),
    scan,
    source.file,
  )
  const { progress } = settings
  const bytesTotal = source.migratedFrom.bytes
  const report = (eventsDone: number, bytesRead: number, force?: boolean): void =>
    progress.report({ phase: 'migrate', eventsDone, eventsTotal: scan.events, bytesRead, bytesTotal }, force)
  async function* records(): AsyncGenerator<readonly SourceRecord[], void, undefined> {
    progress.reset()
    let done = 0
    try {
      for await (const batch of input) {
        done += batch.length
        report(done, bytesSoFar())
        yield step === null ? batch : batch.map(step.migrate)
      }
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
      report(done, bytesTotal, true)
    } finally {
      await handle?.close().catch(() => undefined)
    }
  }
  return {
    header: step?.header ?? scan.header!,
    headerLine: step?.headerLine ?? scan.headerLine!,
    records: records(),
  }
}

/** Reads only the header line of a v4 generation. */
export async function peekV4Header(settings: Settings, generation: GenerationFile): Promise<SessionHeader> {
  const file = display(settings, generation.file)
  const handle = await openSource(settings, generation)
  try {
    const outcome = await scanLog(readFileChunks(handle, { chunkBytes: 64 * 1024 }), {
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

export async function resolveSettings(
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
  return { settings, source, target: generationFileName(SESSION_FORMAT_VERSION) }
}
