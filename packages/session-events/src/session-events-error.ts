import { AgentLedgerError } from './agent-ledger-error.ts'

/** Why an event, a header or a plugin definition was refused. Branch on these, never on `message`. */
export const SessionEventsErrorCode = {
  /** The value is not a valid envelope or its `data` does not match its type's schema. */
  INVALID_EVENT: 'INVALID_EVENT',
  /** The type is neither core nor registered, and the event is not `ignorable: true`. */
  UNKNOWN_EVENT_TYPE: 'UNKNOWN_EVENT_TYPE',
  /** The session header does not match the header schema. */
  INVALID_HEADER: 'INVALID_HEADER',
  /** A plugin tried to register a core type, a surface type or the same type twice. */
  INVALID_EVENT_DEFINITION: 'INVALID_EVENT_DEFINITION',
  /** A value nests deeper than the configured limit. */
  TOO_DEEP: 'TOO_DEEP',
  /** A value is larger (serialized bytes or entries) than the configured limit. */
  EVENT_TOO_LARGE: 'EVENT_TOO_LARGE',
  /** A value cannot be written as JSON: a cycle, a BigInt, a function, a symbol, a non-finite number. */
  UNSERIALIZABLE_EVENT: 'UNSERIALIZABLE_EVENT',
} as const
export type SessionEventsErrorCode = (typeof SessionEventsErrorCode)[keyof typeof SessionEventsErrorCode]

const brand = Symbol.for('@agent-ledger/session-events/SessionEventsError')

/** Thrown by the event contract. Carries the field and values so the message is never the only clue. */
export class SessionEventsError extends AgentLedgerError<SessionEventsErrorCode> {
  override readonly name = 'SessionEventsError'
  /** Dotted path of the offending field, when one is known (`data.message.role`). */
  readonly field: string | undefined
  /** The event's `seq`, when the input had a numeric one. */
  readonly seq: number | undefined
  /** The event's `type`, when the input had one. */
  readonly type: string | undefined
  readonly [brand] = true

  constructor(options: {
    code: SessionEventsErrorCode
    message: string
    field?: string | undefined
    seq?: number | undefined
    type?: string | undefined
    cause?: unknown
  }) {
    super({ code: options.code, message: options.message, cause: options.cause })
    this.field = options.field
    this.seq = options.seq
    this.type = options.type
  }

  /** True for a `SessionEventsError` from any copy of this package. */
  static override is(value: unknown): value is SessionEventsError {
    return typeof value === 'object' && value !== null && brand in value
  }
}
