import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import { fc, test as propertyTest } from '@fast-check/vitest'
import { coreEventRegistry } from '@agent-ledger/session-events'
import type { LoggedEvent } from '@agent-ledger/session-events'
import { createProjection } from '@agent-ledger/session-projection'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { SessionStoreError } from '@agent-ledger/session-store'

import { encodeEventLine, encodeJsonLine, LineSplitter, LOG_FILE_NAME, scanLog } from '../src/format.ts'
import type { JsonlStore } from '../src/index.ts'
import type { ScanOutcome } from '../src/format.ts'
import { recordCrashSection } from './support/crash-summary.ts'
import {
  closedSessionInputs,
  collect,
  coreTestStore,
  fileIdentity,
  lineStarts,
  makeTempDir,
  placeSession,
  withFlippedByte,
  writeCoreSession,
} from './support/sessions.ts'

const limits = { maxLineBytes: 64 * 1024 * 1024, maxDepth: 256 }

/** Scans in-memory bytes exactly as the store scans a file (chunks, projection). */
async function scanBytes(
  content: Buffer,
  options: { chunkSizes?: readonly number[]; maxLineBytes?: number } = {},
): Promise<{ outcome: ScanOutcome; events: LoggedEvent[] }> {
  const chunkSizes = options.chunkSizes ?? [1024 * 1024]
  const chunks = (): AsyncIterable<Buffer> => {
    const parts: Buffer[] = []
    let position = 0
    for (let index = 0; position < content.length; index += 1) {
      const size = Math.max(1, chunkSizes[index % chunkSizes.length]!)
      parts.push(content.subarray(position, position + size))
      position += size
    }
    return (async function* fromParts() {
      for (const part of parts) yield await Promise.resolve(part)
    })()
  }
  const projection = createProjection()
  const events: LoggedEvent[] = []
  const scanLimits = { ...limits, maxLineBytes: options.maxLineBytes ?? limits.maxLineBytes }
  const outcome = await scanLog(chunks(), {
    limits: scanLimits,
    registry: coreEventRegistry,
    file: 'mem/session.v4.jsonl',
    onEvent: (event) => {
      projection.apply(event)
      events.push(event)
    },
  })
  return { outcome, events }
}

function line(seq: number, extra: Record<string, unknown> = {}): Buffer {
  return encodeEventLine({
    seq,
    time: '2026-01-01T00:00:00.000Z',
    type: 'user/message',
    data: { message: { role: 'user', content: `note ${seq}` } },
    ...extra,
  })
}

let temp: { path: string; cleanup: () => void }
let store: JsonlStore
let fixture: Buffer
let starts: number[]

beforeAll(async () => {
  temp = makeTempDir()
  store = coreTestStore(temp.path).store
  fixture = readFileSync(await writeCoreSession(store, 'fixture', closedSessionInputs(20)))
  starts = lineStarts(fixture)
})

afterAll(() => {
  temp.cleanup()
})

/** The fixture with line `number` (1-based; line 1 is the header) replaced by `replacement` (which carries its own `\n`). */
function replaceLine(number: number, replacement: Buffer): Buffer {
  return Buffer.concat([
    fixture.subarray(0, starts[number - 1]),
    replacement,
    fixture.subarray(starts[number] ?? fixture.length),
  ])
}

async function caught(promise: Promise<unknown>): Promise<SessionStoreError> {
  try {
    await promise
  } catch (error) {
    if (SessionStoreError.is(error)) return error
    throw error
  }
  throw new Error('expected a SessionStoreError, found success')
}

