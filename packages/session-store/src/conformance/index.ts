/**
 * @packageDocumentation
 * The backend conformance suite: `runBackendConformance` registers one test per rule of
 * the port's contract with the `describe`/`it` of any test framework (vitest, jest, mocha,
 * `node:test`). A backend is done when it passes.
 *
 * ```ts
 * import { describe, it } from 'vitest'
 * import { runBackendConformance } from '@agent-ledger/session-store/conformance'
 *
 * runBackendConformance({
 *   name: 'my backend',
 *   describe,
 *   it,
 *   makeBackend: async () => {
 *     const storage = await openStorage()
 *     return { backend: myBackend(storage), reopen: async () => myBackend(storage), cleanup: () => storage.drop() }
 *   },
 * })
 * ```
 */
import { registerCases } from './cases.ts'
import type { ConformanceOptions } from './harness.ts'

export type { ConformanceHarness, ConformanceOptions, InjectedFault } from './harness.ts'
export { ConformanceError } from './assert.ts'

/**
 * Registers the conformance tests for one backend.
 *
 * @param options - The backend factory, the framework's `describe`/`it`, and tuning.
 */
export function runBackendConformance(options: ConformanceOptions): void {
  registerCases(options)
}
