import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { LOG_FILE_NAME } from '../src/format.ts'
import { checkPowerLossImage, crashStore, runPowerLossWorkload, splitLines } from './support/crash-harness.ts'
import type { PowerLossImageResult } from './support/crash-harness.ts'
import { recordCrashSection } from './support/crash-summary.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-w2-crash-'))
let counter = 0

function fresh(): string {
  counter += 1
  const directory = join(scratch, `d${counter}`)
  mkdirSync(directory, { mode: 0o700 })
  return directory
}

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true })
})

const WORKLOADS = [
  { seed: 11, events: 24, flushEvery: 1, reopen: true },
  { seed: 12, events: 30, flushEvery: 4, reopen: true },
  { seed: 13, events: 40, flushEvery: 7, reopen: true },
] as const
const DAMAGES = ['drop', 'cut', 'garble'] as const

describe('W2 crash suite: simulated power loss at every I/O op index', () => {
  it('W2: every op index of three workloads x drop/cut/garble keeps every acked event and reopens clean', async () => {
    const results: PowerLossImageResult[] = []
    const failures: string[] = []
    let holesImages = 0
    let holesOpenedClean = 0
    let holesRefusedWithTypedError = 0
    let holesAckedLost = 0
    for (const workload of WORKLOADS) {
      const run = await runPowerLossWorkload(fresh(), workload)
      for (let opIndex = 0; opIndex <= run.recorder.opCount; opIndex += 1) {
        for (const [index, damage] of DAMAGES.entries()) {
          const result = await checkPowerLossImage(run, {
            opIndex,
            damage,
            seed: workload.seed * 100_000 + opIndex * 10 + index,
            target: fresh(),
          })
          results.push(result)
          const bad =
            result.ackedLost +
            result.headerless +
            result.holes +
            result.unrepairedDangling +
            result.duplicateSynthetic +
            result.leftoverTemps +
            (result.openError === null ? 0 : 1)
          if (bad > 0) {
            failures.push(
              `seed ${workload.seed} op ${opIndex} (${run.recorder.ops[opIndex - 1]?.type ?? 'start'}) ${damage}: ${JSON.stringify(result)}`,
            )
          }
        }
        // 'holes' (pages written out of order): a valid line may follow a zeroed block, which
        // the format must treat as damage in the middle. Acked events must still be readable.
        const target = fresh()
        const holes = await checkPowerLossImage(run, {
          opIndex,
          damage: 'holes',
          seed: workload.seed * 100_000 + opIndex * 10 + 9,
          target,
        })
        holesImages += 1
        if (holes.openError === null) {
          holesOpenedClean += 1
          holesAckedLost += holes.ackedLost
        } else {
          holesRefusedWithTypedError += 1
          const store = crashStore(target)
          const reader = await store.openReader(run.id, { allowDamaged: true })
          await store.close()
          const lines = splitLines(readFileSync(join(target, run.id, LOG_FILE_NAME))).lines
          let lost = reader.lastSeq >= holes.lastAck ? 0 : holes.lastAck - reader.lastSeq
          for (let seq = 0; seq <= holes.lastAck; seq += 1) {
            if (!(lines[seq + 1]?.equals(run.reference[seq + 1]!) ?? false)) lost += 1
          }
          holesAckedLost += lost
        }
      }
    }
    const sum = (pick: (result: PowerLossImageResult) => number): number =>
      results.reduce((total, result) => total + pick(result), 0)
    await recordCrashSection('W2', {
      crash_points_injected: results.length + holesImages,
      power_loss_images: results.length,
      op_indexes: results.length / DAMAGES.length,
      damage_models: [...DAMAGES],
      acked_events_lost: sum((result) => result.ackedLost) + holesAckedLost,
      acked_events_checked: sum((result) => result.lastAck + 1),
      headerless_logs_visible: sum((result) => result.headerless),
      holes_after_recovery: sum((result) => result.holes),
      open_failures: sum((result) => (result.openError === null ? 0 : 1)),
      torn_tails_repaired: sum((result) => (result.tornTailBytes > 0 ? 1 : 0)),
      unrepaired_dangling_tool_calls: sum((result) => result.unrepairedDangling),
      duplicate_synthetic_results: sum((result) => result.duplicateSynthetic),
      leftover_temp_files: sum((result) => result.leftoverTemps),
      sessions_not_visible: sum((result) => (result.visible ? 0 : 1)),
      holes_model: {
        images: holesImages,
        opened_clean: holesOpenedClean,
        refused_with_typed_error: holesRefusedWithTypedError,
        acked_events_lost: holesAckedLost,
      },
      failures: failures.slice(0, 20),
    })
    expect(failures).toEqual([])
    expect(holesAckedLost).toBe(0)
  })
})
