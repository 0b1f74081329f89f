import { advanceRepairState, createRepairState } from '@agent-ledger/loop-repair'
import type { RepairState } from '@agent-ledger/loop-repair'
import {
  classifyEventType,
  coreEventRegistry,
  deepFreeze,
  isSurfaceEventType,
} from '@agent-ledger/session-events'
import type { EventRegistry, LoggedEvent, SessionEvent, WireMessage } from '@agent-ledger/session-events'

import { isAnnotationType } from './annotations.ts'
import { ProjectionError, ProjectionErrorCode } from './projection-error.ts'
import { readSnapshot, SNAPSHOT_VERSION } from './snapshot.ts'
import type { OpenCompaction, ProjectionSnapshot } from './snapshot.ts'
import { locateReplaceRange, SurfaceList } from './surface.ts'
import type { SurfaceNode } from './surface.ts'
import type { ProjectionStats } from './projection-stats.ts'

export type { ProjectionStats } from './projection-stats.ts'

/**
 * The read model of a session log, folded event by event: the model-visible surface, the
 * repair state, the open compaction and counters.
 *
 * Pure and synchronous. Every method either completes or throws before changing anything.
 */
export interface Projection {
  /** Seq the next event must have (0 for an empty log). */
  readonly nextSeq: number
  /** `time` of the last applied event, or `null` before the first. */
  readonly lastTime: string | null
  /** The last applied event, or `null` before the first. */
  readonly lastEvent: LoggedEvent | null
  /** What loop-repair needs to plan the closers of this log, kept by `advanceRepairState` on every apply. */
  readonly repairState: RepairState
  /** A `compaction/start` not yet followed by its `compaction/end` (a crash mid-compaction), or `null`. Harmless: it never changes the surface. */
  readonly openCompaction: OpenCompaction | null
  /** A frozen copy of the counters. */
  readonly stats: Readonly<ProjectionStats>
  /**
   * Checks that {@link Projection.apply} would accept `event`, changing nothing.
   *
   * @param event - The next event; must be valid per `parseEvent` (the projection does not re-run the schemas).
   * @throws {@link ProjectionError} `SEQ_GAP`, `SEQ_DUPLICATE`, `UNKNOWN_EVENT_TYPE`, `INVALID_SURFACE_OP`,
   *   `REPLACE_RANGE_NOT_FOUND` or `REPLACE_CITATION_MISSING`.
   */
  check(event: LoggedEvent): void
  /**
   * Checks `event` like {@link Projection.check}, then deep-freezes it in place and folds it in.
   * A refused event leaves every piece of state unchanged, and the event itself unfrozen.
   *
   * @param event - The next event, with `seq === nextSeq`.
   * @throws {@link ProjectionError} as {@link Projection.check}.
   */
  apply(event: LoggedEvent): void
  /**
   * The current surface, in model order.
   *
   * @returns A frozen array of frozen nodes; the same array while nothing changed.
   */
  surface(): readonly SurfaceNode[]
  /**
   * The framework adapters' log-only events (types under `ai-sdk/` and `openai-agents/`: UI
   * ids, approvals, exact SDK items...), in seq order, carried by snapshots so that a reader
   * restored from a checkpoint folds them without reading the log from seq 0. Other plugin
   * and ignorable events are only counted (`stats`).
   *
   * @returns A frozen array of the deep-frozen events; the same array while none was added.
   */
  annotations(): readonly LoggedEvent[]
  /**
   * The model-visible history, in the OpenAI chat wire shape, ready to send.
   *
   * Incremental: each surface event is placed once, when applied. A call with nothing new
   * returns the same frozen array (O(1)); otherwise one pointer copy of the surface makes
   * a new frozen array. The messages are the events' own deep-frozen `data.message` objects.
   *
   * @returns A frozen array of deep-frozen messages.
   */
  deriveMessages(): readonly WireMessage[]
  /**
   * Everything needed to continue folding without the events before `nextSeq`, as plain
   * JSON data (no class instances, no `undefined` of its own), for checkpoints.
   *
   * @returns A frozen snapshot; restore it with {@link restoreProjection}.
   */
  snapshot(): ProjectionSnapshot
}

/** Options of {@link createProjection} and {@link restoreProjection}. */
export interface ProjectionOptions {
  /** The known event types; defaults to `coreEventRegistry` (core types only). */
  readonly registry?: EventRegistry
}

type TypeClass = ReturnType<typeof classifyEventType>

