import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { checkPowerLossImage, runPowerLossWorkload } from './support/crash-harness.ts'
import type { PowerLossImageResult } from './support/crash-harness.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-w2-'))
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

describe('W2: simulated power loss at every I/O op index', () => {
  it(
    'W2: at every op index x drop/cut/garble, acked events survive, no log is visible without its header, the session reopens clean',
    async () => {
      const run = await runPowerLossWorkload(fresh(), { seed: 7, events: 9, flushEvery: 3, reopen: false })
      expect(run.acks.map((ack) => ack.seq)).toEqual([2, 5, 8])
      const results: PowerLossImageResult[] = []
      for (let opIndex = 0; opIndex <= run.recorder.opCount; opIndex += 1) {
        for (const [index, damage] of (['drop', 'cut', 'garble'] as const).entries()) {
          const result = await checkPowerLossImage(run, {
            opIndex,
            damage,
            seed: opIndex * 3 + index,
            target: fresh(),
          })
          results.push(result)
          const label = `op ${opIndex}/${run.recorder.opCount} (${run.recorder.ops[opIndex - 1]?.type ?? 'start'}) ${damage}`
          expect({
            label,
            ackedLost: result.ackedLost,
            headerless: result.headerless,
            openError: result.openError,
          }).toEqual({
            label,
            ackedLost: 0,
            headerless: 0,
            openError: null,
          })
          expect({
            label,
            holes: result.holes,
            dangling: result.unrepairedDangling,
            duplicates: result.duplicateSynthetic,
          }).toEqual({
            label,
            holes: 0,
            dangling: 0,
            duplicates: 0,
          })
          expect({ label, leftoverTemps: result.leftoverTemps }).toEqual({ label, leftoverTemps: 0 })
        }
      }
      // The images cover the whole life: before the session is visible, acked states, and torn tails repaired.
      expect(results.some((result) => !result.visible)).toBe(true)
      expect(results.filter((result) => result.lastAck === 8).length).toBeGreaterThan(0)
      expect(results.some((result) => result.tornTailBytes > 0)).toBe(true)
    },
    testTime(120_000),
  )
})
