import { AgentLedgerError } from '@agent-ledger/session-events'

/** Why mini-agent stopped. Branch on these, never on `message`. */
export const MiniAgentErrorCode = {
  /** The command line could not be understood (unknown command, missing or bad option). */
  USAGE: 'USAGE',
  /** An environment variable the openai provider needs is missing or malformed. */
  PROVIDER_CONFIG: 'PROVIDER_CONFIG',
  /** The provider answered with an HTTP error status. */
  PROVIDER_HTTP_ERROR: 'PROVIDER_HTTP_ERROR',
  /** The provider answered 2xx with a body that is not a chat completion we can use. */
  PROVIDER_BAD_RESPONSE: 'PROVIDER_BAD_RESPONSE',
  /** The request never got an HTTP answer (DNS, connection refused, TLS...). */
  PROVIDER_NETWORK_ERROR: 'PROVIDER_NETWORK_ERROR',
  /** The session to resume does not exist under the root. */
  SESSION_NOT_FOUND: 'SESSION_NOT_FOUND',
  /** Another writer holds the session's PostgreSQL lease (`--takeover` if it is dead). */
  SESSION_LOCKED: 'SESSION_LOCKED',
  /** The workspace directory does not exist or is not a directory. */
  WORKSPACE_INVALID: 'WORKSPACE_INVALID',
} as const
export type MiniAgentErrorCode = (typeof MiniAgentErrorCode)[keyof typeof MiniAgentErrorCode]

const brand = Symbol.for('@agent-ledger/demo/MiniAgentError')

/** Thrown by mini-agent outside the session store (the store throws the session core's `SessionStoreError`). */
export class MiniAgentError extends AgentLedgerError<MiniAgentErrorCode> {
  override readonly name = 'MiniAgentError'
  /** HTTP status, for `PROVIDER_HTTP_ERROR`. */
  readonly status: number | undefined
  readonly [brand] = true

  constructor(options: { code: MiniAgentErrorCode; message: string; status?: number; cause?: unknown }) {
    super({ code: options.code, message: options.message, cause: options.cause })
    this.status = options.status
  }

  /** True for a `MiniAgentError` from any copy of this app. */
  static override is(value: unknown): value is MiniAgentError {
    return typeof value === 'object' && value !== null && brand in value
  }
}
