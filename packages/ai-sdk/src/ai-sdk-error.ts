import { AgentLedgerError } from '@agent-ledger/session-events'

/** Why the AI SDK adapter refused an input or an operation. Branch on these, never on `message`. */
export const AiSdkErrorCode = {
  /** A message part has no place in the OpenAI chat wire shape (a non-image file, a provider-executed tool result...): `details.part`. */
  UNSUPPORTED_CONTENT: 'UNSUPPORTED_CONTENT',
  /** A message is not a valid `ModelMessage` or wire message (`details.index`). */
  INVALID_MESSAGE: 'INVALID_MESSAGE',
  /** `beginTurn` was called while a turn was open, or `endTurn` with none open. */
  TURN_STATE: 'TURN_STATE',
  /** The session is closed. */
  SESSION_CLOSED: 'SESSION_CLOSED',
  /**
   * `followReply`: the turn is open but no writer holds a live lease on the session (its server
   * died mid-turn and nothing reopened it): the reply will not go on until the session is
   * reopened (which repairs the turn). Ends the followed stream as its `error` chunk.
   */
  REPLY_INTERRUPTED: 'REPLY_INTERRUPTED',
} as const
export type AiSdkErrorCode = (typeof AiSdkErrorCode)[keyof typeof AiSdkErrorCode]

const brand = Symbol.for('@agent-ledger/ai-sdk/AiSdkAdapterError')

/** Thrown by `@agent-ledger/ai-sdk`. Carries the offending input's position in `details`. */
export class AiSdkAdapterError extends AgentLedgerError<AiSdkErrorCode> {
  override readonly name = 'AiSdkAdapterError'
  readonly [brand] = true

  constructor(options: {
    code: AiSdkErrorCode
    message: string
    details?: Record<string, unknown>
    cause?: unknown
  }) {
    super({ ...options, details: Object.freeze({ ...options.details }) })
  }

  /** True for an `AiSdkAdapterError` from any copy of this package. */
  static override is(value: unknown): value is AiSdkAdapterError {
    return typeof value === 'object' && value !== null && brand in value
  }
}
