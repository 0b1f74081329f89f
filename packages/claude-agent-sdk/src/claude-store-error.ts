import { AgentLedgerError } from '@agent-ledger/session-events'

/** Why the Claude Agent SDK store refused an input or an operation. Branch on these, never on `message`. */
export const ClaudeStoreErrorCode = {
  /** A `SessionKey` is not `{ projectKey, sessionId, subpath? }` with non-empty strings (`details.field`). */
  INVALID_KEY: 'INVALID_KEY',
  /** An appended entry is not a JSON object with a string `type` (`details.index`). */
  INVALID_ENTRY: 'INVALID_ENTRY',
  /** The agent-ledger session under a key's derived id records another key (`details.id`, `details.found`). */
  KEY_MISMATCH: 'KEY_MISMATCH',
  /**
   * A key's first append through this store found another transcript than this store's last
   * `load` of it returned: another writer created or extended it since (`details.loaded`,
   * `details.found`: entry counts). Nothing is written; load again to go on from what is stored.
   */
  TRANSCRIPT_MOVED: 'TRANSCRIPT_MOVED',
  /** The store was closed (`close()`); nothing more is written through it. */
  STORE_CLOSED: 'STORE_CLOSED',
} as const
export type ClaudeStoreErrorCode = (typeof ClaudeStoreErrorCode)[keyof typeof ClaudeStoreErrorCode]

const brand = Symbol.for('@agent-ledger/claude-agent-sdk/ClaudeStoreError')

/** Thrown by `@agent-ledger/claude-agent-sdk`. The store's own errors (`SessionStoreError`) pass through unchanged. */
export class ClaudeStoreError extends AgentLedgerError<ClaudeStoreErrorCode> {
  override readonly name = 'ClaudeStoreError'
  readonly [brand] = true

  constructor(options: {
    code: ClaudeStoreErrorCode
    message: string
    details?: Record<string, unknown>
    cause?: unknown
  }) {
    super({ ...options, details: Object.freeze({ ...options.details }) })
  }

  /** True for a `ClaudeStoreError` from any copy of this package. */
  static override is(value: unknown): value is ClaudeStoreError {
    return typeof value === 'object' && value !== null && brand in value
  }
}
