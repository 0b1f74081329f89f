/*
 * Opening and scanning a session's v4 log, in whichever encoding it has: the log's
 * `LogAdapter` (src/log-adapter.ts) is chosen once, when the log is opened, and every scan
 * here goes through it. Nothing in this file branches on the encoding.
 */
import { constants } from 'node:fs'
import { join } from 'node:path'

import type { LoggedEvent } from '@agent-ledger/session-events'
import { createProjection } from '@agent-ledger/session-projection'
import type { Projection } from '@agent-ledger/session-projection'

import { planReadFrom, scanWithCheckpoint } from '../checkpoint-open.ts'
import type { SessionScan } from '../checkpoint-open.ts'
import { errnoOf, notRegularFile, toStoreError } from '../fs-errors.ts'
import { fileKind } from '../fs-ops.ts'
import type { FileHandleOps } from '../fs-ops.ts'
import { JsonlErrorCode } from '../jsonl-store-error.ts'
import { logAdapter } from '../log-adapter.ts'
import type { EventScanOptions, LogAdapter } from '../log-adapter.ts'
import { V4_FORMAT } from '../log-format.ts'
import type { ScanOutcome } from '../log-scanner.ts'
import { refineRepeatedSeq } from '../read-log.ts'
import type { ZstdLogStats } from '../zstd-log-reader.ts'
import { locateSessionLog } from '../zstd-session.ts'
import type { SessionLog } from '../zstd-session.ts'
import { checkpointContext, checkSessionDirectory, ensureRoot, notFound } from './context.ts'
import type { StoreContext } from './context.ts'

/** What a full scan of an open log gives (internal). */
export interface OpenScan {
  readonly outcome: ScanOutcome
  readonly projection: Projection
  /** Frame facts, for a `.zstd` log. */
  readonly zstd?: ZstdLogStats | undefined
}

/** An open v4 log: its handle, its directory, and the adapter of its encoding. */
export interface OpenedLog {
  readonly handle: FileHandleOps
  readonly directory: string
  readonly log: SessionLog
  readonly adapter: LogAdapter
}

const HEADER_PEEK_CHUNK = 64 * 1024

/**
 * Opens a session's v4 log (`session.v4.jsonl` or `session.v4.jsonl.zstd`) read-only or for
 * append, with its adapter. A write open (under the lock) finishes an interrupted compress.
 */
export async function openLog(
  ctx: StoreContext,
  id: string,
  options: { readonly write: boolean },
): Promise<OpenedLog> {
  await ensureRoot(ctx, false)
  const directory = await checkSessionDirectory(ctx, id, { write: false })
  const log = await locateSessionLog({
    fs: ctx.fs,
    directory,
    id,
    mode: options.write ? 'write' : 'read',
    limits: ctx.limits,
    logger: ctx.logger,
  })
  const adapter = await logAdapter(id, log.encoding, ctx.limits)
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
  return { handle, directory, log, adapter }
}

/** The scanner options of one session's log (events mode, every check). */
function eventScan(
  ctx: StoreContext,
  opened: Pick<OpenedLog, 'adapter'> & { readonly id: string },
  onEvent: (event: LoggedEvent) => void,
): EventScanOptions {
  return {
    format: V4_FORMAT,
    registry: ctx.registry,
    file: opened.adapter.log.file,
    sessionId: opened.id,
    onEvent,
  }
}

/** Runs a scan, turning a file-system error into the store's typed read error. */
async function reading<T>(file: string, scan: () => Promise<T>): Promise<T> {
  try {
    return await scan()
  } catch (error) {
    throw toStoreError(error, { op: 'read', file, fallback: JsonlErrorCode.READ_FAILED })
  }
}

/** A full scan of an open log into a fresh projection (no checkpoint), every check, a repeated seq refined. */
export async function scanOpenLog(
  ctx: StoreContext,
  opened: Pick<OpenedLog, 'handle' | 'adapter'> & { readonly id: string },
  onEvent?: (event: LoggedEvent) => void,
): Promise<OpenScan> {
  const projection = createProjection({ registry: ctx.registry })
  const apply =
    onEvent === undefined
      ? (event: LoggedEvent): void => {
          projection.apply(event)
        }
      : (event: LoggedEvent): void => {
          projection.apply(event)
          onEvent(event)
        }
  const outcome = await reading(opened.adapter.log.file, () =>
    opened.adapter.scanEvents(opened.handle, eventScan(ctx, opened, apply)),
  )
  return { outcome, projection, zstd: outcome.zstd }
}

