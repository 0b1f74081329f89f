import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { LOG_FILE_NAME } from '../src/format.ts'
import { spawnTsChild } from './support/children.ts'
import { collect, makeTempDir, testStore } from './support/sessions.ts'

let temp: { path: string; cleanup: () => void }

beforeEach(() => {
  temp = makeTempDir()
})

afterEach(() => {
  temp.cleanup()
})

describe('reader racing a live writer', () => {
  it('T5: 500 read-only opens during appends each see a contiguous prefix, an unterminated tail as in progress, and write nothing', async () => {
    const { store } = testStore(temp.path)
    const child = spawnTsChild('store-core-child.ts', [temp.path, 'live', 'live-writer', '3000'])
    await child.waitForLine((line) => line === 'READY')
    const path = join(temp.path, 'live', LOG_FILE_NAME)
    let previousSeq = -1
    let previousSize = 0
    let inProgressSeen = 0
    let duringWrites = 0
    for (let iteration = 0; iteration < 500; iteration += 1) {
      const writing = !child.lines.some((line) => line.startsWith('DONE'))
      const read = await store.openReader('live')
      if (writing) duringWrites += 1
      expect(read.error).toBeNull()
      expect(read.headerMissing).toBe(false)
      expect(read.lastSeq).toBeGreaterThanOrEqual(previousSeq)
      expect(read.projection.nextSeq).toBe(read.lastSeq + 1)
      expect(read.stats.events).toBe(read.lastSeq + 1)
      if (read.tornTail !== null) {
        inProgressSeen += 1
        expect(read.tornTail.reason).toBe('unterminated')
        expect(read.tornTail.offset + read.tornTail.bytes).toBe(read.bytes)
      }
      if (iteration % 50 === 0) {
        const events = await collect(store.readEvents('live'))
        expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index))
      }
      const size = statSync(path).size
      expect(size).toBeGreaterThanOrEqual(previousSize)
      previousSize = size
      previousSeq = read.lastSeq
    }
    const exit = await child.exited
    expect(exit.code, child.stderr()).toBe(0)
    expect(child.lines).toContain('DONE 2999')
    expect(duringWrites).toBeGreaterThan(10)
    // The reader never repaired anything: no quarantine file, no lock left, the writer finished clean.
    expect(readdirSync(join(temp.path, 'live'))).toEqual([LOG_FILE_NAME])
    expect(await store.verify('live')).toMatchObject({ status: 'ok', lastSeq: 2999 })
    console.log(`T5: ${duringWrites} of 500 opens during writes, ${inProgressSeen} saw a line in progress`)
    // 500 full opens of a growing log: minutes on a loaded 2-core machine, so more than the default 30 s.
  }, 180_000)
})
