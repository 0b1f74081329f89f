import { parseEvent } from '@agent-ledger/session-events'
import type { LoggedEvent, SessionEvent, SessionHeader } from '@agent-ledger/session-events'
import { planFork, ProjectionError } from '@agent-ledger/session-projection'

import { toStoreError } from '../fs-errors.ts'
import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import { LOG_FILE_NAME } from '../layout.ts'
import { encodeEventLine } from '../line-codec.ts'
import { assertSessionId } from '../session-id.ts'
import type { SessionWriter } from '../session-writer.ts'
import { logAdapter } from '../log-adapter.ts'
import type { SalvageReport } from './api.ts'
import { ensureRoot, ensureSessionDirectory, isRefusal } from './context.ts'
import type { StoreContext } from './context.ts'
import { openLog, scanOpenLog, scanPrefix } from './log-access.ts'
import { olderGeneration } from './older-generation.ts'
import { buildHeader } from './header-seed.ts'
import { assertSessionAbsent, publishNewSession } from './publish-new.ts'
import { create } from './create.ts'
import { readEvents, verify } from './read.ts'
import { readHeader } from './views.ts'

export async function salvage(
  ctx: StoreContext,
  id: string,
  request: { readonly to: string },
): Promise<SalvageReport> {
  assertSessionId(id)
  const to = assertSessionId(request.to)
  if ((await olderGeneration(ctx, id)) !== null) return salvageOlder(ctx, id, to)
  const { handle, log, adapter } = await openLog(ctx, id, { write: false })
  try {
    const { outcome } = await scanOpenLog(ctx, { handle, adapter, id })
    const sourceFile = log.file
    if (outcome.damage !== null && isRefusal(outcome.damage)) throw outcome.damage
    // A damaged header (CRLF line endings, a foreign file...): the new session starts empty,
    // its session/salvage event naming what was left behind; the source stays untouched.
    if (outcome.header === null && outcome.damage === null) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.INVALID_HEADER,
        message: `Cannot salvage ${sourceFile}: expected a valid header line, found none.`,
        file: sourceFile,
        line: 1,
        offset: 0,
      })
    }
    const salvageSeq = outcome.lastSeq + 1
    const reason =
      outcome.damage !== null ? outcome.damage.code : outcome.tornTail !== null ? 'torn-tail' : 'none'
    const salvageEvent: SessionEvent<'session/salvage'> = {
      seq: salvageSeq,
      time: ctx.clock(),
      type: 'session/salvage',
      data: {
        sourceSession: id,
        sourceFile,
        lastGoodSeq: outcome.lastSeq,
        droppedFromOffset: outcome.goodEndOffset,
        reason,
      },
    }
    parseEvent(salvageEvent, ctx.registry)
    const source = outcome.header
    const header = buildHeader(ctx, to, {
      ...(source?.cwd === undefined ? {} : { cwd: source.cwd }),
      ...(source?.delegationDepth === undefined ? {} : { delegationDepth: source.delegationDepth }),
      ...(source?.metadata === undefined ? {} : { metadata: source.metadata }),
    })
    await ensureRoot(ctx, true)
    const directory = await ensureSessionDirectory(ctx, to)
    const target = await logAdapter(to, ctx.encoding, ctx.limits)
    const salvageLine = encodeEventLine(salvageEvent)
    const published = await publishNewSession(ctx, {
      id: to,
      directory,
      operation: 'salvage',
      header,
      adapter: target,
      body: async function* copyGoodLines() {
        // The good lines after the header, byte for byte (the source's plain content).
        yield* adapter.plainContent(handle, adapter.goodLineRange(outcome))
        yield salvageLine
      },
      expected: { lines: salvageSeq + 1, lastLine: salvageLine },
    })
    await published.handle.close().catch(() => undefined)
    await published.lock.release()
    return {
      from: id,
      to,
      file: target.log.file,
      copiedEvents: outcome.lastSeq + 1,
      lastGoodSeq: outcome.lastSeq,
      salvageSeq,
      droppedFromOffset: outcome.goodEndOffset,
      droppedBytes: outcome.bytesRead - outcome.goodEndOffset,
      reason,
      sourceError: outcome.damage,
    }
  } finally {
    await handle.close().catch(() => undefined)
  }
}

/**
 * Salvage of an older generation (v0 `session.jsonl`), read through migration: its good
 * prefix is re-encoded as v4 lines (another format: no byte copy), then `session/salvage`.
 * Offsets and byte counts are the source file's.
 */
