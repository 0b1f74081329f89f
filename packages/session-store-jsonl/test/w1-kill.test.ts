import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { expectSurvived, killRounds, runKillRound } from './support/crash-harness.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-w1-'))
const BASE_SEED = Number(process.env['W1_SEED'] ?? '20261')

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true })
})

describe('W1: kill -9 during buffered appends', () => {
  it(
    `W1: a child SIGKILLed at random moments keeps every acked seq byte-identical, a contiguous prefix, tail and dangling calls repaired (4 kills, base seed ${BASE_SEED})`,
    async () => {
      let acked = 0
      for (const [index, round] of killRounds(BASE_SEED, 4).entries()) {
        const root = join(scratch, `r${index}`)
        const result = await runKillRound(root, round)
        expectSurvived(
          result,
          `seed ${round.seed} flushEvery ${round.flushEvery} kill ${round.killAfterMs}ms`,
        )
        acked += result.lastAck + 1
      }
      // The kills landed while the workload ran: something was acknowledged before them.
      expect(acked).toBeGreaterThan(0)
    },
    testTime(120_000),
  )
})
