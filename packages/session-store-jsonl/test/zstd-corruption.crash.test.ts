// Long Z3 runs (pnpm test:crash): every single-bit flip of a middle frame, and zeroed
// 512-byte sectors across the file, for our frames and for CLI frames with a checksum.
import { beforeAll, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { encodeFrames } from '../src/zstd/encode-frames.ts'
import { scanFrames } from '../src/zstd/scan-frames.ts'
import { loadZstdCodec } from '../src/zstd/zstd-codec.ts'
import type { ZstdCodec } from '../src/zstd/zstd-codec.ts'
import { ZstdFrameError } from '../src/zstd/zstd-frame-error.ts'
import { cliCompress, concatBytes, eventLines, frameLines, lineChecksumValid } from './zstd-helpers.ts'

let codec: ZstdCodec

beforeAll(async () => {
  codec = await loadZstdCodec()
})

/** Reads the whole file as the store would; returns what stopped it, or the lines when nothing did. */
function read(file: Uint8Array): { verdict: string } | { lines: Buffer[]; tail: string; goodEnd: number } {
  const scan = scanFrames(file)
  if (scan.tail.kind === 'corrupt') return { verdict: `scanner:${scan.tail.error.reason ?? ''}` }
  const lines: Buffer[] = []
  for (const info of scan.frames) {
    try {
      lines.push(...frameLines(codec, { info, bytes: file.subarray(info.offset, info.offset + info.length) }))
    } catch (error) {
      if (!ZstdFrameError.is(error)) throw error
      return { verdict: `decoder:${error.code}` }
    }
  }
  return { lines, tail: scan.tail.kind, goodEnd: scan.goodEnd }
}

function checkLines(lines: readonly Buffer[], expected: readonly Buffer[]): string {
  if (lines.some((line) => !lineChecksumValid(line))) return 'line-check'
  const seqs = lines.map((line) => (JSON.parse(line.toString('utf8')) as { seq: number }).seq)
  if (seqs.some((seq, index) => seq !== index)) return 'line-check'
  if (lines.length === expected.length && lines.every((line, index) => line.equals(expected[index]!)))
    return 'harmless'
  return 'missed'
}

function fixture(middle: (content: Buffer) => Uint8Array): {
  file: Buffer
  starts: number[]
  expected: Buffer[]
} {
  const batches = [eventLines(4, 0), eventLines(40, 4), eventLines(3, 44), eventLines(9, 47)]
  const frames = batches.map((batch, index) =>
    index === 1
      ? middle(concatBytes(batch))
      : encodeFrames(batch, { codec, targetFrameBytes: Infinity }).bytes,
  )
  const starts: number[] = []
  let offset = 0
  for (const frame of frames) {
    starts.push(offset)
    offset += frame.length
  }
  return {
    file: concatBytes(frames),
    starts,
    expected: batches.flat().map((line) => line.subarray(0, line.length - 1)),
  }
}

const layouts = {
  ours: (content: Buffer) => codec.compressFrame(content, 3),
  'zstd CLI with checksum': (content: Buffer) => cliCompress(content, ['-3']),
} as const

describe('Z3 long runs', () => {
  for (const [name, middle] of Object.entries(layouts)) {
    it(
      `Z3: every single-bit flip of a middle frame (${name}) is caught; frames after it are never dropped`,
      () => {
        const { file, starts, expected } = fixture(middle)
        const tally = new Map<string, number>()
        for (let at = starts[1]!; at < starts[2]!; at++) {
          for (let bit = 0; bit < 8; bit++) {
            const damaged = Buffer.from(file)
            damaged[at]! ^= 1 << bit
            const result = read(damaged)
            let verdict = 'verdict' in result ? result.verdict : checkLines(result.lines, expected)
            if (verdict === 'missed' && !('verdict' in result) && result.tail !== 'none') verdict = 'dropped'
            tally.set(verdict, (tally.get(verdict) ?? 0) + 1)
          }
        }
        console.info(
          `Z3 bit flips, ${name} (${starts[2]! - starts[1]!} bytes): ${JSON.stringify(Object.fromEntries([...tally].sort()))}`,
        )
        expect(tally.get('missed')).toBeUndefined()
        expect(tally.get('dropped')).toBeUndefined()
      },
      testTime(600_000),
    )
  }

  it(
    'Z3: a zeroed 512-byte sector is caught, unless it reaches into the last frame: then it is a tail cut before it',
    () => {
      const { file, starts, expected } = fixture(layouts.ours)
      for (let at = 0; at + 64 < file.length; at += 7) {
        const damaged = Buffer.from(file)
        damaged.fill(0, at, Math.min(at + 512, damaged.length))
        const result = read(damaged)
        if ('verdict' in result) continue
        const verdict = checkLines(result.lines, expected)
        if (verdict === 'line-check') continue
        // the only outcome without an error: the damage reaches into the last frame, so no valid
        // frame follows it and it reads as a torn tail (as for plain files), cut before the damage
        expect(verdict).toBe('missed')
        expect(at + 512).toBeGreaterThan(starts[3]!)
        expect(result.tail).not.toBe('none')
        expect(result.goodEnd).toBeLessThanOrEqual(at)
        expect(result.lines).toEqual(expected.slice(0, result.lines.length))
      }
    },
    testTime(600_000),
  )
})
