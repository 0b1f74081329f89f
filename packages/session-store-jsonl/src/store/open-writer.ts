import { join } from 'node:path'

import type { SessionHeader } from '@agent-ledger/session-events'
import { planRepairFromState } from '@agent-ledger/loop-repair'
import type { RepairAction } from '@agent-ledger/loop-repair'
import type { Projection } from '@agent-ledger/session-projection'

import { toStoreError } from '../fs-errors.ts'
import type { FileHandleOps } from '../fs-ops.ts'
import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import { LOG_FILE_NAME } from '../layout.ts'
import { encodeJsonLine } from '../line-codec.ts'
import { quarantineTail } from '../quarantine.ts'
import { assertSessionId } from '../session-id.ts'
import { SessionWriterImpl } from '../session-writer.ts'
import type { SessionWriter, WriterRecovery } from '../session-writer.ts'
import { acquireWriterLock } from '../writer-lock.ts'
import type { WriterLock } from '../writer-lock.ts'
import type { CheckpointCarry, LastEventLine } from '../checkpoint-open.ts'
import { CheckpointWriter } from '../checkpoint-writer.ts'
import type { SeqIndexEntry } from '../checkpoint-format.ts'
import { removeStaleTemps } from '../publish.ts'
import type { LogAdapter } from '../log-adapter.ts'
import { checkpointContext, checkSessionDirectory, isRefusal } from './context.ts'
import type { StoreContext } from './context.ts'
import { openLog, peekHeader, scanForOpen } from './log-access.ts'
import { olderGeneration, generationFork, migrateUnderLock } from './older-generation.ts'
import { buildHeader } from './header-seed.ts'

/** The writer's checkpoint sink, or undefined when checkpoints are off. */
export function checkpointWriter(
  ctx: StoreContext,
  init: {
    readonly id: string
    readonly directory: string
    readonly handle: FileHandleOps
    readonly header: SessionHeader
    readonly lastLine: LastEventLine | null
    readonly seqIndex: readonly SeqIndexEntry[]
    readonly coveredSeq: number
    readonly carry?: CheckpointCarry | undefined
  },
): CheckpointWriter | undefined {
  if (!ctx.checkpoint.enabled) return undefined
  return new CheckpointWriter({
    context: checkpointContext(ctx, init.id, init.directory),
    handle: init.handle,
    header: init.header,
    lastLine: init.lastLine,
    seqIndex: init.seqIndex,
    coveredSeq: init.coveredSeq,
    carry: init.carry,
    randomHex: ctx.randomHex,
  })
}

