// The Claude Agent SDK store under the chaos faults (`pnpm test:crash`: the real SDK and its
// CLI per session, against the worker's scripted Messages API, for tens of seconds on a loaded
// machine). With the SDK's defaults (transcript mirrored in batches at the end of a turn, tools
// run as soon as they are asked for) a takeover runs tools again; with the worker's write-ahead
// mode (`sessionStoreFlush: 'eager'`, each tool waits for its tool_use entry's acknowledgement)
// the same seed leaves every count at 0, on JSONL and on PostgreSQL.
import { describe, expect, it } from 'vitest'

import { pgUnavailableReason, startCluster } from '../../../tooling/pg/cluster.ts'
import { testTime } from '../../../tooling/test-time.ts'
import { runChaos } from '../src/driver.ts'
import type { ChaosOptions } from '../src/driver.ts'
import { defects, none } from './defects.ts'

// Seed 3, two worker slots of two sessions, one takeover each: SIGSTOP at a worker's point,
// a fresh worker takes the live lease at once and finishes the session, then SIGCONT.
const takeover: ChaosOptions = {
  subject: { kind: 'ledger', adapter: 'claude-agent-sdk', store: 'jsonl' },
  runs: 4,
  seed: 3,
  workers: 2,
  sessionsPerWorker: 2,
  faultsPerSlot: 1,
  kinds: ['takeover'],
}

describe('chaos: @agent-ledger/claude-agent-sdk on JSONL, seed 3, a takeover in each slot', () => {
  it(
    "the SDK's defaults: nothing is mirrored before the turn ends, so the new owner runs the session's tools again",
    async () => {
      const result = await runChaos({ ...takeover, sdkDefaults: true })
      expect(result.faults).toEqual({ 'takeover before-tool': 1, 'takeover flush': 1 })
      expect(result.counts.duplicatedExecutions).toBeGreaterThan(0)
      // The resumed sessions were empty: the stopped worker's turn was never mirrored.
      expect(result.resumes.every((resume) => resume.events === 0)).toBe(true)
    },
    testTime(300_000),
  )

  it(
    'write-ahead (eager mirroring, each tool after its tool_use is acknowledged): every count 0',
    async () => {
      const result = await runChaos(takeover)
      expect(result.faults).toEqual({ 'takeover before-tool': 1, 'takeover flush': 1 })
      expect(result.resumes.every((resume) => resume.events > 0)).toBe(true)
      expect({ ...defects(result), errors: result.errors, unfinished: result.unfinished }).toEqual({
        ...none,
        errors: [],
        unfinished: 0,
      })
      expect(result.refusals['FENCED']).toBeGreaterThan(0)
    },
    testTime(300_000),
  )
})

// Seed 11, round 2 of `pnpm chaos --total 500 --seed 11 --workers 2 --only claude` (two slots of
// 25 sessions, two faults each). In slot w0 a worker loads session s6 (none yet) and is stopped
// at its first model request, before it appended anything: it holds no lease, so the takeover
// fences nothing. The fresh worker runs s6 to the end and releases its lease; on SIGCONT the
// stale worker's CLI mirrored its own turn onto that transcript (its first append opened a
// free lease) and ran the session's 6 tools again, each after its tool_use was acknowledged:
// 6 duplicated executions, "unfenced 1", on JSONL and PostgreSQL alike. The store now refuses a
// first append that finds another transcript than its last load (TRANSCRIPT_MOVED).
describe('chaos regression: @agent-ledger/claude-agent-sdk on JSONL, seed 11 round 2, a takeover before the first append', () => {
  it(
    'the stalled worker is refused TRANSCRIPT_MOVED: no tool runs twice, every count 0',
    async () => {
      const result = await runChaos({
        subject: { kind: 'ledger', adapter: 'claude-agent-sdk', store: 'jsonl' },
        runs: 50,
        seed: 11,
        workers: 2,
        sessionsPerWorker: 25,
        firstRound: 2,
      })
      expect(result.faults['takeover model']).toBe(1)
      expect({
        ...defects(result),
        unfenced: result.unfenced,
        errors: result.errors,
        unfinished: result.unfinished,
      }).toEqual({ ...none, unfenced: 0, errors: [], unfinished: 0 })
      expect(result.refusals).toEqual({ TRANSCRIPT_MOVED: 1 })
    },
    testTime(300_000),
  )
})

const pgReason = pgUnavailableReason()

describe.skipIf(pgReason !== undefined)(
  `chaos: @agent-ledger/claude-agent-sdk on PostgreSQL${pgReason === undefined ? '' : ` (not run: ${pgReason})`}`,
  () => {
    it(
      'SIGKILL, SIGSTOP past the lease and takeovers at seed 2: every count 0',
      async () => {
        const cluster = await startCluster()
        try {
          const result = await runChaos({
            subject: { kind: 'ledger', adapter: 'claude-agent-sdk', store: 'postgres' },
            runs: 10,
            seed: 2,
            workers: 2,
            sessionsPerWorker: 5,
            faultsPerSlot: 2,
            pgUrl: cluster.url(),
          })
          expect(Object.values(result.faults).reduce((sum, count) => sum + count, 0)).toBeGreaterThan(0)
          expect(result.resumes.length).toBeGreaterThan(0)
          expect({ ...defects(result), errors: result.errors, unfinished: result.unfinished }).toEqual({
            ...none,
            errors: [],
            unfinished: 0,
          })
        } finally {
          await cluster.destroy()
        }
      },
      testTime(300_000),
    )
  },
)
