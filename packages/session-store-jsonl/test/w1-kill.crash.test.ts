import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { expectSurvived, killRounds, runKillRound, sumRounds } from './support/crash-harness.ts'
import type { KillRound, KillRoundResult } from './support/crash-harness.ts'
import { recordCrashSection } from './support/crash-summary.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-w1-crash-'))
const BASE_SEED = Number(process.env['W1_SEED'] ?? '7331')
const KILLS = Number(process.env['W1_KILLS'] ?? '200')
const NAMED_POINTS = ['mid-write', 'after-write', 'after-fdatasync'] as const

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true })
})

describe('W1 crash suite: kill -9 during buffered appends', () => {
  it(`W1: ${KILLS} SIGKILLs at random moments plus one at each named point lose no acked event (base seed ${BASE_SEED})`, async () => {
    const results: KillRoundResult[] = []
    const failures: string[] = []
    const named: Record<string, KillRoundResult> = {}
    const run = async (round: KillRound, label: string): Promise<KillRoundResult> => {
      const result = await runKillRound(join(scratch, `r${results.length}`), round)
      results.push(result)
      try {
        expectSurvived(result, label)
      } catch (error) {
        failures.push(`${label}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`)
      }
      return result
    }
    for (const [index, point] of NAMED_POINTS.entries()) {
      const result = await run(
        { seed: BASE_SEED * 1000 + 900 + index, flushEvery: 4, killAfterMs: 0, crashAt: point },
        `CRASH_AT=${point}`,
      )
      named[point] = result
    }
    for (const round of killRounds(BASE_SEED, KILLS)) {
      await run(round, `seed ${round.seed} flushEvery ${round.flushEvery} kill ${round.killAfterMs}ms`)
    }
    const totals = sumRounds(results)
    await recordCrashSection('W1', {
      crash_points_injected: results.length,
      sigkill_runs_random: KILLS,
      sigkill_named_points: NAMED_POINTS.length,
      base_seed: BASE_SEED,
      ...totals,
      acked_events_lost: totals['acked_events_lost'] ?? 0,
      named_points: Object.fromEntries(
        Object.entries(named).map(([point, result]) => [
          point,
          {
            lastAck: result.lastAck,
            lastWorkloadSeq: result.lastWorkloadSeq,
            tornTailBytes: result.tornTailBytes,
          },
        ]),
      ),
      failures,
    })
    expect(failures).toEqual([])
    // Each named point was reached: acks before it, and the expected leftovers.
    expect(named['mid-write']!.tornTailBytes).toBeGreaterThan(0)
    expect(named['after-write']!.lastWorkloadSeq).toBeGreaterThan(named['after-write']!.lastAck)
    expect(named['after-fdatasync']!.lastWorkloadSeq).toBeGreaterThan(named['after-fdatasync']!.lastAck)
    for (const result of Object.values(named)) expect(result.lastAck).toBeGreaterThanOrEqual(7)
  })
})
