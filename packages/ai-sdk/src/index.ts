/**
 * @packageDocumentation
 * The Vercel AI SDK on agent-ledger: convert between the log's OpenAI-shaped messages and
 * the SDK's `ModelMessage`s, log every model response and every tool call durably before the
 * tool runs, and resume a crashed session with honest repair placeholders in the next
 * request. Takes the core's `SessionStore` over any backend (`createJsonlStore`, PostgreSQL, memory).
 */
export { AiSdkAdapterError, AiSdkErrorCode } from './ai-sdk-error.ts'
export { AiSdkSession, openAiSdkSession } from './ai-sdk-session.ts'
export type { OpenAiSdkSessionOptions } from './ai-sdk-session.ts'
export type { RepairedCall } from './session-state.ts'
export { followReply } from './follow-reply.ts'
export type { FollowReplyOptions } from './follow-reply.ts'
export { fromModelMessages, toModelMessages } from './convert.ts'
export type { FromModelMessagesOptions, ToModelMessagesOptions, WireEntry } from './convert.ts'
export { ledgerRecorderMiddleware, toLedgerUsage } from './record-model.ts'
export { wrapTools } from './wrap-tools.ts'
export type { WrapToolsOptions } from './wrap-tools.ts'
