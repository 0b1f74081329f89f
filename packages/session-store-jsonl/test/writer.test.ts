import { existsSync, linkSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import type { EventInput } from '@agent-ledger/session-events'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { SessionStoreError } from '@agent-ledger/session-store'
import type { SessionWriter } from '@agent-ledger/session-store'

import { testTime } from '../../../tooling/test-time.ts'
import { LOG_FILE_NAME } from '../src/format.ts'
import type { JsonlStore } from '../src/index.ts'
import { spawnTsChild } from './support/children.ts'
import { createFaultFs } from './support/fault-fs.ts'
import { roundTripHugeToolOutput } from './support/huge-output.ts'
import { collect, coreTestStore, makeTempDir } from './support/sessions.ts'

let temp: { path: string; cleanup: () => void }
let store: JsonlStore

beforeEach(() => {
  temp = makeTempDir()
  store = coreTestStore(temp.path).store
})

afterEach(() => {
  temp.cleanup()
})

function note(content: string): EventInput<'user/message'> {
  return { type: 'user/message', data: { message: { role: 'user', content } } }
}

function thrown(run: () => unknown): SessionStoreError {
  try {
    run()
  } catch (error) {
    if (SessionStoreError.is(error)) return error
    throw error
  }
  throw new Error('expected a SessionStoreError, found success')
}

async function rejected(promise: Promise<unknown>): Promise<SessionStoreError> {
  try {
    await promise
  } catch (error) {
    if (SessionStoreError.is(error)) return error
    throw error
  }
  throw new Error('expected a SessionStoreError, found success')
}

function logPath(id: string): string {
  return join(temp.path, id, LOG_FILE_NAME)
}

describe('session writer', () => {
  it('flushes a batch with exactly one write and one fdatasync, and acknowledges only then', async () => {
    const fs = createFaultFs()
    ;({ store } = coreTestStore(temp.path, { fs }))
    const writer = await store.create({ id: 'batch' })
    const isLog = (call: { path: string }): boolean =>
      call.path.endsWith(LOG_FILE_NAME) || call.path.includes('.tmp-create-')
    const count = (op: string): number => fs.calls.filter((call) => call.op === op && isLog(call)).length
    for (let index = 0; index < 50; index += 1) writer.append(note(`n${index}`))
    expect(writer.durableSeq).toBe(-1)
    expect(writer.bufferedEvents).toBe(50)
    const [writes, syncs] = [count('write'), count('datasync')]
    const size = statSync(logPath('batch')).size
    expect(await writer.flush()).toEqual({ durableSeq: 49 })
    expect(count('write') - writes).toBe(1)
    expect(count('datasync') - syncs).toBe(1)
    expect(writer.durableSeq).toBe(49)
    expect(writer.bufferedEvents).toBe(0)
    expect(statSync(logPath('batch')).size).toBeGreaterThan(size)
    expect(await writer.flush()).toEqual({ durableSeq: 49 })
    expect(count('write') - writes).toBe(1)
    await writer.close()
  })

  it('append is synchronous: a refused event throws a typed error and changes nothing', async () => {
    const writer = await store.create({ id: 'sync' })
    writer.append(note('first'))
    const cases: [() => unknown, string][] = [
      [
        () => writer.append({ type: 'user/message', data: { message: { role: 'robot' } } } as never),
        'INVALID_EVENT',
      ],
      [() => writer.append({ type: 'future/thing', data: {} } as never), 'UNKNOWN_EVENT_TYPE'],
      [
        () =>
          writer.append({
            type: 'user/message',
            data: { message: { role: 'user', content: 'x' } },
            surfaceOp: { op: 'replace', startSeq: 40, endSeq: 41 },
            sourceEventSeqs: [40, 41],
          } as never),
        'INVALID_EVENT',
      ],
    ]
    for (const [append, code] of cases) {
      const error = thrown(append)
      expect(error.code).toBe(code)
      expect(error.seq).toBe(1)
      expect(writer.projection.nextSeq).toBe(1)
      expect(writer.bufferedEvents).toBe(1)
    }
    expect(writer.append(note('second')).seq).toBe(1)
    await writer.close()
    expect((await collect(store.readEvents('sync'))).map((event) => event.seq)).toEqual([0, 1])
  })

  it('returns the logged event, frozen, exactly as it is stored', async () => {
    const writer = await store.create({ id: 'returned' })
    const event = writer.append({ ...note('hello'), ignorable: undefined } as never)
    expect(event).toEqual({
      seq: 0,
      time: expect.stringMatching(/^2026-01-01T00:00:0\d\.000Z$/),
      type: 'user/message',
      data: { message: { role: 'user', content: 'hello' } },
    })
    expect(Object.keys(event)).toEqual(['seq', 'time', 'type', 'data'])
    expect(Object.isFrozen(event)).toBe(true)
    await writer.close()
    expect(await collect(store.readEvents('returned'))).toEqual([event])
  })

  it('W9: an event over maxEventBytes is refused synchronously and nothing is buffered or written', async () => {
    ;({ store } = coreTestStore(temp.path, { limits: { maxEventBytes: 10_000 } }))
    const writer = await store.create({ id: 'limit' })
    await writer.flush()
    const size = statSync(logPath('limit')).size
    const error = thrown(() => writer.append(note('x'.repeat(20_000))))
    expect(error.code).toBe('EVENT_TOO_LARGE')
    expect(error.details).toMatchObject({ limit: 10_000 })
    expect(error.details['bytes']).toBeGreaterThan(20_000)
    expect(writer.bufferedEvents).toBe(0)
    expect(writer.projection.nextSeq).toBe(0)
    await writer.close()
    expect(statSync(logPath('limit')).size).toBe(size)
  })

  it(
    'W9: a 24 MB tool output round-trips byte-identical (sha256), read back in chunks (100 MB: the crash tier)',
    () => roundTripHugeToolOutput(temp.path, 24 * 1024 * 1024),
    testTime(120_000),
  )

  it('W10: past maxBufferedBytes append throws BUFFER_FULL synchronously; flush makes room; close() flushes the rest', async () => {
    const fs = createFaultFs()
    fs.writeDelayMs = 50
    ;({ store } = coreTestStore(temp.path, { fs, limits: { maxBufferedBytes: 256 * 1024 } }))
    const writer = await store.create({ id: 'pressure' })
    // 10^5 in the crash suite (store-core.crash.test.ts); 2 x 10^4 keeps the default run short.
    const total = 20_000
    let accepted = 0
    let refusals = 0
    for (let index = 0; index < total; index += 1) {
      try {
        writer.append(note(`small event ${index}`))
        accepted += 1
      } catch (error) {
        if (!SessionStoreError.is(error) || error.code !== 'BUFFER_FULL') throw error
        refusals += 1
        expect(writer.bufferedEvents).toBe(accepted - (writer.durableSeq + 1))
        await writer.flush()
        writer.append(note(`small event ${index}`))
        accepted += 1
      }
    }
    expect(refusals).toBeGreaterThan(1)
    expect(accepted).toBe(total)
    expect(writer.durableSeq).toBeLessThan(total - 1)
    await writer.close()
    const read = await store.openReader('pressure')
    expect(read.lastSeq).toBe(total - 1)
    expect(existsSync(join(temp.path, 'pressure', 'writer.lock'))).toBe(false)
  })

  it('W10: a process that exits without close() loses only the events no flush acknowledged', async () => {
    const child = spawnTsChild('core-writer-child.ts', [temp.path, 'exiting', 'exit-without-close'])
    const exit = await child.exited
    expect(exit.code, child.stderr()).toBe(0)
    expect(child.lines).toContain('ACK 4')
    const read = await store.openReader('exiting')
    expect(read.lastSeq).toBe(4)
    // The dead holder's lock is stale: a new writer takes over.
    const writer = await store.openWriter('exiting')
    expect(writer.durableSeq).toBe(4)
    await writer.close()
  })

  it('W11: a clock going backwards, far back or far ahead is kept verbatim; order is seq only; NaN is refused', async () => {
    // The core reads the clock for the header and the lease too: it steps only once appends begin.
    const times = [
      '2026-01-01T10:00:02.000Z',
      '2026-01-01T09:00:03.000Z', // one hour back
      '2016-01-01T10:00:04.000Z', // ten years back
      '9999-12-31T23:59:59.999Z', // far future
      '2026-01-01T10:00:05.000Z',
    ]
    let tick: number | null = null
    let broken: 'nan' | 'throw' | null = null
    const clock = (): string => {
      if (broken === 'nan') return 'NaN'
      if (broken === 'throw') return new Date(Number.NaN).toISOString()
      if (tick === null) return '2026-01-01T10:00:00.000Z'
      return times[Math.min(tick++, times.length - 1)]!
    }
    ;({ store } = coreTestStore(temp.path, { clock }))
    const writer = await store.create({ id: 'clock' })
    tick = 0
    const appended = [0, 1, 2, 3, 4].map((index) => writer.append(note(`t${index}`)))
    expect(appended.map((event) => event.time)).toEqual(times)
    // Back one hour, back ten years, and back from the far future: three steps back.
    expect(writer.projection.stats.nonMonotonicTime).toBe(3)
    broken = 'nan'
    const nan = thrown(() => writer.append(note('nan')))
    expect(nan.code).toBe('INVALID_EVENT')
    expect(nan.details).toMatchObject({ field: 'time' })
    broken = 'throw'
    expect(thrown(() => writer.append(note('throw'))).details).toMatchObject({ field: 'time' })
    // The core reads the clock at flush too (lease renewal, checkpoint schedule): a working one to close.
    broken = null
    await writer.close()
    const events = await collect(store.readEvents('clock'))
    expect(events.map((event) => [event.seq, event.time])).toEqual(
      appended.map((event) => [event.seq, event.time]),
    )
  })

  it('W5: a log unlinked under an open writer gives FILE_REPLACED on the next flush, no ack, and poisons the writer', async () => {
    const writer = await store.create({ id: 'unlinked' })
    writer.append(note('acked'))
    await writer.flush()
    const ino = statSync(logPath('unlinked')).ino
    unlinkSync(logPath('unlinked'))
    writer.append(note('never acked'))
    const error = await rejected(writer.flush())
    expect(error.code).toBe('FILE_REPLACED')
    expect(error.details).toMatchObject({ expectedIno: ino, foundIno: null })
    expect(writer.durableSeq).toBe(0)
    expect(thrown(() => writer.append(note('later'))).code).toBe('WRITER_FAILED')
    expect((await rejected(writer.flush())).code).toBe('WRITER_FAILED')
    await writer.close()
  })

  it('W5: a file renamed over the log, or a second hard link, gives FILE_REPLACED', async () => {
    const replaced = await store.create({ id: 'renamed' })
    const ino = statSync(logPath('renamed')).ino
    const other = join(temp.path, 'renamed', 'other')
    writeFileSync(other, 'someone else')
    renameSync(other, logPath('renamed'))
    replaced.append(note('x'))
    const error = await rejected(replaced.flush())
    expect(error.code).toBe('FILE_REPLACED')
    expect(error.details).toMatchObject({ expectedIno: ino, foundIno: statSync(logPath('renamed')).ino })
    await replaced.close()
    expect(readFileSync(logPath('renamed'), 'utf8')).toBe('someone else')

    const linked = await store.create({ id: 'linked' })
    linkSync(logPath('linked'), join(temp.path, 'second-name'))
    linked.append(note('x'))
    const second = await rejected(linked.flush())
    expect(second.code).toBe('FILE_REPLACED')
    expect(second.details).toMatchObject({ nlink: 2 })
    await linked.close()
  })

  it('close() flushes, releases the lock, is idempotent, and later appends throw WRITER_CLOSED', async () => {
    const writer: SessionWriter = await store.create({ id: 'closing' })
    writer.append(note('pending'))
    expect(existsSync(join(temp.path, 'closing', 'writer.lock'))).toBe(true)
    await Promise.all([writer.close(), writer.close()])
    expect(existsSync(join(temp.path, 'closing', 'writer.lock'))).toBe(false)
    expect(writer.durableSeq).toBe(0)
    expect(thrown(() => writer.append(note('late'))).code).toBe('WRITER_CLOSED')
    const again = await store.openWriter('closing')
    expect(again.durableSeq).toBe(0)
    await again.close()
  })

  it('W3 (same process): a second writer (another owner) on an open session gets SESSION_LOCKED naming the holder', async () => {
    // The core takes over a lease held by the same owner (a restarted process): the second
    // writer here is another owner, as a second writer in the old store was.
    const first = await store.create({ id: 'twice' })
    const error = await rejected(store.openWriter('twice', { owner: 'other-writer' }))
    expect(error.code).toBe('SESSION_LOCKED')
    expect(error.details).toMatchObject({ holder: 'test-writer', lock: { holderPid: process.pid } })
    first.append(note('the first writer is unaffected'))
    await first.close()
  })
})
