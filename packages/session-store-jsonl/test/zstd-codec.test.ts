import { randomBytes } from 'node:crypto'

import { beforeAll, describe, expect, it } from 'vitest'

import { scanFrames } from '../src/zstd/scan-frames.ts'
import { loadZstdCodec } from '../src/zstd/zstd-codec.ts'
import type { ZstdCodec } from '../src/zstd/zstd-codec.ts'
import { ZstdFrameError } from '../src/zstd/zstd-frame-error.ts'
import { concatBytes, eventLines } from './zstd-helpers.ts'

let codec: ZstdCodec
const limits = { maxOutputBytes: 64 * 1024 * 1024 }

beforeAll(async () => {
  codec = await loadZstdCodec()
})

function thrown(action: () => unknown): ZstdFrameError {
  try {
    action()
  } catch (error) {
    if (ZstdFrameError.is(error)) return error
    throw error
  }
  throw new Error('expected a ZstdFrameError, nothing was thrown')
}

describe('loadZstdCodec', () => {
  it('loads the wasm module once and returns the cached codec afterwards', async () => {
    const [first, second] = await Promise.all([loadZstdCodec(), loadZstdCodec()])
    expect(first).toBe(second)
    expect(await loadZstdCodec()).toBe(codec)
    expect(codec.name).toContain('zstd-codec')
  })
})

describe('compressFrame', () => {
  it('writes exactly one complete frame, without content checksum or declared size, for any input size', () => {
    // 12 MB is past the ~5 MB where zstd-codec's simple API runs out of its 16 MiB heap
    const big = concatBytes([randomBytes(2 * 1024 * 1024), Buffer.alloc(10 * 1024 * 1024, 'agent ledger\n')])
    for (const content of [new Uint8Array(0), Buffer.from('x\n'), concatBytes(eventLines(2000)), big]) {
      const frame = codec.compressFrame(content, 3)
      const scan = scanFrames(frame)
      expect(scan.frames).toHaveLength(1)
      expect(scan.tail.kind).toBe('none')
      expect(scan.frames[0]).toMatchObject({
        kind: 'zstd',
        hasChecksum: false,
        contentSize: undefined,
        dictionaryId: 0,
      })
      expect(Buffer.from(codec.decompressFrame(frame, limits)).equals(Buffer.from(content))).toBe(true)
    }
  })

  it('accepts levels -5 to 9 and refuses 10 and above (they abort the 16 MiB wasm heap) without breaking the codec', () => {
    const content = concatBytes(eventLines(200))
    for (const level of [-5, 1, 3, 6, 9]) {
      expect(
        Buffer.from(codec.decompressFrame(codec.compressFrame(content, level), limits)).equals(content),
      ).toBe(true)
    }
    for (const level of [10, 19, 2.5, Number.NaN]) {
      expect(thrown(() => codec.compressFrame(content, level))).toMatchObject({ code: 'INVALID_ARGUMENT' })
    }
    expect(Buffer.from(codec.decompressFrame(codec.compressFrame(content, 3), limits)).equals(content)).toBe(
      true,
    )
  })
})

describe('decompressFrame', () => {
  const content = concatBytes(eventLines(300))
  let frame: Uint8Array
  beforeAll(() => {
    frame = codec.compressFrame(content, 3)
  })

  it('refuses a frame cut at any point with TORN_FRAME instead of returning a silent prefix', () => {
    for (let cut = 1; cut < frame.length; cut += Math.max(1, Math.floor(frame.length / 97))) {
      const error = thrown(() => codec.decompressFrame(frame.subarray(0, cut), limits))
      expect(error.code).toBe('TORN_FRAME')
      expect(error.part).toBeDefined()
    }
  })

  it('refuses bytes after the one frame it is given', () => {
    expect(thrown(() => codec.decompressFrame(concatBytes([frame, frame]), limits))).toMatchObject({
      code: 'CORRUPT_FRAME',
      reason: 'trailing-bytes',
      compressedOffset: frame.length,
    })
  })

  it('returns nothing for a skippable frame', () => {
    const skippable = Uint8Array.from([0x50, 0x2a, 0x4d, 0x18, 2, 0, 0, 0, 1, 2])
    expect(codec.decompressFrame(skippable, limits)).toHaveLength(0)
  })

  it('hands content out in bounded chunks and stops when the callback throws, leaving the codec usable', () => {
    const large = Buffer.alloc(4 * 1024 * 1024, 'abcdefgh\n')
    const largeFrame = codec.compressFrame(large, 3)
    const sizes: number[] = []
    const produced = codec.decompressFrameChunks(largeFrame, limits, (chunk) => sizes.push(chunk.length))
    expect(produced).toBe(large.length)
    expect(Math.max(...sizes)).toBeLessThanOrEqual(256 * 1024)

    let calls = 0
    expect(() =>
      codec.decompressFrameChunks(largeFrame, limits, () => {
        calls += 1
        if (calls === 3) throw new Error('consumer gave up')
      }),
    ).toThrow('consumer gave up')
    expect(Buffer.from(codec.decompressFrame(frame, limits)).equals(content)).toBe(true)
  })

  it('reports corrupt compressed data as CORRUPT_FRAME decode-failed', () => {
    const scan = scanFrames(frame)
    expect(scan.frames[0]!.blockCount).toBeGreaterThan(0)
    const damaged = Uint8Array.from(frame)
    // overwrite the middle of the first block's data
    damaged.fill(0xff, 12, 40)
    const error = thrown(() => codec.decompressFrame(damaged, limits))
    expect(error.code).toBe('CORRUPT_FRAME')
    expect(error.reason).toBe('decode-failed')
  })
})
