import { beforeAll, describe, expect, it } from 'vitest'

import { decodeFrameLines } from '../src/zstd/decode-frame-lines.ts'
import { encodeFrames } from '../src/zstd/encode-frames.ts'
import { createFrameLineSplitter, splitFrameLines } from '../src/zstd/frame-lines.ts'
import { ZstdFrameScanner } from '../src/zstd/scan-frames.ts'
import type { ZstdScannedFrame } from '../src/zstd/scan-frames.ts'
import { loadZstdCodec } from '../src/zstd/zstd-codec.ts'
import type { ZstdCodec } from '../src/zstd/zstd-codec.ts'
import { ZstdFrameError } from '../src/zstd/zstd-frame-error.ts'
import { concatBytes, eventLines, lineChecksumValid } from './zstd-helpers.ts'

let codec: ZstdCodec

beforeAll(async () => {
  codec = await loadZstdCodec()
})

function collect(content: Uint8Array, chunkSizes: readonly number[]): { lines: string[]; offsets: number[] } {
  const lines: string[] = []
  const offsets: number[] = []
  const splitter = createFrameLineSplitter({
    maxLineBytes: 1024,
    onLine: (line, offset) => {
      lines.push(Buffer.from(line).toString('utf8'))
      offsets.push(offset)
    },
  })
  let at = 0
  for (let index = 0; at < content.length; index++) {
    const size = chunkSizes[index % chunkSizes.length]!
    splitter.push(content.subarray(at, at + size))
    at += size
  }
  expect(splitter.end()).toBe(lines.length)
  return { lines, offsets }
}

function scanOne(bytes: Uint8Array): ZstdScannedFrame {
  const scanner = new ZstdFrameScanner({ startOffset: 1000 })
  const [frame] = scanner.push(bytes)
  expect(scanner.end().tail.kind).toBe('none')
  return { info: { ...frame!.info, index: 7 }, bytes: frame!.bytes }
}

function thrown(action: () => unknown): ZstdFrameError {
  try {
    action()
  } catch (error) {
    if (ZstdFrameError.is(error)) return error
    throw error
  }
  throw new Error('expected a ZstdFrameError, nothing was thrown')
}

describe('createFrameLineSplitter', () => {
  const content = Buffer.from('{"a":1}\n\n{"b":"\u2028x"}\nlast line\n')

  it('splits only on 0x0A, whatever the chunk boundaries, with each line offset in the content', () => {
    const expected = { lines: ['{"a":1}', '', '{"b":"\u2028x"}', 'last line'], offsets: [0, 8, 9, 22] }
    for (const sizes of [[content.length], [1], [2, 3], [7], [8, 1, 30]]) {
      expect(collect(content, sizes)).toEqual(expected)
    }
  })

  it('Z4: content not ending with \\n is CORRUPT_FRAME frame-not-line-aligned, with the frame named', () => {
    const splitter = createFrameLineSplitter({
      maxLineBytes: 100,
      onLine: () => {},
      frameIndex: 3,
      compressedOffset: 512,
    })
    splitter.push(Buffer.from('{"a":1}\n{"b":'))
    expect(thrown(() => splitter.end())).toMatchObject({
      code: 'CORRUPT_FRAME',
      reason: 'frame-not-line-aligned',
      frameIndex: 3,
      compressedOffset: 512,
    })
  })

  it('stops with LINE_TOO_LARGE as soon as an unfinished line passes the limit, before its end arrives', () => {
    const splitter = createFrameLineSplitter({ maxLineBytes: 10, onLine: () => {} })
    splitter.push(Buffer.from('short\n0123456'))
    expect(thrown(() => splitter.push(Buffer.from('7890')))).toMatchObject({
      code: 'LINE_TOO_LARGE',
      limit: 10,
    })
    expect(() =>
      splitFrameLines(Buffer.from('0123456789\n'), { maxLineBytes: 10, onLine: () => {} }),
    ).not.toThrow()
    expect(
      thrown(() => splitFrameLines(Buffer.from('0123456789X\n'), { maxLineBytes: 10, onLine: () => {} }))
        .code,
    ).toBe('LINE_TOO_LARGE')
  })
})

describe('decodeFrameLines', () => {
  it('decodes a scanned frame into checksummed lines', () => {
    const lines = eventLines(50)
    const frame = scanOne(encodeFrames(lines, { codec, targetFrameBytes: Infinity }).bytes)
    const decoded: Buffer[] = []
    const result = decodeFrameLines(codec, frame, {
      maxLineBytes: 4096,
      onLine: (line) => decoded.push(Buffer.from(line)),
    })
    expect(result.lineCount).toBe(50)
    expect(result.contentBytes).toBe(concatBytes(lines).length)
    expect(decoded.every(lineChecksumValid)).toBe(true)
    expect(concatBytes(decoded.map((line) => concatBytes([line, Buffer.from('\n')])))).toEqual(
      concatBytes(lines),
    )
  })

  it('Z4: a frame whose content does not end in \\n, or a line split across two frames, is CORRUPT_FRAME', () => {
    const lines = concatBytes(eventLines(4))
    const cut = lines.length - 30
    const first = scanOne(codec.compressFrame(lines.subarray(0, cut), 3))
    const second = scanOne(codec.compressFrame(lines.subarray(cut), 3))
    const error = thrown(() => decodeFrameLines(codec, first, { maxLineBytes: 4096, onLine: () => {} }))
    expect(error).toMatchObject({
      code: 'CORRUPT_FRAME',
      reason: 'frame-not-line-aligned',
      frameIndex: 7,
      compressedOffset: 1000,
    })
    // the second frame starts mid-line: it ends in \n, so only the line checks (checksum, JSON) can reject its first line
    const secondLines: Buffer[] = []
    decodeFrameLines(codec, second, {
      maxLineBytes: 4096,
      onLine: (line) => secondLines.push(Buffer.from(line)),
    })
    expect(lineChecksumValid(secondLines[0]!)).toBe(false)
  })

  it('names the frame and its file offset on codec errors', () => {
    const frame = scanOne(codec.compressFrame(Buffer.alloc(300_000, 'a\n'), 3))
    const error = thrown(() =>
      decodeFrameLines(codec, frame, { maxOutputBytes: 1000, maxLineBytes: 10, onLine: () => {} }),
    )
    expect(error).toMatchObject({
      code: 'DECOMPRESSION_LIMIT',
      frameIndex: 7,
      compressedOffset: 1000,
      limit: 1000,
      producedBytes: 0,
    })
  })

  it('treats a skippable frame as holding no lines', () => {
    const frame = scanOne(Uint8Array.from([0x5f, 0x2a, 0x4d, 0x18, 1, 0, 0, 0, 0x0a]))
    expect(
      decodeFrameLines(codec, frame, { maxLineBytes: 10, onLine: () => expect.fail('no line expected') }),
    ).toEqual({ contentBytes: 0, lineCount: 0 })
  })
})
