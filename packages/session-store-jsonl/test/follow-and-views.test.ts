import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { waitUntil } from '../../../tooling/test-time.ts'
import { SessionStoreError } from '@agent-ledger/session-store'

import { encodeEventLine, LOG_FILE_NAME } from '../src/format.ts'
import type { JsonlStore } from '../src/index.ts'
import { closedSessionInputs, coreTestStore, makeTempDir, writeCoreSession } from './support/sessions.ts'

const V0_FIXTURE = fileURLToPath(new URL('./fixtures/v0/normal-tool-calls.jsonl', import.meta.url))

let temp: { path: string; cleanup: () => void }

beforeEach(() => {
  temp = makeTempDir()
})

afterEach(() => {
  temp.cleanup()
})

/** A follower running in the background: the seqs so far, the error if it threw, and a stop. */
function startFollow(
  store: JsonlStore,
  id: string,
  fromSeq = 0,
): { seqs: number[]; error: () => unknown; stop: () => Promise<void>; done: Promise<void> } {
  const controller = new AbortController()
  const seqs: number[] = []
  let failure: unknown = null
  const done = (async () => {
    try {
      for await (const event of store.follow(id, { fromSeq, signal: controller.signal, pollMs: 10 })) {
        seqs.push(event.seq)
      }
    } catch (error) {
      failure = error
    }
  })()
  return {
    seqs,
    error: () => failure,
    stop: async () => {
      controller.abort()
      await done
    },
    done,
  }
}

async function until(what: string, predicate: () => boolean): Promise<void> {
  await waitUntil(what, predicate, { pollMs: 5 })
}

describe('store.follow', () => {
  for (const encoding of ['plain', 'zstd'] as const) {
    it(`T5: yields existing events from fromSeq, then appended ones, on a ${encoding} log; ends cleanly on abort`, async () => {
      const { store } = coreTestStore(temp.path, { encoding })
      await writeCoreSession(store, 'f1', closedSessionInputs(6))
      const follower = startFollow(store, 'f1', 3)
      await until('the existing events', () => follower.seqs.length === 3)
      expect(follower.seqs).toEqual([3, 4, 5])
      const writer = await store.openWriter('f1')
      writer.append({ type: 'turn/start', data: { turn: 9 } })
      await writer.flush()
      await until('the first append', () => follower.seqs.length === 4)
      writer.append({ type: 'turn/end', data: { turn: 9, reason: 'completed' } })
      await writer.close()
      await until('the second append', () => follower.seqs.length === 5)
      await follower.stop()
      expect(follower.error()).toBeNull()
      expect(follower.seqs).toEqual([3, 4, 5, 6, 7])
    })
  }

  it('T5: continues in the .zstd file from the next seq when the session is compressed under the follower', async () => {
    const { store } = coreTestStore(temp.path)
    await writeCoreSession(store, 'f1', closedSessionInputs(4))
    const follower = startFollow(store, 'f1')
    await until('the existing events', () => follower.seqs.length === 4)
    await store.backend.capabilities.compress.compress('f1')
    const writer = await store.openWriter('f1')
    writer.append({ type: 'turn/start', data: { turn: 9 } })
    await writer.close()
    await until('the append to the compressed log', () => {
      // A follower that stopped on an error never gets there: say which error, at once.
      if (follower.error() !== null) throw follower.error()
      return follower.seqs.length === 5
    })
    await follower.stop()
    expect(follower.error()).toBeNull()
    expect(follower.seqs).toEqual([0, 1, 2, 3, 4])
  })

  it('T5: an unterminated last line is in progress: nothing yielded until its newline lands', async () => {
    const { store } = coreTestStore(temp.path)
    await writeCoreSession(store, 'f1', closedSessionInputs(2))
    const path = join(temp.path, 'f1', LOG_FILE_NAME)
    const line = encodeEventLine({
      seq: 2,
      time: '2026-01-02T00:00:00.000Z',
      type: 'turn/start',
      data: { turn: 5 },
    })
    appendFileSync(path, line.subarray(0, 15))
    const follower = startFollow(store, 'f1')
    await until('the existing events', () => follower.seqs.length === 2)
    await sleep(100)
    expect(follower.seqs).toEqual([0, 1])
    appendFileSync(path, line.subarray(15))
    await until('the completed line', () => follower.seqs.length === 3)
    await follower.stop()
    expect(follower.error()).toBeNull()
  })

  it('I4: throws the typed damage after the events before it when a seq gap lands', async () => {
    const { store } = coreTestStore(temp.path)
    await writeCoreSession(store, 'f1', closedSessionInputs(2))
    const follower = startFollow(store, 'f1')
    await until('the existing events', () => follower.seqs.length === 2)
    appendFileSync(
      join(temp.path, 'f1', LOG_FILE_NAME),
      encodeEventLine({ seq: 7, time: '2026-01-02T00:00:00.000Z', type: 'turn/start', data: { turn: 5 } }),
    )
    await follower.done
    const error = follower.error()
    expect(SessionStoreError.is(error) && error.code).toBe('SEQ_GAP')
    expect(follower.seqs).toEqual([0, 1])
  })

  it('throws SESSION_NOT_FOUND when the log is removed while following', async () => {
    const { store } = coreTestStore(temp.path)
    await writeCoreSession(store, 'f1', closedSessionInputs(2))
    const follower = startFollow(store, 'f1')
    await until('the existing events', () => follower.seqs.length === 2)
    unlinkSync(join(temp.path, 'f1', LOG_FILE_NAME))
    await follower.done
    const error = follower.error()
    expect(SessionStoreError.is(error) && error.code).toBe('SESSION_NOT_FOUND')
  })

  it('follows a v0 session read through migration, with migrated seqs', async () => {
    const { store } = coreTestStore(temp.path)
    mkdirSync(join(temp.path, 'old'), { mode: 0o700 })
    cpSync(V0_FIXTURE, join(temp.path, 'old', 'session.jsonl'))
    const expected = (await store.openReader('old')).lastSeq
    const follower = startFollow(store, 'old', expected - 1)
    await until('the last two events', () => follower.seqs.length === 2)
    await follower.stop()
    expect(follower.seqs).toEqual([expected - 1, expected])
  })

  it('refuses a bad fromSeq or poll interval with INVALID_OPTION at the call', () => {
    // The core's poll option is pollMs, any positive integer (the JSONL store API's intervalMs
    // had a floor of 10 ms).
    const { store } = coreTestStore(temp.path)
    for (const [options, option] of [
      [{ fromSeq: -1 }, 'fromSeq'],
      [{ fromSeq: 1.5 }, 'fromSeq'],
      [{ pollMs: 0 }, 'pollMs'],
      [{ pollMs: 2.5 }, 'pollMs'],
    ] as const) {
      let error: unknown
      try {
        store.follow('f1', options)
      } catch (thrown) {
        error = thrown
      }
      expect(SessionStoreError.is(error, 'INVALID_OPTION') && error.details['option']).toBe(option)
    }
  })
})

