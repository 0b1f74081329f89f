import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { killRounds } from './support/crash-harness.ts'
import type { KillRound } from './support/crash-harness.ts'
import { recordCrashSection } from './support/crash-summary.ts'
import { runZstdKillRound } from './support/zstd-crash.ts'
import type { ZstdKillResult } from './support/zstd-crash.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-zw1-crash-'))
const BASE_SEED = Number(process.env['ZW1_SEED'] ?? '9157')
const KILLS = Number(process.env['ZW1_KILLS'] ?? '60')
const NAMED_POINTS = ['mid-write', 'after-write', 'after-fdatasync'] as const

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true })
})

describe('W1 crash suite on .zstd sessions', () => {
  it(`W1: ${KILLS} SIGKILLs at random moments plus one at each named point of a frame write lose no acked event (base seed ${BASE_SEED})`, async () => {
    const rounds: KillRound[] = [
      ...NAMED_POINTS.map((point, index) => ({
        seed: BASE_SEED * 1000 + 900 + index,
        flushEvery: 4,
        killAfterMs: 0,
        crashAt: point,
      })),
      ...killRounds(BASE_SEED, KILLS),
    ]
    const results: ZstdKillResult[] = []
    const failures: string[] = []
    for (const [index, round] of rounds.entries()) {
      const label = `seed ${round.seed} flushEvery ${round.flushEvery} kill ${round.killAfterMs}ms ${round.crashAt ?? ''}`
      try {
        const result = await runZstdKillRound(join(scratch, `r${index}`), round)
        results.push(result)
        if (result.ackedLost !== 0) failures.push(`${label}: ${result.ackedLost} acked events lost`)
        if (result.lastWorkloadSeq < result.lastAck)
          failures.push(`${label}: prefix ends before the last ack`)
        if (result.unrepairedDangling !== 0 || result.duplicateSynthetic !== 0)
          failures.push(`${label}: repair`)
        if (!result.cliTestOk) failures.push(`${label}: zstd -t failed`)
      } catch (error) {
        failures.push(`${label}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`)
      }
    }
    const sum = (pick: (result: ZstdKillResult) => number): number =>
      results.reduce((total, result) => total + pick(result), 0)
    await recordCrashSection('W1-zstd', {
      crash_points_injected: rounds.length,
      sigkill_named_points: NAMED_POINTS.length,
      base_seed: BASE_SEED,
      acked_events_checked: sum((result) => result.lastAck + 1),
      acked_events_lost: sum((result) => result.ackedLost),
      torn_frames_repaired: sum((result) => (result.tornTailBytes > 0 ? 1 : 0)),
      unrepaired_dangling_tool_calls: sum((result) => result.unrepairedDangling),
      duplicate_synthetic_results: sum((result) => result.duplicateSynthetic),
      zstd_t_failures: sum((result) => (result.cliTestOk ? 0 : 1)),
      failures,
    })
    expect(failures).toEqual([])
    expect(results[0]!.tornTailBytes).toBeGreaterThan(0)
  })
})
