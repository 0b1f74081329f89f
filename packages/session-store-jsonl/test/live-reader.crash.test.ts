import { describe, it } from 'vitest'

import { raceReadersWithWriter } from './support/live-reader-race.ts'

// The full size (the gate runs 150 opens of a 1,200-event log: `live-reader.test.ts`); 500 full
// opens of a growing log take minutes on a loaded 2-core machine (the crash tier's timeout).
describe('reader racing a live writer, full size', () => {
  it('T5 (full): 500 read-only opens, 250 of them racing the appends, each see a contiguous prefix, an unterminated tail as in progress, and write nothing', () =>
    raceReadersWithWriter({ count: 3000, chunkSize: 12, opens: 500 }))
})