describe('store.readHeader and store.sessionFiles', () => {
  it('name the log the store reads, whatever its encoding or generation', async () => {
    const { store } = coreTestStore(temp.path)
    await writeCoreSession(store, 'p1', closedSessionInputs(2))
    await writeCoreSession(store, 'z1', closedSessionInputs(2))
    await store.backend.capabilities.compress.compress('z1')
    mkdirSync(join(temp.path, 'old'), { mode: 0o700 })
    cpSync(V0_FIXTURE, join(temp.path, 'old', 'session.jsonl'))

    const plain = await store.backend.capabilities.files.readHeader('p1')
    expect(plain).toMatchObject({ id: 'p1', file: 'p1/session.v4.jsonl', version: 4, encoding: 'plain' })
    expect(plain.header?.id).toBe('p1')
    const zstd = await store.backend.capabilities.files.readHeader('z1')
    expect(zstd).toMatchObject({ id: 'z1', file: 'z1/session.v4.jsonl.zstd', version: 4, encoding: 'zstd' })
    expect(zstd.header?.id).toBe('z1')
    const old = await store.backend.capabilities.files.readHeader('old')
    expect(old).toMatchObject({ id: 'old', file: 'old/session.jsonl', version: 0, encoding: 'plain' })
    expect(old.header?.cwd).toBe('/home/dev/projects/todo-cli')

    const files = await store.backend.capabilities.files.sessionFiles('z1')
    expect(files.current).toBe('z1/session.v4.jsonl.zstd')
    expect(files.files.filter((entry) => entry.current)).toEqual([
      expect.objectContaining({ name: 'session.v4.jsonl.zstd', kind: 'log', version: 4, encoding: 'zstd' }),
    ])
    const oldFiles = await store.backend.capabilities.files.sessionFiles('old')
    expect(oldFiles).toMatchObject({ current: 'old/session.jsonl', version: 0 })
    expect(oldFiles.files).toEqual([
      expect.objectContaining({ name: 'session.jsonl', kind: 'log', current: true, version: 0 }),
    ])
  })

  it('classify quarantine, lock, temp, search index and other entries and read the lock record', async () => {
    const { store } = coreTestStore(temp.path)
    await writeCoreSession(store, 'p1', closedSessionInputs(2))
    appendFileSync(join(temp.path, 'p1', LOG_FILE_NAME), 'garbage')
    const writer = await store.openWriter('p1')
    writeFileSync(join(temp.path, 'p1', 'notes.txt'), 'x')
    writeFileSync(join(temp.path, 'p1', 'search.index'), 'x')
    const files = await store.backend.capabilities.files.sessionFiles('p1')
    await writer.close()
    const kinds = Object.fromEntries(files.files.map((entry) => [entry.name, entry.kind]))
    expect(kinds).toMatchObject({
      'session.v4.jsonl': 'log',
      'writer.lock': 'lock',
      'notes.txt': 'other',
      'search.index': 'search-index',
    })
    expect(Object.entries(kinds).filter(([, kind]) => kind === 'quarantine')).toHaveLength(1)
    expect(files.lock?.pid).toBe(process.pid)
  })

  it('report SESSION_NOT_FOUND for a session directory that holds no log', async () => {
    const { store } = coreTestStore(temp.path)
    mkdirSync(join(temp.path, 'empty'), { mode: 0o700 })
    writeFileSync(join(temp.path, 'empty', 'notes.txt'), 'x')
    writeFileSync(join(temp.path, 'empty', 'writer.lease'), '{}')
    const files = store.backend.capabilities.files
    await expect(files.sessionFiles('empty')).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' })
    await expect(files.readHeader('empty')).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' })
    await expect(files.sessionFiles('absent')).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' })
    await expect(files.readHeader('absent')).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' })
  })

  it('readHeader returns a null header for a log whose header line is torn', async () => {
    const { store } = coreTestStore(temp.path)
    mkdirSync(join(temp.path, 't1'), { mode: 0o700 })
    writeFileSync(join(temp.path, 't1', LOG_FILE_NAME), '{"format":"agent-le')
    const read = await store.backend.capabilities.files.readHeader('t1')
    expect(read.header).toBeNull()
    expect(read.file).toBe('t1/session.v4.jsonl')
  })
})

