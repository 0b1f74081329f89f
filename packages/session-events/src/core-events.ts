import { z } from 'zod'

import { turnEndReasonSchema } from './turn-end-reason.ts'
import {
  assistantMessageSchema,
  systemMessageSchema,
  toolMessageSchema,
  userMessageSchema,
} from './wire-message.ts'

const seqSchema = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER)

/** Token usage reported by the provider for one assistant message. */
export const usageSchema = z.object({
  prompt_tokens: z.number().int().nonnegative().optional(),
  completion_tokens: z.number().int().nonnegative().optional(),
  total_tokens: z.number().int().nonnegative().optional(),
  cached_tokens: z.number().int().nonnegative().optional(),
})
export type Usage = z.infer<typeof usageSchema>

/** `turn/start`: a user turn begins; `turn` counts from 1 within the session. */
export const turnStartSchema = z.object({ turn: z.number().int().nonnegative() })
export type TurnStart = z.infer<typeof turnStartSchema>

/** `turn/end`: the turn with the same number ended, for `reason`. */
export const turnEndSchema = z.object({ turn: z.number().int().nonnegative(), reason: turnEndReasonSchema })
export type TurnEnd = z.infer<typeof turnEndSchema>

/** `system/message`: a system prompt visible to the model. */
export const systemMessageEventSchema = z.object({ message: systemMessageSchema })
export type SystemMessageEvent = z.infer<typeof systemMessageEventSchema>

/** `user/message`: a user message visible to the model (also the carrier of compaction summaries). */
export const userMessageEventSchema = z.object({ message: userMessageSchema })
export type UserMessageEvent = z.infer<typeof userMessageEventSchema>

/** `assistant/message`: what the model answered; `interrupted` marks a reply cut short. */
export const assistantMessageEventSchema = z.object({
  message: assistantMessageSchema,
  usage: usageSchema.optional(),
  interrupted: z.boolean().optional(),
})
export type AssistantMessageEvent = z.infer<typeof assistantMessageEventSchema>

/**
 * `tool/call`: the harness is about to run a tool. Logged (and flushed) before the side
 * effect starts, so a crash after it means "the call may have run".
 */
export const toolCallSchema = z.object({
  callId: z.string().min(1),
  name: z.string().min(1),
  arguments: z.string(),
})
export type ToolCall = z.infer<typeof toolCallSchema>

/** `tool/result`: the answer to one assistant tool call; `code` is set on repair placeholders. */
export const toolResultSchema = z.object({
  message: toolMessageSchema,
  isError: z.boolean().optional(),
  code: z.string().min(1).optional(),
})
export type ToolResult = z.infer<typeof toolResultSchema>

/** `compaction/start`: a compaction of surface nodes `startSeq..endSeq` began. */
export const compactionStartSchema = z.object({
  compactionId: z.string().min(1),
  startSeq: seqSchema,
  endSeq: seqSchema,
  reason: z.string().optional(),
})
export type CompactionStart = z.infer<typeof compactionStartSchema>

/** `compaction/summary`: the summary text produced for a compaction. */
export const compactionSummarySchema = z.object({
  compactionId: z.string().min(1),
  summary: z.string(),
  usage: usageSchema.optional(),
})
export type CompactionSummary = z.infer<typeof compactionSummarySchema>

/** `compaction/end`: the compaction finished; `replacementSeq` is the replacing message. */
export const compactionEndSchema = z.object({
  compactionId: z.string().min(1),
  replacementSeq: seqSchema,
  hiddenCount: z.number().int().nonnegative(),
})
export type CompactionEnd = z.infer<typeof compactionEndSchema>

/** `session/end-seed`: the cut between events inherited by a fork and the child's own events. */
export const endSeedSchema = z.object({
  inherited: z.boolean().optional(),
  parentSession: z.string().optional(),
  boundarySeq: seqSchema.optional(),
})
export type EndSeed = z.infer<typeof endSeedSchema>

/** `session/salvage`: this session was salvaged from a damaged log; events after `lastGoodSeq` were not carried over. */
export const salvageSchema = z.object({
  sourceSession: z.string(),
  sourceFile: z.string(),
  lastGoodSeq: z.number().int().min(-1),
  droppedFromOffset: z.number().int().nonnegative(),
  reason: z.string(),
})
export type Salvage = z.infer<typeof salvageSchema>

/** The runtime schema of every core event's `data`, keyed by type. */
export const coreEventSchemas = {
  'turn/start': turnStartSchema,
  'turn/end': turnEndSchema,
  'system/message': systemMessageEventSchema,
  'user/message': userMessageEventSchema,
  'assistant/message': assistantMessageEventSchema,
  'tool/call': toolCallSchema,
  'tool/result': toolResultSchema,
  'compaction/start': compactionStartSchema,
  'compaction/summary': compactionSummarySchema,
  'compaction/end': compactionEndSchema,
  'session/end-seed': endSeedSchema,
  'session/salvage': salvageSchema,
} as const

/** Names of the core event types. */
export type CoreEventType = keyof typeof coreEventSchemas

/** The four model-visible (surface) event types. Everything else is log-only bookkeeping. */
export const SURFACE_EVENT_TYPES = [
  'system/message',
  'user/message',
  'assistant/message',
  'tool/result',
] as const
export type SurfaceEventType = (typeof SURFACE_EVENT_TYPES)[number]

/** True when `type` is one of the four surface event types. */
export function isSurfaceEventType(type: string): type is SurfaceEventType {
  return (SURFACE_EVENT_TYPES as readonly string[]).includes(type)
}

/** True when `type` is a core event type (not a plugin one). */
export function isCoreEventType(type: string): type is CoreEventType {
  return Object.prototype.hasOwnProperty.call(coreEventSchemas, type)
}