type SurfaceEvent = SessionEvent<'system/message' | 'user/message' | 'assistant/message' | 'tool/result'>

/** What applying one event will do, computed by the check and reused by the fold. */
type FoldStep =
  | { readonly kind: 'log-only' }
  | { readonly kind: 'insert'; readonly index: number }
  | { readonly kind: 'replace'; readonly start: number; readonly end: number }
  | { readonly kind: 'drop'; readonly duplicate: boolean }

interface Plan {
  readonly typeClass: TypeClass
  readonly step: FoldStep
  readonly repairState: RepairState
}

const emptyStats = (): ProjectionStats => ({
  events: 0,
  surfaceEvents: 0,
  ignoredUnknown: 0,
  pluginEvents: 0,
  orphanToolResults: 0,
  duplicateToolResults: 0,
  replaces: 0,
  nonMonotonicTime: 0,
  turns: 0,
  highestTurn: 0,
})

interface ProjectionInit {
  readonly registry: EventRegistry
  readonly nextSeq: number
  readonly lastTime: string | null
  readonly lastEvent: LoggedEvent | null
  readonly repairState: RepairState
  readonly openCompaction: OpenCompaction | null
  readonly stats: ProjectionStats
  readonly surface: readonly SurfaceNode[]
  readonly annotations: readonly LoggedEvent[]
}

/** The surface node of a surface event (a module function: no closure per event on the hot path). */
function surfaceNode(event: SurfaceEvent): SurfaceNode {
  if (event.type === 'tool/result') {
    const { isError, code } = event.data
    if (isError === true || code !== undefined) {
      return Object.freeze({
        seq: event.seq,
        type: event.type,
        message: event.data.message,
        ...(isError === true ? { isError: true as const } : {}),
        ...(code === undefined ? {} : { code }),
      })
    }
  }
  return Object.freeze({ seq: event.seq, type: event.type, message: event.data.message })
}

function isEarlier(current: number, before: number): boolean {
  return Number.isFinite(current) && Number.isFinite(before) && current < before
}

/**
 * Seq of the assistant message whose pending call a `tool/result` answered: the entry
 * `advanceRepairState` removed, found by value (so it does not depend on entry identity).
 */
function answeredCall(before: RepairState, after: RepairState): number | undefined {
  if (after === before || after.pendingCalls.length !== before.pendingCalls.length - 1) return undefined
  const index = before.pendingCalls.findIndex((call, position) => {
    const kept = after.pendingCalls[position]
    return (
      kept === undefined ||
      kept.callId !== call.callId ||
      kept.assistantSeq !== call.assistantSeq ||
      kept.toolCallSeq !== call.toolCallSeq
    )
  })
  return before.pendingCalls[index]?.assistantSeq
}

class ProjectionImpl implements Projection {
  private readonly registry: EventRegistry
  private readonly list: SurfaceList
  private seqNext: number
  private timeLast: string | null
  /** `Date.parse(timeLast)` once computed (each event's time is parsed once, not twice). */
  private timeLastMs: number | undefined
  private eventLast: LoggedEvent | null
  private repair: RepairState
  private compaction: OpenCompaction | null
  private readonly counters: ProjectionStats
  private statsCache: Readonly<ProjectionStats> | undefined
  // Caches of the last returned arrays, valid while their version equals the list's.
  private messagesCache: readonly WireMessage[] = Object.freeze([])
  private messagesVersion = -1
  private surfaceCache: readonly SurfaceNode[] = Object.freeze([])
  private surfaceVersion = -1
  private readonly notes: LoggedEvent[]
  private notesCache: readonly LoggedEvent[] | undefined

  constructor(init: ProjectionInit) {
    this.registry = init.registry
    this.list = new SurfaceList(init.surface)
    this.seqNext = init.nextSeq
    this.timeLast = init.lastTime
    this.eventLast = init.lastEvent
    this.repair = init.repairState
    this.compaction = init.openCompaction
    this.counters = { ...init.stats }
    this.notes = [...init.annotations]
  }

  get nextSeq(): number {
    return this.seqNext
  }

  get lastTime(): string | null {
    return this.timeLast
  }

  get lastEvent(): LoggedEvent | null {
    return this.eventLast
  }

  get repairState(): RepairState {
    return this.repair
  }

  get openCompaction(): OpenCompaction | null {
    return this.compaction
  }

  get stats(): Readonly<ProjectionStats> {
    this.statsCache ??= Object.freeze({ ...this.counters })
    return this.statsCache
  }

  check(event: LoggedEvent): void {
    this.plan(event)
  }

