import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { killRounds } from './support/crash-harness.ts'
import { runZstdKillRound } from './support/zstd-crash.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-zw1-'))
const BASE_SEED = Number(process.env['ZW1_SEED'] ?? '4242')

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true })
})

describe('W1 on a .zstd session: kill -9 during buffered appends', () => {
  it(
    `W1: a child appending frames to a .zstd log, SIGKILLed at random moments and mid-write, keeps every acked seq byte-identical; the torn frame is quarantined and the file passes zstd -t (4 kills + 1 named, base seed ${BASE_SEED})`,
    async () => {
      const rounds = [
        ...killRounds(BASE_SEED, 4),
        { seed: BASE_SEED * 1000 + 900, flushEvery: 4, killAfterMs: 0, crashAt: 'mid-write' as const },
      ]
      let acked = 0
      for (const [index, round] of rounds.entries()) {
        const result = await runZstdKillRound(join(scratch, `r${index}`), round)
        const label = `seed ${round.seed} flushEvery ${round.flushEvery} kill ${round.killAfterMs}ms ${round.crashAt ?? ''}`
        expect({ label, ackedLost: result.ackedLost }).toEqual({ label, ackedLost: 0 })
        expect(result.lastWorkloadSeq).toBeGreaterThanOrEqual(result.lastAck)
        expect({ label, dangling: result.unrepairedDangling, duplicates: result.duplicateSynthetic }).toEqual(
          {
            label,
            dangling: 0,
            duplicates: 0,
          },
        )
        expect(result.cliTestOk).toBe(true)
        if (round.crashAt === 'mid-write') {
          expect(result.tornTailBytes).toBeGreaterThan(0)
          expect(result.lastAck).toBeGreaterThanOrEqual(7)
        }
        acked += result.lastAck + 1
      }
      expect(acked).toBeGreaterThan(0)
    },
    testTime(120_000),
  )
})
