// store.compress: a cold plain session to session.v4.jsonl.zstd (publish by link, then the
// plain log removed), the interrupted conversion (both names), both encodings that disagree,
// and the reseal of a .zstd log whose tail is small flush frames (verified, then renamed).
import { copyFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { JsonlStoreError } from '../src/index.ts'
import { SEALED_FRAME_MIN_BYTES } from '../src/format.ts'
import type { CompressProgress, SessionStore } from '../src/index.ts'
import { spawnBundledChild } from './support/children.ts'
import {
  closedSessionInputs,
  collect,
  fileIdentity,
  makeTempDir,
  namesIn,
  testStore,
  turnInputs,
} from './support/sessions.ts'
import { batchesOf, frameStarts, writeBatches, ZSTD_NAME } from './support/zstd-sessions.ts'
import { cliCheck } from './zstd-helpers.ts'

const PLAIN_NAME = 'session.v4.jsonl'

let temp: { path: string; cleanup: () => void }
let store: SessionStore
let warnings: { message: string; details?: Record<string, unknown> }[]

beforeEach(() => {
  temp = makeTempDir('al-zstd-compress-')
  ;({ store, warnings } = testStore(temp.path))
})

afterEach(() => {
  temp.cleanup()
})

async function caught(promise: Promise<unknown>): Promise<JsonlStoreError> {
  try {
    await promise
  } catch (error) {
    if (JsonlStoreError.is(error)) return error
    throw error
  }
  throw new Error('expected a JsonlStoreError, found success')
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
    const progress: CompressProgress[] = []
    const result = await store.compress('cold', {
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
    expect(namesIn(join(temp.path, 'cold'))).toEqual([ZSTD_NAME])
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
    expect(writer.file).toBe(`cold/${ZSTD_NAME}`)
    writer.append(note)
    await writer.close()
    expect((await store.openReader('cold')).lastSeq).toBe(40)
  })

  it('compresses with the default 4 MiB frames: one header frame and one frame for a small session', async () => {
    await plainSession('small')
    const result = await store.compress('small')
    expect(result.frames).toBe(2)
  })

  it('refuses a session held by a writer, a damaged session and a session with older generations; nothing changes', async () => {
    await plainSession('held')
    const writer = await store.openWriter('held')
    const heldPath = join(temp.path, 'held', PLAIN_NAME)
    const before = fileIdentity(heldPath)
    expect((await caught(store.compress('held'))).code).toBe('SESSION_LOCKED')
    await writer.close()
    expect(existsSync(join(temp.path, 'held', ZSTD_NAME))).toBe(false)
    expect(fileIdentity(heldPath).sha256).toBe(before.sha256)

    const { bytes } = await plainSession('damaged')
    const lines = bytes.toString('latin1').split('\n')
    lines[5] = lines[5]!.replace('"seq":4', '"seq":9')
    const damagedPath = join(temp.path, 'damaged', PLAIN_NAME)
    writeFileSync(damagedPath, lines.join('\n'), 'latin1')
    const damagedBefore = fileIdentity(damagedPath)
    expect((await caught(store.compress('damaged'))).code).toBe('CORRUPT_LINE')
    expect(fileIdentity(damagedPath)).toEqual(damagedBefore)
    expect(namesIn(join(temp.path, 'damaged'))).toEqual([PLAIN_NAME])

    await plainSession('migrated')
    writeFileSync(join(temp.path, 'migrated', 'session.jsonl'), '{"seq":0}\n', { mode: 0o600 })
    const refused = await caught(store.compress('migrated'))
    expect(refused.code).toBe('MIXED_ENCODINGS')
    expect(refused.details['files']).toEqual(['migrated/session.jsonl', `migrated/${ZSTD_NAME}`])
    expect(namesIn(join(temp.path, 'migrated'))).toEqual(['session.jsonl', PLAIN_NAME])
  })

  it('quarantines a torn tail first, as a write open does, and compresses the good lines', async () => {
    const { bytes } = await plainSession('torn')
    const tail = Buffer.from('{"seq":40,"time":"2026-')
    writeFileSync(join(temp.path, 'torn', PLAIN_NAME), Buffer.concat([bytes, tail]))
    const result = await store.compress('torn')
    expect(result.quarantineFile).toBe(`${PLAIN_NAME}.torn-${bytes.length}`)
    expect(readFileSync(join(temp.path, 'torn', result.quarantineFile!)).equals(tail)).toBe(true)
    expect(cliCheck(readFileSync(join(temp.path, 'torn', ZSTD_NAME))).plain?.equals(bytes)).toBe(true)
  })

  it('a compress interrupted between link and unlink leaves both names: a read open reads either and changes nothing, a write open finishes the conversion', async () => {
    const { bytes, events } = await plainSession('both')
    await expect(
      store.compress('both', {
        hooks: {
          at(point) {
            if (point === 'temp-unlinked') throw new Error('simulated crash after the link')
          },
        },
      }),
    ).rejects.toThrow('simulated crash')
    const directory = join(temp.path, 'both')
    expect(namesIn(directory)).toEqual([PLAIN_NAME, ZSTD_NAME])
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
    expect(namesIn(directory)).toEqual([ZSTD_NAME, 'writer.lock'])
    expect(writer.file).toBe(`both/${ZSTD_NAME}`)
    writer.append(note)
    await writer.close()
    expect(warnings.some((warning) => warning.message.includes('Finished an interrupted compress'))).toBe(
      true,
    )
    const check = cliCheck(readFileSync(join(directory, ZSTD_NAME)))
    expect(check.plain!.subarray(0, bytes.length).equals(bytes)).toBe(true)
  })

  it('both encodings with different events are refused by every open and by compress, naming the two files; nothing is removed', async () => {
    const { bytes } = await plainSession('diverged')
    const directory = join(temp.path, 'diverged')
    await store.compress('diverged')
    // The plain file comes back with one more event (as an older, zstd-unaware writer would append).
    const other = makeTempDir('al-zstd-other-')
    try {
      const plainStore = testStore(other.path).store
      await writeBatches(plainStore, { id: 'diverged', encoding: 'plain', batches: [[...INPUTS, note]] })
      copyFileSync(join(other.path, 'diverged', PLAIN_NAME), join(directory, PLAIN_NAME))
    } finally {
      other.cleanup()
    }
    const identities = [fileIdentity(join(directory, PLAIN_NAME)), fileIdentity(join(directory, ZSTD_NAME))]
    for (const attempt of [
      () => store.openReader('diverged'),
      () => store.openWriter('diverged'),
      () => store.compress('diverged'),
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
        const names = namesIn(directory).filter((name) => name !== 'writer.lock')
        expect(names).toEqual([afterLink ? ZSTD_NAME : PLAIN_NAME])
        expect(await collect(store.readEvents(id))).toEqual(events)
        // Running it again succeeds: a compress, or a reseal of the 1 KiB frames the child wrote.
        const again = await store.compress(id)
        expect(again.outcome).toBe(afterLink ? 'resealed' : 'compressed')
        expect(namesIn(directory).filter((name) => name !== 'writer.lock')).toEqual([ZSTD_NAME])
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
    const { path, bytes } = await writeBatches(store, { id: 'live', encoding: 'zstd', batches })
    const before = cliCheck(bytes).plain!
    const events = await collect(store.readEvents('live'))
    expect(frameStarts(bytes)).toHaveLength(31)
    const result = await store.compress('live')
    expect(result).toMatchObject({ outcome: 'resealed', removedFile: null, events: 60, frames: 2 })
    expect(result.compressedBytes).toBeLessThan(bytes.length / 2)
    const after = readFileSync(path)
    expect(cliCheck(after).plain?.equals(before)).toBe(true)
    expect(await collect(store.readEvents('live'))).toEqual(events)
    expect((await store.compress('live')).outcome).toBe('up-to-date')
    expect(namesIn(join(temp.path, 'live'))).toEqual([ZSTD_NAME])
  })

  it(
    'copies the sealed frames byte for byte and re-encodes only the small-frame tail',
    async () => {
      // Big tool outputs so that the session holds two sealed frames (>= 2 MiB of content each).
      const big = Array.from({ length: 48 }, (_, turn) =>
        turnInputs(turn + 1, { toolOutput: `${'x'.repeat(60)}${turn}\n`.repeat(1800) }),
      ).flat()
      await writeBatches(store, { id: 'big', encoding: 'plain', batches: [big] })
      await store.compress('big', { frameBytes: SEALED_FRAME_MIN_BYTES + 1024 })
      const sealed = readFileSync(join(temp.path, 'big', ZSTD_NAME))
      const sealedStarts = frameStarts(sealed)
      const writer = await store.openWriter('big')
      for (let index = 0; index < 6; index += 1) {
        writer.append(note)
        await writer.flush()
      }
      await writer.close()
      const grown = readFileSync(join(temp.path, 'big', ZSTD_NAME))
      const result = await store.compress('big', { frameBytes: SEALED_FRAME_MIN_BYTES + 1024 })
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
      const { path, bytes } = await writeBatches(store, { id: 'crash', encoding: 'zstd', batches })
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
        expect(namesIn(join(temp.path, 'crash'))).toEqual([ZSTD_NAME])
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
