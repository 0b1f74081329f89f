/**
 * @packageDocumentation
 * The OpenAI Agents SDK on agent-ledger: a `Session` whose history is derived from a durable,
 * append-only log (`popItem` and `clearSession` hide items with a `replace`, never delete),
 * plus model and tool wrappers that log a run as it happens, so a crash mid-tool resumes with
 * an honest repair result in the next model request. Takes the core's `SessionStore` over any backend (`createJsonlStore`, PostgreSQL, memory).
 */
export { itemToWire, wireToItems } from './item-mapping.ts'
export { AgentLedgerSession } from './ledger-session.ts'
export { openAgentsSession } from './open-session.ts'
export { ITEMS_EVENT_TYPE } from './session-options.ts'
export type {
  Compactor,
  HistoryRewriteArgs,
  HistoryTransactionArgs,
  OpenAgentsSessionOptions,
  RecordedItems,
} from './session-options.ts'
export { OPERATION_EVENT_TYPE } from './history-ops.ts'
export type { RecordedOperation } from './history-ops.ts'
export { AgentsAdapterError, AgentsAdapterErrorCode } from './openai-agents-error.ts'
