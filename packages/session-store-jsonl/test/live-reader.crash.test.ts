import { afterEach, beforeEach, describe, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { raceReadersWithWriter } from './support/live-reader-race.ts'
import { makeTempDir } from './support/sessions.ts'

let temp: { path: string; cleanup: () => void }

beforeEach(() => {
  temp = makeTempDir()
})

afterEach(() => {
  temp.cleanup()
})

// The full size (the gate runs 150 opens of a 1,200-event log: `live-reader.test.ts`).
describe('reader racing a live writer', () => {
  it(
    'T5 (full): 500 read-only opens, 250 of them racing the appends, each see a contiguous prefix, an unterminated tail as in progress, and write nothing',
    () => raceReadersWithWriter(temp.path, { count: 3000, chunkSize: 12, opens: 500 }),
    // 500 full opens of a growing log: minutes on a loaded 2-core machine; the timeout only stops a hang.
    testTime(600_000),
  )
})
