/**
 * Seeds, once for every backend: checking a create request's seed events and the
 * `session/end-seed` rule, and planning a forked session's lines (the parent's exact
 * prefix lines, then the closers and the marker encoded here).
 */
import type { LoggedEvent, SessionHeader } from '@agent-ledger/session-events'
import { createProjection, planFork } from '@agent-ledger/session-projection'
import type { ForkSeed, Projection } from '@agent-ledger/session-projection'

import { encodeEvent } from './event-codec.ts'
import { buildHeader } from './header.ts'
import { redactionHeader } from './redaction.ts'
import type { SignalOptions, StoredLine } from './port.ts'
import { scanSession } from './scan.ts'
import type { CoreContext } from './scan.ts'
import { SessionStoreError, SessionStoreErrorCode } from './session-store-error.ts'
import { describe } from './checks.ts'

/** Checks and encodes seed events (seqs dense from 0), folding them into `projection`. */
export function encodeSeed(
  context: CoreContext,
  request: {
    readonly id: string
    readonly header: SessionHeader
    readonly seed: readonly LoggedEvent[]
    readonly projection: Projection
  },
): string[] {
  const { id, header, seed, projection } = request
  if (!Array.isArray(seed)) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.INVALID_SEED,
      sessionId: id,
      message: `Cannot create session ${id}: seed must be an array of events, found ${describe(seed)}.`,
    })
  }
  const lines: string[] = []
  for (const [index, event] of seed.entries()) {
    const found = (event as { seq?: unknown } | null)?.seq
    if (found !== index) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.INVALID_SEED,
        sessionId: id,
        seq: index,
        message: `Cannot create session ${id}: seed event ${index} must have seq ${index} (dense from 0), found ${describe(found)}.`,
        details: { expected: index, found: typeof found === 'number' ? found : null },
      })
    }
    const time = (event as { time?: unknown }).time
    const prepared = encodeEvent(
      event,
      { seq: index, time: time as string },
      { ...context, sessionId: id, projection, role: 'seed event' },
    )
    projection.apply(prepared.event)
    lines.push(prepared.line)
  }
  checkSeedMarker(id, header, seed)
  return lines
}

/**
 * A seeded header needs a seed holding exactly one `session/end-seed` marker that agrees with
 * it. Events after the marker are the new session's own (an importer's fork publishes them in
 * the same create), as the JSONL store accepts them.
 */
function checkSeedMarker(id: string, header: SessionHeader, seed: readonly LoggedEvent[]): void {
  if (header.seeded !== true) return
  const markers = seed.filter((event) => event.type === 'session/end-seed')
  const last = markers[0] ?? null
  if (markers.length !== 1 || last === null) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.INVALID_SEED,
      sessionId: id,
      message: `Cannot create session ${id}: a seeded header needs a seed holding exactly one session/end-seed event, found ${markers.length === 0 ? `${seed.length} seed event(s) and no marker` : `${markers.length} markers`}.`,
      details: {
        expected: 'session/end-seed',
        found: markers.length === 0 ? (seed.at(-1)?.type ?? null) : markers.length,
      },
    })
  }
  const data = last.data as { parentSession?: string; boundarySeq?: number }
  if (
    header.parentSession !== undefined &&
    data.parentSession !== undefined &&
    data.parentSession !== header.parentSession
  ) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.INVALID_SEED,
      sessionId: id,
      message: `Cannot create session ${id}: the header's parentSession is ${describe(header.parentSession)} but the seed's session/end-seed names ${describe(data.parentSession)}.`,
      details: { expected: header.parentSession, found: data.parentSession },
    })
  }
  if (
    header.inheritedEventCount !== undefined &&
    data.boundarySeq !== undefined &&
    data.boundarySeq + 1 !== header.inheritedEventCount
  ) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.INVALID_SEED,
      sessionId: id,
      message: `Cannot create session ${id}: the header's inheritedEventCount is ${header.inheritedEventCount} but the seed's session/end-seed has boundarySeq ${data.boundarySeq} (expected ${header.inheritedEventCount - 1}).`,
      details: { expected: header.inheritedEventCount - 1, found: data.boundarySeq },
    })
  }
}