describe('line splitter', () => {
  it('splits only on 0x0A: \\r and raw U+2028/U+2029 are data', () => {
    const splitter = new LineSplitter({ maxLineBytes: 100 })
    const lines: string[] = []
    const sink = {
      line: (bytes: Buffer) => {
        lines.push(bytes.toString('utf8'))
        return false
      },
      oversizeLine: () => false,
    }
    splitter.push(Buffer.from('a\r\nb\u2028c\u2029d\n\ne'), sink)
    expect(lines).toEqual(['a\r', 'b\u2028c\u2029d', ''])
    expect(splitter.finish()).toMatchObject({ offset: 14, length: 1, firstByte: 0x65 })
  })

  it('hands out the same lines at the same offsets whatever the chunk boundaries', () => {
    const content = Buffer.from('{"a":1}\n\n{"b":"\u2028x"}\nlast line\n')
    for (const sizes of [[content.length], [1], [2, 3], [7], [8, 1, 30]]) {
      const splitter = new LineSplitter({ maxLineBytes: 1024 })
      const seen: [string, number][] = []
      const sink = {
        line: (bytes: Buffer, offset: number) => seen.push([bytes.toString('utf8'), offset]) < 0,
        oversizeLine: () => false,
      }
      for (let at = 0, index = 0; at < content.length; index += 1) {
        const size = sizes[index % sizes.length]!
        splitter.push(content.subarray(at, at + size), sink)
        at += size
      }
      expect(splitter.finish()).toBeNull()
      expect(seen).toEqual([
        ['{"a":1}', 0],
        ['', 8],
        ['{"b":"\u2028x"}', 9],
        ['last line', 22],
      ])
    }
  })

  it('I8: counts a line longer than maxLineBytes across chunks without buffering it', () => {
    const splitter = new LineSplitter({ maxLineBytes: 10 })
    const seen: unknown[] = []
    const sink = {
      line: (bytes: Buffer, offset: number) => {
        seen.push(['line', bytes.toString(), offset])
        return false
      },
      oversizeLine: (offset: number, length: number) => {
        seen.push(['oversize', offset, length])
        return false
      },
    }
    splitter.push(Buffer.from('ok\n0123'), sink)
    for (let index = 0; index < 100; index += 1) splitter.push(Buffer.from('x'.repeat(1000)), sink)
    splitter.push(Buffer.from('\nafter\n' + 'y'.repeat(50)), sink)
    expect(seen).toEqual([
      ['line', 'ok', 0],
      ['oversize', 3, 100_004],
      ['line', 'after', 100_008],
    ])
    expect(splitter.finish()).toEqual({ offset: 100_014, length: 50, bytes: null, firstByte: 0x79 })
  })
})

