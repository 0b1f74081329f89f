import {
  assertJsonValue,
  coreEventRegistry,
  DEFAULT_JSON_LIMITS,
  parseEvent,
} from '@agent-ledger/session-events'
import type {
  EventInput,
  EventRegistry,
  JsonLimits,
  LoggedEvent,
  SessionEvent,
  SessionEventType,
  WireMessage,
} from '@agent-ledger/session-events'

import { ProjectionError, ProjectionErrorCode, withProjectionErrors } from './projection-error.ts'
import { createProjection } from './projection.ts'
import type { Projection } from './projection.ts'

/** Where a log gets the `time` of each appended event: injected, so the pure core never reads a clock. */
export interface Clock {
  /** The current time as an ISO-8601 date-time string (`Date.prototype.toISOString` shape). */
  now(): string
}

/**
 * An append-only session log held in memory, with its projection kept current.
 *
 * For pure use and tests; the JSONL store keeps its own log on disk and folds a
 * {@link Projection} directly.
 */
export interface SessionLog {
  /** Every event, in seq order (seq = index); a frozen array of deep-frozen events. */
  readonly events: readonly LoggedEvent[]
  /** The projection of `events`. */
  readonly projection: Projection
  /**
   * Appends one event: assigns `seq` (the projection's `nextSeq`) and `time`
   * (`clock.now()`), validates it completely, deep-freezes it, then commits it.
   *
   * Validation runs before anything changes: `assertJsonValue` (depth, size, cycles,
   * BigInt... without recursion), `parseEvent` (envelope, known/ignorable rule, schema,
   * static surface rules), then `projection.check`. A refused append leaves the events,
   * `nextSeq`, the surface and the derived messages unchanged, and the input unfrozen.
   *
   * `input.data` is not copied: it is frozen in place and becomes the log's data.
   *
   * @param input - The event's `type`, `data` and optional `surfaceOp`, `sourceEventSeqs`, `ignorable`.
   * @returns The committed event.
   * @throws {@link ProjectionError} `INVALID_EVENT`, `UNKNOWN_EVENT_TYPE`, `TOO_DEEP`, `EVENT_TOO_LARGE`,
   *   `UNSERIALIZABLE_EVENT`, `INVALID_SURFACE_OP`, `REPLACE_RANGE_NOT_FOUND` or `REPLACE_CITATION_MISSING`.
   */
  append<TType extends SessionEventType>(input: EventInput<TType>): SessionEvent<TType>
  /**
   * The model-visible history; see {@link Projection.deriveMessages}.
   *
   * @returns A frozen array of deep-frozen messages.
   */
  deriveMessages(): readonly WireMessage[]
}

/** Options of {@link createSessionLog}. */
export interface SessionLogOptions {
  /** Source of each appended event's `time`. */
  readonly clock: Clock
  /** The known event types; defaults to `coreEventRegistry`. */
  readonly registry?: EventRegistry
  /** Existing events to start from (e.g. a log read back), from seq 0, dense. Frozen in place, not copied. */
  readonly events?: Iterable<LoggedEvent>
  /** Depth and size bounds checked on every event; defaults to `DEFAULT_JSON_LIMITS`. */
  readonly limits?: JsonLimits
}

function buildEvent(input: unknown, seq: number, time: string): Record<string, unknown> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ProjectionError({
      code: ProjectionErrorCode.INVALID_EVENT,
      seq,
      field: 'input',
      message: `Append input for seq ${seq} is invalid: expected an object with "type" and "data", found ${input === null ? 'null' : Array.isArray(input) ? 'an array' : typeof input}`,
    })
  }
  const { type, data, surfaceOp, sourceEventSeqs, ignorable } = input as Record<string, unknown>
  // A fresh envelope (never Object.assign: an own "__proto__" key stays data, RELIABILITY S3).
  const event: Record<string, unknown> = { seq, time, type, data }
  if (surfaceOp !== undefined) event.surfaceOp = surfaceOp
  if (sourceEventSeqs !== undefined) event.sourceEventSeqs = sourceEventSeqs
  if (ignorable !== undefined) event.ignorable = ignorable
  return event
}

/**
 * Creates an in-memory session log, optionally starting from existing events.
 *
 * Existing events go through the same checks as appends; their seqs must run 0, 1, 2...
 *
 * @param options - The clock, and optionally the registry, the existing events and the JSON limits.
 * @returns The log, positioned after the last existing event.
 * @throws {@link ProjectionError} `SEQ_GAP` / `SEQ_DUPLICATE` (with `expected` and `found`) when the existing
 *   seqs are not dense from 0, or any code {@link SessionLog.append} throws, for an invalid existing event.
 */
export function createSessionLog(options: SessionLogOptions): SessionLog {
  const { clock } = options
  const registry = options.registry ?? coreEventRegistry
  const limits = options.limits ?? DEFAULT_JSON_LIMITS
  const projection = createProjection({ registry })
  const events: LoggedEvent[] = []
  let eventsView: readonly LoggedEvent[] = Object.freeze([])

  const admit = (candidate: unknown): LoggedEvent => {
    const event = withProjectionErrors(() => {
      assertJsonValue(candidate, limits, 'event')
      return parseEvent(candidate, registry)
    })
    projection.apply(event)
    events.push(event)
    return event
  }

  for (const event of options.events ?? []) admit(event)

  return {
    get events(): readonly LoggedEvent[] {
      if (eventsView.length !== events.length) eventsView = Object.freeze(events.slice())
      return eventsView
    },
    projection,
    append<TType extends SessionEventType>(input: EventInput<TType>): SessionEvent<TType> {
      const seq = projection.nextSeq
      return admit(buildEvent(input, seq, clock.now())) as SessionEvent<TType>
    },
    deriveMessages: () => projection.deriveMessages(),
  }
}
