/**
 * RELIABILITY D1 in the gate: a child deleting a session is SIGKILLed at each named step of
 * the delete (after the lock, after the rename, after the first unlink: a half-emptied
 * tombstone). Before the rename the session is whole and resumable,
 * after it gone; its fork and the other session stay whole; the next delete leaves no
 * tombstone. The kill before every single file-system op is `delete-kill.crash.test.ts`.
 */
import { describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { killAtEachPoint } from './support/delete-crash.ts'

describe('delete under SIGKILL at each step', () => {
  it(
    'D1: whole before the rename, gone after it, never half; the fork and the other session stay whole',
    async () => {
      const points = ['locked', 'renamed', 'unlinked:']
      const { gone, half } = await killAtEachPoint('a', points, ['a-fork', 'b'])
      expect(half).toEqual([])
      expect(Object.fromEntries(gone)).toEqual({
        locked: false,
        renamed: true,
        'unlinked:': true,
      })
    },
    testTime(300_000),
  )
})
