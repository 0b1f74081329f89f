// Regressions of the chaos harness's seeds (`pnpm test:crash`: each runs worker processes for
// tens of seconds on a loaded machine). A seed whose count is nonzero for agent-ledger stays
// here: while the bug is open its test asserts the defect exactly (it turns red when fixed: then
// assert the zero).
import { describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { tmpfsRefused } from '../src/disk.ts'
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

const refused = tmpfsRefused()

describe.skipIf(refused !== null)(
  `chaos regression: JSONL on a full disk, parallel results exported to Anthropic${refused === null ? '' : ` (not run: ${refused})`}`,
  () => {
    // Seed 1, the first round of the full run's disk-full row (one worker, 25 sessions, two
    // faults): in session s4 a parallel call's real result is logged before its sibling's
    // TOOL_OUTCOME_UNKNOWN (the worker met ENOSPC in the sibling's step; a fresh worker repaired
    // it). The Anthropic export kept the log's order: TOOL_RESULT_MISMATCH, one provider-invalid
    // next request. toAnthropic now orders results by their uses (the gate's version:
    // loop-repair test/anthropic.test.ts).
    it(
      'every next request is provider-valid',
      async () => {
        const result = await runChaos({
          subject: { kind: 'ledger', adapter: 'ai-sdk', store: 'jsonl' },
          runs: 25,
          seed: 1,
          workers: 1,
          sessionsPerWorker: 25,
          faultsPerSlot: 2,
          kinds: ['disk-full'],
          tmpfsMiB: 16,
        })
        expect(result.faults).toEqual({ 'disk-full in-tool': 1, 'disk-full after-tool': 1 })
        expect(result.refusals['DISK_FULL']).toBeGreaterThan(0)
        expect(result.badRounds).toEqual([])
        expect(result.counts.providerInvalidRequests).toBe(0)
      },
      testTime(300_000),
    )
  },
)
