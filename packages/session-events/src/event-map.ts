import type {
  AssistantMessageEvent,
  CompactionEnd,
  CompactionStart,
  CompactionSummary,
  EndSeed,
  Salvage,
  SystemMessageEvent,
  ToolCall,
  ToolResult,
  TurnEnd,
  TurnStart,
  UserMessageEvent,
} from './core-events.ts'
import type { SurfaceOp } from './envelope.ts'

/**
 * Payload of every session event, keyed by event name.
 *
 * Packages add events by augmenting this interface from the package root, and register a
 * runtime schema for the same name with {@link defineEventType}:
 *
 * ```ts
 * declare module '@agent-ledger/session-events' {
 *   interface SessionEventMap {
 *     'plan/update': { steps: string[] }
 *   }
 * }
 * ```
 *
 * Plugin events are log-only: they can never be surface (model-visible) events.
 */
export interface SessionEventMap {
  'turn/start': TurnStart
  'turn/end': TurnEnd
  'system/message': SystemMessageEvent
  'user/message': UserMessageEvent
  'assistant/message': AssistantMessageEvent
  'tool/call': ToolCall
  'tool/result': ToolResult
  'compaction/start': CompactionStart
  'compaction/summary': CompactionSummary
  'compaction/end': CompactionEnd
  'session/end-seed': EndSeed
  'session/salvage': Salvage
}

/** Name of any known session event, including names added by augmentation. */
export type SessionEventType = Extract<keyof SessionEventMap, string>

/** Fields every logged event carries, whatever its type. */
export interface EventEnvelopeFields {
  /** Dense position in the log, from 0. */
  readonly seq: number
  /** ISO-8601 time from the writer's clock; informational only (order is `seq`). */
  readonly time: string
  /** How a surface event changes the model-visible history; absent means append. */
  readonly surfaceOp?: SurfaceOp
  /** Earlier events this one answers or replaces (a tool result's call, a replace's hidden nodes). */
  readonly sourceEventSeqs?: readonly number[]
  /** Set on events an older reader may skip; such events never affect the surface. */
  readonly ignorable?: boolean
}

/** One logged event. Narrow on `type` to get a typed `data`. */
export type SessionEvent<TType extends SessionEventType = SessionEventType> = {
  [TKey in TType]: EventEnvelopeFields & { readonly type: TKey; readonly data: SessionEventMap[TKey] }
}[TType]

/**
 * An event whose type this build does not know, kept verbatim because it carried
 * `ignorable: true`. It never affects the surface.
 */
export interface IgnoredEvent extends EventEnvelopeFields {
  readonly type: string
  readonly data: unknown
  readonly ignorable: true
}

/** What a log holds: known events and ignorable unknown ones. */
export type LoggedEvent = SessionEvent | IgnoredEvent

/** What a caller supplies to append: the log assigns `seq` and `time`. */
export type EventInput<TType extends SessionEventType = SessionEventType> = {
  [TKey in TType]: {
    readonly type: TKey
    readonly data: SessionEventMap[TKey]
    readonly surfaceOp?: SurfaceOp
    readonly sourceEventSeqs?: readonly number[]
    readonly ignorable?: boolean
  }
}[TType]
