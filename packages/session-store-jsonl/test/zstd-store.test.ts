// session.v4.jsonl.zstd through the one store API (the core over the JSONL backend): create,
// append, open, read, list, salvage, fork;
// interop with the stock `zstd` CLI as the oracle; the torn frame rule (Z1, Z2), corruption in
// the middle (Z3), line alignment (Z4), skippable frames (Z5) and bounded decompression (S4).
import { existsSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { SessionStoreError } from '@agent-ledger/session-store'
import type { SessionWriter } from '@agent-ledger/session-store'

import { testTime } from '../../../tooling/test-time.ts'
import { encodeEventLine, encodeJsonLine, scanFrames } from '../src/format.ts'
import type { JsonlStore } from '../src/index.ts'
import { tornTailBytes } from './support/crash-harness.ts'
import { seededRandom } from './support/fault-fs.ts'
import {
  closedSessionInputs,
  collect,
  coreTestStore,
  fileIdentity,
  forEachConcurrently,
  makeTempDir,
  namesIn,
  noSyncFsOps,
  placeSession,
  range,
  withFlippedByte,
  withHeaderId,
} from './support/sessions.ts'
import {
  batchesOf,
  frameStarts,
  placeZstdSession,
  skippableFrame,
  withRawHeaderFrame,
  writeBatches,
  ZSTD_NAME,
  zstdWithHeaderId,
} from './support/zstd-sessions.ts'
import { cliCheck, cliCompress, craftFrame, rawBlock } from './zstd-helpers.ts'

let temp: { path: string; cleanup: () => void }
/** Creates plain sessions; reads and writes either encoding. */
let store: JsonlStore
/** The same root, creating `.zstd` sessions (the encoding is the store's, not `create`'s). */
let zstdStore: JsonlStore

beforeEach(() => {
  temp = makeTempDir('al-zstd-store-')
  ;({ store } = coreTestStore(temp.path))
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

/** The log a read of session `id` opens, relative to the root (the backend's file view). */
async function logFile(on: JsonlStore, id: string): Promise<string> {
  return (await on.backend.capabilities.files.readHeader(id)).file
}

/** The quarantine file the write open made (the backend's acquire repair), relative to the session directory. */
function quarantineFile(writer: SessionWriter): string | null {
  const to = writer.recovery.backendRepairs.find((repair) => repair.kind === 'torn-tail')?.quarantinedTo
  return to === undefined ? null : to.slice(to.indexOf('/') + 1)
}

/** Frames and skippable frames of a session's `.zstd` log, as on disk. */
function framesOf(id: string): { frames: number; skippableFrames: number } {
  const scan = scanFrames(readFileSync(join(temp.path, id, ZSTD_NAME)))
  return { frames: scan.zstdFrameCount, skippableFrames: scan.skippableFrameCount }
}

const note = {
  type: 'user/message',
  data: { message: { role: 'user', content: 'after reopening' } },
} as const

/** 31 events: a system message and four closed turns (frames 1-4), then two user notes (frame 5). */
const INPUTS = closedSessionInputs(31)
const BATCHES = batchesOf(INPUTS, [8, 7, 7, 7, 2])

/** The fixture of Z1-Z5: a header frame plus one frame per flush (5 flushes). */
async function fiveFlushes(
  id = 'five-flushes-fixture-session',
): Promise<{ path: string; bytes: Buffer; starts: number[] }> {
  const written = await writeBatches(zstdStore, { id, encoding: 'zstd', batches: BATCHES })
  // A raw header frame (same content): placeZstdSession can then give copies their own id in place.
  const headerFrame = written.bytes.subarray(0, frameStarts(written.bytes)[1])
  const bytes = withRawHeaderFrame(written.bytes, cliCheck(headerFrame).plain!)
  return { path: written.path, bytes, starts: frameStarts(bytes) }
}

describe('zstd sessions through the store', () => {
  it('writes the header in its own frame and one frame per flush; zstd -t passes and zstd -d gives the plain log, byte for byte', async () => {
    const zstd = await writeBatches(zstdStore, {
      id: 'same-session-in-both-encodings',
      encoding: 'zstd',
      batches: BATCHES,
    })
    // The same inputs through a plain store with the same clock and id give the plain log.
    const other = makeTempDir('al-zstd-plain-')
    try {
      const plainStore = coreTestStore(other.path).store
      const plain = await writeBatches(plainStore, {
        id: 'same-session-in-both-encodings',
        encoding: 'plain',
        batches: BATCHES,
      })
      await plainStore.close()
      expect(frameStarts(zstd.bytes)).toHaveLength(1 + BATCHES.length)
      const check = cliCheck(zstd.bytes)
      expect(check.testOk).toBe(true)
      expect(check.plain?.equals(plain.bytes)).toBe(true)
      // The header frame alone decodes to the header line.
      const headerFrame = zstd.bytes.subarray(0, frameStarts(zstd.bytes)[1])
      expect(cliCheck(headerFrame).plain?.toString()).toBe(
        plain.bytes.subarray(0, plain.bytes.indexOf(0x0a) + 1).toString(),
      )
      // The plain reader accepts what zstd -d gives, with the same events.
      placeSession(temp.path, 'decoded', check.plain!)
      const fromPlain = await collect(store.readEvents('decoded'))
      const fromZstd = await collect(store.readEvents('same-session-in-both-encodings'))
      expect(fromZstd).toEqual(fromPlain)
      expect(fromZstd).toHaveLength(INPUTS.length)
    } finally {
      other.cleanup()
    }
  })

  it('the encoding store option makes zstd sessions; openWriter appends whole frames; reader, verify and list name the .zstd file', async () => {
    const writer = await zstdStore.create({ id: 'opt' })
    expect(await logFile(zstdStore, 'opt')).toBe(`opt/${ZSTD_NAME}`)
    for (const input of INPUTS.slice(0, 8)) writer.append(input)
    await writer.close()
    expect(namesIn(join(temp.path, 'opt'))).toEqual([ZSTD_NAME, 'writer.lease'])
    const again = await store.openWriter('opt')
    expect(await logFile(store, 'opt')).toBe(`opt/${ZSTD_NAME}`)
    again.append(note)
    await again.flush()
    again.append(note)
    await again.close()
    const bytes = readFileSync(join(temp.path, 'opt', ZSTD_NAME))
    expect(frameStarts(bytes)).toHaveLength(4)
    expect(cliCheck(bytes).testOk).toBe(true)
    const read = await store.openReader('opt')
    // The core's read result names no file and counts no frames: the backend's file view and
    // the file on disk do.
    expect(read).toMatchObject({ lastSeq: 9, tornTail: null, checkpoint: { used: false, reason: 'missing' } })
    expect(framesOf('opt')).toEqual({ frames: 4, skippableFrames: 0 })
    expect(await store.verify('opt')).toMatchObject({ status: 'ok', events: 10 })
    const { sessions } = await store.list()
    expect(sessions.map((session) => session.id)).toEqual(['opt'])
    expect(await logFile(store, 'opt')).toBe(`opt/${ZSTD_NAME}`)
    // The JSONL store API's checkpoint file is never written (the core's is core.checkpoint).
    expect(existsSync(join(temp.path, 'opt', 'projection.checkpoint.msgpack'))).toBe(false)
  })

  it('reads a plain v4 log compressed by the zstd CLI (one frame, and several frames) and appends frames after it', async () => {
    const plain = await writeBatches(store, { id: 'source', encoding: 'plain', batches: BATCHES })
    const lines = plain.bytes
      .toString('utf8')
      .split('\n')
      .slice(0, -1)
      .map((line) => Buffer.from(`${line}\n`))
    const expected = await collect(store.readEvents('source'))
    // The header names its directory: each copy gets its own id (at the same length).
    const oneFrame = cliCompress(withHeaderId(plain.bytes, 'cli1'), ['-3'], true)
    const several = Buffer.concat([
      cliCompress(withHeaderId(lines[0]!, 'cli3')),
      cliCompress(Buffer.concat(lines.slice(1, 12)), ['-19']),
      cliCompress(Buffer.concat(lines.slice(12)), ['-1'], true),
    ])
    for (const [id, bytes, frames] of [
      ['cli1', oneFrame, 1],
      ['cli3', several, 3],
    ] as const) {
      placeZstdSession(temp.path, id, bytes)
      await store.openReader(id)
      expect(framesOf(id).frames).toBe(frames)
      expect(await collect(store.readEvents(id))).toEqual(expected)
      expect(await store.verify(id)).toMatchObject({ status: 'ok', events: INPUTS.length })
      const writer = await store.openWriter(id)
      writer.append(note)
      await writer.close()
      const after = readFileSync(join(temp.path, id, ZSTD_NAME))
      const check = cliCheck(after)
      expect(check.testOk).toBe(true)
      expect(check.plain!.subarray(0, plain.bytes.length).equals(withHeaderId(plain.bytes, id))).toBe(true)
      expect(check.plain!.subarray(plain.bytes.length).toString()).toContain('after reopening')
    }
  })

  it('V1: a .zstd log whose header is version 5 is refused, touching nothing', async () => {
    const line = Buffer.from(
      // Checksummed: a header failing its checksum is damage, never an upgrade request (FORMAT.md 8).
      encodeJsonLine(
        JSON.stringify({
          format: 'agent-ledger.session',
          version: 5,
          id: 'new',
          createdAt: '2030-01-01T00:00:00.000Z',
        }),
      ),
    )
    const path = placeZstdSession(temp.path, 'new', cliCompress(line))
    const before = fileIdentity(path)
    expect((await caught(store.openReader('new'))).code).toBe('VERSION_TOO_NEW')
    expect((await caught(store.openWriter('new'))).code).toBe('VERSION_TOO_NEW')
    expect((await caught(store.backend.capabilities.compress.compress('new'))).code).toBe('VERSION_TOO_NEW')
    expect(fileIdentity(path)).toEqual(before)
    // The header is checked before the lock and the lease: a refused write open writes nothing.
    expect(namesIn(join(temp.path, 'new'))).toEqual([ZSTD_NAME])
  })

  it('salvage and fork read a .zstd source; the new sessions are plain by default', async () => {
    await writeBatches(zstdStore, { id: 'src', encoding: 'zstd', batches: BATCHES })
    const report = await store.salvage('src', { to: 'saved' })
    expect(report).toMatchObject({ copiedEvents: 31, reason: 'none' })
    expect(await logFile(store, 'saved')).toBe('saved/session.v4.jsonl')
    const saved = await collect(store.readEvents('saved'))
    expect(saved.slice(0, 31)).toEqual(await collect(store.readEvents('src')))
    const fork = await store.fork('src', { to: 'forked', atSeq: 7 })
    expect(await logFile(store, 'forked')).toBe('forked/session.v4.jsonl')
    await fork.close()
    expect((await store.openReader('forked')).header.parentSession).toBe('src')
    const create = await zstdStore.create({ id: 'taken' })
    await create.close()
    expect((await caught(store.create({ id: 'taken' }))).code).toBe('SESSION_EXISTS')
  })
})

describe('zstd torn frames and damage through the store', () => {
  it(
    'Z1: the last frame cut at every offset: read mode reports it and changes nothing; write mode quarantines it, truncates to frame 4, and appends after it',
    async () => {
      const { bytes, starts } = await fiveFlushes()
      const lastStart = starts[starts.length - 1]!
      const keptEvents = 29 // frames 1-4: the system message and four turns
      const fast = coreTestStore(temp.path, { fs: noSyncFsOps }).store
      let tested = 0
      await forEachConcurrently(range(lastStart, bytes.length), 8, async (cut) => {
        const useStore = cut % 16 === 0 ? store : fast
        const id = `cut${cut}`
        const path = placeZstdSession(temp.path, id, bytes.subarray(0, cut))
        const before = fileIdentity(path)
        const read = await useStore.openReader(id)
        expect(read.lastSeq).toBe(keptEvents - 1)
        expect(read.tornTail).toEqual(
          cut === lastStart
            ? null
            : expect.objectContaining({
                location: expect.objectContaining({ offset: lastStart }),
                bytes: cut - lastStart,
              }),
        )
        expect(fileIdentity(path)).toEqual(before)
        const writer = await useStore.openWriter(id)
        expect(writer.projection.nextSeq).toBe(keptEvents)
        expect(writer.recovery.repairs).toEqual([])
        expect(readFileSync(path).equals(zstdWithHeaderId(bytes.subarray(0, lastStart), id))).toBe(true)
        if (cut > lastStart) {
          const quarantined = readFileSync(join(temp.path, id, quarantineFile(writer)!))
          expect(quarantined.equals(bytes.subarray(lastStart, cut))).toBe(true)
          expect(quarantineFile(writer)).toBe(`${ZSTD_NAME}.torn-${lastStart}`)
          expect(tornTailBytes(writer)).toBe(cut - lastStart)
        }
        if (cut % 8 === 0) {
          expect(writer.append(note).seq).toBe(keptEvents)
          await writer.flush()
        }
        await writer.close()
        if (cut % 8 === 0) expect(cliCheck(readFileSync(path)).testOk).toBe(true)
        tested += 1
      })
      expect(tested).toBe(bytes.length - lastStart)
      await fast.close()
      // Every cut of the last frame (a count, not a time window): 2 s idle, 31 s at load 9-31 on
      // 2 cores. The timeout only stops a hang; the scale stretches it on a busy machine.
    },
    testTime(120_000),
  )

  // The JSONL store API read such a log as empty (headerMissing) and a write open wrote a new
  // header; the core never re-creates a header (a session's header comes from its create,
  // which the backend publishes whole), so the log is refused as damaged, typed, nothing lost.
  it('T4: an empty .zstd log and a torn header frame hold no event: CORRUPT_LINE naming the log; a read and a write open touch nothing', async () => {
    const { bytes, starts } = await fiveFlushes()
    for (const cut of [0, 3, starts[1]! - 1]) {
      const id = `head${cut}`
      const path = placeZstdSession(temp.path, id, bytes.subarray(0, cut))
      const before = fileIdentity(path)
      expect(await caught(store.openReader(id))).toMatchObject({
        code: 'CORRUPT_LINE',
        details: { reason: cut === 0 ? 'empty' : 'unterminated' },
        location: { file: `${id}/${ZSTD_NAME}`, line: 1, offset: 0 },
      })
      expect(fileIdentity(path)).toEqual(before)
      // The header is checked before the lease: the refusal quarantines nothing and writes nothing.
      expect(await caught(store.openWriter(id))).toMatchObject({ code: 'CORRUPT_LINE' })
      expect(fileIdentity(path)).toEqual(before)
      expect(namesIn(join(temp.path, id))).toEqual([ZSTD_NAME])
      expect(await store.verify(id)).toMatchObject({ status: 'damaged', damage: { code: 'CORRUPT_LINE' } })
    }
  })

  it('Z2: NULs, random bytes or half a frame after the last complete frame are a torn tail, quarantined byte for byte', async () => {
    const { bytes } = await fiveFlushes()
    const otherFrame = cliCompress(Buffer.from(`${'{"seq":99,"x":"another session"}\n'.repeat(40)}`))
    const random = seededRandom(11)
    const noise = Buffer.alloc(1000)
    for (let at = 0; at < noise.length; at += 1) noise[at] = Math.floor(random() * 256)
    noise[0] = 0x00 // never a frame magic
    const tails: [string, Buffer, 'tailGarbage' | 'unterminated'][] = [
      ['nuls', Buffer.alloc(4096), 'tailGarbage'],
      ['noise', noise, 'tailGarbage'],
      // A frame cut short starts like a frame: reported as a write cut short (see FORMAT.md).
      ['half', otherFrame.subarray(0, otherFrame.length >> 1), 'unterminated'],
    ]
    for (const [id, tail, reason] of tails) {
      const path = placeZstdSession(temp.path, id, Buffer.concat([bytes, tail]))
      const read = await store.openReader(id)
      expect(read.lastSeq).toBe(30)
      expect(read.tornTail).toMatchObject({ location: { offset: bytes.length }, bytes: tail.length, reason })
      const writer = await store.openWriter(id)
      expect(writer.projection.nextSeq).toBe(31)
      await writer.close()
      expect(readFileSync(path).equals(zstdWithHeaderId(bytes, id))).toBe(true)
      expect(readFileSync(join(temp.path, id, quarantineFile(writer)!)).equals(tail)).toBe(true)
    }
  })

  it('Z3: every byte of a middle frame flipped: CORRUPT_FRAME (or a line error) naming frame 2, or harmless; writes refused, nothing changed', async () => {
    const { bytes, starts } = await fiveFlushes()
    const expected = await collect(store.readEvents('five-flushes-fixture-session'))
    const [start, end] = [starts[2]!, starts[3]!]
    const verdicts = new Map<string, number>()
    await forEachConcurrently(range(start, end), 8, async (index) => {
      const id = `flip${index}`
      const path = placeZstdSession(temp.path, id, withFlippedByte(bytes, index, 0x10))
      const before = fileIdentity(path)
      let verdict = 'harmless'
      try {
        expect(await collect(store.readEvents(id))).toEqual(expected)
      } catch (error) {
        if (!SessionStoreError.is(error)) throw error
        verdict = error.code
        expect(error.details['frameIndex']).toBe(2)
        expect(error.lastGoodSeq).toBeLessThan(15)
        const read = await store.openReader(id, { allowDamaged: true })
        expect(read.error?.code).toBe(error.code)
        expect(read.tornTail).toBeNull()
        if (index % 4 === 0) expect((await caught(store.openWriter(id))).code).toBe(error.code)
      }
      expect(fileIdentity(path)).toEqual(before)
      verdicts.set(verdict, (verdicts.get(verdict) ?? 0) + 1)
    })
    expect(verdicts.get('CORRUPT_FRAME')).toBeGreaterThan((end - start) / 2)
    expect(verdicts.get('harmless') ?? 0).toBeLessThan(8)
  })

  it('Z4: a frame that does not end on a line boundary, or a line split across frames, is CORRUPT_FRAME frame-not-line-aligned', async () => {
    const { bytes, starts } = await fiveFlushes()
    const headerFrame = bytes.subarray(0, starts[1])
    const firstFrame = bytes.subarray(starts[1], starts[2])
    const line = encodeEventLine({
      seq: 8,
      time: '2026-01-01T00:00:00.000Z',
      type: 'user/message',
      data: { message: { role: 'user', content: 'split' } },
    })
    const cut = line.length >> 1
    const split = Buffer.concat([
      headerFrame,
      firstFrame,
      craftFrame({
        descriptor: 0x00,
        windowDescriptor: 0x50,
        blocks: [rawBlock(line.subarray(0, cut).toString('latin1'))],
      }),
      craftFrame({
        descriptor: 0x00,
        windowDescriptor: 0x50,
        blocks: [rawBlock(line.subarray(cut).toString('latin1'))],
      }),
    ])
    placeZstdSession(temp.path, 'split', split)
    const error = await caught(store.openReader('split'))
    expect(error).toMatchObject({ code: 'CORRUPT_FRAME', lastGoodSeq: 7 })
    expect(error.details).toMatchObject({
      frameIndex: 2,
      reason: 'frame-not-line-aligned',
      compressedOffset: starts[2],
    })
    // Even as the last frame: a crash never writes a decodable frame that ends mid-line.
    placeZstdSession(
      temp.path,
      'unaligned',
      split.subarray(
        0,
        split.length -
          craftFrame({
            descriptor: 0x00,
            windowDescriptor: 0x50,
            blocks: [rawBlock(line.subarray(cut).toString('latin1'))],
          }).length,
      ),
    )
    expect((await caught(store.openWriter('unaligned'))).details).toMatchObject({
      reason: 'frame-not-line-aligned',
    })
    expect(namesIn(join(temp.path, 'unaligned'))).toEqual([ZSTD_NAME, 'writer.lease'])
  })

  it('Z5: a skippable frame between frames 2 and 3 is ignored and counted; unknown magic is CORRUPT_FRAME mid-file and a torn tail at the end', async () => {
    const { bytes, starts } = await fiveFlushes()
    const expected = await collect(store.readEvents('five-flushes-fixture-session'))
    const withSkippable = Buffer.concat([
      bytes.subarray(0, starts[3]),
      skippableFrame(Buffer.from('metadata'), 7),
      bytes.subarray(starts[3]),
    ])
    placeZstdSession(temp.path, 'skip', withSkippable)
    expect(await collect(store.readEvents('skip'))).toEqual(expected)
    await store.openReader('skip')
    expect(framesOf('skip')).toEqual({ frames: 6, skippableFrames: 1 })
    const writer = await store.openWriter('skip')
    writer.append(note)
    await writer.close()
    const check = cliCheck(readFileSync(join(temp.path, 'skip', ZSTD_NAME)))
    expect(check.testOk).toBe(true)
    expect(check.plain!.toString()).toContain('after reopening')
    const magic = Buffer.from([0xde, 0xad, 0xbe, 0xef])
    placeZstdSession(
      temp.path,
      'magic',
      Buffer.concat([bytes.subarray(0, starts[3]), magic, bytes.subarray(starts[3])]),
    )
    const error = await caught(store.openReader('magic'))
    expect(error).toMatchObject({ code: 'CORRUPT_FRAME', location: { offset: starts[3] } })
    expect(error.details).toMatchObject({ reason: 'unknown-magic' })
    const tailPath = placeZstdSession(temp.path, 'tailmagic', Buffer.concat([bytes, magic]))
    expect((await store.openReader('tailmagic')).tornTail).toMatchObject({
      location: { offset: bytes.length },
      bytes: 4,
      reason: 'tailGarbage',
    })
    await (await store.openWriter('tailmagic')).close()
    expect(readFileSync(tailPath).equals(zstdWithHeaderId(bytes, 'tailmagic'))).toBe(true)
  })

  it('S4: a decompression bomb, a frame claiming 2^60 bytes and a 2 GiB window are refused, nothing written', async () => {
    const { bytes, starts } = await fiveFlushes()
    const headerFrame = bytes.subarray(0, starts[1])
    const MiB = 1024 * 1024
    const limited = coreTestStore(temp.path, { jsonl: { limits: { maxFrameOutputBytes: 8 * MiB } } }).store
    const bomb = cliCompress(Buffer.alloc(64 * MiB), ['-3'])
    expect(bomb.length).toBeLessThan(64 * 1024)
    const cases: [string, Buffer, string][] = [
      ['bombonly', bomb, 'DECOMPRESSION_LIMIT'],
      ['bomb', Buffer.concat([headerFrame, bomb]), 'DECOMPRESSION_LIMIT'],
      ['bombmid', Buffer.concat([headerFrame, bomb, bytes.subarray(starts[1])]), 'DECOMPRESSION_LIMIT'],
      [
        'claims',
        Buffer.concat([
          headerFrame,
          craftFrame({
            descriptor: 0xc0,
            windowDescriptor: 0x50,
            contentSizeBytes: [0, 0, 0, 0, 0, 0, 0, 0x10],
            blocks: [rawBlock('{}\n')],
          }),
        ]),
        'DECOMPRESSION_LIMIT',
      ],
      [
        'window',
        Buffer.concat([
          headerFrame,
          craftFrame({ descriptor: 0x00, windowDescriptor: (31 - 10) << 3, blocks: [rawBlock('{}\n')] }),
        ]),
        'WINDOW_TOO_LARGE',
      ],
    ]
    for (const [id, content, code] of cases) {
      const path = placeZstdSession(temp.path, id, content)
      const before = fileIdentity(path)
      const read = await caught(limited.openReader(id))
      expect(read.code).toBe(code)
      if (code === 'DECOMPRESSION_LIMIT') {
        expect(read.details['limit']).toBe(8 * MiB)
        expect(read.details['producedBytes']).toBeLessThanOrEqual(8 * MiB)
      }
      // The refusal names the frame and its offset in the file.
      if (id === 'bomb' || id === 'bombmid') {
        expect(read.details).toMatchObject({ frameIndex: 1, compressedOffset: starts[1] })
      }
      expect((await caught(limited.openWriter(id))).code).toBe(code)
      expect((await caught(limited.backend.capabilities.compress.compress(id))).code).toBe(code)
      expect(fileIdentity(path)).toEqual(before)
      // Nothing but the log, and at most the fencing epoch: a bomb in the header's frame is
      // refused before the lease; one after it, once the lease is written, by the scan.
      expect(readdirSync(join(temp.path, id)).filter((name) => name !== 'writer.lease')).toEqual([ZSTD_NAME])
    }
  })
})

describe('zstd writer durability', () => {
  it('a failed write of a .zstd flush is rolled back and retried with the same seqs; the file stays whole frames', async () => {
    let failNext = false
    const failing = coreTestStore(temp.path, {
      encoding: 'zstd',
      fs: {
        ...noSyncFsOps,
        async open(path, flags, mode) {
          const handle = await noSyncFsOps.open(path, flags, mode)
          return {
            ...handle,
            path: handle.path,
            async write(buffer, position) {
              if (failNext) {
                failNext = false
                await handle.write(buffer.subarray(0, buffer.byteLength >> 1), position)
                const error = new Error('no space') as Error & { code?: string }
                error.code = 'ENOSPC'
                throw error
              }
              await handle.write(buffer, position)
            },
          }
        },
      },
    }).store
    const writer = await failing.create({ id: 'full' })
    writer.append(note)
    await writer.flush()
    writer.append(note)
    failNext = true
    expect((await caught(writer.flush())).code).toBe('DISK_FULL')
    expect(writer.bufferedEvents).toBe(1)
    expect(cliCheck(readFileSync(join(temp.path, 'full', ZSTD_NAME))).testOk).toBe(true)
    expect((await writer.flush()).durableSeq).toBe(1)
    await writer.close()
    const events = await collect(store.readEvents('full'))
    expect(events.map((event) => event.seq)).toEqual([0, 1])
    expect(statSync(join(temp.path, 'full', ZSTD_NAME)).size).toBeGreaterThan(0)
    await failing.close()
  })

  it('W5: a .zstd log replaced under its writer is FILE_REPLACED, not acknowledged', async () => {
    const writer = await zstdStore.create({ id: 'swap' })
    writer.append(note)
    await writer.flush()
    const path = join(temp.path, 'swap', ZSTD_NAME)
    const copy = readFileSync(path)
    writeFileSync(`${path}.new`, copy)
    renameSync(`${path}.new`, path)
    writer.append(note)
    expect((await caught(writer.flush())).code).toBe('FILE_REPLACED')
    await writer.close().catch(() => undefined)
  })
})