export async function openWriter(ctx: StoreContext, id: string): Promise<SessionWriter> {
  assertSessionId(id)
  let file = `${id}/${LOG_FILE_NAME}`
  // V1, and a file name whose version differs from its header: refused before the lock, touching nothing.
  const older = await olderGeneration(ctx, id)
  // V1: refuse a newer version before taking the lock or writing anything.
  if (older === null) {
    const { handle, adapter } = await openLog(ctx, id, { write: false })
    try {
      const peek = await peekHeader(ctx, { handle, adapter, id })
      if (peek.damage !== null && isRefusal(peek.damage)) throw peek.damage
    } finally {
      await handle.close().catch(() => undefined)
    }
  }
  const directory = await checkSessionDirectory(ctx, id, { write: true })
  const lock = await acquireWriterLock(ctx.fs, directory, ctx.lock)
  let handle: FileHandleOps | undefined
  try {
    await removeStaleTemps(ctx.fs, directory)
    // An older generation is first published as session.v4.jsonl (M1-M7); appends go there.
    if (older !== null) await migrateUnderLock(ctx, { id, directory, source: older.source, lock })
    const opened = await openLog(ctx, id, { write: true })
    handle = opened.handle
    const { log, adapter } = opened
    file = log.file
    const stats = await handle.stat()
    if (stats.nlink !== 1) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.HARDLINK_REFUSED,
        message: `${file} has ${stats.nlink} hard links: expected exactly one (another name could be a victim file); nothing was written.`,
        file,
        details: { nlink: stats.nlink, ino: stats.ino },
      })
    }
    if ((stats.mode & 0o077) !== 0) {
      const narrowed = stats.mode & 0o700
      ctx.logger.warn(
        `${file} had mode ${(stats.mode & 0o777).toString(8)}; set to ${narrowed.toString(8)}.`,
        {
          file,
          mode: (stats.mode & 0o777).toString(8),
        },
      )
      await handle.chmod(narrowed)
    }
    // A write open checks the line checksums of the prefix a checkpoint lets it skip.
    const scan = await scanForOpen(ctx, { ...opened, id }, { verifyPrefix: true })
    const { outcome, projection } = scan
    if (outcome.damage !== null) throw outcome.damage
    // I7: the generation this one was migrated from must be unchanged (size and sha256), or writes are refused.
    const fork = await generationFork(ctx, outcome.header, { id, directory, mode: 'write' })
    if (fork !== null) throw fork
    let quarantineFile: string | null = null
    let durableOffset = outcome.goodEndOffset
    if (outcome.tornTail !== null || (outcome.headerMissing && stats.size > 0)) {
      quarantineFile = await quarantineTail({
        fs: ctx.fs,
        directory,
        id,
        logName: log.name,
        log: handle,
        offset: outcome.goodEndOffset,
        chunkBytes: ctx.limits.readChunkBytes,
        keep: ctx.limits.maxQuarantineFiles,
      })
      ctx.logger.warn(`Quarantined the torn tail of ${file} into ${id}/${quarantineFile}.`, {
        file,
        offset: outcome.goodEndOffset,
        bytes: outcome.tornTail?.bytes ?? stats.size,
        reason: outcome.tornTail?.reason ?? 'tailGarbage',
      })
    } else {
      // What a crashed writer left in the page cache becomes durable before we build on it.
      await handle.datasync()
    }
    let header = outcome.header
    if (header === null) {
      // T4: no header (a crash during creation): nothing was ever acknowledged; re-initialise.
      header = buildHeader(ctx, id, {})
      const headerLine = encodeJsonLine(JSON.stringify(header))
      const start = adapter.start(headerLine, Buffer.alloc(0))
      await handle.write(start, 0)
      await handle.datasync()
      durableOffset = start.length
    }
    const writer = newWriter(ctx, {
      id,
      adapter,
      header,
      directory,
      handle,
      lock,
      projection,
      durableOffset,
      recovery: {
        tornTail: outcome.tornTail,
        quarantineFile,
        repairs: [],
        headerMissing: outcome.headerMissing,
        checkpoint: scan.checkpoint,
      },
      checkpoints: checkpointWriter(ctx, {
        id,
        directory,
        handle,
        header,
        lastLine: scan.lastLine,
        seqIndex: scan.seqIndex,
        coveredSeq: scan.checkpoint?.seq ?? -1,
        carry: scan.carry,
      }),
    })
    return await repairAndReturn(ctx, writer)
  } catch (error) {
    await handle?.close().catch(() => undefined)
    await lock.release().catch(() => undefined)
    throw toStoreError(error, {
      op: 'open-append',
      file,
      which: 'log',
      fallback: JsonlErrorCode.WRITE_FAILED,
    })
  }
}

export function newWriter(
  ctx: StoreContext,
  init: {
    readonly id: string
    readonly adapter: LogAdapter
    readonly header: SessionHeader
    readonly directory: string
    readonly handle: FileHandleOps
    readonly lock: WriterLock
    readonly projection: Projection
    readonly durableOffset: number
    readonly recovery: WriterRecovery
    readonly checkpoints: CheckpointWriter | undefined
  },
): SessionWriterImpl {
  return new SessionWriterImpl({
    id: init.id,
    header: init.header,
    path: join(init.directory, init.adapter.log.name),
    file: init.adapter.log.file,
    fs: ctx.fs,
    handle: init.handle,
    lock: init.lock,
    projection: init.projection,
    durableOffset: init.durableOffset,
    registry: ctx.registry,
    limits: ctx.limits,
    flushPolicy: ctx.flushPolicy,
    clock: ctx.clock,
    logger: ctx.logger,
    recovery: init.recovery,
    redaction: ctx.redaction,
    // Checkpoints bind plain byte offsets: a log without them (.zstd) replays on every open.
    checkpoints: init.adapter.checkpoints ? init.checkpoints : undefined,
    encodeBatch: init.adapter.batchEncoder,
  })
}

/** Appends loop-repair's closers (if any) and makes them durable before handing the writer out. */
export async function repairAndReturn(ctx: StoreContext, writer: SessionWriterImpl): Promise<SessionWriter> {
  try {
    const plan = planRepairFromState(writer.projection.repairState, {
      nextSeq: writer.projection.nextSeq,
      time: ctx.clock(),
    })
    const repairs: RepairAction[] = []
    for (let index = 0; index < plan.events.length; index += 1) {
      const planned = plan.events[index]!
      writer.append({
        type: planned.type,
        data: planned.data,
        ...(planned.sourceEventSeqs === undefined ? {} : { sourceEventSeqs: planned.sourceEventSeqs }),
      } as never)
      repairs.push(plan.actions[index]!)
    }
    if (repairs.length > 0) {
      await writer.flush()
      writer.recordRepairs(repairs)
    }
    return writer
  } catch (error) {
    await writer.close().catch(() => undefined)
    throw error
  }
}
