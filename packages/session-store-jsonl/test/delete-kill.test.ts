/**
 * RELIABILITY D1 in the gate: a child deleting a session is SIGKILLed at each named step of
 * the delete (after the lock, after the rename, after the first unlink: a half-emptied
 * tombstone). Before the rename the session is whole and resumable,
 * after it gone; its fork and the other session stay whole; the next delete leaves no
 * tombstone. D2: a prune killed at those steps of its first and second delete. The kill
 * before every single file-system op is `delete-kill.crash.test.ts`.
 */
import { describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { killAtEachPoint } from './support/delete-crash.ts'

describe('delete under SIGKILL at each step', () => {
  it(
    'D1: whole before the rename, gone after it, never half; the fork and the other session stay whole',
    async () => {
      const points = ['locked', 'renamed', 'unlinked:']
      const { gone, half } = await killAtEachPoint({ cmd: 'delete', id: 'a' }, points, ['a-fork', 'b'])
      expect(half).toEqual([])
      expect(Object.fromEntries(gone)).toEqual({ locked: [], renamed: ['a'], 'unlinked:': ['a'] })
    },
    testTime(300_000),
  )

  it(
    'D2: a prune (keep 1) killed in its first or second delete leaves each session whole or gone; the next prune leaves no tombstone, even with nothing left to delete',
    async () => {
      // The prune deletes `a-fork` then `a` (newest first; `b` is kept). Killed after the second
      // rename, nothing is left to delete: the next prune must still finish the tombstone.
      const points = ['1:locked', '1:unlinked:', '2:renamed', '2:unlinked:']
      const { gone, half } = await killAtEachPoint({ cmd: 'prune', keep: 1 }, points, ['b'])
      expect(half).toEqual([])
      expect(Object.fromEntries(gone)).toEqual({
        '1:locked': [],
        '1:unlinked:': ['a-fork'],
        '2:renamed': ['a', 'a-fork'],
        '2:unlinked:': ['a', 'a-fork'],
      })
    },
    testTime(300_000),
  )
})
