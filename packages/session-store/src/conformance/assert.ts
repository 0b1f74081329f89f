/**
 * Framework-neutral assertions for the conformance suite: plain `Error`s, so the suite
 * runs under vitest, jest, mocha or `node:test` alike.
 */
import { AgentLedgerError } from '@agent-ledger/session-events'

import { SessionStoreError } from '../session-store-error.ts'

/** Thrown when a conformance expectation fails: code `CONFORMANCE_FAILED`, the message says what was expected and found. */
export class ConformanceError extends AgentLedgerError<'CONFORMANCE_FAILED'> {
  override readonly name = 'ConformanceError'

  /** @param message - What was compared, what was expected and what was found. */
  constructor(message: string) {
    super({ code: 'CONFORMANCE_FAILED', message })
  }
}

function show(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/**
 * Fails unless `actual === expected` (or both JSON-equal, with `deep`).
 *
 * @param actual - The value found.
 * @param expected - The value the contract requires.
 * @param what - What is compared, for the message.
 */
export function equal(actual: unknown, expected: unknown, what: string): void {
  if (actual !== expected)
    throw new ConformanceError(`${what}: expected ${show(expected)}, found ${show(actual)}`)
}

/**
 * Fails unless the JSON texts of both values are equal.
 *
 * @param actual - The value found.
 * @param expected - The value the contract requires.
 * @param what - What is compared.
 */
export function deepEqual(actual: unknown, expected: unknown, what: string): void {
  const a = show(actual)
  const b = show(expected)
  if (a !== b) throw new ConformanceError(`${what}: expected ${b}, found ${a}`)
}

/**
 * Fails unless `condition` holds.
 *
 * @param condition - The requirement.
 * @param what - What it says, for the message.
 */
export function ok(condition: boolean, what: string): void {
  if (!condition) throw new ConformanceError(`${what}: expected true, found false`)
}

/**
 * Fails unless `error` is a {@link SessionStoreError} of `code`.
 *
 * @param error - What was caught.
 * @param code - The required code.
 * @param what - What was attempted.
 * @returns The error.
 */
export function checkError(error: unknown, code: string, what: string): SessionStoreError {
  if (!SessionStoreError.is(error)) {
    throw new ConformanceError(
      `${what}: expected a SessionStoreError with code ${code}, found ${error instanceof Error ? `${error.name}: ${error.message}` : show(error)}`,
    )
  }
  if (error.code !== code) {
    throw new ConformanceError(`${what}: expected code ${code}, found ${error.code} (${error.message})`)
  }
  return error
}

/**
 * Fails unless `run` rejects with a {@link SessionStoreError} of `code`.
 *
 * @param run - The operation.
 * @param code - The required code.
 * @param what - What is attempted.
 * @returns The error.
 */
export async function rejects(
  run: () => Promise<unknown>,
  code: string,
  what: string,
): Promise<SessionStoreError> {
  try {
    await run()
  } catch (error) {
    return checkError(error, code, what)
  }
  throw new ConformanceError(`${what}: expected a rejection with code ${code}, found success`)
}

/**
 * Fails unless `run` throws (synchronously) a {@link SessionStoreError} of `code`.
 *
 * @param run - The operation.
 * @param code - The required code.
 * @param what - What is attempted.
 * @returns The error.
 */
export function throws(run: () => unknown, code: string, what: string): SessionStoreError {
  try {
    run()
  } catch (error) {
    return checkError(error, code, what)
  }
  throw new ConformanceError(`${what}: expected a synchronous throw with code ${code}, found none`)
}
