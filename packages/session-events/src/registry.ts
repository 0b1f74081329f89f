import type { z } from 'zod'

import { coreEventSchemas, isCoreEventType, isSurfaceEventType } from './core-events.ts'
import { envelopeSchema } from './envelope.ts'
import type { Envelope } from './envelope.ts'
import type { LoggedEvent, SessionEventMap, SessionEventType } from './event-map.ts'
import { fastCoreData, fastEnvelope } from './fast-validate.ts'
import type { FastEnvelope } from './fast-validate.ts'
import { SessionEventsError, SessionEventsErrorCode } from './session-events-error.ts'

/** A plugin event type: its name (also declared on {@link SessionEventMap}) and its runtime schema. */
export interface EventTypeDefinition<TType extends SessionEventType = SessionEventType> {
  readonly type: TType
  readonly schema: z.ZodType<SessionEventMap[TType]>
}

/**
 * Declares the runtime schema of a plugin event type. Pair it with an augmentation of
 * {@link SessionEventMap} so the type is known at compile time too.
 *
 * @throws {@link SessionEventsError} `INVALID_EVENT_DEFINITION` when `type` is a core type or not `noun/verb` shaped.
 */
export function defineEventType<TType extends SessionEventType>(
  type: TType,
  schema: z.ZodType<SessionEventMap[TType]>,
): EventTypeDefinition<TType> {
  if (isCoreEventType(type)) {
    throw new SessionEventsError({
      code: SessionEventsErrorCode.INVALID_EVENT_DEFINITION,
      type,
      message: `Cannot define event type "${type}": expected a plugin type, found a core type`,
    })
  }
  if (!/^[a-z0-9][a-z0-9.-]*\/[a-z0-9][a-z0-9.-]*$/.test(type)) {
    throw new SessionEventsError({
      code: SessionEventsErrorCode.INVALID_EVENT_DEFINITION,
      type,
      message: `Cannot define event type ${JSON.stringify(type)}: expected a "noun/verb" name in lower case`,
    })
  }
  return Object.freeze({ type, schema })
}

/** The set of event types a reader knows: the core types plus registered plugin types. */
export interface EventRegistry {
  /** Every known type, core first. */
  readonly types: readonly string[]
  /** True when `type` is core or registered. */
  has(type: string): boolean
  /** The `data` schema of a known type, or `undefined`. */
  schemaOf(type: string): z.ZodType | undefined
}

/**
 * Builds a registry of the core event types plus `definitions`. Pure: nothing global is
 * mutated, so two harnesses in one process can know different plugins.
 *
 * @throws {@link SessionEventsError} `INVALID_EVENT_DEFINITION` when a type is registered twice.
 */
export function createEventRegistry(definitions: readonly EventTypeDefinition[] = []): EventRegistry {
  const schemas = new Map<string, z.ZodType>(Object.entries(coreEventSchemas))
  for (const definition of definitions) {
    if (schemas.has(definition.type)) {
      throw new SessionEventsError({
        code: SessionEventsErrorCode.INVALID_EVENT_DEFINITION,
        type: definition.type,
        message: `Cannot register event type "${definition.type}": expected each type once, found it twice`,
      })
    }
    schemas.set(definition.type, definition.schema)
  }
  const types = Object.freeze([...schemas.keys()])
  return Object.freeze({
    types,
    has: (type: string) => schemas.has(type),
    schemaOf: (type: string) => schemas.get(type),
  })
}

/** A registry that knows only the core event types. */
export const coreEventRegistry: EventRegistry = createEventRegistry()

/** How a reader treats an event type. */
export type EventTypeClass = 'core' | 'plugin' | 'ignorable-unknown' | 'unknown'

/**
 * The known/ignorable rule: core and registered types are read; an unknown type is kept
 * verbatim only when the event says `ignorable: true`, and refused otherwise.
 */
export function classifyEventType(type: string, ignorable: boolean, registry: EventRegistry): EventTypeClass {
  if (isCoreEventType(type)) return 'core'
  if (registry.has(type)) return 'plugin'
  return ignorable ? 'ignorable-unknown' : 'unknown'
}

function firstIssue(error: z.ZodError, prefix: string): { field: string; message: string } {
  const issue = error.issues[0]
  if (issue === undefined) return { field: prefix, message: 'invalid value' }
  const field = [prefix, ...issue.path.map(String)].filter((part) => part !== '').join('.')
  return { field, message: issue.message }
}

/**
 * Validates one event as read from a log or built by a caller, and returns it unchanged
 * (validated, never rebuilt: unknown keys, own `__proto__` keys and object identity survive).
 *
 * Checks, in order: the envelope; the known/ignorable rule; `data` against the type's
 * schema; the static surface rules (only the four surface types carry `surfaceOp` or
 * `sourceEventSeqs`; a `sourceEventSeqs` cites at least one seq, unique and earlier than `seq`; surface events are never
 * `ignorable`).
 *
 * @param value - A parsed JSON object or a caller-built event.
 * @param registry - The known types; defaults to the core types only.
 * @throws {@link SessionEventsError} `INVALID_EVENT` (with `field`) or `UNKNOWN_EVENT_TYPE`.
 */
