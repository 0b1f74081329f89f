/*
 * `capabilities.compress.compress(id)` of the JSONL backend: converts a cold session's plain log to `session.v4.jsonl.zstd`, or
 * reseals a `.zstd` log whose tail is made of small flush frames (issue 5, Zstandard).
 *
 * Compress (plain -> zstd), under the writer lock:
 *   1. finish an interrupted earlier compress (both names, same content: see zstd-session.ts);
 *   2. scan the plain log with every check a write open runs (damage, a too-new header, an
 *      unknown event type: refused, nothing written); a torn tail is quarantined and
 *      truncated exactly as a write open does;
 *   3. publish by link (`publishFile`): temp file, the header in a frame of its own, then
 *      frames of 4 MiB of whole lines at level 6, fsync, VERIFY by reading the staged file
 *      back through the `.zstd` reader (same header, same last seq, same event count, and the
 *      SHA-256 of its plain content equal to the source's), source unchanged, lock still held,
 *      `link()`, directory fsync, temp removed;
 *   4. unlink the plain log, fsync the directory.
 * A crash between 3 and 4 leaves both names with the same content: readers read either,
 * the next write open (or compress) finishes step 4.
 *
 * Reseal (zstd -> zstd): live flushes write small frames (one per flush, ~0.5x of the ratio
 * of large frames). A reseal copies the sealed prefix (header frame + frames of >= 2 MiB)
 * byte for byte and re-encodes the rest into 4 MiB frames at level 6, into a temp file that
 * is verified like a compress (same header, seqs, events and plain SHA-256; the prefix bytes
 * identical), then RENAMED over `session.v4.jsonl.zstd` (`publishFile` with `replace`: the same
 * temp file, fsync, read-back, source and lock checks as a link publish; `COMPRESS_FAILED` at a step). This is the one rename the store
 * does: the name keeps one version (one name per version, so a new name is not an option),
 * the writer lock excludes any writer, and the content is verified identical before the
 * rename, so either file at the name (old or new, rename is atomic) holds the same events.
 * A reader that opened the old inode keeps reading a complete, valid file.
 */

import { createHash } from 'node:crypto'
import { constants } from 'node:fs'
import { join } from 'node:path'

import type { LoggedEvent, SessionHeader } from '@agent-ledger/session-events'
import { createProjection } from '@agent-ledger/session-projection'

import { errnoOf, toStoreError } from './fs-errors.ts'
import type { FileHandleOps } from './fs-ops.ts'
import { listGenerations } from './generations.ts'
import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'
import type { ScanOutcome } from './log-scanner.ts'
import { publishFile, removeStaleTemps } from './publish.ts'
import { dropSearchIndex } from './search-index-sidecar.ts'
import type { PublishRequest } from './publish-checks.ts'
import { quarantineTail } from './quarantine.ts'
import { drain, readFileChunks, scanLog, tapped } from './read-log.ts'
import { acquireWriterLock } from './writer-lock.ts'
import { scanZstdLogChunks, zstdPlainSource } from './zstd-log-reader.ts'
import type { ZstdScanOutcome } from './zstd-log-reader.ts'
import { locateSessionLog, sessionLog, zstdCodecFor } from './zstd-session.ts'
import type { SessionLog } from './zstd-session.ts'
import { hashed, sealedFrames, verifyStaged } from './compress-frames.ts'
import type { Expected } from './compress-frames.ts'
import type {
  CompressContext,
  CompressOptions,
  CompressProgress,
  CompressResult,
  Run,
} from './compress-types.ts'

function progressOf(options: CompressOptions): (progress: CompressProgress, force?: boolean) => void {
  let next = 0
  let phase = ''
  return (progress, force = false) => {
    if (options.onProgress === undefined) return
    if (progress.phase !== phase) {
      // A new phase reports at once, then every few MiB.
      phase = progress.phase
      next = 0
    }
    if (!force && progress.bytesRead < next) return
    next = progress.bytesRead + PROGRESS_EVERY_BYTES
    options.onProgress(progress)
  }
}

/**
 * Compresses or reseals one session (see the protocol at the top of this file).
 *
 * @param context - File system, directory, limits, registry, logger and lock settings.
 * @param options - Progress callback, level, frame size, crash-test hooks.
 * @returns What was done.
 * @throws {@link JsonlStoreError} `SESSION_LOCKED`, `SESSION_NOT_FOUND`, `MIXED_ENCODINGS` (older plain
 *   generations in the directory, or both encodings with different content), `HARDLINK_REFUSED`,
 *   `INVALID_HEADER`, `HEADER_ID_MISMATCH`, damage codes (nothing written), `READ_FAILED`, `WRITE_FAILED`, `DISK_FULL`; a
 *   `COMPRESS_FAILED` from the publish (nothing published, the plain log kept).
 */