/**
 * The scan of an open (read or write): from the projection checkpoint where the log has
 * them (a write open also checks the checksums of the prefix it skips), else a full scan.
 */
export async function scanForOpen(
  ctx: StoreContext,
  opened: OpenedLog & { readonly id: string },
  options: { readonly verifyPrefix: boolean },
): Promise<SessionScan & { readonly zstd?: ZstdLogStats | undefined }> {
  if (opened.adapter.checkpoints) {
    return scanWithCheckpoint(
      checkpointContext(ctx, opened.id, opened.directory),
      opened.handle,
      options.verifyPrefix ? { verifyPrefix: true } : undefined,
    )
  }
  const scan = await scanOpenLog(ctx, opened)
  return { ...scan, checkpoint: null, lastLine: null, seqIndex: [] }
}

/** Reads only the header line (bounded): for list() and the VERSION_TOO_NEW check before locking. */
export async function peekHeader(
  ctx: StoreContext,
  opened: Pick<OpenedLog, 'handle' | 'adapter'> & { readonly id: string },
): Promise<ScanOutcome> {
  return reading(opened.adapter.log.file, () =>
    opened.adapter.scanEvents(opened.handle, {
      ...eventScan(ctx, opened, () => undefined),
      onHeader: () => true,
      stopBeforeLine: 2,
      chunkBytes: HEADER_PEEK_CHUNK,
    }),
  )
}

/** The events of an open log's first lines, up to (not including) line `stopBeforeLine` (a fork's prefix). */
export async function scanPrefix(
  ctx: StoreContext,
  opened: Pick<OpenedLog, 'handle' | 'adapter'> & { readonly id: string },
  options: { readonly onEvent: (event: LoggedEvent) => void; readonly stopBeforeLine?: number },
): Promise<ScanOutcome> {
  return reading(opened.adapter.log.file, () =>
    opened.adapter.scanEvents(opened.handle, {
      ...eventScan(ctx, opened, options.onEvent),
      ...(options.stopBeforeLine === undefined ? {} : { stopBeforeLine: options.stopBeforeLine }),
    }),
  )
}

/**
 * `readEvents` over an open log: events handed out chunk by chunk (a `.zstd` log: each frame
 * checked whole first); a checkpoint lets a late `fromSeq` seek where the log has them.
 * Damage throws after the good events before it.
 */
export async function* readOpenLogEvents(
  ctx: StoreContext,
  opened: OpenedLog & { readonly id: string },
  range: { readonly fromSeq: number; readonly toSeq: number },
): AsyncGenerator<LoggedEvent, void, undefined> {
  const { handle, adapter } = opened
  const file = adapter.log.file
  const { fromSeq, toSeq } = range
  const start = adapter.checkpoints
    ? await planReadFrom(checkpointContext(ctx, opened.id, opened.directory), handle, fromSeq)
    : { resume: null, projection: createProjection({ registry: ctx.registry }), trustedThrough: -1 }
  const projection = start.projection
  const queue: LoggedEvent[] = []
  let reachedEnd = false
  const chunks = adapter.scanEventChunks(handle, {
    ...eventScan(ctx, opened, (event) => {
      if (event.seq > start.trustedThrough) projection.apply(event)
      if (event.seq >= fromSeq && event.seq <= toSeq) queue.push(event)
      if (event.seq >= toSeq) reachedEnd = true
    }),
    ...(start.resume === null ? {} : { resume: start.resume }),
  })
  for (;;) {
    let step: IteratorResult<void, ScanOutcome>
    try {
      step = await chunks.next()
    } catch (error) {
      throw toStoreError(error, { op: 'read', file, fallback: JsonlErrorCode.READ_FAILED })
    }
    while (queue.length > 0) yield queue.shift()!
    if (reachedEnd) return
    if (step.done === true) {
      const outcome = step.value
      if (outcome.damage === null) return
      // SEQ_DUPLICATE or SEQ_CONFLICT: told apart by re-reading the plain content.
      const refined = await refineRepeatedSeq(
        outcome,
        () => adapter.plainContent(handle),
        ctx.limits.maxLineBytes,
      )
      throw refined.damage!
    }
  }
}
