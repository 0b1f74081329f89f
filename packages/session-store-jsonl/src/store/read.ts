import { SESSION_FORMAT_VERSION } from '@agent-ledger/session-events'
import type { LoggedEvent } from '@agent-ledger/session-events'

import { toStoreError } from '../fs-errors.ts'
import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import { LOG_FILE_NAME } from '../layout.ts'
import { assertSessionId } from '../session-id.ts'
import type { SessionScan } from '../checkpoint-open.ts'
import {
  readOlderGenerationEvents,
  summarizeOlderGeneration,
  verifyOlderGeneration,
} from '../store-generations.ts'
import type { ZstdLogStats } from '../zstd-log-reader.ts'
import type { SessionSummary, SessionReadResult, VerifyReport } from './api.ts'
import { ensureRoot, isRefusal } from './context.ts'
import type { StoreContext } from './context.ts'
import { openLog, peekHeader, readOpenLogEvents, scanForOpen, scanOpenLog } from './log-access.ts'
import type { OpenScan } from './log-access.ts'
import { generationContext, olderGeneration, readOlder, generationFork } from './older-generation.ts'

/** A summary before the version is filled in (internal: v4 logs leave it out). */
type LogSummary = Omit<SessionSummary, 'version'> & { readonly version?: number }

const LIST_CONCURRENCY = 16

/**
 * `readEvents` bounds: each a non-negative safe integer when given, and `fromSeq <= toSeq`
 * (an inverted range is a caller's mistake, not an empty read).
 */
function describeOption(value: unknown): string {
  return typeof value === 'number' ? String(value) : (JSON.stringify(value) ?? typeof value)
}

function assertSeqRange(id: string, options: { readonly fromSeq?: number; readonly toSeq?: number }): void {
  for (const name of ['fromSeq', 'toSeq'] as const) {
    const value: unknown = options[name]
    if (value === undefined) continue
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.INVALID_OPTION,
        message: `Cannot read the events of ${id}: expected ${name} to be a non-negative integer seq, found ${describeOption(value)}.`,
        file: `${id}/${LOG_FILE_NAME}`,
        details: { option: name, found: typeof value === 'number' ? value : describeOption(value) },
      })
    }
  }
  const { fromSeq, toSeq } = options
  if (fromSeq !== undefined && toSeq !== undefined && fromSeq > toSeq) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.INVALID_OPTION,
      message: `Cannot read the events of ${id}: expected fromSeq <= toSeq, found fromSeq ${fromSeq} > toSeq ${toSeq}.`,
      file: `${id}/${LOG_FILE_NAME}`,
      details: { option: 'fromSeq', fromSeq, toSeq },
    })
  }
}

function isSessionId(name: string): boolean {
  try {
    assertSessionId(name)
    return true
  } catch {
    return false
  }
}

export async function openReader(
  ctx: StoreContext,
  id: string,
  options: { readonly allowDamaged?: boolean } = {},
): Promise<SessionReadResult> {
  assertSessionId(id)
  const older = await olderGeneration(ctx, id)
  if (older !== null) return readOlder(ctx, id, older)
  const opened = await openLog(ctx, id, { write: false })
  const { handle, directory, log } = opened
  let scan: SessionScan & { readonly zstd?: ZstdLogStats | undefined }
  try {
    scan = await scanForOpen(ctx, { ...opened, id }, { verifyPrefix: false })
  } finally {
    await handle.close().catch(() => undefined)
  }
  const frames = scan.zstd
  const { outcome, projection } = scan
  const damage = outcome.damage
  if (damage !== null && (!options.allowDamaged || isRefusal(damage))) throw damage
  // I7: the generation this one was migrated from must be unchanged (a size check on reads).
  const fork =
    damage === null ? await generationFork(ctx, outcome.header, { id, directory, mode: 'read' }) : null
  if (fork !== null && options.allowDamaged !== true) throw fork
  if (outcome.headerMissing) {
    ctx.logger.warn(`Session ${id} has no valid header (a crash during creation?); read as empty.`, {
      id,
      file: log.file,
    })
  }
  return {
    header: outcome.header,
    headerMissing: outcome.headerMissing,
    projection,
    lastSeq: outcome.lastSeq,
    tornTail: outcome.tornTail,
    error: damage ?? fork,
    pendingToolCalls: projection.repairState.pendingCalls,
    stats: { ...outcome.stats, projection: projection.stats },
    file: log.file,
    bytes: outcome.bytesRead,
    checkpoint: scan.checkpoint,
    ...(frames === undefined ? {} : { frames }),
  }
}

export function readEvents(
  ctx: StoreContext,
  id: string,
  options: { readonly fromSeq?: number; readonly toSeq?: number } = {},
): AsyncIterable<LoggedEvent> {
  assertSessionId(id)
  assertSeqRange(id, options)
  return streamEvents(ctx, id, options)
}