  apply(event: LoggedEvent): void {
    const plan = this.plan(event)
    deepFreeze(event)
    this.commit(event, plan)
  }

  surface(): readonly SurfaceNode[] {
    if (this.surfaceVersion !== this.list.version) {
      this.surfaceCache = Object.freeze(this.list.nodes.slice())
      this.surfaceVersion = this.list.version
    }
    return this.surfaceCache
  }

  annotations(): readonly LoggedEvent[] {
    this.notesCache ??= Object.freeze(this.notes.slice())
    return this.notesCache
  }

  deriveMessages(): readonly WireMessage[] {
    if (this.messagesVersion !== this.list.version) {
      this.messagesCache = Object.freeze(this.list.messages.slice())
      this.messagesVersion = this.list.version
    }
    return this.messagesCache
  }

  snapshot(): ProjectionSnapshot {
    return Object.freeze({
      snapshotVersion: SNAPSHOT_VERSION,
      nextSeq: this.seqNext,
      lastTime: this.timeLast,
      lastEvent: this.eventLast,
      repairState: this.repair,
      openCompaction: this.compaction,
      stats: this.stats,
      surface: this.surface(),
      annotations: this.annotations(),
    })
  }

  private plan(event: LoggedEvent): Plan {
    if (event.seq !== this.seqNext) {
      const gap = event.seq > this.seqNext
      throw new ProjectionError({
        code: gap ? ProjectionErrorCode.SEQ_GAP : ProjectionErrorCode.SEQ_DUPLICATE,
        seq: event.seq,
        expected: this.seqNext,
        found: event.seq,
        field: 'seq',
        message: `Event seq ${event.seq} (${event.type}) cannot be applied: expected seq ${this.seqNext}, found ${event.seq}${gap ? ' (a gap)' : ' (a repeat)'}`,
      })
    }
    const typeClass = classifyEventType(event.type, event.ignorable === true, this.registry)
    if (typeClass === 'unknown') {
      throw new ProjectionError({
        code: ProjectionErrorCode.UNKNOWN_EVENT_TYPE,
        seq: event.seq,
        field: 'type',
        found: event.type,
        message: `Event seq ${event.seq} has type ${JSON.stringify(event.type)}: expected a core or registered type, or "ignorable": true, found neither`,
      })
    }
    const repairState = advanceRepairState(this.repair, event)
    if (typeClass !== 'core' || !isSurfaceEventType(event.type)) {
      return { typeClass, step: { kind: 'log-only' }, repairState }
    }
    const surfaceEvent = event as SurfaceEvent
    const { surfaceOp } = surfaceEvent
    const step: FoldStep =
      typeof surfaceOp === 'object'
        ? this.planReplace(surfaceEvent, surfaceOp)
        : surfaceEvent.type === 'tool/result'
          ? this.planToolResult(surfaceEvent, repairState)
          : { kind: 'insert', index: this.list.length }
    return { typeClass, step, repairState }
  }

  private planReplace(
    event: SurfaceEvent,
    surfaceOp: { readonly startSeq: number; readonly endSeq: number },
  ): FoldStep {
    const toolCallId = event.data.message.role === 'tool' ? event.data.message.tool_call_id : undefined
    const { start, end } = locateReplaceRange(this.list, surfaceOp, {
      seq: event.seq,
      type: event.type,
      toolCallId,
    })
    if (toolCallId !== undefined && this.repair.pendingCalls.some((call) => call.callId === toolCallId)) {
      throw new ProjectionError({
        code: ProjectionErrorCode.INVALID_SURFACE_OP,
        seq: event.seq,
        field: 'surfaceOp',
        message: `Event seq ${event.seq} (tool/result) replaces the answer to ${JSON.stringify(toolCallId)}: expected no open call with that id, found one (the replace would be taken as its answer)`,
      })
    }
    const cited = new Set(event.sourceEventSeqs ?? [])
    for (let index = start; index <= end; index += 1) {
      const hidden = this.list.nodes[index]!.seq
      if (!cited.has(hidden)) {
        throw new ProjectionError({
          code: ProjectionErrorCode.REPLACE_CITATION_MISSING,
          seq: event.seq,
          field: 'sourceEventSeqs',
          expected: hidden,
          message: `Event seq ${event.seq} (${event.type}) hides surface node seq ${hidden}: expected it cited in sourceEventSeqs, found it missing`,
        })
      }
    }
    return { kind: 'replace', start, end }
  }