/** What {@link planForkedSession} needs. */
export interface ForkPlanRequest extends SignalOptions {
  readonly id: string
  readonly to: string
  readonly atSeq: number
  readonly openTurn: 'close' | 'refuse' | undefined
  /** The child header's creation time. */
  readonly createdAt: string
}

/** A planned fork: the child's header, its projection, and its lines split at the boundary. */
export interface ForkPlan {
  readonly header: SessionHeader
  readonly headerLine: string
  readonly projection: Projection
  /** The parent's exact lines 0..atSeq. */
  readonly prefixLines: readonly string[]
  /** The closers and the `session/end-seed` marker, encoded for the child. */
  readonly tailLines: readonly string[]
}

/**
 * Reads the parent up to `atSeq` (every check), plans the fork with `planFork`, and encodes
 * the child's header and the lines after the inherited prefix.
 *
 * @param context - Backend and checks.
 * @param request - Parent, child, boundary, open-turn policy and creation time.
 * @returns The plan; nothing is published.
 * @throws {@link SessionStoreError} `FORK_REFUSED`, the parent's damage or header codes.
 */
export async function planForkedSession(context: CoreContext, request: ForkPlanRequest): Promise<ForkPlan> {
  const { id, to, atSeq } = request
  const prefix: LoggedEvent[] = []
  const prefixLines: string[] = []
  const scan = await scanSession(context, id, {
    toSeq: atSeq,
    signal: request.signal,
    onEvent: (stored: StoredLine, event: LoggedEvent) => {
      prefix.push(event)
      prefixLines.push(stored.line)
    },
  })
  if (scan.damage !== null) throw scan.damage
  let seed: ForkSeed
  try {
    seed = planFork(prefix, {
      boundarySeq: atSeq,
      parentSession: id,
      ...(request.openTurn === undefined ? {} : { openTurn: request.openTurn }),
    })
  } catch (error) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.FORK_REFUSED,
      sessionId: id,
      seq: atSeq,
      message: `Cannot fork ${id} at seq ${atSeq}: ${error instanceof Error ? error.message : String(error)} (the session has ${scan.lastSeq + 1} events).`,
      details: { projectionCode: (error as { code?: unknown }).code ?? null, lastSeq: scan.lastSeq },
      cause: error,
    })
  }
  const parent = scan.header
  const { header, line: headerLine } = buildHeader(
    {
      ...(parent.cwd === undefined ? {} : { cwd: parent.cwd }),
      ...(parent.delegationDepth === undefined ? {} : { delegationDepth: parent.delegationDepth }),
      ...(parent.metadata === undefined ? {} : { metadata: parent.metadata }),
      parentSession: seed.header.parentSession,
      seeded: seed.header.seeded,
      inheritedEventCount: seed.header.inheritedEventCount,
    },
    {
      id: to,
      createdAt: request.createdAt,
      limits: context.limits,
      crc32c: context.crc32c,
      extra: redactionHeader(context.redaction),
    },
  )
  // The inherited prefix keeps its exact lines; closers and the marker are encoded here.
  const projection = createProjection({ registry: context.registry })
  for (const event of prefix) projection.apply(event)
  const tailLines: string[] = []
  for (const event of seed.events.slice(prefix.length)) {
    const prepared = encodeEvent(
      event,
      { seq: event.seq, time: event.time },
      {
        ...context,
        sessionId: to,
        projection,
        role: 'fork seed event',
      },
    )
    projection.apply(prepared.event)
    tailLines.push(prepared.line)
  }
  checkSeedMarker(to, header, seed.events)
  return { header, headerLine, projection, prefixLines, tailLines }
}