async function* streamEvents(
  ctx: StoreContext,
  id: string,
  options: { readonly fromSeq?: number; readonly toSeq?: number },
): AsyncGenerator<LoggedEvent, void, undefined> {
  const fromSeq = options.fromSeq ?? 0
  const toSeq = options.toSeq ?? Infinity
  const older = await olderGeneration(ctx, id)
  if (older !== null) {
    yield* readOlderGenerationEvents(generationContext(ctx), { ...older, id, fromSeq, toSeq })
    return
  }
  const opened = await openLog(ctx, id, { write: false })
  try {
    yield* readOpenLogEvents(ctx, { ...opened, id }, { fromSeq, toSeq })
  } finally {
    await opened.handle.close().catch(() => undefined)
  }
}

export async function verify(ctx: StoreContext, id: string): Promise<VerifyReport> {
  assertSessionId(id)
  const older = await olderGeneration(ctx, id)
  if (older !== null) {
    const report = await verifyOlderGeneration(generationContext(ctx), {
      directory: older.directory,
      id,
      generation: older.source,
    })
    if (report.damage !== null && isRefusal(report.damage)) throw report.damage
    return { id, ...report }
  }
  const { handle, log, adapter } = await openLog(ctx, id, { write: false })
  let scan: OpenScan
  try {
    scan = await scanOpenLog(ctx, { handle, adapter, id })
  } finally {
    await handle.close().catch(() => undefined)
  }
  const { outcome } = scan
  if (outcome.damage !== null && isRefusal(outcome.damage)) throw outcome.damage
  return {
    id,
    file: log.file,
    status: outcome.damage !== null ? 'damaged' : outcome.tornTail !== null ? 'torn-tail' : 'ok',
    headerMissing: outcome.headerMissing,
    bytes: outcome.bytesRead,
    events: outcome.stats.events,
    lastSeq: outcome.lastSeq,
    tornTail: outcome.tornTail,
    damage: outcome.damage,
    version: SESSION_FORMAT_VERSION,
  }
}

export async function list(
  ctx: StoreContext,
): Promise<{ sessions: SessionSummary[]; problems: { id: string; error: JsonlStoreError }[] }> {
  const sessions: SessionSummary[] = []
  const problems: { id: string; error: JsonlStoreError }[] = []
  let names: string[]
  try {
    await ensureRoot(ctx, false)
    names = await ctx.fs.readdir(ctx.root)
  } catch (error) {
    if (JsonlStoreError.is(error) && error.code === JsonlErrorCode.SESSION_NOT_FOUND)
      return { sessions, problems }
    throw toStoreError(error, { op: 'list', file: '', fallback: JsonlErrorCode.READ_FAILED })
  }
  const ids = names.filter((name) => isSessionId(name)).sort()
  for (let start = 0; start < ids.length; start += LIST_CONCURRENCY) {
    const batch = ids.slice(start, start + LIST_CONCURRENCY)
    const results = await Promise.all(batch.map((id) => summarize(ctx, id)))
    for (const result of results) {
      if ('error' in result) problems.push(result)
      else sessions.push({ ...result, version: result.version ?? SESSION_FORMAT_VERSION })
    }
  }
  return { sessions, problems }
}

async function summarize(
  ctx: StoreContext,
  id: string,
): Promise<LogSummary | { id: string; error: JsonlStoreError }> {
  const file = `${id}/${LOG_FILE_NAME}`
  try {
    // The name's version only: a v4 header is read (and its version checked) below.
    const older = await olderGeneration(ctx, id, { peek: false })
    if (older !== null) {
      const summary = await summarizeOlderGeneration(generationContext(ctx), {
        directory: older.directory,
        id,
        generation: older.source,
      })
      return { id, ...summary }
    }
    const { handle, log, adapter } = await openLog(ctx, id, { write: false })
    try {
      const stats = await handle.stat()
      const outcome = await peekHeader(ctx, { handle, adapter, id })
      if (outcome.damage !== null) return { id, error: outcome.damage }
      if (outcome.header === null) {
        return {
          id,
          error: new JsonlStoreError({
            code: JsonlErrorCode.INVALID_HEADER,
            message: `${file} has no valid header line: expected a checksummed agent-ledger header, found ${stats.size === 0 ? 'an empty file' : 'a torn or damaged first line'}.`,
            file,
            line: 1,
            offset: 0,
            details: { headerMissing: true, bytes: stats.size },
          }),
        }
      }
      return {
        id,
        header: outcome.header,
        file: log.file,
        bytes: stats.size,
        modifiedAt: stats.mtime.toISOString(),
      }
    } finally {
      await handle.close().catch(() => undefined)
    }
  } catch (error) {
    return { id, error: toStoreError(error, { op: 'read', file, fallback: JsonlErrorCode.READ_FAILED }) }
  }
}
