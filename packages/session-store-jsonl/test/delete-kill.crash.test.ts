/**
 * RELIABILITY D1, D2 in full (K model): a child deleting (or pruning) through the one store
 * API is SIGKILLed just before its 1st, 2nd, ... n-th mutating or syncing file-system call,
 * until a run gets to the end; every round is checked by `support/delete-crash.ts` (each
 * session whole and resumable, or gone; no tombstone after the next delete or prune).
 */
import { describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { killAtEveryOp } from './support/delete-crash.ts'

describe('delete and prune under SIGKILL at every file-system op (K model)', () => {
  it(
    'D1: a delete killed at any op leaves the session whole or gone; its fork and the other session stay whole and resumable',
    async () => {
      const { kills, goneCounts, half } = await killAtEveryOp(
        { cmd: 'delete', id: 'a' },
        { mustSurvive: ['a-fork', 'b'], finish: { cmd: 'delete', id: 'a' } },
      )
      expect(half).toEqual([])
      // Kills both before the commit point (a whole) and after it (a gone): the test saw both sides.
      expect(kills).toBeGreaterThanOrEqual(8)
      expect(goneCounts[0]).toBe(0)
      expect(goneCounts.at(-1)).toBe(1)
    },
    testTime(600_000),
  )

  it(
    'D2: a prune (keep 1) killed at any op leaves each session whole or gone and never deletes the newest',
    async () => {
      const { kills, goneCounts, half } = await killAtEveryOp(
        { cmd: 'prune', keep: 1 },
        { mustSurvive: ['b'], finish: { cmd: 'prune', keep: 1 } },
      )
      expect(half).toEqual([])
      expect(kills).toBeGreaterThanOrEqual(16)
      expect(goneCounts[0]).toBe(0)
      expect(goneCounts.at(-1)).toBe(2)
    },
    testTime(900_000),
  )
})