async function salvageOlder(ctx: StoreContext, id: string, to: string): Promise<SalvageReport> {
  const report = await verify(ctx, id)
  let lastSeq = -1
  let damage: JsonlStoreError | null = null
  try {
    for await (const event of readEvents(ctx, id)) lastSeq = event.seq
  } catch (error) {
    if (!JsonlStoreError.is(error)) throw error
    damage = error
  }
  const { header: source } = await readHeader(ctx, id)
  const sourceFile = report.file
  const droppedFromOffset = report.damage?.offset ?? report.tornTail?.offset ?? report.bytes
  const reason = damage !== null ? damage.code : report.tornTail !== null ? 'torn-tail' : 'none'
  const salvageEvent: SessionEvent<'session/salvage'> = {
    seq: lastSeq + 1,
    time: ctx.clock(),
    type: 'session/salvage',
    data: { sourceSession: id, sourceFile, lastGoodSeq: lastSeq, droppedFromOffset, reason },
  }
  parseEvent(salvageEvent, ctx.registry)
  const header = buildHeader(ctx, to, {
    ...(source?.cwd === undefined ? {} : { cwd: source.cwd }),
    ...(source?.delegationDepth === undefined ? {} : { delegationDepth: source.delegationDepth }),
    ...(source?.metadata === undefined ? {} : { metadata: source.metadata }),
  })
  await ensureRoot(ctx, true)
  const directory = await ensureSessionDirectory(ctx, to)
  const target = await logAdapter(to, ctx.encoding, ctx.limits)
  const events = (): AsyncIterable<LoggedEvent> => readEvents(ctx, id, { toSeq: lastSeq })
  const salvageLine = encodeEventLine(salvageEvent)
  const published = await publishNewSession(ctx, {
    id: to,
    directory,
    operation: 'salvage',
    header,
    adapter: target,
    body: async function* reencodeGoodEvents() {
      if (lastSeq >= 0) for await (const event of events()) yield encodeEventLine(event)
      yield salvageLine
    },
    expected: { lines: lastSeq + 2, lastLine: salvageLine },
  })
  await published.handle.close().catch(() => undefined)
  await published.lock.release()
  return {
    from: id,
    to,
    file: target.log.file,
    copiedEvents: lastSeq + 1,
    lastGoodSeq: lastSeq,
    salvageSeq: lastSeq + 1,
    droppedFromOffset,
    droppedBytes: report.bytes - droppedFromOffset,
    reason,
    sourceError: damage,
  }
}

export async function fork(
  ctx: StoreContext,
  id: string,
  request: { readonly to: string; readonly atSeq: number; readonly openTurn?: 'close' | 'refuse' },
): Promise<SessionWriter> {
  assertSessionId(id)
  const to = assertSessionId(request.to)
  await assertSessionAbsent(ctx, to)
  const { header, prefix } = await forkSource(ctx, id, request.atSeq)
  let seed: ReturnType<typeof planFork>
  try {
    seed = planFork(prefix, {
      boundarySeq: request.atSeq,
      parentSession: id,
      ...(request.openTurn === undefined ? {} : { openTurn: request.openTurn }),
    })
  } catch (error) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.FORK_REFUSED,
      message: `Cannot fork ${id} at seq ${String(request.atSeq)}: ${error instanceof Error ? error.message : String(error)}.`,
      file: `${id}/${LOG_FILE_NAME}`,
      seq: Number.isSafeInteger(request.atSeq) ? request.atSeq : undefined,
      details: { projectionCode: ProjectionError.is(error) ? error.code : null },
      cause: error,
    })
  }
  return create(
    ctx,
    {
      id: to,
      header: {
        ...(header?.cwd === undefined ? {} : { cwd: header.cwd }),
        ...(header?.delegationDepth === undefined ? {} : { delegationDepth: header.delegationDepth }),
        ...(header?.metadata === undefined ? {} : { metadata: header.metadata }),
        parentSession: seed.header.parentSession,
        seeded: seed.header.seeded,
        inheritedEventCount: seed.header.inheritedEventCount,
      },
      seed: seed.events,
    },
    'fork',
  )
}

/** The header and events 0..atSeq of a fork's parent, from whichever log a read opens. */
async function forkSource(
  ctx: StoreContext,
  id: string,
  atSeq: number,
): Promise<{ header: SessionHeader | null; prefix: LoggedEvent[] }> {
  if ((await olderGeneration(ctx, id)) !== null) {
    // An older generation (v0 session.jsonl) is read through migration, like every read.
    const prefix: LoggedEvent[] = []
    if (Number.isSafeInteger(atSeq) && atSeq >= 0) {
      for await (const event of readEvents(ctx, id, { toSeq: atSeq })) prefix.push(event)
    }
    return { header: (await readHeader(ctx, id)).header, prefix }
  }
  const { handle, log, adapter } = await openLog(ctx, id, { write: false })
  let header: SessionHeader | null
  const prefix: LoggedEvent[] = []
  try {
    const outcome = await scanPrefix(
      ctx,
      { handle, adapter, id },
      {
        onEvent: (event: LoggedEvent) => {
          if (event.seq <= atSeq) prefix.push(event)
        },
        ...(Number.isSafeInteger(atSeq) ? { stopBeforeLine: atSeq + 3 } : {}),
      },
    )
    if (outcome.damage !== null) throw outcome.damage
    header = outcome.header
  } catch (error) {
    throw toStoreError(error, {
      op: 'read',
      file: log.file,
      fallback: JsonlErrorCode.READ_FAILED,
    })
  } finally {
    await handle.close().catch(() => undefined)
  }
  return { header, prefix }
}
