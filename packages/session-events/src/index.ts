/**
 * @packageDocumentation
 * The agent-ledger event contract: the envelope every logged event carries, the
 * `SessionEventMap` merge hook with a zod schema per type, the session header and the
 * format version. Pure: no I/O, no clock, no randomness.
 */
export {
  assistantMessageEventSchema,
  compactionEndSchema,
  compactionStartSchema,
  compactionSummarySchema,
  coreEventSchemas,
  endSeedSchema,
  isCoreEventType,
  isSurfaceEventType,
  salvageSchema,
  SURFACE_EVENT_TYPES,
  systemMessageEventSchema,
  toolCallSchema,
  toolResultSchema,
  turnEndSchema,
  turnStartSchema,
  usageSchema,
  userMessageEventSchema,
} from './core-events.ts'
export type {
  AssistantMessageEvent,
  CompactionEnd,
  CompactionStart,
  CompactionSummary,
  CoreEventType,
  EndSeed,
  Salvage,
  SurfaceEventType,
  SystemMessageEvent,
  ToolCall,
  ToolResult,
  TurnEnd,
  TurnStart,
  Usage,
  UserMessageEvent,
} from './core-events.ts'
export { envelopeSchema, replaceSurfaceOpSchema, surfaceOpSchema } from './envelope.ts'
export type { Envelope, ReplaceSurfaceOp, SurfaceOp } from './envelope.ts'
export type {
  EventEnvelopeFields,
  EventInput,
  IgnoredEvent,
  LoggedEvent,
  SessionEvent,
  SessionEventMap,
  SessionEventType,
} from './event-map.ts'
export {
  describeSessionId,
  isSessionId,
  migratedFromSchema,
  SESSION_FORMAT_NAME,
  SESSION_FORMAT_VERSION,
  SESSION_ID_PATTERN,
  SESSION_ID_RULE,
  sessionHeaderSchema,
  sessionIdSchema,
} from './header.ts'
export type { MigratedFrom, SessionHeader, SessionHeaderInput } from './header.ts'
export { assertJsonValue, deepFreeze, DEFAULT_JSON_LIMITS } from './json-value.ts'
export type { JsonLimits } from './json-value.ts'
export {
  classifyEventType,
  coreEventRegistry,
  createEventRegistry,
  defineEventType,
  parseEvent,
} from './registry.ts'
export type { EventRegistry, EventTypeClass, EventTypeDefinition } from './registry.ts'
export { AgentLedgerError } from './agent-ledger-error.ts'
export type { AgentLedgerErrorOptions } from './agent-ledger-error.ts'
export { SessionEventsError, SessionEventsErrorCode } from './session-events-error.ts'
export { TurnEndReason, turnEndReasonSchema } from './turn-end-reason.ts'
export {
  assistantMessageSchema,
  contentPartSchema,
  systemMessageSchema,
  toolMessageSchema,
  userMessageSchema,
  wireMessageSchema,
  wireToolCallSchema,
} from './wire-message.ts'
export type {
  AssistantMessage,
  ContentPart,
  SystemMessage,
  ToolMessage,
  UserMessage,
  WireMessage,
  WireToolCall,
} from './wire-message.ts'