describe('reader (scanner through the store)', () => {
  propertyTest.prop([fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 8 })], {
    numRuns: 40,
  })('finds the same events and outcome whatever the chunk boundaries', async (chunkSizes) => {
    const torn = Buffer.concat([fixture, Buffer.from('{"seq":20,"ti')])
    const reference = await scanBytes(torn)
    const chunked = await scanBytes(torn, { chunkSizes })
    expect(chunked.outcome).toEqual(reference.outcome)
    expect(chunked.events).toEqual(reference.events)
    expect(reference.outcome.tornTail).toMatchObject({ offset: fixture.length, reason: 'unterminated' })
  })

  it('I1: every single-bit flip (0x01 and 0x20) of a middle line is detected with its location; lines after it are not dropped', async () => {
    const lineNumber = 9 // seq 7
    const start = starts[lineNumber - 1]!
    const end = starts[lineNumber]! - 1
    let injected = 0
    let detected = 0
    let checksumOnly = 0
    for (let index = start; index < end; index += 1) {
      for (const mask of [0x01, 0x20]) {
        const damaged = withFlippedByte(fixture, index, mask)
        injected += 1
        const { outcome, events } = await scanBytes(damaged)
        const damage = outcome.damage
        expect(damage, `flip at ${index} with ${mask}`).not.toBeNull()
        expect(events).toHaveLength(7)
        expect(outcome.lastSeq).toBe(6)
        expect(damage).toMatchObject({
          code: 'CORRUPT_LINE',
          line: lineNumber,
          offset: start,
          lastGoodSeq: 6,
        })
        let stillJson = false
        try {
          JSON.parse(damaged.subarray(start, end).toString('utf8'))
          stillJson = true
        } catch {
          // The flip broke the JSON: still detected (reason json/utf8), skipped by the I1 definition.
        }
        if (stillJson) {
          checksumOnly += 1
          expect(damage!.details['reason']).toBe('checksum')
        }
        detected += 1
      }
    }
    expect(detected).toBe(injected)
    expect(checksumOnly).toBeGreaterThan(100)
    await recordCrashSection('I1', {
      crash_points_injected: 0,
      acked_events_lost: 0,
      bitflips_injected: injected,
      bitflips_detected: detected,
      bitflips_json_still_valid: checksumOnly,
      silent_acceptances: injected - detected,
    })
  })

  it('I1: through the store, a read-only open returns the good prefix with the error and writes stay refused', async () => {
    const damaged = withFlippedByte(fixture, starts[8]! + 30, 0x01)
    const path = placeSession(temp.path, 'i1', damaged)
    const before = fileIdentity(path)
    const read = await store.openReader('i1', { allowDamaged: true })
    expect(read.lastSeq).toBe(6)
    expect(read.projection.nextSeq).toBe(7)
    expect(read.error).toMatchObject({
      code: 'CORRUPT_LINE',
      seq: 7,
      lastGoodSeq: 6,
      location: { line: 9, offset: starts[8] },
    })
    expect(read.error!.details).toMatchObject({ reason: 'checksum' })
    expect((await caught(store.openReader('i1'))).code).toBe('CORRUPT_LINE')
    expect((await caught(store.openWriter('i1'))).code).toBe('CORRUPT_LINE')
    const verify = await store.verify('i1')
    expect(verify).toMatchObject({ status: 'damaged', lastSeq: 6, damage: { code: 'CORRUPT_LINE' } })
    const streamed: LoggedEvent[] = []
    const error = await caught(
      (async () => {
        for await (const event of store.readEvents('i1')) streamed.push(event)
      })(),
    )
    expect(error.code).toBe('CORRUPT_LINE')
    expect(streamed.map((event) => event.seq)).toEqual([0, 1, 2, 3, 4, 5, 6])
    expect(fileIdentity(path)).toEqual(before)
  })

  it('I2: a garbled middle line (not JSON, or JSON that is not an object) is CORRUPT_LINE with the reason', async () => {
    const cases: [string, string][] = [
      ['{"seq":7,"ty\n', 'json'],
      ['[]\n', 'not-object'],
      ['null\n', 'not-object'],
      ['"x"\n', 'not-object'],
    ]
    for (const [replacement, reason] of cases) {
      const { outcome } = await scanBytes(replaceLine(9, Buffer.from(replacement)))
      expect(outcome.damage).toMatchObject({
        code: 'CORRUPT_LINE',
        line: 9,
        offset: starts[8],
        lastGoodSeq: 6,
      })
      expect(outcome.damage!.details['reason']).toBe(reason)
    }
  })

  it('I3: invalid UTF-8 (0xFF, overlong C0 AF, an encoded lone surrogate) is CORRUPT_LINE utf8, never U+FFFD', async () => {
    for (const bad of [[0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80]]) {
      const good = line(7)
      const at = good.indexOf('note')
      const damaged = Buffer.concat([good.subarray(0, at), Buffer.from(bad), good.subarray(at)])
      const { outcome } = await scanBytes(replaceLine(9, damaged))
      expect(outcome.damage).toMatchObject({ code: 'CORRUPT_LINE', line: 9, offset: starts[8] })
      expect(outcome.damage!.details['reason']).toBe('utf8')
    }
  })

  it('I3: lone surrogates written through the API round-trip escaped; raw U+2028/U+2029 round-trip as data', async () => {
    const writer = await store.create({ id: 'unicode' })
    const content = 'lone \ud800 high, \udc00 low, line\u2028sep\u2029para'
    writer.append({ type: 'user/message', data: { message: { role: 'user', content } } })
    await writer.close()
    const bytes = readFileSync(join(temp.path, 'unicode', LOG_FILE_NAME))
    expect(bytes.toString('utf8')).toContain('lone \\ud800 high, \\udc00 low')
    expect(bytes.includes(Buffer.from('\u2028', 'utf8'))).toBe(true)
    const [event] = await collect(store.readEvents('unicode'))
    expect(event).toMatchObject({ data: { message: { content } } })
  })

  it('I4: a deleted middle line is SEQ_GAP with expected, found and offset', async () => {
    const gap = Buffer.concat([fixture.subarray(0, starts[8]), fixture.subarray(starts[9])])
    const { outcome } = await scanBytes(gap)
    expect(outcome.damage).toMatchObject({
      code: 'SEQ_GAP',
      line: 9,
      offset: starts[8],
      seq: 8,
      lastGoodSeq: 6,
    })
    expect(outcome.damage!.details).toMatchObject({ expected: 7, found: 8 })
  })

  it('I5: a repeated seq (a byte-for-byte repeat or another event) ends the prefix: a fenced-writer tail to the end, never damage', async () => {
    const seven = fixture.subarray(starts[8], starts[9])
    const duplicated = Buffer.concat([fixture.subarray(0, starts[9]), seven, fixture.subarray(starts[9])])
    const other = line(7, { time: '2026-01-01T09:00:00.000Z' })
    const conflicting = Buffer.concat([fixture.subarray(0, starts[9]), other, fixture.subarray(starts[9])])
    for (const content of [duplicated, conflicting]) {
      // Every line from the repeat on is the tail, the good-looking seqs 8.. after it included.
      const { outcome, events } = await scanBytes(content, { chunkSizes: [97] })
      expect(outcome.damage).toBeNull()
      expect(outcome.lastSeq).toBe(7)
      expect(outcome.goodEndOffset).toBe(starts[9])
      expect(outcome.tornTail).toEqual({
        offset: starts[9],
        bytes: content.length - starts[9]!,
        reason: 'fenced-writer',
        line: 10,
      })
      expect(events.map((event) => event.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7])
    }
    // Through the store: the reader gets the prefix and the tail, without an error; the writer
    // quarantines the tail byte for byte and appends after the prefix.
    const path = placeSession(temp.path, 'i5', conflicting)
    const before = fileIdentity(path)
    const read = await store.openReader('i5')
    expect(fileIdentity(path)).toEqual(before)
    expect(read.error).toBeNull()
    expect(read.lastSeq).toBe(7)
    expect(read.tornTail).toEqual({
      reason: 'fenced-writer',
      bytes: conflicting.length - starts[9]!,
      location: { file: `i5/${LOG_FILE_NAME}`, line: 10, offset: starts[9] },
    })
    const writer = await store.openWriter('i5')
    const repair = writer.recovery.backendRepairs.find((entry) => entry.kind === 'torn-tail')
    expect(repair).toMatchObject({ droppedBytes: conflicting.length - starts[9]! })
    expect(
      readFileSync(join(temp.path, repair!.quarantinedTo!)).equals(conflicting.subarray(starts[9])),
    ).toBe(true)
    expect(writer.durableSeq).toBe(7)
    await writer.close()
  })

  it('I6: a malformed seq with a valid checksum is INVALID_EVENT on field seq', async () => {
    for (const seq of ['7.5', '-1', '9007199254740993', '"7"', 'null', '1e400']) {
      const json = `{"seq":${seq},"time":"2026-01-01T00:00:00.000Z","type":"turn/start","data":{"turn":1}}`
      const { outcome } = await scanBytes(replaceLine(9, encodeJsonLine(json)))
      expect(outcome.damage, seq).toMatchObject({
        code: 'INVALID_EVENT',
        line: 9,
        offset: starts[8],
        lastGoodSeq: 6,
      })
      expect(outcome.damage!.details).toMatchObject({ field: 'seq' })
    }
  })

  it('I8: a line over maxLineBytes is LINE_TOO_LARGE found while streaming; a deep line is TOO_DEEP or CORRUPT_LINE, never a RangeError', async () => {
    const big = encodeJsonLine(
      JSON.stringify({ seq: 7, time: '2026-01-01T00:00:00.000Z', type: 'x/y', data: 'x'.repeat(8192) }),
    )
    const { outcome } = await scanBytes(replaceLine(9, big), { maxLineBytes: 4096, chunkSizes: [1000] })
    expect(outcome.damage).toMatchObject({
      code: 'LINE_TOO_LARGE',
      line: 9,
      offset: starts[8],
      lastGoodSeq: 6,
    })
    expect(outcome.damage!.details).toMatchObject({ bytes: big.length - 1, limit: 4096 })
    const depth = 100_000
    const deepWithChecksum = encodeJsonLine(`{"seq":7,"data":${'['.repeat(depth)}${']'.repeat(depth)}}`)
    const checked = await scanBytes(replaceLine(9, deepWithChecksum))
    expect(checked.outcome.damage).toMatchObject({ code: 'TOO_DEEP', line: 9, offset: starts[8] })
    expect(checked.outcome.damage!.details).toMatchObject({ limit: 256 })
    const rawDeep = Buffer.from(`${'['.repeat(depth)}${']'.repeat(depth)}\n`)
    const raw = await scanBytes(replaceLine(9, rawDeep))
    expect(raw.outcome.damage).toMatchObject({ code: 'CORRUPT_LINE', line: 9 })
    expect(raw.outcome.damage!.details['reason']).toBe('too-deep')
  })

  it('V5: an unknown type with ignorable:true is kept, counted and skipped by the projection; seq contiguity counts it', async () => {
    const writer = await store.create({ id: 'v5' })
    writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'before' } } })
    await writer.close()
    const path = join(temp.path, 'v5', LOG_FILE_NAME)
    const future = encodeEventLine({
      seq: 1,
      time: '2026-01-01T00:00:00.000Z',
      type: 'future/thing',
      data: { x: [1, 2] },
      ignorable: true,
    })
    const after = encodeEventLine({
      seq: 2,
      time: '2026-01-01T00:00:01.000Z',
      type: 'user/message',
      data: { message: { role: 'user', content: 'after' } },
    })
    placeSession(temp.path, 'v5', Buffer.concat([readFileSync(path), future, after]))
    const read = await store.openReader('v5')
    expect(read.lastSeq).toBe(2)
    expect(read.projection.stats.ignoredUnknown).toBe(1)
    expect(read.projection.deriveMessages().map((message) => message.content)).toEqual(['before', 'after'])
    const events = await collect(store.readEvents('v5'))
    expect(events[1]).toEqual({
      seq: 1,
      time: '2026-01-01T00:00:00.000Z',
      type: 'future/thing',
      data: { x: [1, 2] },
      ignorable: true,
    })
    expect(encodeEventLine(events[1]!).equals(future)).toBe(true)
    const reopened = await store.openWriter('v5')
    expect(reopened.recovery.repairs).toEqual([])
    expect(reopened.append({ type: 'turn/start', data: { turn: 1 } }).seq).toBe(3)
    await reopened.close()
  })

  it('V6: an unknown type without ignorable is UNKNOWN_EVENT_TYPE; the prefix is readable, writes refused', async () => {
    const unknown = encodeEventLine({
      seq: 7,
      time: '2026-01-01T00:00:00.000Z',
      type: 'future/thing',
      data: {},
    })
    const path = placeSession(temp.path, 'v6', replaceLine(9, unknown))
    const before = fileIdentity(path)
    const read = await store.openReader('v6', { allowDamaged: true })
    expect(read.lastSeq).toBe(6)
    expect(read.error).toMatchObject({
      code: 'UNKNOWN_EVENT_TYPE',
      seq: 7,
      location: { offset: starts[8], line: 9 },
    })
    expect(read.error!.details).toMatchObject({ type: 'future/thing' })
    expect((await caught(store.openWriter('v6'))).code).toBe('UNKNOWN_EVENT_TYPE')
    expect(fileIdentity(path)).toEqual(before)
  })

  it('refuses a checksummed event that breaks the projection rules as INVALID_EVENT with the projection code', async () => {
    const replace = encodeEventLine({
      seq: 7,
      time: '2026-01-01T00:00:00.000Z',
      type: 'user/message',
      data: { message: { role: 'user', content: 'replacing nothing' } },
      surfaceOp: { op: 'replace', startSeq: 5, endSeq: 1 },
      sourceEventSeqs: [1, 5],
    })
    const { outcome } = await scanBytes(replaceLine(9, replace))
    expect(outcome.damage).toMatchObject({ code: 'INVALID_EVENT', line: 9, seq: 7, lastGoodSeq: 6 })
    expect(typeof outcome.damage!.details['projectionCode']).toBe('string')
  })

  it('readEvents streams a range and stops early', async () => {
    const events = await collect(store.readEvents('fixture', { fromSeq: 5, toSeq: 8 }))
    expect(events.map((event) => event.seq)).toEqual([5, 6, 7, 8])
  })
})