export async function compressSession(
  context: CompressContext,
  options: CompressOptions = {},
): Promise<CompressResult> {
  const { fs, directory, id } = context
  const lock = await acquireWriterLock(fs, directory, context.lock)
  try {
    await removeStaleTemps(fs, directory)
    const log = await locateSessionLog({
      fs,
      directory,
      id,
      mode: 'write',
      limits: context.limits,
      logger: context.logger,
    })
    await refuseOlderGenerations(context)
    const codec = await zstdCodecFor(log.file)
    const run: Run = { context, options, lock, codec, progress: progressOf(options) }
    return log.encoding === 'plain' ? await compressPlain(run, log) : await reseal(run, log)
  } finally {
    await lock.release().catch(() => undefined)
  }
}

/** One directory holds one encoding: older plain generations (immutable) forbid a `.zstd` v4. */
async function refuseOlderGenerations(context: CompressContext): Promise<void> {
  const older = (await listGenerations(context.fs, context.directory)).filter(
    (generation) => generation.version !== 4,
  )
  if (older.length === 0) return
  const files = older.map((generation) => `${context.id}/${generation.file}`)
  throw new JsonlStoreError({
    code: JsonlErrorCode.MIXED_ENCODINGS,
    message: `Cannot compress session ${context.id}: the directory also holds ${files.join(', ')}, an older generation that stays as it is; expected one encoding per directory, so a migrated session stays plain.`,
    file: files[0]!,
    details: { files: [...files, sessionLog(context.id, 'zstd').file], reason: 'older-generations' },
  })
}

async function openLogForRepair(run: Run, log: SessionLog): Promise<FileHandleOps> {
  const { fs, directory } = run.context
  let handle: FileHandleOps
  try {
    handle = await fs.open(join(directory, log.name), constants.O_RDWR | constants.O_NOFOLLOW)
  } catch (error) {
    throw toStoreError(error, {
      op: 'open',
      file: log.file,
      which: 'log',
      fallback: errnoOf(error) === 'ENOENT' ? JsonlErrorCode.SESSION_NOT_FOUND : JsonlErrorCode.READ_FAILED,
    })
  }
  try {
    const stats = await handle.stat()
    if (!stats.isFile()) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.SESSION_NOT_FOUND,
        message: `Cannot compress ${log.file}: expected a regular file, found another kind of entry.`,
        file: log.file,
      })
    }
    if (stats.nlink !== 1) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.HARDLINK_REFUSED,
        message: `${log.file} has ${stats.nlink} hard links: expected exactly one (another name could be a victim file); nothing was written.`,
        file: log.file,
        details: { nlink: stats.nlink, ino: stats.ino },
      })
    }
    return handle
  } catch (error) {
    await handle.close().catch(() => undefined)
    throw error
  }
}

/**
 * Scans the log with every check a write open runs (either encoding), reporting progress;
 * refuses what a write open refuses; quarantines a torn tail like a write open.
 */
