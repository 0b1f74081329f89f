import { AgentLedgerError } from '@agent-ledger/session-events'

/** Why the OpenAI Agents SDK adapter refused an input or an operation. Branch on these, never on `message`. */
export const AgentsAdapterErrorCode = {
  /** An item is not an object with a known shape (`details.index`). */
  INVALID_ITEM: 'INVALID_ITEM',
  /** The session is closed. */
  SESSION_CLOSED: 'SESSION_CLOSED',
  /** A history transaction is not `{ operationId: non-empty string, transaction: append_items | replace_suffix }` (`details.field`). */
  INVALID_TRANSACTION: 'INVALID_TRANSACTION',
  /** An operation id already applied with a different transaction (`details.operationId`): nothing written. */
  OPERATION_CONFLICT: 'OPERATION_CONFLICT',
  /** A `replace_suffix` whose expected suffix is not the history's (`details.operationId`, `expected`, `found` counts): nothing written. */
  SUFFIX_MISMATCH: 'SUFFIX_MISMATCH',
  /** `replaceHistoryWithCompaction` got items that do not start with a `compaction` item (`details.found`). */
  INVALID_COMPACTION: 'INVALID_COMPACTION',
} as const
export type AgentsAdapterErrorCode = (typeof AgentsAdapterErrorCode)[keyof typeof AgentsAdapterErrorCode]

const brand = Symbol.for('@agent-ledger/openai-agents/AgentsAdapterError')

/** Thrown by `@agent-ledger/openai-agents`. Carries the offending input's position in `details`. */
export class AgentsAdapterError extends AgentLedgerError<AgentsAdapterErrorCode> {
  override readonly name = 'AgentsAdapterError'
  readonly [brand] = true

  constructor(options: {
    code: AgentsAdapterErrorCode
    message: string
    details?: Record<string, unknown>
    cause?: unknown
  }) {
    super({ ...options, details: Object.freeze({ ...options.details }) })
  }

  /** True for an `AgentsAdapterError` from any copy of this package. */
  static override is(value: unknown): value is AgentsAdapterError {
    return typeof value === 'object' && value !== null && brand in value
  }
}
