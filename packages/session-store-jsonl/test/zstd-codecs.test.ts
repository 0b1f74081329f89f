// The two Zstandard codecs behind one contract: `node:zlib` (Node 22.15+) and the zstd-codec
// wasm build (Node 20, and the streaming path for frames over 8 MiB on newer runtimes).
// Run under both runtimes: `pnpm test` (Node 20) and `pnpm test:node22-zstd`.
import { randomBytes } from 'node:crypto'

import { describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { scanFrames } from '../src/zstd/scan-frames.ts'
import { zlibZstd } from '../src/zstd/zlib-zstd-codec.ts'
import { loadWasmZstdCodec, loadZstdCodec } from '../src/zstd/zstd-codec.ts'
import type { ZstdCodec } from '../src/zstd/zstd-codec.ts'
import { ZstdFrameError } from '../src/zstd/zstd-frame-error.ts'
import { cliCheck, cliCompress, concatBytes, eventLines } from './zstd-helpers.ts'

const MiB = 1024 * 1024
const limits = { maxOutputBytes: 64 * MiB }
const hasNative = zlibZstd() !== null

async function codecs(): Promise<ZstdCodec[]> {
  const chosen = await loadZstdCodec()
  const wasm = await loadWasmZstdCodec()
  return chosen === wasm ? [wasm] : [chosen, wasm]
}

function rejection(promise: Promise<unknown>): Promise<ZstdFrameError> {
  return promise.then(
    () => {
      throw new Error('expected a rejection')
    },
    (error: unknown) => {
      if (ZstdFrameError.is(error)) return error
      throw error
    },
  )
}

describe('the codec of this runtime', () => {
  it(`is ${hasNative ? "node:zlib's Zstandard, keeping the wasm codec for large frames" : 'the zstd-codec wasm build'} (Node ${process.versions.node})`, async () => {
    const codec = await loadZstdCodec()
    expect(await loadZstdCodec()).toBe(codec)
    if (hasNative) {
      expect(codec.name).toMatch(/^node:zlib zstd .*frames over 8 MiB: zstd-codec@0\.1\.5/)
    } else {
      expect(codec).toBe(await loadWasmZstdCodec())
    }
    // Same window ceiling and levels on every runtime: a file or an option carries over.
    expect(codec.maxWindowBytes).toBe(8 * MiB)
    expect(codec.levels).toEqual({ min: -5, max: 9 })
  })

  it(
    'frames written by either codec (sync and off the event loop) decode with the other and with the zstd CLI',
    async () => {
      const all = await codecs()
      const content = concatBytes([...eventLines(3000), Buffer.alloc(3 * MiB, 'agent ledger\n')])
      for (const writer of all) {
        const frames = [writer.compressFrame(content, 3), await writer.compressFrameAsync(content, 6)]
        for (const frame of frames) {
          const scan = scanFrames(frame)
          expect(scan.frames, writer.name).toHaveLength(1)
          expect(scan.frames[0]).toMatchObject({ kind: 'zstd', hasChecksum: false, contentSize: undefined })
          for (const reader of all) {
            expect(Buffer.from(reader.decompressFrame(frame, limits)).equals(content), reader.name).toBe(true)
            const pieces: Buffer[] = []
            const total = reader.decompressFrameChunks(frame, limits, (piece) =>
              pieces.push(Buffer.from(piece)),
            )
            expect(total).toBe(content.length)
            expect(Math.max(...pieces.map((piece) => piece.length))).toBeLessThanOrEqual(512 * 1024)
            expect(Buffer.concat(pieces).equals(content)).toBe(true)
          }
          expect(cliCheck(frame).plain?.equals(content)).toBe(true)
        }
      }
    },
    testTime(120_000),
  )

  it('compressFrameAsync keeps several frames in flight, each exactly one frame of its own content, and leaves the input untouched', async () => {
    for (const codec of await codecs()) {
      const inputs = Array.from({ length: 6 }, (_, index) =>
        concatBytes([randomBytes(64 * 1024), Buffer.alloc(256 * 1024 + index, `frame ${index}\n`)]),
      )
      const copies = inputs.map((input) => Buffer.from(input))
      const frames = await Promise.all(inputs.map((input) => codec.compressFrameAsync(input, 3)))
      frames.forEach((frame, index) => {
        expect(Buffer.from(codec.decompressFrame(frame, limits)).equals(copies[index]!)).toBe(true)
        expect(inputs[index]!.equals(copies[index]!)).toBe(true)
      })
    }
  })

  it('refuses a level outside -5..9 with INVALID_ARGUMENT, sync and async, and stays usable', async () => {
    for (const codec of await codecs()) {
      const content = Buffer.from('x\n')
      expect(() => codec.compressFrame(content, 10)).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      )
      expect(await rejection(codec.compressFrameAsync(content, 1.5))).toMatchObject({
        code: 'INVALID_ARGUMENT',
      })
      expect(Buffer.from(codec.decompressFrame(await codec.compressFrameAsync(content, -5), limits))).toEqual(
        content,
      )
    }
  })

  it('a damaged block is CORRUPT_FRAME decode-failed on both codecs, never a silent prefix', async () => {
    const content = concatBytes(eventLines(2000))
    const frame = cliCompress(content, ['-3', '--no-check'])
    for (const codec of await codecs()) {
      let failures = 0
      for (let at = 12; at < frame.length - 4; at += Math.ceil(frame.length / 40)) {
        const damaged = Buffer.from(frame)
        damaged[at] = damaged[at]! ^ 0xff
        try {
          const decoded = Buffer.from(codec.decompressFrame(damaged, limits))
          // A flip the format cannot see (a literal byte) decodes to other content of the same frame.
          expect(decoded.length).toBeGreaterThan(0)
        } catch (error) {
          expect(ZstdFrameError.is(error), String(error)).toBe(true)
          expect((error as ZstdFrameError).code).toMatch(/^(CORRUPT_FRAME|TORN_FRAME|DECOMPRESSION_LIMIT)$/)
          failures += 1
        }
      }
      expect(failures, codec.name).toBeGreaterThan(0)
    }
  })
})
