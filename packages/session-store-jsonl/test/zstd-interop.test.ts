// The stock `zstd` command-line tool is the oracle: everything we write must pass `zstd -t` and
// decode with `zstd -d` to exactly the plain bytes; everything `zstd` writes must scan and decode here.
import { beforeAll, describe, expect, it } from 'vitest'

import { generateSessionLines } from '../bench/generate-session.ts'
import { encodeFrames } from '../src/zstd/encode-frames.ts'
import { ZstdFrameScanner } from '../src/zstd/scan-frames.ts'
import { loadZstdCodec } from '../src/zstd/zstd-codec.ts'
import type { ZstdCodec } from '../src/zstd/zstd-codec.ts'
import { ZstdFrameError } from '../src/zstd/zstd-frame-error.ts'
import {
  checksummedLine,
  cliCheck,
  cliCompress,
  concatBytes,
  eventLines,
  frameLines,
  lineChecksumValid,
  zstdCli,
} from './zstd-helpers.ts'

let codec: ZstdCodec

beforeAll(async () => {
  codec = await loadZstdCodec()
})

/** Scans `bytes` in 64 KiB chunks as a reader would and decodes every frame into lines (with `\n`). */
function readAll(bytes: Uint8Array): { plain: Buffer; frames: number; skippable: number; checksums: number } {
  const scanner = new ZstdFrameScanner()
  const lines: Buffer[] = []
  let checksums = 0
  for (let at = 0; at < bytes.length; at += 65_536) {
    for (const frame of scanner.push(bytes.subarray(at, at + 65_536))) {
      if (frame.info.hasChecksum) checksums += 1
      for (const line of frameLines(codec, frame)) lines.push(line, Buffer.from('\n'))
    }
    expect(scanner.corruption).toBeUndefined()
  }
  const summary = scanner.end()
  expect(summary.tail.kind).toBe('none')
  return {
    plain: Buffer.concat(lines),
    frames: summary.zstdFrameCount,
    skippable: summary.skippableFrameCount,
    checksums,
  }
}

const header = checksummedLine({
  format: 'agent-ledger.session',
  version: 4,
  id: 'interop',
  createdAt: '2025-01-06T09:30:00.000Z',
  integrity: 'crc32c',
})

describe('frames we write, checked by the zstd CLI', () => {
  it('pass zstd -t and zstd -d gives back exactly the plain bytes, for every framing the store uses', () => {
    const events = eventLines(300)
    const layouts: { name: string; bytes: Uint8Array; plain: Buffer }[] = []
    // header in its own frame, then one frame per flush batch of 1, 3, 10, 50 lines
    const live: Uint8Array[] = [encodeFrames([header], { codec, targetFrameBytes: Infinity }).bytes]
    let at = 0
    for (const size of [1, 3, 10, 50, 1, 1, 100]) {
      live.push(encodeFrames(events.slice(at, at + size), { codec, targetFrameBytes: Infinity }).bytes)
      at += size
    }
    layouts.push({
      name: 'live flushes',
      bytes: concatBytes(live),
      plain: concatBytes([header, ...events.slice(0, at)]),
    })
    const plain = concatBytes([header, ...events])
    for (const [target, level] of [
      [1, 3],
      [4096, 1],
      [65_536, 6],
      [Infinity, 9],
    ] as const) {
      layouts.push({
        name: `target ${target} level ${level}`,
        bytes: encodeFrames(plain, { codec, targetFrameBytes: target, level }).bytes,
        plain,
      })
    }
    for (const layout of layouts) {
      const checked = cliCheck(layout.bytes)
      expect(checked.testOk, `${layout.name}: ${checked.stderr}`).toBe(true)
      expect(checked.plain?.equals(layout.plain), layout.name).toBe(true)
      expect(readAll(layout.bytes).plain.equals(layout.plain), layout.name).toBe(true)
    }
  })

  it('round-trips a realistic 3 MB session sealed into 1 MiB frames', () => {
    const plain = Buffer.from(
      [...generateSessionLines({ seed: 7, targetBytes: 3_000_000 })].map((line) => `${line}\n`).join(''),
    )
    const bytes = encodeFrames(plain, { codec, targetFrameBytes: 1024 * 1024, level: 6 }).bytes
    const checked = cliCheck(bytes)
    expect(checked.testOk).toBe(true)
    expect(checked.plain?.equals(plain)).toBe(true)
    expect(readAll(bytes)).toMatchObject({ frames: 3 })
  })

  it('Z5: the CLI skips our skippable frame too, so inserting one keeps the file valid for both', () => {
    const events = eventLines(20)
    const first = encodeFrames(events.slice(0, 10), { codec, targetFrameBytes: Infinity }).bytes
    const second = encodeFrames(events.slice(10), { codec, targetFrameBytes: Infinity }).bytes
    const skippable = Uint8Array.from([0x5b, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef])
    const bytes = concatBytes([first, skippable, second])
    const checked = cliCheck(bytes)
    expect(checked.testOk).toBe(true)
    expect(checked.plain?.equals(concatBytes(events))).toBe(true)
    expect(readAll(bytes)).toMatchObject({ frames: 2, skippable: 1 })
  })
})

