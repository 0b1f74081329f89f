import { constants } from 'node:fs'
import { join } from 'node:path'

import type { LoggedEvent } from '@agent-ledger/session-events'
import { createProjection } from '@agent-ledger/session-projection'
import type { Projection } from '@agent-ledger/session-projection'

import { errnoOf, notRegularFile, toStoreError } from '../fs-errors.ts'
import { fileKind } from '../fs-ops.ts'
import type { FileHandleOps } from '../fs-ops.ts'
import { JsonlErrorCode } from '../jsonl-store-error.ts'
import { LOG_FILE_NAME } from '../layout.ts'
import { V4_FORMAT } from '../log-format.ts'
import type { ScanOutcome } from '../log-scanner.ts'
import { readFileChunks, refineRepeatedSeq, scanLog } from '../read-log.ts'
import type { ByteSource } from '../read-log.ts'
import type { SessionScan } from '../checkpoint-open.ts'
import { scanZstdLog, scanZstdLogChunks, zstdPlainSource } from '../zstd-log-reader.ts'
import type { ZstdLogStats, ZstdScanOptions } from '../zstd-log-reader.ts'
import { locateSessionLog, zstdCodecFor } from '../zstd-session.ts'
import type { SessionLog } from '../zstd-session.ts'
import { ensureRoot, checkSessionDirectory, notFound } from './context.ts'
import type { StoreContext } from './context.ts'

/** What a full scan of an open log gives (internal). */
export interface OpenScan {
  readonly outcome: ScanOutcome
  readonly projection: Projection
  /** Frame facts, for a `.zstd` log. */
  readonly zstd?: ZstdLogStats
}

export const HEADER_PEEK_CHUNK = 64 * 1024

export async function openLog(
  ctx: StoreContext,
  id: string,
  options: { readonly write: boolean },
): Promise<{ handle: FileHandleOps; directory: string; log: SessionLog }> {
  await ensureRoot(ctx, false)
  const directory = await checkSessionDirectory(ctx, id, { write: false })
  // session.v4.jsonl or session.v4.jsonl.zstd; a write open (under the lock) finishes an interrupted compress.
  const log = await locateSessionLog({
    fs: ctx.fs,
    directory,
    id,
    mode: options.write ? 'write' : 'read',
    limits: ctx.limits,
    logger: ctx.logger,
  })
  const path = join(directory, log.name)
  const file = log.file
  let handle: FileHandleOps
  try {
    handle = await ctx.fs.open(
      path,
      // O_APPEND: if two writers ever coexist (a bypassed or broken lock), both lines land and
      // the next open reports SEQ_CONFLICT, instead of one silently overwriting the other.
      (options.write ? constants.O_RDWR | constants.O_APPEND : constants.O_RDONLY) | constants.O_NOFOLLOW,
    )
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') throw notFound(id, error)
    throw toStoreError(error, {
      op: options.write ? 'open-append' : 'open',
      file,
      which: 'log',
      fallback: JsonlErrorCode.READ_FAILED,
    })
  }
  try {
    const stats = await handle.stat()
    // nodeFsOps already refuses these; a custom FsOps may not.
    if (!stats.isFile()) throw notRegularFile({ file, which: 'log', kind: fileKind(stats), op: 'open' })
  } catch (error) {
    await handle.close().catch(() => undefined)
    throw toStoreError(error, { op: 'stat', file, fallback: JsonlErrorCode.READ_FAILED })
  }
  return { handle, directory, log }
}

export async function scanOpenLog(
  ctx: StoreContext,
  handle: FileHandleOps,
  options: {
    readonly id: string
    readonly onEvent?: (event: LoggedEvent) => void
    readonly log?: SessionLog
  },
): Promise<OpenScan> {
  const { id } = options
  if (options.log?.encoding === 'zstd') return scanZstd(ctx, { log: options.log, handle }, options.onEvent)
  const projection = createProjection({ registry: ctx.registry })
  const file = `${id}/${LOG_FILE_NAME}`
  const source = (): ByteSource => readFileChunks(handle, { chunkBytes: ctx.limits.readChunkBytes })
  const onEvent = options.onEvent
  let outcome: ScanOutcome
  try {
    outcome = await scanLog(source(), {
      format: V4_FORMAT,
      limits: ctx.limits,
      registry: ctx.registry,
      file,
      sessionId: id,
      onEvent:
        onEvent === undefined
          ? (event) => {
              projection.apply(event)
            }
          : (event) => {
              projection.apply(event)
              onEvent(event)
            },
    })
    outcome = await refineRepeatedSeq(outcome, source, ctx.limits.maxLineBytes)
  } catch (error) {
    throw toStoreError(error, { op: 'read', file, fallback: JsonlErrorCode.READ_FAILED })
  }
  return { outcome, projection }
}

