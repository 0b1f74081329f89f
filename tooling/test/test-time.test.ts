import { describe, expect, it } from 'vitest'

import { resolveTestTimeScale, waitUntil } from '../test-time.ts'

describe('the test time scale (tooling/test-time.ts)', () => {
  it('takes AGENT_LEDGER_TEST_TIME_SCALE when set, over CI and the load', () => {
    expect(resolveTestTimeScale({ AGENT_LEDGER_TEST_TIME_SCALE: '7.5', CI: 'true' }, 30)).toBe(7.5)
  })

  it('refuses a scale below 1 or not a number, naming the variable and the value found', () => {
    for (const given of ['0.5', 'fast', '-2'])
      expect(() => resolveTestTimeScale({ AGENT_LEDGER_TEST_TIME_SCALE: given }, 0)).toThrow(
        `AGENT_LEDGER_TEST_TIME_SCALE: expected a number >= 1, found "${given}"`,
      )
  })

  it('is 1 on an idle machine, 2 under CI, and the load per core rounded up (at most 20) when larger', () => {
    expect(resolveTestTimeScale({}, 0.2)).toBe(1)
    expect(resolveTestTimeScale({ CI: 'true' }, 0.2)).toBe(2)
    expect(resolveTestTimeScale({ CI: 'false' }, 0.2)).toBe(1)
    expect(resolveTestTimeScale({ AGENT_LEDGER_TEST_TIME_SCALE: '' }, 4.1)).toBe(5)
    expect(resolveTestTimeScale({ CI: '1' }, 15)).toBe(15)
    expect(resolveTestTimeScale({}, 90)).toBe(20)
  })
})

describe('waitUntil', () => {
  it('resolves once the condition holds, however many polls that takes', async () => {
    let polls = 0
    await waitUntil('the fifth poll', () => ++polls === 5, { pollMs: 1 })
    expect(polls).toBe(5)
  })

  it('rejects after its hang guard, naming what it waited for and the detail', async () => {
    await expect(
      waitUntil('a condition that never holds', () => false, {
        timeoutMs: 1,
        pollMs: 1,
        detail: () => 'out: x',
      }),
    ).rejects.toThrow(/ms for a condition that never holds \(the hang guard, scaled by testTime\): out: x$/)
  })

  it('passes on an error the predicate throws (a child that exited)', async () => {
    await expect(
      waitUntil('a line', () => {
        throw new Error('the child exited')
      }),
    ).rejects.toThrow('the child exited')
  })
})
