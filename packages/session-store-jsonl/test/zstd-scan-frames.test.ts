import { beforeAll, describe, expect, it } from 'vitest'

import { encodeFrames } from '../src/zstd/encode-frames.ts'
import { parseFrameAt } from '../src/zstd/frame-format.ts'
import { scanFrames, ZstdFrameScanner } from '../src/zstd/scan-frames.ts'
import type { ZstdScanResult } from '../src/zstd/scan-frames.ts'
import { loadZstdCodec } from '../src/zstd/zstd-codec.ts'
import type { ZstdCodec } from '../src/zstd/zstd-codec.ts'
import { ZstdFrameError } from '../src/zstd/zstd-frame-error.ts'
import {
  checksummedLine,
  cliCompress,
  concatBytes,
  craftFrame,
  eventLines,
  rawBlock,
} from './zstd-helpers.ts'

let codec: ZstdCodec
/** Five frames as five flushes write them: the header alone, then four batches. */
let fiveFrames: Buffer
let frameEnds: number[]

beforeAll(async () => {
  codec = await loadZstdCodec()
  const header = checksummedLine({
    format: 'agent-ledger.session',
    version: 4,
    id: 's1',
    createdAt: '2025-01-06T09:30:00.000Z',
  })
  const batches = [[header], eventLines(3, 0), eventLines(12, 3), eventLines(1, 15), eventLines(6, 16)]
  const frames = batches.map((batch) => encodeFrames(batch, { codec, targetFrameBytes: Infinity }).bytes)
  fiveFrames = concatBytes(frames)
  frameEnds = []
  let end = 0
  for (const frame of frames) frameEnds.push((end += frame.length))
})

function scanInChunks(bytes: Uint8Array, chunkSize: number): ZstdScanResult {
  const scanner = new ZstdFrameScanner()
  const frames = []
  for (let at = 0; at < bytes.length; at += chunkSize) {
    // copy: the scanner must not depend on the caller keeping its chunk
    for (const frame of scanner.push(Uint8Array.from(bytes.subarray(at, at + chunkSize)))) {
      expect(
        Buffer.from(frame.bytes).equals(
          Buffer.from(bytes.subarray(frame.info.offset, frame.info.offset + frame.info.length)),
        ),
      ).toBe(true)
      frames.push(frame.info)
    }
  }
  return { ...scanner.end(), frames }
}

describe('parseFrameAt', () => {
  it('reads window, content size, dictionary and checksum fields as RFC 8878 defines them', () => {
    // FCS flag 1 (2 bytes, +256), checksum, dictionary id flag 1 (1 byte), window exponent 3 mantissa 5
    const frame = craftFrame({
      descriptor: 0b01_0_0_0_1_01,
      windowDescriptor: (3 << 3) | 5,
      // the bytes after the window descriptor: dictionary id (7), then the 2-byte FCS (0 + 256)
      contentSizeBytes: [0x07, 0x00, 0x00],
      blocks: [rawBlock('abc')],
      checksum: [1, 2, 3, 4],
    })
    const parsed = parseFrameAt(frame, 0)
    expect(parsed.status).toBe('complete')
    if (parsed.status !== 'complete') return
    expect(parsed.frame.windowSize).toBe(2 ** 13 + (2 ** 13 / 8) * 5)
    expect(parsed.frame.dictionaryId).toBe(7)
    expect(parsed.frame.contentSize).toBe(256)
    expect(parsed.frame.hasChecksum).toBe(true)
    expect(parsed.frame.length).toBe(frame.length)
    expect(parsed.frame.blockCount).toBe(1)
    expect(parsed.frame.maxContentSize).toBe(3)
  })

  it('takes the window of a single-segment frame from its content size', () => {
    const frame = craftFrame({
      descriptor: 0b00_1_0_0_0_00,
      contentSizeBytes: [5],
      blocks: [rawBlock('hello')],
    })
    const parsed = parseFrameAt(frame, 0)
    expect(parsed.status === 'complete' && parsed.frame.windowSize).toBe(5)
  })

  it('bounds content structurally: raw and RLE sizes exactly, compressed blocks at Block_Maximum_Size', () => {
    const frame = craftFrame({
      descriptor: 0,
      windowDescriptor: 0, // 1 KiB window: Block_Maximum_Size 1024
      blocks: [
        { last: false, type: 1, size: 1000, data: [0x41] },
        { last: false, type: 2, size: 2, data: [0, 0] },
        rawBlock('xy'),
      ],
    })
    const parsed = parseFrameAt(frame, 0)
    expect(parsed.status === 'complete' && parsed.frame.maxContentSize).toBe(1000 + 1024 + 2)
  })

  it('rejects the reserved block type, the reserved header bit and a block above Block_Maximum_Size', () => {
    expect(
      parseFrameAt(
        craftFrame({
          descriptor: 0,
          windowDescriptor: 0x50,
          blocks: [{ last: true, type: 3, size: 0, data: [] }],
        }),
        0,
      ),
    ).toMatchObject({ status: 'invalid', reason: 'reserved-block-type', at: 6 })
    expect(
      parseFrameAt(craftFrame({ descriptor: 0x08, windowDescriptor: 0x50, blocks: [rawBlock('a')] }), 0),
    ).toMatchObject({ status: 'invalid', reason: 'reserved-bit', at: 4 })
    const oversized = craftFrame({
      descriptor: 0,
      windowDescriptor: 0,
      blocks: [{ last: true, type: 1, size: 1025, data: [0] }],
    })
    expect(parseFrameAt(oversized, 0)).toMatchObject({ status: 'invalid', reason: 'block-too-large' })
  })
})

