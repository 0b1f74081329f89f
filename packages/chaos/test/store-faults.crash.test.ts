// The faults of a whole store (`pnpm test:crash`: each runs worker processes and, for the
// failover, two PostgreSQL servers, for tens of seconds on a loaded machine): a full disk under
// JSONL (a tmpfs filled while a worker waits at its point) and a PostgreSQL primary SIGKILLed
// with its synchronous standby promoted. Every count stays 0, the fault happened, and the
// faulted worker was refused by the store (not an error of the run).
import { describe, expect, it } from 'vitest'

import { pgUnavailableReason } from '../../../tooling/pg/cluster.ts'
import { testTime } from '../../../tooling/test-time.ts'
import { tmpfsRefused } from '../src/disk.ts'
import { runChaos } from '../src/driver.ts'
import { FailoverPair } from '../src/failover.ts'
import { defects, none } from './defects.ts'

const refused = tmpfsRefused()

describe.skipIf(refused !== null)(
  `chaos: JSONL on a full disk${refused === null ? '' : ` (not run: ${refused})`}`,
  () => {
    it(
      'the writer meets ENOSPC (DISK_FULL), the space is freed, a fresh worker resumes: every count 0',
      async () => {
        const result = await runChaos({
          subject: { kind: 'ledger', adapter: 'ai-sdk', store: 'jsonl' },
          runs: 6,
          seed: 3,
          workers: 1,
          sessionsPerWorker: 6,
          faultsPerSlot: 2,
          kinds: ['disk-full'],
          tmpfsMiB: 16,
        })
        expect(Object.keys(result.faults).every((key) => key.startsWith('disk-full '))).toBe(true)
        expect(Object.values(result.faults).reduce((sum, count) => sum + count, 0)).toBeGreaterThan(0)
        expect(result.refusals['DISK_FULL']).toBeGreaterThan(0)
        expect({ ...defects(result), errors: result.errors, unfinished: result.unfinished }).toEqual({
          ...none,
          errors: [],
          unfinished: 0,
        })
      },
      testTime(300_000),
    )
  },
)

const pgReason = pgUnavailableReason()

describe.skipIf(pgReason !== undefined)(
  `chaos: PostgreSQL failover${pgReason === undefined ? '' : ` (not run: ${pgReason})`}`,
  () => {
    it(
      'primary SIGKILLed at a worker point, the synchronous standby promoted, fresh workers resume on it: every count 0',
      async () => {
        const pair = new FailoverPair()
        try {
          const result = await runChaos({
            subject: { kind: 'ledger', adapter: 'openai-agents', store: 'postgres' },
            runs: 4,
            seed: 5,
            workers: 1,
            sessionsPerWorker: 4,
            faultsPerSlot: 1,
            kinds: ['failover'],
            failover: { prepare: () => pair.prepare(), fail: () => pair.fail() },
          })
          expect(Object.values(result.faults).reduce((sum, count) => sum + count, 0)).toBe(1)
          expect(Object.keys(result.faults)[0]).toMatch(/^failover /)
          expect({ ...defects(result), errors: result.errors, unfinished: result.unfinished }).toEqual({
            ...none,
            errors: [],
            unfinished: 0,
          })
        } finally {
          await pair.destroy()
        }
      },
      testTime(300_000),
    )
  },
)