/** Reads only the header line (bounded): for list() and the VERSION_TOO_NEW check before locking. */
export async function peekHeader(
  ctx: StoreContext,
  handle: FileHandleOps,
  { id, log }: { readonly id: string; readonly log?: SessionLog },
): Promise<ScanOutcome> {
  const file = log?.file ?? `${id}/${LOG_FILE_NAME}`
  if (log?.encoding === 'zstd') {
    const options = { ...(await zstdOptions(ctx, log, () => undefined)), sessionId: id }
    try {
      return await scanZstdLog(handle, { ...options, onHeader: () => true, stopBeforeLine: 2 })
    } catch (error) {
      throw toStoreError(error, { op: 'read', file, fallback: JsonlErrorCode.READ_FAILED })
    }
  }
  try {
    return await scanLog(readFileChunks(handle, { chunkBytes: HEADER_PEEK_CHUNK }), {
      format: V4_FORMAT,
      limits: ctx.limits,
      registry: ctx.registry,
      file,
      sessionId: id,
      onEvent: () => undefined,
      onHeader: () => true,
      stopBeforeLine: 2,
    })
  } catch (error) {
    throw toStoreError(error, { op: 'read', file, fallback: JsonlErrorCode.READ_FAILED })
  }
}

/** The `.zstd` reader's options for one log (loads the codec). */
export async function zstdOptions(
  ctx: StoreContext,
  log: SessionLog,
  onEvent: (event: LoggedEvent) => void,
): Promise<ZstdScanOptions> {
  return {
    codec: await zstdCodecFor(log.file),
    format: V4_FORMAT,
    limits: ctx.limits,
    registry: ctx.registry,
    file: log.file,
    // The id is the file's first path component (ids never hold a separator).
    sessionId: log.file.split('/')[0],
    onEvent,
  }
}

/** A full scan of a `.zstd` log into a fresh projection (no checkpoint: they bind plain offsets). */
export async function scanZstd(
  ctx: StoreContext,
  { log, handle }: { readonly log: SessionLog; readonly handle: FileHandleOps },
  onEvent?: (event: LoggedEvent) => void,
): Promise<SessionScan & { readonly zstd: ZstdLogStats }> {
  const projection = createProjection({ registry: ctx.registry })
  const options = await zstdOptions(
    ctx,
    log,
    onEvent === undefined
      ? (event) => {
          projection.apply(event)
        }
      : (event) => {
          projection.apply(event)
          onEvent(event)
        },
  )
  let outcome
  try {
    outcome = await scanZstdLog(handle, options)
  } catch (error) {
    throw toStoreError(error, { op: 'read', file: log.file, fallback: JsonlErrorCode.READ_FAILED })
  }
  return { outcome, projection, zstd: outcome.zstd, checkpoint: null, lastLine: null, seqIndex: [] }
}

/** `readEvents` over a `.zstd` log: events are handed out frame by frame, each frame checked whole first. */
export async function* readZstdEvents(
  ctx: StoreContext,
  { log, handle }: { readonly log: SessionLog; readonly handle: FileHandleOps },
  range: { readonly fromSeq: number; readonly toSeq: number },
): AsyncGenerator<LoggedEvent, void, undefined> {
  const projection = createProjection({ registry: ctx.registry })
  const queue: LoggedEvent[] = []
  let reachedEnd = false
  const options = await zstdOptions(ctx, log, (event) => {
    projection.apply(event)
    if (event.seq >= range.fromSeq && event.seq <= range.toSeq) queue.push(event)
    if (event.seq >= range.toSeq) reachedEnd = true
  })
  const chunks = scanZstdLogChunks(readFileChunks(handle, { chunkBytes: ctx.limits.readChunkBytes }), options)
  for (;;) {
    let step
    try {
      step = await chunks.next()
    } catch (error) {
      throw toStoreError(error, { op: 'read', file: log.file, fallback: JsonlErrorCode.READ_FAILED })
    }
    while (queue.length > 0) yield queue.shift()!
    if (reachedEnd) return
    if (step.done === true) {
      const outcome = step.value
      if (outcome.damage === null) return
      const refined = await refineRepeatedSeq(
        outcome,
        () => zstdPlainSource(handle, options),
        ctx.limits.maxLineBytes,
      )
      throw refined.damage!
    }
  }
}
