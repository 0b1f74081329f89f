import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { LOG_FILE_NAME } from '../src/format.ts'
import { spawnTsChild } from './support/children.ts'
import { collect, coreTestStore, makeTempDir } from './support/sessions.ts'

let temp: { path: string; cleanup: () => void }

beforeEach(() => {
  temp = makeTempDir()
})

afterEach(() => {
  temp.cleanup()
})

describe('reader racing a live writer', () => {
  it(
    'T5: 500 read-only opens, 250 of them racing the appends, each see a contiguous prefix, an unterminated tail as in progress, and write nothing',
    async () => {
      const { store } = coreTestStore(temp.path)
      // The writer appends in chunks of CHUNK events, each on our `more`: open k races chunk k,
      // so it must see at least chunks 0..k-1 and at most chunk k, whatever the machine's speed.
      const COUNT = 3000
      const CHUNK = 12
      const child = spawnTsChild('store-core-child.ts', [
        temp.path,
        'live',
        'live-writer',
        String(COUNT),
        String(CHUNK),
      ])
      await child.waitForLine((line) => line === 'READY')
      const path = join(temp.path, 'live', LOG_FILE_NAME)
      let previousSeq = -1
      let previousSize = 0
      let inProgressSeen = 0
      const openAndCheck = async (iteration: number): Promise<number> => {
        const read = await store.openReader('live')
        expect(read.error).toBeNull()
        expect(read.header.id).toBe('live')
        expect(read.lastSeq).toBeGreaterThanOrEqual(previousSeq)
        expect(read.projection.nextSeq).toBe(read.lastSeq + 1)
        if (read.tornTail !== null) {
          inProgressSeen += 1
          expect(read.tornTail.reason).toBe('unterminated')
          // The line in progress starts where the good prefix ends, and lies inside the file
          // (which only grows: the file is measured after the read).
          const offset = read.tornTail.location?.offset
          expect(offset).toBeGreaterThan(0)
          expect((offset ?? 0) + read.tornTail.bytes).toBeLessThanOrEqual(statSync(path).size)
        }
        if (iteration % 50 === 0) {
          const events = await collect(store.readEvents('live'))
          expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index))
        }
        const size = statSync(path).size
        expect(size).toBeGreaterThanOrEqual(previousSize)
        previousSize = size
        previousSeq = read.lastSeq
        return read.lastSeq
      }
      const chunks = COUNT / CHUNK
      for (let chunk = 0; chunk < chunks; chunk += 1) {
        const lastOfChunk = (chunk + 1) * CHUNK - 1
        child.send('more')
        const seen = await openAndCheck(chunk)
        expect(seen).toBeGreaterThanOrEqual(chunk * CHUNK - 1)
        expect(seen).toBeLessThanOrEqual(lastOfChunk)
        await child.waitForLine((line) => line === `CHUNK ${lastOfChunk}`)
      }
      const exit = await child.exited
      expect(exit.code, child.stderr()).toBe(0)
      expect(child.lines).toContain(`DONE ${COUNT - 1}`)
      for (let iteration = chunks; iteration < 500; iteration += 1) {
        expect(await openAndCheck(iteration)).toBe(COUNT - 1)
      }
      // The reader never repaired anything: no quarantine file, no lock left, the writer finished clean.
      // The writer child is on the one store API: its lease file is the writer's, not a reader's.
      expect(readdirSync(join(temp.path, 'live')).sort()).toEqual([LOG_FILE_NAME, 'writer.lease'])
      expect(await store.verify('live')).toMatchObject({ status: 'ok', lastSeq: COUNT - 1 })
      console.log(
        `T5: ${chunks} of 500 opens raced a chunk of appends, ${inProgressSeen} saw a line in progress`,
      )
      // 500 full opens of a growing log: minutes on a loaded 2-core machine; the timeout only stops a hang.
    },
    testTime(180_000),
  )
})