  private planToolResult(event: SessionEvent<'tool/result'>, repairState: RepairState): FoldStep {
    const assistantSeq = answeredCall(this.repair, repairState)
    const assistantIndex = assistantSeq === undefined ? -1 : this.list.indexOf(assistantSeq)
    if (assistantIndex === -1) {
      const callId = event.data.message.tool_call_id
      const duplicate = this.list.nodes.some(
        (node) => node.message.role === 'tool' && node.message.tool_call_id === callId,
      )
      return { kind: 'drop', duplicate }
    }
    return { kind: 'insert', index: this.list.endOfToolGroup(assistantIndex) }
  }

  private commit(event: LoggedEvent, plan: Plan): void {
    const counters = this.counters
    counters.events += 1
    if (plan.typeClass === 'plugin' || plan.typeClass === 'ignorable-unknown') {
      if (plan.typeClass === 'plugin') counters.pluginEvents += 1
      else counters.ignoredUnknown += 1
      if (isAnnotationType(event.type)) {
        this.notes.push(event)
        this.notesCache = undefined
      }
    }
    // Most events share their predecessor's time (a batch, an import): no parsing then.
    if (this.timeLast !== null && event.time !== this.timeLast) {
      const current = Date.parse(event.time)
      if (isEarlier(current, this.timeLastMs ?? Date.parse(this.timeLast))) counters.nonMonotonicTime += 1
      this.timeLastMs = current
    }
    const { step } = plan
    if (step.kind !== 'log-only') {
      counters.surfaceEvents += 1
      const known = event as SurfaceEvent
      switch (step.kind) {
        case 'insert':
          this.list.insert(step.index, surfaceNode(known))
          break
        case 'replace':
          counters.replaces += 1
          this.list.replace(step.start, step.end, surfaceNode(known))
          break
        case 'drop':
          if (step.duplicate) counters.duplicateToolResults += 1
          else counters.orphanToolResults += 1
          break
      }
    } else if (plan.typeClass === 'core') {
      this.foldLogOnly(event as SessionEvent)
    }
    this.repair = plan.repairState
    this.seqNext = event.seq + 1
    this.timeLast = event.time
    this.eventLast = event
    this.statsCache = undefined
  }

  private foldLogOnly(event: SessionEvent): void {
    switch (event.type) {
      case 'turn/start':
        this.counters.turns += 1
        if (event.data.turn > this.counters.highestTurn) this.counters.highestTurn = event.data.turn
        break
      case 'compaction/start':
        this.compaction = Object.freeze({
          compactionId: event.data.compactionId,
          seq: event.seq,
          startSeq: event.data.startSeq,
          endSeq: event.data.endSeq,
        })
        break
      case 'compaction/end':
        if (this.compaction?.compactionId === event.data.compactionId) this.compaction = null
        break
      default:
        // Other log-only events (turn/end, tool/call, compaction/summary, session/*) only
        // reach the repair state.
        break
    }
  }
}

/**
 * Creates the projection of an empty log.
 *
 * @param options - The event registry (core types only by default).
 * @returns A projection with `nextSeq` 0 and an empty surface.
 */
export function createProjection(options: ProjectionOptions = {}): Projection {
  return new ProjectionImpl({
    registry: options.registry ?? coreEventRegistry,
    nextSeq: 0,
    lastTime: null,
    lastEvent: null,
    repairState: createRepairState(),
    openCompaction: null,
    stats: emptyStats(),
    surface: [],
    annotations: [],
  })
}

/**
 * Rebuilds a projection from {@link Projection.snapshot} output (for example a checkpoint
 * decoded from msgpack or JSON), so only the events after it need folding.
 *
 * Restoring the snapshot taken after any prefix of a log and applying the rest gives the
 * same state and messages as applying the whole log (property-tested). The snapshot's
 * objects are deep-frozen in place and shared, not copied.
 *
 * @param snapshot - A snapshot with `snapshotVersion: 2` (an older one is refused: rebuild it by replay).
 * @param options - The event registry (core types only by default); used to check `lastEvent`.
 * @returns A projection positioned at `snapshot.nextSeq`.
 * @throws {@link ProjectionError} `SNAPSHOT_UNSUPPORTED` for another version, `INVALID_SNAPSHOT` for a malformed one.
 */
export function restoreProjection(snapshot: ProjectionSnapshot, options: ProjectionOptions = {}): Projection {
  const registry = options.registry ?? coreEventRegistry
  const data = readSnapshot(snapshot, registry)
  return new ProjectionImpl({ registry, ...data })
}
