/**
 * The backend as the core calls it: a backend's typed errors pass as they are (their code,
 * details and cause unchanged), anything else a backend lets escape is `BACKEND_FAILED`.
 */
import { AgentLedgerError } from '@agent-ledger/session-events'

import type { CreateRequest, SessionBackend } from './port.ts'
import { SessionStoreError, SessionStoreErrorCode } from './session-store-error.ts'
import type { AnySessionStoreErrorCode } from './session-store-error.ts'

/** The port methods that return a promise (`read` streams: its errors are the backend's own). */
const GUARDED = new Set<PropertyKey>([
  'create',
  'acquire',
  'append',
  'renew',
  'release',
  'head',
  'readHeader',
  'list',
  'close',
])

/**
 * A failure that left a backend, as the port's error: a `SessionStoreError` as it is; another
 * agent-ledger error (a backend's own class) with its code, message and details kept and the
 * original as `cause`; anything else `BACKEND_FAILED` naming the backend and the call, with
 * `details.cause` (an errno such as `EIO`, or `unknown`) and the original as `cause`.
 *
 * @param error - What the backend threw.
 * @param backend - Its name, for the message.
 * @param method - The port method called.
 * @returns The error to throw.
 */
function asPortError(error: unknown, backend: string, method: string): SessionStoreError {
  if (SessionStoreError.is(error)) return error
  if (AgentLedgerError.is(error)) {
    return new SessionStoreError({
      code: error.code as AnySessionStoreErrorCode,
      message: error.message,
      details:
        typeof error.details === 'object' && error.details !== null
          ? (error.details as Readonly<Record<string, unknown>>)
          : {},
      cause: error,
    })
  }
  const errno = (error as { code?: unknown } | null)?.code
  const cause = typeof errno === 'string' ? errno : 'unknown'
  return new SessionStoreError({
    code: SessionStoreErrorCode.BACKEND_FAILED,
    message: `The ${backend} backend's ${method}() failed with an untyped error: expected a SessionStoreError, found ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)} (${cause}).`,
    details: { cause, method },
    cause: error,
  })
}

/** `request` with a streamed seed that records what its stream throws in `thrown`. */
function watchedSeed(request: CreateRequest, thrown: Set<unknown>): CreateRequest {
  if (Array.isArray(request.lines)) return request
  const lines = request.lines as AsyncIterable<readonly string[]>
  async function* watched(): AsyncGenerator<readonly string[]> {
    try {
      yield* lines
    } catch (error) {
      thrown.add(error)
      throw error
    }
  }
  return { ...request, lines: watched() }
}

/**
 * The guarded form of one port method: the backend's own promise with one rejection handler
 * chained (one promise per call, no async wrapper); a synchronous throw becomes a rejection.
 */
function guardedMethod(
  target: SessionBackend,
  key: string,
  original: (...args: unknown[]) => unknown,
): (...args: unknown[]) => Promise<unknown> {
  const fail = (error: unknown): never => {
    throw asPortError(error, target.name, key)
  }
  if (key !== 'create') {
    return (...args: unknown[]): Promise<unknown> => {
      let result: unknown
      try {
        result = original.apply(target, args)
      } catch (error) {
        return Promise.reject(asPortError(error, target.name, key))
      }
      return Promise.resolve(result).then(undefined, fail)
    }
  }
  return (...args: unknown[]): Promise<unknown> => {
    // A streamed seed's own error passes through unchanged (the port's contract).
    const fromStream = new Set<unknown>()
    const failUnlessStream = (error: unknown): never => {
      if (fromStream.has(error)) throw error
      throw asPortError(error, target.name, key)
    }
    let result: unknown
    try {
      result = original.call(target, watchedSeed(args[0] as CreateRequest, fromStream))
    } catch (error) {
      return Promise.reject(asPortError(error, target.name, key))
    }
    return Promise.resolve(result).then(undefined, failUnlessStream)
  }
}

/**
 * Wraps `backend` so that every promise-returning port method rejects only with a
 * `SessionStoreError` ({@link asPortError}). Every other member (capabilities, a backend's
 * own properties) is the backend's, unchanged; methods run with the backend as `this`.
 *
 * @param backend - The caller's backend.
 * @returns The guarded backend.
 */
export function guardBackend(backend: SessionBackend): SessionBackend {
  const wrapped = new Map<PropertyKey, unknown>()
  return new Proxy(backend, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target)
      if (typeof value !== 'function') return value
      let method = wrapped.get(key)
      if (method === undefined) {
        const original = value as (...args: unknown[]) => unknown
        method = GUARDED.has(key) ? guardedMethod(target, String(key), original) : original.bind(target)
        wrapped.set(key, method)
      }
      return method
    },
  })
}
