/**
 * T5, readers racing a live writer (shared by the gate's `live-reader.test.ts` and the crash
 * tier's `live-reader.crash.test.ts`, which runs it at full size): a child appends `count`
 * events in chunks of `chunkSize`, one chunk per `more`; the test makes one read-only open per
 * chunk while it is written, then more opens of the finished log up to `opens` in all. Every
 * open must see a contiguous prefix, an unterminated tail only as in progress, and write
 * nothing.
 */
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

import { expect } from 'vitest'

import { LOG_FILE_NAME } from '../../src/format.ts'
import { spawnTsChild } from './children.ts'
import { collect, coreTestStore, makeTempDir } from './sessions.ts'

export async function raceReadersWithWriter(options: {
  count: number
  chunkSize: number
  opens: number
}): Promise<void> {
  const temp = makeTempDir()
  try {
    await race(temp.path, options)
  } finally {
    temp.cleanup()
  }
}

async function race(
  root: string,
  { count, chunkSize, opens }: { count: number; chunkSize: number; opens: number },
): Promise<void> {
  const { store } = coreTestStore(root)
  // The writer appends in chunks of `chunkSize` events, each on our `more`: open k races chunk k,
  // so it must see at least chunks 0..k-1 and at most chunk k, whatever the machine's speed.
  const child = spawnTsChild('store-core-child.ts', [
    root,
    'live',
    'live-writer',
    String(count),
    String(chunkSize),
  ])
  await child.waitForLine((line) => line === 'READY')
  const path = join(root, 'live', LOG_FILE_NAME)
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
  const chunks = count / chunkSize
  for (let chunk = 0; chunk < chunks; chunk += 1) {
    const lastOfChunk = (chunk + 1) * chunkSize - 1
    child.send('more')
    const seen = await openAndCheck(chunk)
    expect(seen).toBeGreaterThanOrEqual(chunk * chunkSize - 1)
    expect(seen).toBeLessThanOrEqual(lastOfChunk)
    await child.waitForLine((line) => line === `CHUNK ${lastOfChunk}`)
  }
  const exit = await child.exited
  expect(exit.code, child.stderr()).toBe(0)
  expect(child.lines).toContain(`DONE ${count - 1}`)
  for (let iteration = chunks; iteration < opens; iteration += 1) {
    expect(await openAndCheck(iteration)).toBe(count - 1)
  }
  // The reader never repaired anything: no quarantine file, no lock left, the writer finished clean.
  // The writer child is on the one store API: its lease file is the writer's, not a reader's.
  expect(readdirSync(join(root, 'live')).sort()).toEqual([LOG_FILE_NAME, 'writer.lease'])
  expect(await store.verify('live')).toMatchObject({ status: 'ok', lastSeq: count - 1 })
  console.log(
    `T5: ${chunks} of ${opens} opens raced a chunk of appends, ${inProgressSeen} saw a line in progress`,
  )
}
