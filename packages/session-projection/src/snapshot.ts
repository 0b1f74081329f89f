import type { PendingToolCall, RepairState } from '@agent-ledger/loop-repair'
import {
  classifyEventType,
  deepFreeze,
  isSurfaceEventType,
  parseEvent,
  wireMessageSchema,
} from '@agent-ledger/session-events'
import type { EventRegistry, LoggedEvent, SurfaceEventType } from '@agent-ledger/session-events'

import { isAnnotationType } from './annotations.ts'
import { ProjectionError, ProjectionErrorCode } from './projection-error.ts'
import type { ProjectionStats } from './projection-stats.ts'
import type { SurfaceNode } from './surface.ts'

/**
 * The snapshot layout this build writes and reads. 2: surface nodes carry a tool result's
 * `isError` and `code`, `stats.highestTurn`, and `annotations` (the `ai-sdk/` and
 * `openai-agents/` events; version 1 had none of them:
 * refused, so a checkpoint of version 1 is rebuilt by replay, never read with them missing).
 */
export const SNAPSHOT_VERSION = 2

/** A `compaction/start` still waiting for its `compaction/end`. */
export interface OpenCompaction {
  readonly compactionId: string
  /** Seq of the `compaction/start` event. */
  readonly seq: number
  readonly startSeq: number
  readonly endSeq: number
}

/**
 * A projection's state as plain JSON data (objects, arrays, strings, numbers, booleans,
 * `null`), for checkpoints. Produced by `Projection.snapshot()`, consumed by
 * `restoreProjection()`.
 */
export interface ProjectionSnapshot {
  /** Layout version; `restoreProjection` refuses any other with `SNAPSHOT_UNSUPPORTED`. */
  readonly snapshotVersion: typeof SNAPSHOT_VERSION
  readonly nextSeq: number
  readonly lastTime: string | null
  readonly lastEvent: LoggedEvent | null
  readonly repairState: RepairState
  readonly openCompaction: OpenCompaction | null
  readonly stats: Readonly<ProjectionStats>
  /** The surface nodes in model order; their messages are the events' `data.message`. */
  readonly surface: readonly SurfaceNode[]
  /** The adapters' annotation events applied, in seq order (`Projection.annotations()`). */
  readonly annotations: readonly LoggedEvent[]
}

const ROLE_OF_TYPE: Readonly<Record<SurfaceEventType, string>> = {
  'system/message': 'system',
  'user/message': 'user',
  'assistant/message': 'assistant',
  'tool/result': 'tool',
}

const STAT_KEYS: readonly (keyof ProjectionStats)[] = [
  'events',
  'surfaceEvents',
  'ignoredUnknown',
  'pluginEvents',
  'orphanToolResults',
  'duplicateToolResults',
  'replaces',
  'nonMonotonicTime',
  'turns',
  'highestTurn',
]

function invalid(field: string, expected: string, found: unknown): ProjectionError {
  const shown = found === null ? 'null' : Array.isArray(found) ? 'an array' : typeof found
  return new ProjectionError({
    code: ProjectionErrorCode.INVALID_SNAPSHOT,
    field,
    message: `Projection snapshot field "${field}" is malformed: expected ${expected}, found ${typeof found === 'number' || typeof found === 'string' ? JSON.stringify(found) : shown}`,
  })
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function readCount(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw invalid(field, 'a non-negative integer', value)
  }
  return value
}

function readString(value: unknown, field: string): string {
  if (typeof value !== 'string') throw invalid(field, 'a string', value)
  return value
}

function readRepairState(value: unknown): RepairState {
  if (!isRecord(value)) throw invalid('repairState', 'an object', value)
  const { openTurn, pendingCalls } = value
  if (openTurn !== null) {
    if (!isRecord(openTurn)) throw invalid('repairState.openTurn', 'an object or null', openTurn)
    readCount(openTurn.turn, 'repairState.openTurn.turn')
    readCount(openTurn.seq, 'repairState.openTurn.seq')
  }
  if (!Array.isArray(pendingCalls)) throw invalid('repairState.pendingCalls', 'an array', pendingCalls)
  pendingCalls.forEach((call: unknown, index) => {
    const field = `repairState.pendingCalls[${index}]`
    if (!isRecord(call)) throw invalid(field, 'an object', call)
    readString(call.callId, `${field}.callId`)
    readString(call.name, `${field}.name`)
    readString(call.arguments, `${field}.arguments`)
    readCount(call.assistantSeq, `${field}.assistantSeq`)
    if (call.toolCallSeq !== null) readCount(call.toolCallSeq, `${field}.toolCallSeq`)
  })
  return deepFreeze(
    value as unknown as { openTurn: RepairState['openTurn']; pendingCalls: PendingToolCall[] },
  )
}

function readSurface(value: unknown, nextSeq: number): readonly SurfaceNode[] {
  if (!Array.isArray(value)) throw invalid('surface', 'an array', value)
  const seen = new Set<number>()
  value.forEach((node: unknown, index) => {
    const field = `surface[${index}]`
    if (!isRecord(node)) throw invalid(field, 'an object', node)
    const seq = readCount(node.seq, `${field}.seq`)
    if (seq >= nextSeq || seen.has(seq)) throw invalid(`${field}.seq`, `a unique seq below ${nextSeq}`, seq)
    seen.add(seq)
    const type = readString(node.type, `${field}.type`)
    if (!isSurfaceEventType(type)) throw invalid(`${field}.type`, 'a surface event type', type)
    const message = wireMessageSchema.safeParse(node.message)
    if (!message.success) throw invalid(`${field}.message`, 'a wire message', node.message)
    if ((node.message as { role: string }).role !== ROLE_OF_TYPE[type]) {
      throw invalid(
        `${field}.message.role`,
        `"${ROLE_OF_TYPE[type]}" for ${type}`,
        (node.message as { role: string }).role,
      )
    }
    if (node.isError !== undefined && (node.isError !== true || type !== 'tool/result'))
      throw invalid(`${field}.isError`, 'true on a tool/result node, or absent', node.isError)
    if (node.code !== undefined && (typeof node.code !== 'string' || type !== 'tool/result'))
      throw invalid(`${field}.code`, 'a string on a tool/result node, or absent', node.code)
  })
  return deepFreeze(value as SurfaceNode[])
}