describe('files the zstd CLI writes, read by us', () => {
  const plain = concatBytes([header, ...eventLines(3000)])

  it('reads a plain v4 file compressed whole (one frame, content size and XXH64 checksum present)', () => {
    const bytes = cliCompress(plain, ['-3'], true)
    expect(new ZstdFrameScanner().push(bytes)[0]!.info.contentSize).toBe(plain.length)
    const result = readAll(bytes)
    expect(result).toMatchObject({ frames: 1, checksums: 1 })
    expect(result.plain.equals(plain)).toBe(true)
    for (const line of result.plain.toString('utf8').split('\n').slice(0, -1)) {
      expect(lineChecksumValid(Buffer.from(line))).toBe(true)
    }
  })

  it('reads several frames from concatenated zstd runs at different levels, with and without a declared size', () => {
    const pieces = [plain.subarray(0, plain.indexOf(0x0a) + 1)]
    let at = pieces[0]!.length
    while (at < plain.length) {
      const end = Math.min(plain.length, plain.indexOf(0x0a, at + 40_000) + 1 || plain.length)
      pieces.push(plain.subarray(at, end))
      at = end
    }
    const frames = pieces.map((piece, index) =>
      cliCompress(piece, [['-1'], ['-3', '--no-check'], ['-9'], ['--fast=3']][index % 4], index % 2 === 0),
    )
    const bytes = concatBytes(frames)
    expect(zstdCli(['-t', '-q'], bytes).status).toBe(0)
    const result = readAll(bytes)
    expect(result.frames).toBe(pieces.length)
    expect(result.plain.equals(plain)).toBe(true)
  })

  it('decodes a frame with an 8 MiB window (as zstd -19 writes; the codec ceiling)', () => {
    const bytes = cliCompress(plain, ['-3', '--zstd=wlog=23'])
    expect(new ZstdFrameScanner().push(bytes)[0]!.info.windowSize).toBe(8 * 1024 * 1024)
    expect(readAll(bytes).plain.equals(plain)).toBe(true)
  })

  it('relies on the decoder to verify a CLI frame checksum: a damaged checksum is CORRUPT_FRAME', () => {
    const bytes = Uint8Array.from(cliCompress(plain, ['-3']))
    bytes[bytes.length - 1]! ^= 0x01
    const [frame] = new ZstdFrameScanner().push(bytes)
    let error: unknown
    try {
      frameLines(codec, frame!)
    } catch (caught) {
      error = caught
    }
    expect(ZstdFrameError.is(error) && error).toMatchObject({
      code: 'CORRUPT_FRAME',
      reason: 'decode-failed',
    })
  })
})
