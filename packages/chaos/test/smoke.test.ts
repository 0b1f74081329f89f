// The chaos smoke tier (`pnpm test`): a few seeded runs through real worker processes,
// SIGKILLed and SIGSTOPped at the seed's points, checked by checkRun. Every count must be 0
// for agent-ledger; the same faults over the AI SDK's persistence recipe must show its
// duplicated executions, so a 0 here is the harness seeing nothing, not seeing nothing wrong.
// Kept small (a handful of worker processes per test): the full run is `pnpm chaos`.
import { describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { runChaos } from '../src/driver.ts'
import type { ChaosResult } from '../src/driver.ts'
import type { Subject } from '../src/plan.ts'
import { defects, none } from './defects.ts'

const faultCount = (result: ChaosResult): number =>
  Object.values(result.faults).reduce((sum, count) => sum + count, 0)

describe('chaos smoke: agent-ledger on JSONL', () => {
  const cases: readonly (readonly [string, Subject, number])[] = [
    ['@agent-ledger/ai-sdk', { kind: 'ledger', adapter: 'ai-sdk', store: 'jsonl' }, 7],
    ['@agent-ledger/openai-agents', { kind: 'ledger', adapter: 'openai-agents', store: 'jsonl' }, 16],
    // The real Claude Agent SDK and its CLI against the worker's scripted Messages API.
    ['@agent-ledger/claude-agent-sdk', { kind: 'ledger', adapter: 'claude-agent-sdk', store: 'jsonl' }, 7],
  ]
  it.each(cases)(
    '%s: SIGKILL and SIGSTOP past the lease at seeded points leave every count at 0',
    async (_name, subject, seed) => {
      const result = await runChaos({
        subject,
        runs: 4,
        seed,
        workers: 2,
        sessionsPerWorker: 2,
        faultsPerSlot: 1,
        kinds: ['kill', 'stop'],
      })
      expect(faultCount(result)).toBeGreaterThan(0)
      expect(result.resumes.length).toBeGreaterThan(0)
      expect(result.counts.toolCallsStarted).toBeGreaterThan(0)
      // Seeds 7 and 16: a SIGKILL halfway through a JSONL write (a torn tail) and a SIGSTOP in a tool.
      // `errors` also holds any process a round left running (a worker's child missed by its fault).
      expect({ ...defects(result), unfenced: result.unfenced, errors: result.errors }).toEqual({
        ...none,
        unfenced: 0,
        errors: [],
      })
      expect(result.unfinished).toBe(0)
    },
    testTime(180_000),
  )
})

describe('chaos smoke: the baseline the same harness measures', () => {
  it(
    'the AI SDK persistence recipe, SIGKILLed inside a tool, runs the step again: duplicated executions',
    async () => {
      const result = await runChaos({
        subject: { kind: 'baseline', baseline: 'ai-sdk-recipe' },
        runs: 2,
        seed: 1,
        workers: 1,
        sessionsPerWorker: 2,
        faultsPerSlot: 1,
        kinds: ['kill'],
      })
      expect(result.faults).toEqual({ 'kill in-tool': 1 })
      expect(result.counts.duplicatedExecutions).toBeGreaterThan(0)
    },
    testTime(180_000),
  )
})
