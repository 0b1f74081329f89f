/**
 * Option checks and error helpers shared by the store and the memory backend.
 */
import { DEFAULT_LIMITS } from './event-codec.ts'
import type { StoreLimits } from './event-codec.ts'
import type { AbortSignalLike } from './port.ts'
import { SessionStoreError, SessionStoreErrorCode } from './session-store-error.ts'

/** A value as shown in an error message. */
export function describe(value: unknown): string {
  return JSON.stringify(value) ?? String(value)
}

/** An `INVALID_OPTION` error naming the option, what was expected and what was found. */
export function invalidOption(option: string, expected: string, found: unknown): SessionStoreError {
  return new SessionStoreError({
    code: SessionStoreErrorCode.INVALID_OPTION,
    message: `Option ${option} must be ${expected}, found ${describe(found)}.`,
    details: {
      option,
      expected,
      found: typeof found === 'number' || typeof found === 'string' ? found : typeof found,
    },
  })
}

/** A seq option: undefined, or a non-negative safe integer (else `INVALID_OPTION`). */
export function seqOption(value: unknown, option: string): number | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw invalidOption(option, 'a non-negative integer seq', value)
  }
  return value
}

/** The store limits: the defaults overridden by `partial`, each a positive integer. */
export function resolveLimits(partial: Partial<StoreLimits> | undefined): StoreLimits {
  const limits = { ...DEFAULT_LIMITS, ...partial }
  for (const [key, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value <= 0)
      throw invalidOption(`limits.${key}`, 'a positive integer', value)
  }
  return Object.freeze(limits)
}

/** True when `signal` has aborted. */
export function isAborted(signal: AbortSignalLike | undefined): boolean {
  return signal?.aborted === true
}

/**
 * Throws `ABORTED` when `signal` has aborted, saying what stopped and what that left
 * (`nothing was published` by default: the store's operations publish nothing until done).
 */
export function throwIfAborted(
  signal: AbortSignalLike | undefined,
  what: string,
  consequence = 'nothing was published',
): void {
  if (signal?.aborted === true) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.ABORTED,
      message: `${what} was aborted; ${consequence}.`,
      cause: signal.reason,
    })
  }
}
