/**
 * Registers the conformance cases (issue 11 item 5), each run against a fresh harness.
 */
import type { SessionBackend } from '../port.ts'
import { createSessionStore } from '../store.ts'
import { CHECKPOINT_CASES } from './cases-checkpoints.ts'
import { ERROR_CASES } from './cases-errors.ts'
import { CRC_CASES } from './cases-crc.ts'
import { DELETE_CASES } from './cases-delete.ts'
import { LEASE_CASES } from './cases-leases.ts'
import { OLDER_CASES } from './cases-older.ts'
import { SEARCH_CASES } from './cases-search.ts'
import { SEED_STREAM_CASES } from './cases-seed-stream.ts'
import { SESSION_CASES } from './cases-sessions.ts'
import { makeClock, pollSleep, wait } from './harness.ts'
import type { Case, CaseContext, ConformanceOptions } from './harness.ts'

const CASES = [
  ...LEASE_CASES,
  ...SESSION_CASES,
  ...SEED_STREAM_CASES,
  ...CHECKPOINT_CASES,
  ...OLDER_CASES,
  ...ERROR_CASES,
  ...CRC_CASES,
  ...DELETE_CASES,
  ...SEARCH_CASES,
]

/** Cases that need projection checkpoints: an encrypted session stores none (its snapshot would be plaintext). */
const PLAIN_ONLY: ReadonlySet<Case> = new Set(CHECKPOINT_CASES)

/**
 * Registers every case under one `describe` block.
 *
 * @param options - The harness factory and the framework functions.
 */
export function registerCases(options: ConformanceOptions): void {
  const prefix = options.idPrefix ?? 'conf'
  const timeout = options.timeoutMs ?? 30_000
  options.describe(`session backend conformance: ${options.name}`, () => {
    for (const [index, testCase] of CASES.entries()) {
      if (
        options.encryption !== undefined &&
        (testCase.plainOnly !== undefined || PLAIN_ONLY.has(testCase))
      ) {
        continue
      }
      options.it(
        testCase.title,
        async () => {
          const harness = await options.makeBackend()
          const instances: SessionBackend[] = []
          const context: CaseContext = {
            harness,
            backend: harness.backend,
            options,
            id: (name) => `${prefix}-${index}-${name}`,
            store: (owner = 'conformance', backend = harness.backend, leaseMs = 60_000) =>
              createSessionStore({
                backend,
                clock: makeClock(),
                owner,
                leaseMs,
                sleep: pollSleep,
                encryption: options.encryption,
              }),
            second: async () => {
              if (harness.reopen === undefined) return harness.backend
              const instance = await harness.reopen()
              instances.push(instance)
              return instance
            },
            advance: (ms) => harness.advanceTime?.(ms) ?? wait(ms),
          }
          try {
            await testCase.run(context)
          } finally {
            await harness.cleanup()
          }
        },
        timeout,
      )
    }
  })
}