describe('store.fork of an older generation', () => {
  it('forks a v0 session read through migration (it was SESSION_NOT_FOUND) and leaves session.jsonl untouched', async () => {
    const { store } = coreTestStore(temp.path)
    mkdirSync(join(temp.path, 'old'), { mode: 0o700 })
    cpSync(V0_FIXTURE, join(temp.path, 'old', 'session.jsonl'))
    const before = readFileSync(join(temp.path, 'old', 'session.jsonl'))
    const parent: number[] = []
    for await (const event of store.readEvents('old', { toSeq: 10 })) parent.push(event.seq)
    const writer = await store.fork('old', { to: 'old-fork', atSeq: 10 })
    await writer.close()
    const read = await store.openReader('old-fork')
    expect(read.header).toMatchObject({
      parentSession: 'old',
      cwd: '/home/dev/projects/todo-cli',
      seeded: true,
    })
    expect(read.lastSeq).toBe(11)
    const forked: unknown[] = []
    for await (const event of store.readEvents('old-fork', { toSeq: 10 })) forked.push(event)
    const original: unknown[] = []
    for await (const event of store.readEvents('old', { toSeq: 10 })) original.push(event)
    expect(forked).toEqual(original)
    expect(readFileSync(join(temp.path, 'old', 'session.jsonl')).equals(before)).toBe(true)
    expect(parent).toHaveLength(11)
  })
})

describe('store.salvage of an older generation', () => {
  it('refuses to salvage a damaged v0 session read through migration, naming the damage; nothing published', async () => {
    const { store } = coreTestStore(temp.path)
    mkdirSync(join(temp.path, 'old'), { mode: 0o700 })
    const lines = readFileSync(V0_FIXTURE, 'utf8').split('\n')
    // Line 12 (v0 seq 11) becomes garbage with valid lines after it: damage in the middle.
    lines[11] = '{"seq":11,"time":'
    writeFileSync(join(temp.path, 'old', 'session.jsonl'), lines.join('\n'))
    await expect(
      (async () => {
        for await (const event of store.readEvents('old')) void event
      })(),
    ).rejects.toThrow(/line 12 of old\/session\.jsonl/)
    // Known limit: an older generation is read through the in-memory migration, which checks
    // the whole source before it yields anything (its header included), so a damaged v0 log
    // gives no header and no good prefix. The core's salvage needs the source's header: it is
    // refused with the damage and publishes nothing (the JSONL store API made an empty session
    // whose session/salvage event named the damage); the source stays untouched.
    const before = readFileSync(join(temp.path, 'old', 'session.jsonl'))
    const error = await store.salvage('old', { to: 'rescued' }).catch((thrown: unknown) => thrown)
    expect(SessionStoreError.is(error) && error.code).toBe('CORRUPT_LINE')
    expect(SessionStoreError.is(error) && error.location).toMatchObject({
      file: 'old/session.jsonl',
      line: 12,
    })
    expect(readFileSync(join(temp.path, 'old', 'session.jsonl')).equals(before)).toBe(true)
    expect(existsSync(join(temp.path, 'rescued'))).toBe(false)
  })
})
