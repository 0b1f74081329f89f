import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'

/**
 * Why a `BACKEND_FAILED` (or `UNKNOWN_OUTCOME`) from this backend happened: `details.reason`.
 * Branch on these, never on `message`.
 */
export const PostgresFailureReason = {
  /** The server could not be reached or refused the login: `details.host`, `details.port`, `details.database`, `details.user` (never the password). */
  CONNECTION_FAILED: 'CONNECTION_FAILED',
  /** The connection dropped in the middle of a call (server restart, `pg_terminate_backend`, network). */
  CONNECTION_LOST: 'CONNECTION_LOST',
  /** A statement ran longer than `statementTimeoutMs` (server-side cancel) or an append's commit longer than `commitTimeoutMs` (client-side). */
  TIMEOUT: 'TIMEOUT',
  /** The database holds a schema version this library does not know (`details.found`, `details.known`): upgrade the library. */
  SCHEMA_TOO_NEW: 'SCHEMA_TOO_NEW',
  /** The schema is older than this library and `migrate: false` was given: run `agent-ledger db migrate --store <url>`. */
  SCHEMA_BEHIND: 'SCHEMA_BEHIND',
  /** A recorded migration's checksum differs from this library's (an edited migration): `details.version`. */
  MIGRATION_EDITED: 'MIGRATION_EDITED',
  /** The commit was cancelled while waiting for a synchronous standby: committed locally, maybe not replicated. */
  NOT_REPLICATED: 'NOT_REPLICATED',
  /** Any other server error: `details.sqlstate`. */
  QUERY_FAILED: 'QUERY_FAILED',
} as const
export type PostgresFailureReason = (typeof PostgresFailureReason)[keyof typeof PostgresFailureReason]

/** Where the backend connects, for messages: never includes the password. */
export interface ConnectionTarget {
  readonly host: string
  readonly port: number
  readonly database: string
  readonly user: string
}

/**
 * Reads host, port, database and user out of a `postgres://` URL (for messages only).
 *
 * @param connectionString - `postgres://user:password@host:port/database?...`.
 * @returns The target without the password.
 */
export function describeTarget(connectionString: string): ConnectionTarget {
  try {
    const url = new URL(connectionString)
    const database = decodeURIComponent(url.pathname.replace(/^\//, ''))
    const user = decodeURIComponent(url.username)
    const socketHost = url.searchParams.get('host')
    return {
      host: url.hostname !== '' ? url.hostname : (socketHost ?? 'localhost'),
      port: url.port === '' ? 5432 : Number(url.port),
      database: database !== '' ? database : user,
      user,
    }
  } catch {
    return { host: '(unparseable URL)', port: 0, database: '', user: '' }
  }
}

/**
 * `user@host:port/database` of a connection string, for messages and logs: never the password.
 *
 * @param connectionString - A `postgres://` URL.
 * @returns The printable target.
 */
export function describeConnection(connectionString: string): string {
  return targetText(describeTarget(connectionString))
}

/** `user@host:port/database`, for messages. */
export function targetText(target: ConnectionTarget): string {
  return `${target.user === '' ? '' : `${target.user}@`}${target.host}:${target.port}/${target.database}`
}

interface PgErrorShape {
  code?: unknown
  message?: unknown
  severity?: unknown
}

function sqlstate(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined
  const shape = error as PgErrorShape
  // Server errors carry a severity and a five-character SQLSTATE; Node socket errors carry errno names.
  return typeof shape.code === 'string' && /^[0-9A-Z]{5}$/.test(shape.code) && shape.severity !== undefined
    ? shape.code
    : undefined
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message
  return String(error)
}

/**
 * Whether the error means the connection is gone (so an in-flight statement may or may not
 * have committed): socket errors, `Connection terminated`, SQLSTATE class 08 and the
 * 57P0x shutdown codes.
 */
export function isConnectionLoss(error: unknown): boolean {
  const state = sqlstate(error)
  if (state !== undefined) return state.startsWith('08') || /^57P0[1-3]$/.test(state)
  if (SessionStoreError.is(error)) return false
  return true
}

/** Whether the error happened before the server ever answered (refused, DNS, login failure). */
function isConnectFailure(error: unknown): boolean {
  const state = sqlstate(error)
  if (state !== undefined)
    return state.startsWith('08') || state.startsWith('28') || state === '3D000' || state === '57P03'
  const code = (error as { code?: unknown } | null)?.code
  return (
    typeof code === 'string' &&
    ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH'].includes(code)
  )
}

/** Context of one failing call, for the message. */
export interface FailureContext {
  readonly target: ConnectionTarget
  /** What was being done: `append to session a1`, `list sessions`... */
  readonly action: string
  readonly sessionId?: string | undefined
  /** True while checking out a connection (no statement sent yet). */
  readonly connecting?: boolean | undefined
}

/**
 * Turns anything thrown by `pg` into a {@link SessionStoreError}; passes SessionStoreErrors through.
 */
export function toStoreError(error: unknown, context: FailureContext): SessionStoreError {
  if (SessionStoreError.is(error)) return error
  const state = sqlstate(error)
  const where = targetText(context.target)
  const base = { sessionId: context.sessionId, cause: error }
  if (state === '53100') {
    return new SessionStoreError({
      ...base,
      code: SessionStoreErrorCode.DISK_FULL,
      message: `${context.action}: PostgreSQL at ${where} is out of disk space (SQLSTATE 53100); nothing was written`,
      details: { sqlstate: state },
    })
  }
  if (context.connecting === true || (state === undefined && isConnectFailure(error))) {
    return new SessionStoreError({
      ...base,
      code: SessionStoreErrorCode.BACKEND_FAILED,
      message: `${context.action}: cannot connect to PostgreSQL at ${context.target.host}:${context.target.port}, database "${context.target.database}" as "${context.target.user}": ${messageOf(error)}`,
      details: {
        reason: PostgresFailureReason.CONNECTION_FAILED,
        ...context.target,
        ...(state === undefined ? {} : { sqlstate: state }),
      },
    })
  }
  if (state === '57014') {
    return new SessionStoreError({
      ...base,
      code: SessionStoreErrorCode.BACKEND_FAILED,
      message: `${context.action}: the statement was cancelled after the statement timeout by PostgreSQL at ${where}; nothing was written`,
      details: { reason: PostgresFailureReason.TIMEOUT, sqlstate: state },
    })
  }
  if (isConnectionLoss(error)) {
    return new SessionStoreError({
      ...base,
      code: SessionStoreErrorCode.BACKEND_FAILED,
      message: `${context.action}: the connection to PostgreSQL at ${where} was lost: ${messageOf(error)}`,
      details: {
        reason: PostgresFailureReason.CONNECTION_LOST,
        ...(state === undefined ? {} : { sqlstate: state }),
      },
    })
  }
  const hint =
    state === '42P01' ? ' (the schema is missing: run `agent-ledger db migrate --store <url>`)' : ''
  return new SessionStoreError({
    ...base,
    code: SessionStoreErrorCode.BACKEND_FAILED,
    message: `${context.action}: PostgreSQL at ${where} failed with SQLSTATE ${state ?? '?'}: ${messageOf(error)}${hint}`,
    details: { reason: PostgresFailureReason.QUERY_FAILED, sqlstate: state ?? null },
  })
}
