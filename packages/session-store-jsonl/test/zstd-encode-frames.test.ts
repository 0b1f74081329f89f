import { beforeAll, describe, expect, it } from 'vitest'

import { encodeFrames } from '../src/zstd/encode-frames.ts'
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

function frameContents(bytes: Uint8Array): Buffer[] {
  const scan = scanFrames(bytes)
  expect(scan.tail.kind).toBe('none')
  return scan.frames.map((frame) =>
    Buffer.from(codec.decompressFrame(bytes.subarray(frame.offset, frame.offset + frame.length), limits)),
  )
}

describe('encodeFrames', () => {
  const lines = eventLines(400)

  it('packs whole lines into frames of at most the target size, except a single longer line', () => {
    const longLine = Buffer.from(`${'x'.repeat(5000)}\n`)
    const input = [...lines.slice(0, 20), longLine, ...lines.slice(20)]
    const target = 2048
    const encoded = encodeFrames(input, { codec, targetFrameBytes: target })
    const contents = frameContents(encoded.bytes)
    expect(concatBytes(contents)).toEqual(concatBytes(input))
    expect(contents.length).toBe(encoded.frames.length)
    for (const [index, content] of contents.entries()) {
      expect(content[content.length - 1]).toBe(0x0a)
      expect(content.length <= target || content.equals(longLine)).toBe(true)
      expect(encoded.frames[index]).toMatchObject({
        contentBytes: content.length,
        lineCount: content.toString().split('\n').length - 1,
      })
    }
    expect(encoded.frames.map((frame) => frame.offset)).toEqual(
      scanFrames(encoded.bytes).frames.map((frame) => frame.offset),
    )
    expect(encoded.contentBytes).toBe(concatBytes(input).length)
  })

  it('splits one buffer of lines at line boundaries exactly as the same lines given one by one', () => {
    const some = lines.slice(0, 60)
    for (const target of [1, 500, 4096, 65_536, Infinity]) {
      const fromLines = encodeFrames(some, { codec, targetFrameBytes: target })
      const fromBuffer = encodeFrames(concatBytes(some), { codec, targetFrameBytes: target })
      expect(fromBuffer.frames).toEqual(fromLines.frames)
      expect(Buffer.from(fromBuffer.bytes).equals(Buffer.from(fromLines.bytes))).toBe(true)
    }
    expect(encodeFrames(some, { codec, targetFrameBytes: 1 }).frames).toHaveLength(some.length)
  })

  it('writes nothing for no lines, and refuses lines without \\n and bad targets', () => {
    expect(encodeFrames([], { codec, targetFrameBytes: 100 }).bytes).toHaveLength(0)
    expect(encodeFrames(new Uint8Array(0), { codec, targetFrameBytes: 100 }).frames).toHaveLength(0)
    const refusals = [
      () => encodeFrames([Buffer.from('{"a":1}')], { codec, targetFrameBytes: 100 }),
      () => encodeFrames([Buffer.from('')], { codec, targetFrameBytes: 100 }),
      () => encodeFrames(Buffer.from('{"a":1}\n{"b"'), { codec, targetFrameBytes: 100 }),
      () => encodeFrames(lines, { codec, targetFrameBytes: 0 }),
      () => encodeFrames(lines, { codec, targetFrameBytes: Number.NaN }),
      () => encodeFrames(lines, { codec, targetFrameBytes: 100, level: 22 }),
    ]
    for (const refusal of refusals) {
      let error: unknown
      try {
        refusal()
      } catch (caught) {
        error = caught
      }
      expect(ZstdFrameError.is(error) && error.code).toBe('INVALID_ARGUMENT')
    }
  })
})
