import { AgentLedgerError, SessionEventsError } from '@agent-ledger/session-events'

/** Why the projection, the in-memory log, a compaction plan or a fork plan refused its input. Branch on these, never on `message`. */
export const ProjectionErrorCode = {
  /** An event's `seq` skips ahead of the next expected seq (`expected`, `found`). */
  SEQ_GAP: 'SEQ_GAP',
  /** An event's `seq` repeats or goes back below the next expected seq (`expected`, `found`). */
  SEQ_DUPLICATE: 'SEQ_DUPLICATE',
  /** The event is not a valid envelope or its `data` does not match its type (`field`); `cause` is the `SessionEventsError`. */
  INVALID_EVENT: 'INVALID_EVENT',
  /** The event's type is neither core nor registered, and the event is not `ignorable: true`. */
  UNKNOWN_EVENT_TYPE: 'UNKNOWN_EVENT_TYPE',
  /** The event's data nests deeper than the configured limit; `cause` is the `SessionEventsError`. */
  TOO_DEEP: 'TOO_DEEP',
  /** The event's data holds more entries than the configured limit; `cause` is the `SessionEventsError`. */
  EVENT_TOO_LARGE: 'EVENT_TOO_LARGE',
  /** The event's data cannot be written as JSON (a cycle, a BigInt, a function, a class instance...). */
  UNSERIALIZABLE_EVENT: 'UNSERIALIZABLE_EVENT',
  /** A `replace` breaks a surface rule: its range is reversed, it replaces a leading system message with another type, it splits a tool call from its results, or a `tool/result` replace covers other messages. */
  INVALID_SURFACE_OP: 'INVALID_SURFACE_OP',
  /** A `replace` names a `startSeq` or `endSeq` that is not a current surface node (`field`, `found`). */
  REPLACE_RANGE_NOT_FOUND: 'REPLACE_RANGE_NOT_FOUND',
  /** A `replace` hides a surface node its `sourceEventSeqs` does not cite (`expected` is the uncited seq). */
  REPLACE_CITATION_MISSING: 'REPLACE_CITATION_MISSING',
  /** A fork with `openTurn: 'refuse'` would cut inside an open turn or leave tool calls unanswered. */
  OPEN_TURN: 'OPEN_TURN',
  /** A fork boundary is not an integer seq inside the log (`found`). */
  BAD_BOUNDARY: 'BAD_BOUNDARY',
  /** A compaction range is not a valid replace range over the current surface (`field`, `found`); `cause` says why. */
  BAD_COMPACTION_RANGE: 'BAD_COMPACTION_RANGE',
  /** A snapshot has a `snapshotVersion` this build cannot restore (`found`). */
  SNAPSHOT_UNSUPPORTED: 'SNAPSHOT_UNSUPPORTED',
  /** A snapshot has the supported version but is not a well-formed snapshot (`field`). */
  INVALID_SNAPSHOT: 'INVALID_SNAPSHOT',
} as const
export type ProjectionErrorCode = (typeof ProjectionErrorCode)[keyof typeof ProjectionErrorCode]

const brand = Symbol.for('@agent-ledger/session-projection/ProjectionError')

/**
 * Thrown by this package. Carries the seq, the expected and found values and the field,
 * so the message is never the only clue.
 *
 * Validation failures of the event contract (`parseEvent`, `assertJsonValue`) are
 * re-thrown as a `ProjectionError` with the same code name (`INVALID_EVENT`,
 * `UNKNOWN_EVENT_TYPE`, `TOO_DEEP`, `EVENT_TOO_LARGE`, `UNSERIALIZABLE_EVENT`), the same
 * `field`, and the original `SessionEventsError` as `cause`: callers of this package catch
 * one error class.
 */
export class ProjectionError extends AgentLedgerError<ProjectionErrorCode> {
  override readonly name = 'ProjectionError'
  /** Seq of the event (or fork boundary) the error is about, when there is one. */
  readonly seq: number | undefined
  /** What was expected: the next seq, an uncited seq, the supported snapshot version. */
  readonly expected: number | string | undefined
  /** What was found instead. */
  readonly found: number | string | undefined
  /** Dotted path of the offending field (`surfaceOp.startSeq`, `data.message.role`), when known. */
  readonly field: string | undefined
  readonly [brand] = true

  constructor(options: {
    code: ProjectionErrorCode
    message: string
    seq?: number | undefined
    expected?: number | string | undefined
    found?: number | string | undefined
    field?: string | undefined
    cause?: unknown
  }) {
    super({ code: options.code, message: options.message, cause: options.cause })
    this.seq = options.seq
    this.expected = options.expected
    this.found = options.found
    this.field = options.field
  }

  /** True for a `ProjectionError` from any copy of this package. */
  static override is(value: unknown): value is ProjectionError {
    return typeof value === 'object' && value !== null && brand in value
  }
}

/**
 * Runs `validate`, re-throwing a `SessionEventsError` as the `ProjectionError` with the
 * same code name (the original becomes `cause`). Other errors pass through.
 */
export function withProjectionErrors<TResult>(validate: () => TResult): TResult {
  try {
    return validate()
  } catch (error) {
    if (!SessionEventsError.is(error)) throw error
    const code: ProjectionErrorCode =
      error.code === 'UNKNOWN_EVENT_TYPE' ||
      error.code === 'TOO_DEEP' ||
      error.code === 'EVENT_TOO_LARGE' ||
      error.code === 'UNSERIALIZABLE_EVENT'
        ? error.code
        : ProjectionErrorCode.INVALID_EVENT
    throw new ProjectionError({
      code,
      message: error.message,
      seq: error.seq,
      field: error.field,
      cause: error,
    })
  }
}
