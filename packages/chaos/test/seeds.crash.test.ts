// Regressions of the chaos harness's seeds (`pnpm test:crash`: each runs worker processes for
// tens of seconds on a loaded machine). A seed whose count is nonzero for agent-ledger stays
// here: while the bug is open its test asserts the defect exactly (it turns red when fixed: then
// assert the zero).
import { describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { runChaos } from '../src/driver.ts'

describe('chaos regression: JSONL, a writer stopped past its lease between its checks and its write()', () => {
  // Seed 7, one worker, one session: SIGSTOP just before the store's write() of a batch (its
  // fence checks passed), past the lease; a fresh worker resumes and finishes the session;
  // SIGCONT: the stopped writer's O_APPEND write lands after the new owner's events. Its own
  // after-write check refuses it (CONCURRENT_WRITE, never acknowledged) and its bytes stay. Its
  // repeated seq ends the good prefix (docs/decisions/2026-12-02-repeated-seq-ends-the-prefix.md):
  // readers stop before it and the next writer quarantines it, so the session stays usable.
  it(
    'the stale batch ends the prefix: the session opens and no request is provider-invalid',
    async () => {
      const result = await runChaos({
        subject: { kind: 'ledger', adapter: 'ai-sdk', store: 'jsonl' },
        runs: 1,
        seed: 7,
        workers: 1,
        sessionsPerWorker: 1,
        faultsPerSlot: 1,
        kinds: ['stop'],
      })
      expect(result.faults).toEqual({ 'stop flush': 1 })
      expect(result.counts.providerInvalidRequests).toBe(0)
      expect(result.errors).toEqual([])
      expect(result.refusals).toEqual({ WRITER_FAILED: 1 })
    },
    testTime(300_000),
  )
})
