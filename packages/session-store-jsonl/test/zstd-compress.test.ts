// The JSONL backend's compress capability, through the one store API
// (store.backend.capabilities.compress): a cold plain session to session.v4.jsonl.zstd (publish by link, then the
// plain log removed), the interrupted conversion (both names), both encodings that disagree,
// and the reseal of a .zstd log whose tail is small flush frames (verified, then renamed).
import { copyFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { SessionStoreError } from '@agent-ledger/session-store'
import type { BackendProgress, SessionStoreWarning } from '@agent-ledger/session-store'

import { testTime } from '../../../tooling/test-time.ts'
import { SEALED_FRAME_MIN_BYTES } from '../src/format.ts'
import type { CompressResult } from '../src/compress-types.ts'
import type { JsonlCompressOptions, JsonlStore } from '../src/index.ts'
import { spawnBundledChild } from './support/children.ts'
import {
  closedSessionInputs,
  collect,
  coreTestStore,
  fileIdentity,
  makeTempDir,
  namesIn,
  turnInputs,
} from './support/sessions.ts'
import { batchesOf, frameStarts, writeBatches, ZSTD_NAME } from './support/zstd-sessions.ts'
import { cliCheck } from './zstd-helpers.ts'

const PLAIN_NAME = 'session.v4.jsonl'

let temp: { path: string; cleanup: () => void }
/** Creates plain sessions; reads, writes and compresses either encoding. */
let store: JsonlStore
/** The same root, creating `.zstd` sessions (the encoding is the store's). */
let zstdStore: JsonlStore
let warnings: SessionStoreWarning[]

beforeEach(() => {
  temp = makeTempDir('al-zstd-compress-')
  ;({ store, warnings } = coreTestStore(temp.path))
  ;({ store: zstdStore } = coreTestStore(temp.path, { encoding: 'zstd' }))
})

afterEach(async () => {
  await Promise.all([store.close(), zstdStore.close()])
  temp.cleanup()
})

async function caught(promise: Promise<unknown>): Promise<SessionStoreError> {
  try {
    await promise
  } catch (error) {
    if (SessionStoreError.is(error)) return error
    throw error
  }
  throw new Error('expected a SessionStoreError, found success')
}

/** Compresses through the backend's capability; its `details` are the compress result. */
async function compress(id: string, options?: JsonlCompressOptions): Promise<CompressResult> {
  const { changed, details } = await store.backend.capabilities.compress.compress(id, options)
  const result = details as unknown as CompressResult
  expect(changed).toBe(result.outcome !== 'up-to-date')
  return result
}

/** A session directory's names without the writer's lock and lease files. */
function logNames(directory: string): string[] {
  return namesIn(directory).filter((name) => name !== 'writer.lock' && name !== 'writer.lease')
}

const INPUTS = closedSessionInputs(40)
const note = { type: 'user/message', data: { message: { role: 'user', content: 'after compress' } } } as const

/** A plain session of 40 events; returns its bytes and events. */
async function plainSession(id: string): Promise<{ bytes: Buffer; events: unknown[] }> {
  const { bytes } = await writeBatches(store, { id, encoding: 'plain', batches: [INPUTS] })
  return { bytes, events: await collect(store.readEvents(id)) }
}

describe('compress', () => {
  it('converts a plain session: the plain log is gone, the .zstd log reads back the same events and zstd -d gives the same bytes', async () => {
    const { bytes, events } = await plainSession('cold')
    const progress: BackendProgress[] = []
    const result = await compress('cold', {
      frameBytes: 2048,
      onProgress: (report) => progress.push(report),
    })
    expect(result).toMatchObject({
      id: 'cold',
      outcome: 'compressed',
      file: `cold/${ZSTD_NAME}`,
      removedFile: `cold/${PLAIN_NAME}`,
      plainBytes: bytes.length,
      events: 40,
      lastSeq: 39,
      quarantineFile: null,
    })
    expect(logNames(join(temp.path, 'cold'))).toEqual([ZSTD_NAME])
    const compressed = readFileSync(join(temp.path, 'cold', ZSTD_NAME))
    expect(result.compressedBytes).toBe(compressed.length)
    expect(result.ratio).toBeGreaterThan(2)
    // The header frame alone, then frames of about 2 KiB of whole lines.
    const starts = frameStarts(compressed)
    expect(starts.length).toBe(result.frames)
    expect(starts.length).toBeGreaterThan(3)
    const check = cliCheck(compressed)
    expect(check.testOk).toBe(true)
    expect(check.plain?.equals(bytes)).toBe(true)
    expect(await collect(store.readEvents('cold'))).toEqual(events)
    expect([...new Set(progress.map((report) => report.phase))]).toEqual([
      'scan',
      'compress',
      'verify',
      'publish',
    ])
    // Appends continue on the .zstd log.
    const writer = await store.openWriter('cold')
    expect((await store.backend.capabilities.files.readHeader('cold')).file).toBe(`cold/${ZSTD_NAME}`)
    writer.append(note)
    await writer.close()
    expect((await store.openReader('cold')).lastSeq).toBe(40)
  })

  it('compresses with the default 4 MiB frames: one header frame and one frame for a small session', async () => {
    await plainSession('small')
    const result = await compress('small')
    expect(result.frames).toBe(2)
  })

  it('refuses a session held by a writer, a damaged session and a session with older generations; nothing changes', async () => {
    await plainSession('held')
    const writer = await store.openWriter('held')
    const heldPath = join(temp.path, 'held', PLAIN_NAME)
    const before = fileIdentity(heldPath)
    expect((await caught(compress('held'))).code).toBe('SESSION_LOCKED')
    await writer.close()
    expect(existsSync(join(temp.path, 'held', ZSTD_NAME))).toBe(false)
    expect(fileIdentity(heldPath).sha256).toBe(before.sha256)

    const { bytes } = await plainSession('damaged')
    const lines = bytes.toString('latin1').split('\n')
    lines[5] = lines[5]!.replace('"seq":4', '"seq":9')
    const damagedPath = join(temp.path, 'damaged', PLAIN_NAME)
    writeFileSync(damagedPath, lines.join('\n'), 'latin1')
    const damagedBefore = fileIdentity(damagedPath)
    expect((await caught(compress('damaged'))).code).toBe('CORRUPT_LINE')
    expect(fileIdentity(damagedPath)).toEqual(damagedBefore)
    expect(logNames(join(temp.path, 'damaged'))).toEqual([PLAIN_NAME])

    await plainSession('migrated')
    writeFileSync(join(temp.path, 'migrated', 'session.jsonl'), '{"seq":0}\n', { mode: 0o600 })
    const refused = await caught(compress('migrated'))
    expect(refused.code).toBe('MIXED_ENCODINGS')
    expect(refused.details['files']).toEqual(['migrated/session.jsonl', `migrated/${ZSTD_NAME}`])
    expect(logNames(join(temp.path, 'migrated'))).toEqual(['session.jsonl', PLAIN_NAME])
  })

  it('quarantines a torn tail first, as a write open does, and compresses the good lines', async () => {
    const { bytes } = await plainSession('torn')
    const tail = Buffer.from('{"seq":40,"time":"2026-')
    writeFileSync(join(temp.path, 'torn', PLAIN_NAME), Buffer.concat([bytes, tail]))
    const result = await compress('torn')
    expect(result.quarantineFile).toBe(`${PLAIN_NAME}.torn-${bytes.length}`)
    expect(readFileSync(join(temp.path, 'torn', result.quarantineFile!)).equals(tail)).toBe(true)
    expect(cliCheck(readFileSync(join(temp.path, 'torn', ZSTD_NAME))).plain?.equals(bytes)).toBe(true)
  })

  it('a compress interrupted between link and unlink leaves both names: a read open reads either and changes nothing, a write open finishes the conversion', async () => {
    const { bytes, events } = await plainSession('both')
    await expect(
      compress('both', {
        hooks: {
          at(point) {
            if (point === 'temp-unlinked') throw new Error('simulated crash after the link')
          },
        },
      }),
    ).rejects.toThrow('simulated crash')
    const directory = join(temp.path, 'both')
    expect(logNames(directory)).toEqual([PLAIN_NAME, ZSTD_NAME])
    const plainBefore = fileIdentity(join(directory, PLAIN_NAME))
    const zstdBefore = fileIdentity(join(directory, ZSTD_NAME))
    const read = await store.openReader('both')
    expect(read.lastSeq).toBe(39)
    expect(await collect(store.readEvents('both'))).toEqual(events)
    expect(await store.verify('both')).toMatchObject({ status: 'ok', events: 40 })
    expect((await store.list()).sessions.map((session) => session.id)).toEqual(['both'])
    expect(fileIdentity(join(directory, PLAIN_NAME))).toEqual(plainBefore)
    expect(fileIdentity(join(directory, ZSTD_NAME))).toEqual(zstdBefore)
    const writer = await store.openWriter('both')
    expect(namesIn(directory)).toEqual([ZSTD_NAME, 'writer.lease', 'writer.lock'])
    expect((await store.backend.capabilities.files.readHeader('both')).file).toBe(`both/${ZSTD_NAME}`)
    writer.append(note)
    await writer.close()
    // The JSONL store API logged 'Finished an interrupted compress'; the core's warnings are
    // about checkpoints only, and the backend has no logger: nothing is reported.
    expect(warnings).toEqual([])
    const check = cliCheck(readFileSync(join(directory, ZSTD_NAME)))
    expect(check.plain!.subarray(0, bytes.length).equals(bytes)).toBe(true)
  })

  it('both encodings with different events are refused by every open and by compress, naming the two files; nothing is removed', async () => {
    const { bytes } = await plainSession('diverged')
    const directory = join(temp.path, 'diverged')
    await compress('diverged')
    // The plain file comes back with one more event (as an older, zstd-unaware writer would append).
    const other = makeTempDir('al-zstd-other-')
    try {
      const plainStore = coreTestStore(other.path).store
      await writeBatches(plainStore, { id: 'diverged', encoding: 'plain', batches: [[...INPUTS, note]] })
      await plainStore.close()
      copyFileSync(join(other.path, 'diverged', PLAIN_NAME), join(directory, PLAIN_NAME))
    } finally {
      other.cleanup()
    }
    const identities = [fileIdentity(join(directory, PLAIN_NAME)), fileIdentity(join(directory, ZSTD_NAME))]
    for (const attempt of [
      () => store.openReader('diverged'),
      () => store.openWriter('diverged'),
      () => compress('diverged'),
      () => collect(store.readEvents('diverged')),
    ]) {
      const error = await caught(attempt())
      expect(error.code).toBe('MIXED_ENCODINGS')
      expect(error.details).toMatchObject({
        files: [`diverged/${PLAIN_NAME}`, `diverged/${ZSTD_NAME}`],
        reason: 'different-content',
        firstDifferenceOffset: bytes.length,
      })
      expect(error.message).toContain(`diverged/${PLAIN_NAME}`)
      expect(error.message).toContain(`diverged/${ZSTD_NAME}`)
    }
    expect([fileIdentity(join(directory, PLAIN_NAME)), fileIdentity(join(directory, ZSTD_NAME))]).toEqual(
      identities,
    )
    expect((await store.list()).problems.map((problem) => problem.error.code)).toEqual(['MIXED_ENCODINGS'])
  })

  it(
    'SIGKILL at every step of the protocol: the session always reads back the same events, and the next write open leaves exactly the .zstd log',
    async () => {
      const points = [
        'temp-created',
        'temp-written',
        'temp-synced',
        'verified',
        'linked',
        'dir-synced',
        'temp-unlinked',
        'plain-unlinked',
      ]
      for (const point of points) {
        const id = `kill-${point}`
        const { bytes, events } = await plainSession(id)
        const child = await spawnBundledChild('zstd-compress-child.ts', [temp.path, id, point, '1024'])
        const exit = await child.exited
        expect({ point, signal: exit.signal, lines: child.lines }).toEqual({
          point,
          signal: 'SIGKILL',
          lines: [`AT ${point}`],
        })
        const directory = join(temp.path, id)
        const afterLink = points.indexOf(point) >= points.indexOf('linked')
        expect(existsSync(join(directory, ZSTD_NAME))).toBe(afterLink)
        expect(existsSync(join(directory, PLAIN_NAME))).toBe(point !== 'plain-unlinked')
        if (existsSync(join(directory, PLAIN_NAME))) {
          expect(readFileSync(join(directory, PLAIN_NAME)).equals(bytes)).toBe(true)
        }
        expect(await collect(store.readEvents(id))).toEqual(events)
        const writer = await store.openWriter(id)
        await writer.close()
        expect(logNames(directory)).toEqual([afterLink ? ZSTD_NAME : PLAIN_NAME])
        expect(await collect(store.readEvents(id))).toEqual(events)
        // Running it again succeeds: a compress, or a reseal of the 1 KiB frames the child wrote.
        const again = await compress(id)
        expect(again.outcome).toBe(afterLink ? 'resealed' : 'compressed')
        expect(logNames(directory)).toEqual([ZSTD_NAME])
      }
    },
    testTime(120_000),
  )
})

describe('reseal', () => {
  it('re-encodes a tail of small flush frames into large frames, keeping the events and the plain bytes; a second run is up to date', async () => {
    const batches = batchesOf(
      closedSessionInputs(60),
      Array.from({ length: 30 }, () => 2),
    )
    const { path, bytes } = await writeBatches(zstdStore, { id: 'live', encoding: 'zstd', batches })
    const before = cliCheck(bytes).plain!
    const events = await collect(store.readEvents('live'))
    expect(frameStarts(bytes)).toHaveLength(31)
    const result = await compress('live')
    expect(result).toMatchObject({ outcome: 'resealed', removedFile: null, events: 60, frames: 2 })
    expect(result.compressedBytes).toBeLessThan(bytes.length / 2)
    const after = readFileSync(path)
    expect(cliCheck(after).plain?.equals(before)).toBe(true)
    expect(await collect(store.readEvents('live'))).toEqual(events)
    expect((await compress('live')).outcome).toBe('up-to-date')
    expect(logNames(join(temp.path, 'live'))).toEqual([ZSTD_NAME])
  })

  it(
    'copies the sealed frames byte for byte and re-encodes only the small-frame tail',
    async () => {
      // Big tool outputs so that the session holds two sealed frames (>= 2 MiB of content each).
      const big = Array.from({ length: 48 }, (_, turn) =>
        turnInputs(turn + 1, { toolOutput: `${'x'.repeat(60)}${turn}\n`.repeat(1800) }),
      ).flat()
      await writeBatches(store, { id: 'big', encoding: 'plain', batches: [big] })
      await compress('big', { frameBytes: SEALED_FRAME_MIN_BYTES + 1024 })
      const sealed = readFileSync(join(temp.path, 'big', ZSTD_NAME))
      const sealedStarts = frameStarts(sealed)
      const writer = await store.openWriter('big')
      for (let index = 0; index < 6; index += 1) {
        writer.append(note)
        await writer.flush()
      }
      await writer.close()
      const grown = readFileSync(join(temp.path, 'big', ZSTD_NAME))
      const result = await compress('big', { frameBytes: SEALED_FRAME_MIN_BYTES + 1024 })
      expect(result.outcome).toBe('resealed')
      const resealed = readFileSync(join(temp.path, 'big', ZSTD_NAME))
      // Every frame but the last of the first compress is >= 2 MiB of content: kept byte for byte.
      const keep = sealedStarts[sealedStarts.length - 1]!
      expect(resealed.subarray(0, keep).equals(sealed.subarray(0, keep))).toBe(true)
      expect(cliCheck(resealed).plain?.equals(cliCheck(grown).plain!)).toBe(true)
      expect(frameStarts(resealed).length).toBeLessThan(frameStarts(grown).length)
    },
    testTime(60_000),
  )

  it(
    'a reseal interrupted before its rename leaves the log untouched and no temp file; after the rename the new log reads the same',
    async () => {
      const batches = batchesOf(
        closedSessionInputs(40),
        Array.from({ length: 20 }, () => 2),
      )
      const { path, bytes } = await writeBatches(zstdStore, { id: 'crash', encoding: 'zstd', batches })
      const events = await collect(store.readEvents('crash'))
      for (const point of ['temp-synced', 'verified']) {
        const child = await spawnBundledChild('zstd-compress-child.ts', [temp.path, 'crash', point])
        expect((await child.exited).signal).toBe('SIGKILL')
        expect(readFileSync(path).equals(bytes)).toBe(true)
        expect(readdirSync(join(temp.path, 'crash')).some((name) => name.startsWith('.tmp-reseal-'))).toBe(
          true,
        )
        expect(await collect(store.readEvents('crash'))).toEqual(events)
        // The next lock holder removes the leftover temp file.
        await (await store.openWriter('crash')).close()
        expect(logNames(join(temp.path, 'crash'))).toEqual([ZSTD_NAME])
      }
      const child = await spawnBundledChild('zstd-compress-child.ts', [temp.path, 'crash', 'renamed'])
      expect((await child.exited).signal).toBe('SIGKILL')
      const renamed = readFileSync(path)
      expect(renamed.length).toBeLessThan(bytes.length)
      expect(cliCheck(renamed).plain?.equals(cliCheck(bytes).plain!)).toBe(true)
      expect(await collect(store.readEvents('crash'))).toEqual(events)
    },
    testTime(60_000),
  )
})
