/**
 * The store's whole-session operations that read a session and write another or nothing:
 * salvage (the good prefix of a damaged session into a new one) and list (one page of
 * summaries, a session whose header fails its checks reported beside the others).
 */
import type { LoggedEvent } from '@agent-ledger/session-events'

import { encodeEvent } from './event-codec.ts'
import type { CheckpointContext } from './checkpoint-open.ts'
import { invalidOption, throwIfAborted } from './checks.ts'
import { buildHeader, parseHeaderLine } from './header.ts'
import type { SignalOptions, StoredLine } from './port.ts'
import { scanSession } from './scan.ts'
import { carryLines } from './seed.ts'
import { SessionStoreError, SessionStoreErrorCode } from './session-store-error.ts'
import type { ListOptions, ListResult, SalvageReport, SessionSummary } from './store-api.ts'

/**
 * Copies the good prefix of session `id` into the new session `to`, closed by a
 * `session/salvage` event (the caller checked both ids and that `to` is absent).
 *
 * @param store - The store's context (its redaction policy too) and clock.
 * @param request - The source, the target and the signal.
 * @returns The report.
 */
export async function salvageSession(
  store: {
    readonly context: CheckpointContext
    readonly clock: () => string
  },
  request: { readonly id: string; readonly to: string } & SignalOptions,
): Promise<SalvageReport> {
  const { context, clock } = store
  const { id, to } = request
  let lines: string[] = []
  const events: LoggedEvent[] = []
  const scan = await scanSession(context, id, {
    signal: request.signal,
    onEvent: (stored: StoredLine, event: LoggedEvent) => {
      lines.push(stored.line)
      events.push(event)
    },
  })
  const made = await context.keys.create(to, { signal: request.signal })
  const cipher = made?.state.cipher ?? null
  // Exact lines between plain sessions; sealed again under the new session's own key otherwise.
  if (scan.keys !== null || cipher !== null) lines = carryLines(context, { id: to, cipher, events })
  const reason = scan.damage !== null ? scan.damage.code : scan.tornTail !== null ? 'torn-tail' : 'none'
  const droppedAt = scan.damage?.location ?? scan.tornTail?.location
  const { header, line: headerLine } = buildHeader(
    {
      ...(scan.header.cwd === undefined ? {} : { cwd: scan.header.cwd }),
      ...(scan.header.delegationDepth === undefined ? {} : { delegationDepth: scan.header.delegationDepth }),
      ...(scan.header.metadata === undefined ? {} : { metadata: scan.header.metadata }),
    },
    {
      id: to,
      createdAt: clock(),
      limits: context.limits,
      crc32c: context.crc32c,
      redaction: context.redaction,
      encryption: made?.header,
    },
  )
  const salvageSeq = scan.lastSeq + 1
  const prepared = encodeEvent(
    {
      type: 'session/salvage',
      data: {
        sourceSession: id,
        sourceFile: droppedAt?.file ?? `${context.backend.name}:${id}`,
        lastGoodSeq: scan.lastSeq,
        droppedFromOffset: droppedAt?.offset ?? 0,
        reason,
      },
    },
    { seq: salvageSeq, time: clock() },
    { ...context, sessionId: to, projection: scan.projection, role: 'salvage event', cipher },
  )
  lines.push(prepared.line)
  throwIfAborted(request.signal, `Salvaging ${id} into ${to}`)
  await context.backend.create({
    id: to,
    headerLine,
    header,
    lines,
    lastCrc: prepared.crc,
    signal: request.signal,
  })
  return {
    from: id,
    to,
    copiedEvents: scan.lastSeq + 1,
    lastGoodSeq: scan.lastSeq,
    salvageSeq,
    reason,
    sourceError: scan.damage,
  }
}

/**
 * One page of sessions: each entry's header checked; a session that cannot be listed is a
 * problem beside the others.
 *
 * @param context - The store's context.
 * @param options - Cursor, limit (1-1000, default 100), filter and signal.
 * @returns The summaries, the problems and the next cursor.
 * @throws {@link SessionStoreError} `INVALID_OPTION`.
 */
export async function listSessions(context: CheckpointContext, options: ListOptions): Promise<ListResult> {
  const limit = options.limit ?? 100
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > 1000)
    throw invalidOption('limit', 'an integer from 1 to 1000', limit)
  const filter = options.filter
  if (filter?.updatedSince !== undefined && !Number.isFinite(Date.parse(filter.updatedSince))) {
    throw invalidOption('filter.updatedSince', 'an ISO-8601 time', filter.updatedSince)
  }
  const page = await context.backend.list({ cursor: options.cursor, limit, filter, signal: options.signal })
  const sessions: SessionSummary[] = []
  const problems: { id: string; error: SessionStoreError }[] = []
  for (const entry of page.entries) {
    if (entry.problem !== undefined || entry.headerLine === undefined) {
      const problem = entry.problem
      problems.push({
        id: entry.id,
        error: SessionStoreError.is(problem)
          ? problem
          : new SessionStoreError({
              code: SessionStoreErrorCode.INVALID_HEADER,
              sessionId: entry.id,
              location: entry.location,
              message: `Session ${entry.id} could not be listed: ${problem?.message ?? 'the backend returned no header line'}.`,
              details: { backendCode: problem?.code ?? null },
            }),
      })
      continue
    }
    try {
      const header = parseHeaderLine(entry.headerLine, {
        expectedId: entry.id,
        location: entry.location,
        maxDepth: context.limits.maxDepth,
        crc32c: context.crc32c,
      })
      sessions.push({ id: entry.id, header, events: entry.nextSeq, updatedAt: entry.updatedAt })
    } catch (error) {
      if (!SessionStoreError.is(error)) throw error
      problems.push({ id: entry.id, error })
    }
  }
  return { sessions, problems, cursor: page.cursor }
}