export function parseEvent(value: unknown, registry: EventRegistry = coreEventRegistry): LoggedEvent {
  // The fast path proves the common valid event without zod; anything it cannot prove goes
  // to zod, which decides (see fast-validate.ts).
  const event = fastEnvelope(value) ?? envelopeOf(value)
  const typeClass = classifyEventType(event.type, event.ignorable === true, registry)
  if (typeClass === 'unknown') {
    throw new SessionEventsError({
      code: SessionEventsErrorCode.UNKNOWN_EVENT_TYPE,
      field: 'type',
      seq: event.seq,
      type: event.type,
      message: `Event seq ${event.seq} has type ${JSON.stringify(event.type)}: expected a core or registered type, or "ignorable": true, found neither`,
    })
  }
  if (typeClass !== 'ignorable-unknown') {
    const schema = registry.schemaOf(event.type)!
    const fast =
      typeClass === 'core' &&
      schema === coreEventSchemas[event.type as keyof typeof coreEventSchemas] &&
      fastCoreData(event.type, event.data)
    const data = fast ? undefined : schema.safeParse(event.data)
    if (data !== undefined && !data.success) {
      const issue = firstIssue(data.error, 'data')
      throw new SessionEventsError({
        code: SessionEventsErrorCode.INVALID_EVENT,
        field: issue.field,
        seq: event.seq,
        type: event.type,
        message: `Event seq ${event.seq} (${event.type}) is invalid: field "${issue.field}": ${issue.message}`,
      })
    }
  }
  checkSurfaceRules(event)
  return value as LoggedEvent
}

/** The envelope as zod parses it, or zod's first issue as an `INVALID_EVENT`. */
function envelopeOf(value: unknown): Envelope {
  const envelope = envelopeSchema.safeParse(value)
  const raw = value as { seq?: unknown; type?: unknown }
  const seq = typeof raw?.seq === 'number' ? raw.seq : undefined
  const rawType = typeof raw?.type === 'string' ? raw.type : undefined
  if (!envelope.success) {
    const issue = firstIssue(envelope.error, '')
    throw new SessionEventsError({
      code: SessionEventsErrorCode.INVALID_EVENT,
      field: issue.field,
      seq,
      type: rawType,
      message: `Event${seq === undefined ? '' : ` seq ${seq}`} is not a valid envelope: field "${issue.field}": ${issue.message}`,
    })
  }
  return envelope.data
}

/** An `INVALID_EVENT` of a valid envelope (a module function: no closure per event on the hot path). */
function invalidEvent(event: Envelope | FastEnvelope, field: string, message: string): SessionEventsError {
  return new SessionEventsError({
    code: SessionEventsErrorCode.INVALID_EVENT,
    field,
    seq: event.seq,
    type: event.type,
    message: `Event seq ${event.seq} (${event.type}) is invalid: ${message}`,
  })
}

/** The static surface rules of {@link parseEvent}, on a valid envelope. */
function checkSurfaceRules(event: Envelope | FastEnvelope): void {
  const surface = isSurfaceEventType(event.type)
  if (!surface && event.surfaceOp !== undefined) {
    throw invalidEvent(event, 'surfaceOp', 'expected no "surfaceOp" on a log-only event, found one')
  }
  if (!surface && event.sourceEventSeqs !== undefined) {
    throw invalidEvent(
      event,
      'sourceEventSeqs',
      'expected no "sourceEventSeqs" on a log-only event, found some',
    )
  }
  if (surface && event.ignorable === true) {
    throw invalidEvent(
      event,
      'ignorable',
      'expected a surface event not to be ignorable, found "ignorable": true',
    )
  }
  if (event.sourceEventSeqs !== undefined) {
    if (event.sourceEventSeqs.length === 0) {
      throw invalidEvent(
        event,
        'sourceEventSeqs',
        'expected at least one cited seq (or no "sourceEventSeqs" at all), found []',
      )
    }
    const seen = new Set<number>()
    for (const cited of event.sourceEventSeqs) {
      if (cited >= event.seq) {
        throw invalidEvent(
          event,
          'sourceEventSeqs',
          `expected cited seqs earlier than ${event.seq}, found ${cited}`,
        )
      }
      if (seen.has(cited))
        throw invalidEvent(event, 'sourceEventSeqs', `expected unique cited seqs, found ${cited} twice`)
      seen.add(cited)
    }
  }
  if (
    typeof event.surfaceOp === 'object' &&
    (event.surfaceOp.startSeq >= event.seq || event.surfaceOp.endSeq >= event.seq)
  ) {
    throw invalidEvent(
      event,
      'surfaceOp',
      `expected a replace range of earlier seqs than ${event.seq}, found ${event.surfaceOp.startSeq}..${event.surfaceOp.endSeq}`,
    )
  }
}