async function scanAndRepair(
  run: Run,
  request: { readonly log: SessionLog; readonly handle: FileHandleOps },
): Promise<{
  readonly outcome: ScanOutcome & { readonly zstd?: ZstdScanOutcome['zstd'] }
  readonly header: SessionHeader
  readonly goodEnd: number
  readonly quarantineFile: string | null
}> {
  const { log, handle } = request
  const { context } = run
  const size = (await handle.stat()).size
  const projection = createProjection({ registry: context.registry })
  let scanned = 0
  const source = tapped(readFileChunks(handle, { chunkBytes: context.limits.readChunkBytes }), (chunk) => {
    scanned += chunk.length
    run.progress({ phase: 'scan', bytesRead: scanned, bytesTotal: size, eventsDone: projection.nextSeq })
  })
  const options = {
    limits: context.limits,
    registry: context.registry,
    file: log.file,
    sessionId: context.id,
    onEvent: (event: LoggedEvent) => void projection.apply(event),
  }
  let outcome: ScanOutcome & { readonly zstd?: ZstdScanOutcome['zstd'] }
  try {
    if (log.encoding === 'plain') outcome = await scanLog(source, options)
    else outcome = await drain(scanZstdLogChunks(source, { ...options, codec: run.codec }))
  } catch (error) {
    throw toStoreError(error, { op: 'read', file: log.file, fallback: JsonlErrorCode.READ_FAILED })
  }
  const events = outcome.stats.events
  run.progress(
    { phase: 'scan', bytesRead: scanned, bytesTotal: size, eventsDone: events, eventsTotal: events },
    true,
  )
  if (outcome.damage !== null) throw outcome.damage
  if (outcome.header === null) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.INVALID_HEADER,
      message: `Cannot compress ${log.file}: expected a valid header line, found ${outcome.bytesRead === 0 ? 'an empty file' : 'a torn or damaged first line'}; open it for write first.`,
      file: log.file,
      line: 1,
      offset: 0,
      details: { headerMissing: true },
    })
  }
  let quarantineFile: string | null = null
  if (outcome.tornTail !== null) {
    quarantineFile = await quarantineTail({
      fs: context.fs,
      directory: context.directory,
      id: context.id,
      logName: log.name,
      log: handle,
      offset: outcome.goodEndOffset,
      chunkBytes: context.limits.readChunkBytes,
      keep: context.limits.maxQuarantineFiles,
    })
    context.logger.warn(`Quarantined the torn tail of ${log.file} into ${context.id}/${quarantineFile}.`, {
      file: log.file,
      offset: outcome.goodEndOffset,
      bytes: outcome.tornTail.bytes,
      reason: outcome.tornTail.reason,
    })
  }
  return { outcome, header: outcome.header, goodEnd: outcome.goodEndOffset, quarantineFile }
}

async function compressPlain(run: Run, log: SessionLog): Promise<CompressResult> {
  const { context, options } = run
  const { fs, directory, id, limits } = context
  const target = sessionLog(id, 'zstd')
  const handle = await openLogForRepair(run, log)
  try {
    const { outcome, header, goodEnd, quarantineFile } = await scanAndRepair(run, { log, handle })
    const identity = await handle.stat()
    const source = hashed(readFileChunks(handle, { chunkBytes: limits.readChunkBytes, end: goodEnd }))
    const expected: Expected & { file: string } = {
      file: target.file,
      header,
      lastSeq: outcome.lastSeq,
      events: outcome.stats.events,
      plainBytes: goodEnd,
      plainSha256: source.digest,
    }
    let staged: ZstdScanOutcome | undefined
    const published = await publishFile({
      fs,
      directory,
      target: target.name,
      kind: 'compress',
      operation: 'compress',
      content: () => sealedFrames(run, { plain: source.source, headerFirst: true, total: goodEnd }),
      verify: async (bytes) => {
        staged = await verifyStaged(run, bytes, expected)
      },
      ...publishGuards(run, log, identity),
    })
    run.progress({ phase: 'publish', bytesRead: published.size, bytesTotal: published.size }, true)
    // The same lines, so the same last update: the compressed log keeps the plain one's
    // modification time (listing order, prune's age). Best effort: a failure leaves it newer.
    if (fs.utimes !== undefined)
      await fs.utimes(join(directory, target.name), identity.atimeMs, identity.mtimeMs).catch(() => undefined)
    // The conversion's last step; a crash before it leaves both names with the same content.
    try {
      await fs.unlink(join(directory, log.name))
      // The plain log's search index goes with it (a zstd log is not indexed).
      await dropSearchIndex(fs, directory)
      await fs.fsyncDirectory(directory)
    } catch (error) {
      throw toStoreError(error, {
        op: 'remove the compressed',
        file: log.file,
        fallback: JsonlErrorCode.WRITE_FAILED,
      })
    }
    await options.hooks?.at('plain-unlinked')
    return {
      id,
      outcome: 'compressed',
      file: target.file,
      removedFile: log.file,
      plainBytes: goodEnd,
      compressedBytesBefore: 0,
      compressedBytes: published.size,
      ratio: published.size === 0 ? 0 : goodEnd / published.size,
      frames: staged?.zstd.frames ?? 0,
      events: outcome.stats.events,
      lastSeq: outcome.lastSeq,
      quarantineFile,
    }
  } finally {
    await handle.close().catch(() => undefined)
  }
}