describe('scanFrames', () => {
  it('lists every frame of a file with its offset and length, and a clean end', () => {
    const result = scanFrames(fiveFrames)
    expect(result.frames.map((frame) => frame.offset + frame.length)).toEqual(frameEnds)
    expect(result.frames.map((frame) => frame.index)).toEqual([0, 1, 2, 3, 4])
    expect(result.tail).toEqual({ kind: 'none', offset: fiveFrames.length, bytes: 0 })
    expect(result.goodEnd).toBe(fiveFrames.length)
    expect(result.zstdFrameCount).toBe(5)
  })

  it('gives the same frames and tail whatever the chunking, even for a torn or damaged input', () => {
    const inputs = [
      fiveFrames,
      fiveFrames.subarray(0, fiveFrames.length - 7),
      concatBytes([fiveFrames, new Uint8Array(9)]),
      concatBytes([
        fiveFrames.subarray(0, frameEnds[1]),
        Buffer.from('JUNK'),
        fiveFrames.subarray(frameEnds[1]),
      ]),
    ]
    for (const input of inputs) {
      const whole = scanFrames(input)
      for (const size of [1, 2, 3, 5, 64, 1000]) {
        const chunked = scanInChunks(input, size)
        expect(chunked.frames).toEqual(whole.frames)
        expect(chunked.tail.kind).toBe(whole.tail.kind)
        expect(chunked.tail.offset).toBe(whole.tail.offset)
        expect(chunked.tail.bytes).toBe(whole.tail.bytes)
      }
    }
  })

  it('starts at startOffset and reports offsets in the whole input', () => {
    const result = scanFrames(fiveFrames, frameEnds[1])
    expect(result.frames.map((frame) => frame.offset)).toEqual(frameEnds.slice(1, 4))
  })

  it('Z1: truncation at every offset inside the last frame is a torn tail; frames 1-4 stay intact', () => {
    const lastStart = frameEnds[3]!
    const parts = new Set<string>()
    for (let cut = lastStart + 1; cut < fiveFrames.length; cut++) {
      const result = scanFrames(fiveFrames.subarray(0, cut))
      expect(result.frames.map((frame) => frame.offset + frame.length)).toEqual(frameEnds.slice(0, 4))
      expect(result.goodEnd).toBe(lastStart)
      expect(result.tail.kind).toBe('torn')
      expect(result.tail.bytes).toBe(cut - lastStart)
      if (result.tail.kind === 'torn') parts.add(result.tail.part)
    }
    expect([...parts].sort()).toEqual(['block-data', 'block-header', 'frame-header', 'magic'])
  })

  it('Z1: truncation inside the checksum of a frame written by the zstd CLI is torn too', () => {
    const cliFrame = cliCompress(concatBytes(eventLines(40)))
    const file = concatBytes([fiveFrames.subarray(0, frameEnds[3]), cliFrame])
    const parts = new Set<string>()
    for (let cut = frameEnds[3]! + 1; cut < file.length; cut++) {
      const result = scanFrames(file.subarray(0, cut))
      expect(result.goodEnd).toBe(frameEnds[3])
      expect(result.tail.kind).toBe('torn')
      if (result.tail.kind === 'torn') parts.add(result.tail.part)
    }
    expect(parts.has('checksum')).toBe(true)
  })

  it('Z2: zeros, random bytes or half a frame after the last frame are a tail, never corruption', () => {
    const lastFrame = fiveFrames.subarray(frameEnds[3])
    const random = Buffer.from('9c3e0b7f5a12d46e88f1c02b93a7e4d05f6a1b2c3d4e5f60718293a4b5c6d7e8', 'hex')
    const cases: { tail: Uint8Array; kind: 'torn' | 'garbage' }[] = [
      { tail: new Uint8Array(1), kind: 'garbage' },
      { tail: new Uint8Array(4), kind: 'garbage' },
      { tail: new Uint8Array(4096), kind: 'garbage' },
      { tail: random, kind: 'garbage' },
      { tail: lastFrame.subarray(0, lastFrame.length >> 1), kind: 'torn' },
      { tail: lastFrame.subarray(0, 2), kind: 'torn' },
    ]
    for (const { tail, kind } of cases) {
      const result = scanFrames(concatBytes([fiveFrames, tail]))
      expect(result.frames).toHaveLength(5)
      expect(result.goodEnd).toBe(fiveFrames.length)
      expect(result.tail).toMatchObject({ kind, offset: fiveFrames.length, bytes: tail.length })
    }
  })

  it('Z5: a skippable frame between frames 2 and 3 is skipped and counted', () => {
    const skippable = Uint8Array.from([0x5a, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 0xaa, 0xbb, 0xcc])
    const file = concatBytes([
      fiveFrames.subarray(0, frameEnds[1]),
      skippable,
      fiveFrames.subarray(frameEnds[1]),
    ])
    const result = scanFrames(file)
    expect(result.tail.kind).toBe('none')
    expect(result.skippableFrameCount).toBe(1)
    expect(result.zstdFrameCount).toBe(5)
    expect(result.frames[2]).toMatchObject({
      kind: 'skippable',
      offset: frameEnds[1],
      length: 11,
      skippableVariant: 0xa,
    })
  })

  it('Z5: unknown magic between frames 2 and 3 is CORRUPT_FRAME naming frame 2 and its offset', () => {
    const file = concatBytes([
      fiveFrames.subarray(0, frameEnds[1]),
      Buffer.from([1, 2, 3, 4]),
      fiveFrames.subarray(frameEnds[1]),
    ])
    const result = scanFrames(file)
    expect(result.frames).toHaveLength(2)
    expect(result.tail.kind).toBe('corrupt')
    if (result.tail.kind !== 'corrupt') return
    expect(ZstdFrameError.is(result.tail.error)).toBe(true)
    expect(result.tail.error).toMatchObject({
      code: 'CORRUPT_FRAME',
      frameIndex: 2,
      compressedOffset: frameEnds[1],
      reason: 'unknown-magic',
    })
    expect(result.tail.error.message).toContain(`offset ${frameEnds[1]! + 4}`)
  })

  it('Z5: unknown magic at the tail is a garbage tail', () => {
    const result = scanFrames(concatBytes([fiveFrames, Buffer.from([1, 2, 3, 4, 5, 6])]))
    expect(result.tail).toMatchObject({
      kind: 'garbage',
      reason: 'unknown-magic',
      offset: fiveFrames.length,
      bytes: 6,
    })
  })

  it('reports a reserved block type in the middle as corruption, and at the end as garbage', () => {
    const bad = craftFrame({
      descriptor: 0,
      windowDescriptor: 0x50,
      blocks: [{ last: true, type: 3, size: 0, data: [] }],
    })
    const middle = scanFrames(
      concatBytes([fiveFrames.subarray(0, frameEnds[0]), bad, fiveFrames.subarray(frameEnds[0])]),
    )
    expect(middle.tail.kind === 'corrupt' && middle.tail.error).toMatchObject({
      reason: 'reserved-block-type',
      frameIndex: 1,
    })
    const end = scanFrames(concatBytes([fiveFrames, bad]))
    expect(end.tail).toMatchObject({ kind: 'garbage', reason: 'reserved-block-type' })
  })

  it('does not let a damaged block size swallow the frames after it as a torn tail', () => {
    // a raw block claiming 100 KB: its data would run past the end of the file
    const overrun = craftFrame({
      descriptor: 0,
      windowDescriptor: 0x50,
      blocks: [{ last: true, type: 0, size: 100_000, data: [0x7b] }],
    })
    const file = concatBytes([
      fiveFrames.subarray(0, frameEnds[2]),
      overrun,
      fiveFrames.subarray(frameEnds[2]),
    ])
    const result = scanFrames(file)
    expect(result.frames).toHaveLength(3)
    expect(result.tail.kind === 'corrupt' && result.tail.error).toMatchObject({
      code: 'CORRUPT_FRAME',
      reason: 'frame-overruns-next-frame',
      frameIndex: 3,
      compressedOffset: frameEnds[2],
    })
  })

  it('rejects pushes after end()', () => {
    const scanner = new ZstdFrameScanner()
    scanner.end()
    expect(() => scanner.push(new Uint8Array(1))).toThrow(/after end/)
  })
})
