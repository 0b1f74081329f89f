import { describe, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { raceReadersWithWriter } from './support/live-reader-race.ts'

// The gate's size: 100 opens race 100 chunks, 150 opens in all. The crash tier runs 500 opens
// of a 3,000-event log (`live-reader.crash.test.ts`).
describe('reader racing a live writer', () => {
  it(
    'T5: 150 read-only opens, 100 of them racing the appends, each see a contiguous prefix, an unterminated tail as in progress, and write nothing',
    () => raceReadersWithWriter({ count: 1200, chunkSize: 12, opens: 150 }),
    // The timeout only stops a hang.
    testTime(180_000),
  )
})
