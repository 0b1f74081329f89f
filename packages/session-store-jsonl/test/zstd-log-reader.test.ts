// The `.zstd` log reader on its own (no store): frames to the plain line pipeline, the torn
// frame rule (Z1, Z2), corruption in the middle (Z3), line alignment (Z4), skippable frames
// (Z5), bounded decompression (S4), and files written by the `zstd` CLI.
import { constants, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import { coreEventRegistry } from '@agent-ledger/session-events'
import type { LoggedEvent } from '@agent-ledger/session-events'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { nodeFsOps } from '../src/fs-ops.ts'
import { DEFAULT_STORE_LIMITS } from '../src/limits.ts'
import { scanLog } from '../src/read-log.ts'
import { readFileChunks } from '../src/read-log.ts'
import { scanZstdLog } from '../src/zstd-log-reader.ts'
import type { ZstdScanOutcome } from '../src/zstd-log-reader.ts'
import { encodeZstdLines, encodeZstdLogStart } from '../src/zstd-log-writer.ts'
import { loadZstdCodec } from '../src/zstd/zstd-codec.ts'
import type { ZstdCodec } from '../src/zstd/zstd-codec.ts'
import { scanFrames } from '../src/zstd/scan-frames.ts'
import {
  closedSessionInputs,
  makeTempDir,
  range,
  coreTestStore,
  withFlippedByte,
  writeCoreSession,
} from './support/sessions.ts'
import { cliCheck, cliCompress } from './zstd-helpers.ts'

let codec: ZstdCodec
let temp: { path: string; cleanup: () => void }
let plain: Buffer
let plainLines: Buffer[]

beforeAll(async () => {
  codec = await loadZstdCodec()
  temp = makeTempDir('al-zstd-reader-')
  const { store } = coreTestStore(temp.path)
  plain = readFileSync(await writeCoreSession(store, 'fixture', closedSessionInputs(40)))
  plainLines = []
  for (let at = 0; at < plain.length;) {
    const end = plain.indexOf(0x0a, at) + 1
    plainLines.push(plain.subarray(at, end))
    at = end
  }
})

afterAll(() => {
  temp.cleanup()
})

let counter = 0
async function scanBytes(
  bytes: Uint8Array,
  limits: Partial<typeof DEFAULT_STORE_LIMITS> = {},
): Promise<{
  outcome: ZstdScanOutcome
  events: LoggedEvent[]
}> {
  const path = join(temp.path, `scan-${counter++}.zstd`)
  writeFileSync(path, bytes)
  const handle = await nodeFsOps.open(path, constants.O_RDONLY)
  const events: LoggedEvent[] = []
  try {
    const outcome = await scanZstdLog(handle, {
      codec,
      limits: { ...DEFAULT_STORE_LIMITS, ...limits },
      registry: coreEventRegistry,
      file: 's/session.v4.jsonl.zstd',
      onEvent: (event) => events.push(event),
    })
    return { outcome, events }
  } finally {
    await handle.close()
  }
}

async function plainEvents(bytes: Buffer): Promise<LoggedEvent[]> {
  const path = join(temp.path, `plain-${counter++}.jsonl`)
  writeFileSync(path, bytes)
  const handle = await nodeFsOps.open(path, constants.O_RDONLY)
  const events: LoggedEvent[] = []
  try {
    const outcome = await scanLog(readFileChunks(handle, { chunkBytes: 1 << 20 }), {
      limits: DEFAULT_STORE_LIMITS,
      registry: coreEventRegistry,
      file: 'plain',
      onEvent: (event) => events.push(event),
    })
    expect(outcome.damage).toBeNull()
    return events
  } finally {
    await handle.close()
  }
}

/** Header frame, then `flushes` frames of the events (what the store's writer does). */
function framedLike(flushes: number): { bytes: Buffer; frameStarts: number[] } {
  const events = plainLines.slice(1)
  const per = Math.ceil(events.length / flushes)
  const parts = [encodeZstdLogStart(codec, plainLines[0]!, [])]
  for (let index = 0; index < flushes; index += 1) {
    parts.push(encodeZstdLines(codec, Buffer.concat(events.slice(index * per, (index + 1) * per))))
  }
  const bytes = Buffer.concat(parts)
  return { bytes, frameStarts: scanFrames(bytes).frames.map((frame) => frame.offset) }
}

describe('zstd log reader', () => {
  it('reads a file of a header frame plus one frame per flush: same events as the plain file, zstd -d gives the plain bytes', async () => {
    const { bytes } = framedLike(5)
    const { outcome, events } = await scanBytes(bytes)
    expect(outcome.damage).toBeNull()
    expect(outcome.tornTail).toBeNull()
    expect(outcome.zstd.frames).toBe(6)
    expect(outcome.goodEndOffset).toBe(bytes.length)
    expect(events).toEqual(await plainEvents(plain))
    const check = cliCheck(bytes)
    expect(check.testOk).toBe(true)
    expect(check.plain?.equals(plain)).toBe(true)
  })

  it('a frame whose first line repeats a seq starts a fenced-writer tail to the end; a repeat inside a frame is SEQ_CONFLICT', async () => {
    const { bytes, frameStarts } = framedLike(5)
    const events = plainLines.slice(1)
    // A stale batch (the frames a fenced writer appends) repeating seqs 10 and 11, then a good-looking frame.
    const stale = Buffer.concat([
      encodeZstdLines(codec, Buffer.concat(events.slice(10, 12))),
      encodeZstdLines(codec, Buffer.concat(events.slice(12, 14))),
    ])
    const fenced = await scanBytes(Buffer.concat([bytes, stale]))
    expect(fenced.outcome.damage).toBeNull()
    expect(fenced.outcome.lastSeq).toBe(events.length - 1)
    expect(fenced.outcome.goodEndOffset).toBe(bytes.length)
    expect(fenced.outcome.tornTail).toEqual({
      offset: bytes.length,
      bytes: stale.length,
      reason: 'fenced-writer',
      line: plainLines.length + 1,
    })
    expect(fenced.events).toEqual(await plainEvents(plain))
    // The last frame's lines followed by a repeat of seq 10 in the same frame: no writer's batch.
    const last = frameStarts[frameStarts.length - 1]!
    const lastLines = events.slice(Math.ceil(events.length / 5) * 4)
    const mixed = Buffer.concat([
      bytes.subarray(0, last),
      encodeZstdLines(codec, Buffer.concat([...lastLines, events[10]!])),
    ])
    const damaged = await scanBytes(mixed)
    expect(damaged.outcome.damage).toMatchObject({
      code: 'SEQ_CONFLICT',
      line: plainLines.length + 1,
      details: { frameIndex: 5, compressedOffset: last },
    })
    expect(damaged.outcome.tornTail).toBeNull()
  })

  it('reads a plain v4 file compressed by the zstd CLI, in one frame and in several frames', async () => {
    const expected = await plainEvents(plain)
    const oneFrame = cliCompress(plain, ['-3'], true)
    expect(scanFrames(oneFrame).frames.length).toBe(1)
    const one = await scanBytes(oneFrame)
    expect(one.outcome.damage).toBeNull()
    expect(one.events).toEqual(expected)
    // Several frames: the CLI concatenates frames of whole lines.
    const half = plainLines.length >> 1
    const several = Buffer.concat([
      cliCompress(Buffer.concat(plainLines.slice(0, 1))),
      cliCompress(Buffer.concat(plainLines.slice(1, half)), ['-19']),
      cliCompress(Buffer.concat(plainLines.slice(half)), ['-1'], true),
    ])
    const many = await scanBytes(several)
    expect(many.outcome.damage).toBeNull()
    expect(many.outcome.zstd.frames).toBe(3)
    expect(many.events).toEqual(expected)
  })

  it('Z1: a last frame cut at every offset is a torn tail from its start; frames 1-4 always decode', async () => {
    const { bytes, frameStarts } = framedLike(5)
    const lastStart = frameStarts[frameStarts.length - 1]!
    // 40 events in 5 flushes of 8: the first four flushes hold 32 events.
    const keptEvents = 32
    for (const cut of range(lastStart, bytes.length)) {
      const { outcome, events } = await scanBytes(bytes.subarray(0, cut))
      expect(outcome.damage).toBeNull()
      if (cut === lastStart) {
        expect(outcome.tornTail).toBeNull()
      } else {
        expect(outcome.tornTail).toMatchObject({ offset: lastStart, bytes: cut - lastStart })
      }
      expect(outcome.goodEndOffset).toBe(lastStart)
      expect(events.length).toBe(keptEvents)
    }
  })

  it('Z3: a flipped byte in a middle frame is CORRUPT_FRAME (or a line error inside it) or harmless, never a torn tail', async () => {
    const { bytes, frameStarts } = framedLike(5)
    const start = frameStarts[2]!
    const end = frameStarts[3]!
    const original = (await scanBytes(bytes)).events
    const verdicts = new Map<string, number>()
    for (const index of range(start, end)) {
      const { outcome, events } = await scanBytes(withFlippedByte(bytes, index, 0x01))
      expect(outcome.tornTail).toBeNull()
      // A flip the decoder cannot see and that leaves every line intact (a window size bit) is harmless.
      const verdict = outcome.damage === null ? 'harmless' : outcome.damage.code
      if (outcome.damage === null) expect(events).toEqual(original)
      else expect(outcome.damage.details['frameIndex']).toBe(2)
      verdicts.set(verdict, (verdicts.get(verdict) ?? 0) + 1)
    }
    expect(verdicts.get('CORRUPT_FRAME')).toBeGreaterThan(end - start - 8)
  })
})
