// Z3: a corrupt byte inside a middle frame is caught by the scanner, the decoder or the
// per-line checksum; it never silently changes content and never drops the frames after it.
import { beforeAll, describe, expect, it } from 'vitest'

import { encodeFrames } from '../src/zstd/encode-frames.ts'
import { scanFrames } from '../src/zstd/scan-frames.ts'
import { loadZstdCodec } from '../src/zstd/zstd-codec.ts'
import type { ZstdCodec } from '../src/zstd/zstd-codec.ts'
import { ZstdFrameError } from '../src/zstd/zstd-frame-error.ts'
import {
  checksummedLine,
  cliCompress,
  concatBytes,
  eventLines,
  frameLines,
  lineChecksumValid,
} from './zstd-helpers.ts'

let codec: ZstdCodec

beforeAll(async () => {
  codec = await loadZstdCodec()
})

/** What caught a mutation. `missed` and `dropped` must never happen. */
type Verdict = `scanner:${string}` | `decoder:${string}` | 'line-check' | 'harmless' | 'missed' | 'dropped'

interface Fixture {
  readonly file: Buffer
  readonly frameStarts: readonly number[]
  readonly plainLines: readonly Buffer[]
}

function buildFixture(middleFrame: (lines: Buffer[]) => Uint8Array): Fixture {
  const header = checksummedLine({
    format: 'agent-ledger.session',
    version: 4,
    id: 'z3',
    createdAt: '2025-01-06T09:30:00.000Z',
  })
  const batches = [[header], eventLines(3, 0), eventLines(12, 3), eventLines(2, 15), eventLines(5, 17)]
  const frames = batches.map((batch, index) =>
    index === 2 ? middleFrame(batch) : encodeFrames(batch, { codec, targetFrameBytes: Infinity }).bytes,
  )
  const frameStarts: number[] = []
  let offset = 0
  for (const frame of frames) {
    frameStarts.push(offset)
    offset += frame.length
  }
  const plainLines = batches.flat().map((line) => line.subarray(0, line.length - 1))
  return { file: concatBytes(frames), frameStarts, plainLines }
}

/** Reads a (possibly damaged) file as the store would: scan, decode each frame, check each line. */
function judge(fixture: Fixture, file: Buffer, original: Map<string, Buffer[]>): Verdict {
  const scan = scanFrames(file)
  if (scan.tail.kind === 'corrupt') return `scanner:${scan.tail.error.reason ?? 'unknown'}`
  const lines: Buffer[] = []
  for (const info of scan.frames) {
    const bytes = file.subarray(info.offset, info.offset + info.length)
    const cached = original.get(`${info.offset}:${bytes.toString('base64')}`)
    if (cached !== undefined) {
      lines.push(...cached)
      continue
    }
    try {
      lines.push(...frameLines(codec, { info, bytes }))
    } catch (error) {
      if (!ZstdFrameError.is(error)) throw error
      return `decoder:${error.code}${error.reason === undefined ? '' : `/${error.reason}`}`
    }
  }
  // the store's line checks: checksum, then seq dense from 0 (the header line has no seq)
  let expectedSeq = 0
  for (const [index, line] of lines.entries()) {
    if (!lineChecksumValid(line)) return 'line-check'
    if (index === 0) continue
    const parsed = JSON.parse(line.toString('utf8')) as { seq?: unknown }
    if (parsed.seq !== expectedSeq) return 'line-check'
    expectedSeq += 1
  }
  const same =
    lines.length === fixture.plainLines.length &&
    lines.every((line, index) => line.equals(fixture.plainLines[index]!))
  if (same) return 'harmless'
  // a tail classification here would mean valid frames after the damage were treated as a torn tail
  if (scan.tail.kind !== 'none') return 'dropped'
  return 'missed'
}

function cacheOriginal(fixture: Fixture): Map<string, Buffer[]> {
  const cache = new Map<string, Buffer[]>()
  for (const info of scanFrames(fixture.file).frames) {
    if (info.index === 2) continue
    const bytes = fixture.file.subarray(info.offset, info.offset + info.length)
    cache.set(`${info.offset}:${bytes.toString('base64')}`, frameLines(codec, { info, bytes }))
  }
  return cache
}

/** Flips every byte of frame 2 in turn (XOR each mask) and tallies who caught it. */
function flipEveryByteOfFrame2(fixture: Fixture, masks: readonly number[]): Map<Verdict, number[]> {
  const original = cacheOriginal(fixture)
  const start = fixture.frameStarts[2]!
  const end = fixture.frameStarts[3]!
  const verdicts = new Map<Verdict, number[]>()
  for (let at = start; at < end; at++) {
    for (const mask of masks) {
      const file = Buffer.from(fixture.file)
      file[at]! ^= mask
      const verdict = judge(fixture, file, original)
      const list = verdicts.get(verdict) ?? []
      list.push(at - start)
      verdicts.set(verdict, list)
    }
  }
  return verdicts
}

function summary(verdicts: Map<Verdict, number[]>): Record<string, number> {
  const entries: [string, number][] = [...verdicts].map(([verdict, offsets]) => [verdict, offsets.length])
  return Object.fromEntries(entries.sort())
}

describe('Z3: corrupt byte inside a middle frame', () => {
  it('Z3: every byte of frame 2 (our frames, no content checksum) flipped: scanner, decoder or line checksum catch it', () => {
    const fixture = buildFixture((lines) => encodeFrames(lines, { codec, targetFrameBytes: Infinity }).bytes)
    const verdicts = flipEveryByteOfFrame2(fixture, [0xff])
    console.info(
      `Z3 ours (${fixture.frameStarts[3]! - fixture.frameStarts[2]!} bytes): ${JSON.stringify(summary(verdicts))}`,
    )
    expect(verdicts.get('missed')).toBeUndefined()
    expect(verdicts.get('dropped')).toBeUndefined()
    // the frame header's magic is the scanner's; flips in compressed data only the line checksum may catch
    expect([...verdicts.keys()].some((verdict) => verdict.startsWith('scanner:'))).toBe(true)
    expect([...verdicts.keys()].some((verdict) => verdict.startsWith('decoder:'))).toBe(true)
  })

  it('Z3: every byte of a zstd CLI frame (with XXH64 content checksum) flipped: the decoder catches content changes too', () => {
    const fixture = buildFixture((lines) => cliCompress(concatBytes(lines), ['-3']))
    const verdicts = flipEveryByteOfFrame2(fixture, [0xff])
    console.info(
      `Z3 CLI+checksum (${fixture.frameStarts[3]! - fixture.frameStarts[2]!} bytes): ${JSON.stringify(summary(verdicts))}`,
    )
    expect(verdicts.get('missed')).toBeUndefined()
    expect(verdicts.get('dropped')).toBeUndefined()
    // with XXH64 present the decoder rejects every content change: nothing is left for the line checksum
    expect(verdicts.get('line-check')).toBeUndefined()
  })
})