async function reseal(run: Run, log: SessionLog): Promise<CompressResult> {
  const { context } = run
  const { fs, directory, id, limits } = context
  const handle = await openLogForRepair(run, log)
  try {
    const { outcome, header, goodEnd, quarantineFile } = await scanAndRepair(run, { log, handle })
    const { sealed, plainBytes, frames } = outcome.zstd!
    const unsealedFrames = frames - sealed.frames
    const base = {
      id,
      file: log.file,
      removedFile: null,
      plainBytes,
      compressedBytesBefore: goodEnd,
      events: outcome.stats.events,
      lastSeq: outcome.lastSeq,
      quarantineFile,
    }
    if (unsealedFrames <= 1) {
      return {
        ...base,
        outcome: 'up-to-date',
        compressedBytes: goodEnd,
        ratio: plainBytes / goodEnd,
        frames,
      }
    }
    const identity = await handle.stat()
    // What the resealed file must read back as: the same plain bytes, hashed now.
    const wholeHash = createHash('sha256')
    for await (const chunk of zstdPlainSource(handle, { codec: run.codec, limits, end: goodEnd }))
      wholeHash.update(chunk)
    const expectedSha = wholeHash.digest('hex')
    const chunkBytes = limits.readChunkBytes
    let staged: ZstdScanOutcome | undefined
    // The sealed prefix copied byte for byte, the small-frame tail re-encoded; renamed over the log.
    const published = await publishFile({
      fs,
      directory,
      target: log.name,
      kind: 'reseal',
      operation: 'compress',
      replace: true,
      content: async function* () {
        yield* readFileChunks(handle, { chunkBytes, end: sealed.compressedEnd })
        yield* sealedFrames(run, {
          plain: zstdPlainSource(handle, {
            codec: run.codec,
            limits,
            start: sealed.compressedEnd,
            end: goodEnd,
          }),
          headerFirst: false,
          total: plainBytes - sealed.plainEnd,
        })
      },
      verify: async (bytes) => {
        staged = await verifyStaged(
          run,
          samePrefix(bytes, handle, { end: sealed.compressedEnd, file: log.file }),
          {
            file: log.file,
            header,
            lastSeq: outcome.lastSeq,
            events: outcome.stats.events,
            plainBytes,
            plainSha256: () => expectedSha,
          },
        )
      },
      chunkBytes,
      ...publishGuards(run, log, identity),
    })
    run.progress({ phase: 'publish', bytesRead: published.size, bytesTotal: published.size }, true)
    return {
      ...base,
      outcome: 'resealed',
      compressedBytes: published.size,
      ratio: plainBytes / published.size,
      frames: staged?.zstd.frames ?? 0,
    }
  } finally {
    await handle.close().catch(() => undefined)
  }
}

/** What both publishes of a compress check and name: the source's identity, the lock, temp names, hooks. */
function publishGuards(
  run: Run,
  log: SessionLog,
  identity: { readonly ino: number; readonly size: number; readonly mtimeMs: number },
): Pick<PublishRequest, 'source' | 'lock' | 'randomHex' | 'display' | 'hooks'> {
  const { context, options } = run
  return {
    source: {
      path: join(context.directory, log.name),
      ino: identity.ino,
      size: identity.size,
      mtimeMs: identity.mtimeMs,
    },
    lock: run.lock,
    randomHex: context.randomHex,
    display: context.id,
    ...(options.hooks === undefined ? {} : { hooks: options.hooks }),
  }
}

/** The staged bytes, passed through after checking that the first `end` equal the original log's (its sealed frames). */
async function* samePrefix(
  staged: AsyncIterable<Buffer>,
  original: FileHandleOps,
  request: { readonly end: number; readonly file: string },
): AsyncGenerator<Buffer, void, undefined> {
  let position = 0
  for await (const chunk of staged) {
    const want = Math.min(chunk.length, request.end - position)
    if (want > 0) {
      const expected = Buffer.allocUnsafe(want)
      const count = await original.read(expected, 0, want, position)
      if (count !== want || !expected.equals(chunk.subarray(0, want))) {
        throw new JsonlStoreError({
          code: JsonlErrorCode.COMPRESS_FAILED,
          message: `The resealed copy of ${request.file} does not keep its sealed frames byte for byte (from offset ${position}); nothing was replaced.`,
          file: request.file,
          details: { step: 'verify', cause: 'SEALED_PREFIX_DIFFERS', offset: position },
        })
      }
    }
    position += chunk.length
    yield chunk
  }
}
const PROGRESS_EVERY_BYTES = 8 * 1024 * 1024