function readAnnotations(
  value: unknown,
  request: { readonly nextSeq: number; readonly count: number; readonly registry: EventRegistry },
): readonly LoggedEvent[] {
  if (!Array.isArray(value)) throw invalid('annotations', 'an array', value)
  if (value.length > request.count) {
    throw invalid(
      'annotations',
      `at most ${request.count} events (stats.ignoredUnknown + stats.pluginEvents)`,
      value.length,
    )
  }
  let previous = -1
  const events = value.map((candidate: unknown, index) => {
    const field = `annotations[${index}]`
    let event: LoggedEvent
    try {
      event = parseEvent(candidate, request.registry)
    } catch (error) {
      throw new ProjectionError({
        code: ProjectionErrorCode.INVALID_SNAPSHOT,
        field,
        message: `Projection snapshot field "${field}" is malformed: expected a valid event, found one the contract refuses`,
        cause: error,
      })
    }
    if (event.seq <= previous || event.seq >= request.nextSeq)
      throw invalid(`${field}.seq`, `a seq above ${previous} and below ${request.nextSeq}`, event.seq)
    const typeClass = classifyEventType(event.type, event.ignorable === true, request.registry)
    if ((typeClass !== 'plugin' && typeClass !== 'ignorable-unknown') || !isAnnotationType(event.type))
      throw invalid(`${field}.type`, 'an adapter annotation type', event.type)
    previous = event.seq
    return event
  })
  return deepFreeze(events)
}

/**
 * Validates a snapshot and returns its parts, deep-frozen in place.
 *
 * @throws {@link ProjectionError} `SNAPSHOT_UNSUPPORTED` or `INVALID_SNAPSHOT`.
 */
export function readSnapshot(
  snapshot: unknown,
  registry: EventRegistry,
): Omit<ProjectionSnapshot, 'snapshotVersion' | 'stats'> & { stats: ProjectionStats } {
  if (!isRecord(snapshot)) throw invalid('snapshot', 'an object', snapshot)
  if (snapshot.snapshotVersion !== SNAPSHOT_VERSION) {
    const found = snapshot.snapshotVersion
    throw new ProjectionError({
      code: ProjectionErrorCode.SNAPSHOT_UNSUPPORTED,
      field: 'snapshotVersion',
      expected: SNAPSHOT_VERSION,
      found: typeof found === 'number' || typeof found === 'string' ? found : String(found),
      message: `Projection snapshot has snapshotVersion ${JSON.stringify(found) ?? 'undefined'}: expected ${SNAPSHOT_VERSION}, found a version this build cannot read`,
    })
  }
  const nextSeq = readCount(snapshot.nextSeq, 'nextSeq')
  const lastTime = snapshot.lastTime === null ? null : readString(snapshot.lastTime, 'lastTime')
  let lastEvent: LoggedEvent | null = null
  if (nextSeq === 0) {
    if (snapshot.lastEvent !== null || lastTime !== null) {
      throw invalid('lastEvent', 'null (and a null lastTime) when nextSeq is 0', snapshot.lastEvent)
    }
  } else {
    try {
      lastEvent = parseEvent(snapshot.lastEvent, registry)
    } catch (error) {
      throw new ProjectionError({
        code: ProjectionErrorCode.INVALID_SNAPSHOT,
        field: 'lastEvent',
        message: `Projection snapshot field "lastEvent" is malformed: expected a valid event, found one the contract refuses`,
        cause: error,
      })
    }
    if (lastEvent.seq !== nextSeq - 1) throw invalid('lastEvent.seq', `seq ${nextSeq - 1}`, lastEvent.seq)
    if (lastEvent.time !== lastTime) throw invalid('lastTime', "the last event's time", lastTime)
    deepFreeze(lastEvent)
  }
  const openCompactionValue = snapshot.openCompaction
  let openCompaction: OpenCompaction | null = null
  if (openCompactionValue !== null) {
    if (!isRecord(openCompactionValue))
      throw invalid('openCompaction', 'an object or null', openCompactionValue)
    openCompaction = Object.freeze({
      compactionId: readString(openCompactionValue.compactionId, 'openCompaction.compactionId'),
      seq: readCount(openCompactionValue.seq, 'openCompaction.seq'),
      startSeq: readCount(openCompactionValue.startSeq, 'openCompaction.startSeq'),
      endSeq: readCount(openCompactionValue.endSeq, 'openCompaction.endSeq'),
    })
  }
  const statsValue = snapshot.stats
  if (!isRecord(statsValue)) throw invalid('stats', 'an object', statsValue)
  const stats = {} as ProjectionStats
  for (const key of STAT_KEYS) stats[key] = readCount(statsValue[key], `stats.${key}`)
  const annotations = readAnnotations(snapshot.annotations, {
    nextSeq,
    count: stats.ignoredUnknown + stats.pluginEvents,
    registry,
  })
  return {
    nextSeq,
    lastTime,
    lastEvent,
    repairState: readRepairState(snapshot.repairState),
    openCompaction,
    stats,
    surface: readSurface(snapshot.surface, nextSeq),
    annotations,
  }
}
