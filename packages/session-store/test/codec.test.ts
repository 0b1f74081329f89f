import { fc } from '@fast-check/vitest'
import { describe, expect, it } from 'vitest'

import { crc32c, lineCrc, verifyLineChecksum } from '../src/index.ts'
import { decodeEventLine, encodeEvent, DEFAULT_LIMITS } from '../src/event-codec.ts'
import { buildHeader, parseHeaderLine } from '../src/header.ts'
import {
  checksumJson,
  decodeLine,
  jsonDepth,
  LineBytes,
  mayNestDeeper,
  utf8,
  valueDepth,
  verifyLineBytes,
} from '../src/line-codec.ts'
import { coreEventRegistry } from '@agent-ledger/session-events'

const bytes = utf8

// Lines copied from packages/session-store-jsonl/FORMAT.md (sections 3-5): the spec's own bytes.
const FORMAT_HEADER =
  '{"format":"agent-ledger.session","version":4,"id":"demo-1","createdAt":"2026-01-01T00:00:00.000Z","cwd":"/home/me/project","integrity":"crc32c","crc":"645ca330"}'
const FORMAT_WORKED =
  '{"seq":0,"time":"2026-01-01T00:00:00.000Z","type":"turn/start","data":{"turn":1},"crc":"79ea275d"}'
const FORMAT_TOOL_RESULT =
  '{"seq":4,"time":"2026-01-01T00:00:05.000Z","type":"tool/result","data":{"message":{"role":"tool","tool_call_id":"call_1","content":"README.md\\nsrc/"}},"sourceEventSeqs":[3],"crc":"8ea84ff7"}'

describe('crc32c (pure, slicing-by-8)', () => {
  it('gives the CRC-32C check value e3069283 for "123456789" (FORMAT.md section 5)', () => {
    expect(crc32c(bytes('123456789')).toString(16)).toBe('e3069283')
  })

  it('agrees with the bit-by-bit definition on every length 0..300 and every alignment', () => {
    const slow = (input: Uint8Array): number => {
      let crc = 0xffffffff
      for (const byte of input) {
        crc ^= byte
        for (let bit = 0; bit < 8; bit += 1) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1
      }
      return (crc ^ 0xffffffff) >>> 0
    }
    const buffer = new Uint8Array(310)
    for (let index = 0; index < buffer.length; index += 1) buffer[index] = (index * 151 + 7) & 0xff
    for (let length = 0; length <= 300; length += 1) {
      const slice = buffer.subarray(length % 8, (length % 8) + length)
      expect(crc32c(slice)).toBe(slow(slice))
    }
  })
})

describe('line codec: the exact bytes of FORMAT.md', () => {
  it('checks the spec lines and reads their crc', () => {
    for (const line of [FORMAT_HEADER, FORMAT_WORKED, FORMAT_TOOL_RESULT]) {
      expect(verifyLineChecksum(line, crc32c)).toBe(true)
    }
    expect(lineCrc(FORMAT_WORKED)).toBe('79ea275d')
    expect(lineCrc('{"seq":0}')).toBeNull()
  })

  it('encodes events to the spec bytes, canonical member order whatever the input order', () => {
    const encoded = encodeEvent(
      { data: { turn: 1 }, type: 'turn/start' },
      { seq: 0, time: '2026-01-01T00:00:00.000Z' },
      { sessionId: 'demo-1', registry: coreEventRegistry, limits: DEFAULT_LIMITS, crc32c },
    )
    expect(encoded.line).toBe(FORMAT_WORKED)
    expect(encoded.crc).toBe('79ea275d')
    expect(encoded.byteLength).toBe(bytes(FORMAT_WORKED).length)
    const toolResult = encodeEvent(
      {
        sourceEventSeqs: [3],
        type: 'tool/result',
        data: { message: { role: 'tool', tool_call_id: 'call_1', content: 'README.md\nsrc/' } },
      },
      { seq: 4, time: '2026-01-01T00:00:05.000Z' },
      { sessionId: 'demo-1', registry: coreEventRegistry, limits: DEFAULT_LIMITS, crc32c },
    )
    expect(toolResult.line).toBe(FORMAT_TOOL_RESULT)
  })

  it('builds the spec header and parses it back', () => {
    const built = buildHeader(
      { cwd: '/home/me/project' },
      {
        id: 'demo-1',
        createdAt: '2026-01-01T00:00:00.000Z',
        redaction: null,
        limits: DEFAULT_LIMITS,
        crc32c,
      },
    )
    expect(built.line).toBe(FORMAT_HEADER)
    const parsed = parseHeaderLine(FORMAT_HEADER, { expectedId: 'demo-1', maxDepth: 256, crc32c })
    expect(parsed.cwd).toBe('/home/me/project')
    expect(Object.hasOwn(parsed, 'crc')).toBe(false)
  })

  it('hashes non-ASCII text as UTF-8 (byte length, not UTF-16 length)', () => {
    const encoded = checksumJson('{"text":"héllo ✓ 𝄞"}', crc32c)
    expect(encoded.byteLength).toBe(bytes(encoded.line).length)
    expect(verifyLineChecksum(encoded.line, crc32c)).toBe(true)
    expect(verifyLineChecksum(encoded.line.replace('é', 'e'), crc32c)).toBe(false)
  })

  it('keeps an own __proto__ member as data', () => {
    const line = checksumJson('{"seq":0,"data":{"__proto__":{"x":1}}}', crc32c).line
    const decoded = decodeLine(line, { maxLineLength: 1000, maxDepth: 10, crc32c })
    expect(decoded.ok).toBe(true)
    if (!decoded.ok) return
    const data = decoded.value['data'] as Record<string, unknown>
    expect(Object.hasOwn(data, '__proto__')).toBe(true)
    expect(Object.getPrototypeOf(data)).toBe(Object.prototype)
  })

  it('without a CRC function (a format without checksums, v0): every check but the checksum, members kept', () => {
    const limits = { maxLineLength: 200, maxDepth: 3, crc32c: null }
    expect(decodeLine('{"seq":1,"crc":"not-a-checksum"}', limits)).toEqual({
      ok: true,
      value: { seq: 1, crc: 'not-a-checksum' },
    })
    expect(decodeLine('{"a":[[[[1]]]]}', limits)).toMatchObject({ ok: false, reason: 'too-deep' })
    expect(decodeLine('{"a":', limits)).toMatchObject({ ok: false, reason: 'json' })
    expect(decodeLine('[1]', limits)).toMatchObject({ ok: false, reason: 'not-object' })
  })

  it('reports each failed per-line check in order', () => {
    const limits = { maxLineLength: 200, maxDepth: 3, crc32c }
    expect(decodeLine('x'.repeat(201), limits)).toMatchObject({ ok: false, reason: 'too-large' })
    expect(decodeLine('{"a":[[[[1]]]]}', limits)).toMatchObject({ ok: false, reason: 'too-deep' })
    // Past the length where depth can exceed the limit: checked on the parsed nodes.
    const padded = `{"p":"${'['.repeat(40)}","a":[[[[1]]]]}`
    expect(decodeLine(padded, limits)).toMatchObject({ ok: false, reason: 'too-deep' })
    expect(decodeLine(`{"p":"${'['.repeat(40)}","a":[[1]]}`, limits)).toMatchObject({
      ok: false,
      reason: 'checksum',
    })
    // Cut short and deep: still too-deep, not json.
    expect(decodeLine(`{"p":"${'x'.repeat(40)}","a":[[[[[[`, limits)).toMatchObject({
      ok: false,
      reason: 'too-deep',
    })
    expect(decodeLine('{"a":', limits)).toMatchObject({ ok: false, reason: 'json' })
    expect(decodeLine('[1]', limits)).toMatchObject({ ok: false, reason: 'not-object' })
    expect(decodeLine(FORMAT_WORKED.replace('"turn":1', '"turn":2'), limits)).toMatchObject({
      ok: false,
      reason: 'checksum',
      seq: 0,
    })
  })

  // Moved from session-store-jsonl test/line-codec.test.ts (its byte-side copies went: one codec).
  it('I8/S9: counts nesting without recursion, outside strings only', () => {
    expect(jsonDepth('{"a":[1,{"b":[]}]}', 10)).toBe(4)
    expect(jsonDepth('{"a":"[[[[{{{{\\"[[["}', 10)).toBe(1)
    expect(jsonDepth(`{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}`, 256)).toBe(257)
    expect(valueDepth({ a: [1, { b: [] }] }, 10)).toBe(4)
    expect(valueDepth('[[[[', 10)).toBe(0)
    // The pre-filter counts brackets anywhere: fewer than the limit cannot nest deeper.
    expect(mayNestDeeper('{"a":[[1]]}', 3)).toBe(false)
    expect(mayNestDeeper('{"a":"[[[["}', 3)).toBe(true)
  })

  it('takes the checksum over the bytes a backend read, when it passes them', () => {
    const line = checksumJson(JSON.stringify({ seq: 1, text: 'héllo' }), crc32c).line
    const bytes = utf8(line)
    const limits = { maxLineLength: 1000, maxDepth: 10, crc32c }
    expect(verifyLineBytes(bytes, crc32c)).toBe(true)
    expect(decodeLine(line, { ...limits, bytes })).toMatchObject({ ok: true, value: { seq: 1 } })
    // The bytes are what is checked: a flipped byte fails even where the text is intact.
    const flipped = Uint8Array.from(bytes)
    flipped[10] = flipped[10]! ^ 0x01
    expect(verifyLineBytes(flipped, crc32c)).toBe(false)
    expect(decodeLine(line, { ...limits, bytes: flipped })).toMatchObject({ ok: false, reason: 'checksum' })
    // A suffix with upper-case hex or without its brace is not a suffix.
    expect(verifyLineBytes(utf8(FORMAT_WORKED), crc32c)).toBe(true)
    expect(verifyLineBytes(utf8(FORMAT_WORKED.replace('79ea275d', '79EA275D')), crc32c)).toBe(false)
    expect(verifyLineBytes(bytes.subarray(0, bytes.length - 1), crc32c)).toBe(false)
    expect(verifyLineBytes(utf8('{}'), crc32c)).toBe(false)
  })
})

describe("LineBytes: a writer's lines encoded once", () => {
  it('holds exactly the UTF-8 of the committed lines, each with its \\n, across refusals, growth and drops', () => {
    const text = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }))
    fc.assert(
      fc.property(
        fc.array(fc.tuple(text, fc.nat(40), fc.boolean(), fc.boolean()), { minLength: 1, maxLength: 30 }),
        (steps) => {
          const lines = new LineBytes()
          const kept: string[] = []
          let dropped = 0
          let end = 0
          for (const [value, repeat, commit, drop] of steps) {
            // Some lines long enough to grow the buffer past its first 64 KiB.
            const json = JSON.stringify({ seq: kept.length, data: value.repeat(repeat === 40 ? 3000 : 1) })
            const encoded = lines.encode(json, crc32c, 16 * 1024 * 1024)
            const alone = checksumJson(json, crc32c)
            expect(encoded).toEqual(alone)
            if (!commit) continue // refused: the next line overwrites it
            end = lines.commit()
            kept.push(alone.line)
            if (drop) {
              lines.drop(end)
              dropped = kept.length
            }
          }
          const expected = kept
            .slice(dropped)
            .map((line) => `${line}\n`)
            .join('')
          expect(lines.view(end)).toEqual(utf8(expected))
        },
      ),
      { numRuns: 300 },
    )
  })

  it('keeps the checksum suffix of a non-ASCII line that ends at the buffer edge (w1-kill seed 7331087)', () => {
    // The room asked for is the line's UTF-16 length plus the suffix; a line a few bytes
    // longer than its UTF-16 length, placed so that exactly that room is left, fits the
    // buffer but its suffix does not: it was written past the end (dropped), and the batch
    // had a line of NULs. Each line here is 10 bytes longer than its UTF-16 length.
    for (const wideText of ['é'.repeat(10), '文'.repeat(5), '😀'.repeat(5)]) {
      const lines = new LineBytes()
      const wide = JSON.stringify({ seq: 1, data: `${'y'.repeat(100)}${wideText}` })
      const fillerLength = 64 * 1024 - 36 - wide.length
      const filler = JSON.stringify({ seq: 0, data: 'x'.repeat(fillerLength - 19) })
      expect(filler.length).toBe(fillerLength)
      lines.encode(filler, crc32c, 16 * 1024 * 1024)
      lines.commit()
      expect(lines.encode(wide, crc32c, 16 * 1024 * 1024)).toEqual(checksumJson(wide, crc32c))
      const end = lines.commit()
      const expected = `${checksumJson(filler, crc32c).line}\n${checksumJson(wide, crc32c).line}\n`
      expect(lines.view(end)).toEqual(utf8(expected))
    }
  })

  it('encodes a line certainly over the limit on its own, leaving the buffer as it was', () => {
    const lines = new LineBytes()
    const first = lines.encode('{"seq":0}', crc32c, 100)
    const end = lines.commit()
    const huge = JSON.stringify({ seq: 1, data: 'x'.repeat(200) })
    expect(lines.encode(huge, crc32c, 100)).toEqual(checksumJson(huge, crc32c))
    expect(lines.commit()).toBe(end)
    expect(lines.view(end)).toEqual(utf8(`${first.line}\n`))
  })
})

describe('event line checks (decodeEventLine)', () => {
  const context = {
    sessionId: 'demo-1',
    registry: coreEventRegistry,
    limits: DEFAULT_LIMITS,
    crc32c,
    expectedSeq: 3,
    lastGoodSeq: 2,
  }
  const line = (seq: number): string =>
    checksumJson(
      `{"seq":${seq},"time":"2026-01-01T00:00:00.000Z","type":"user/message","data":{"message":{"role":"user","content":"hi"}}}`,
      crc32c,
    ).line

  it('a seq below the next one repeats it (SEQ_DUPLICATE); a negative seq is no position at all (INVALID_EVENT on seq)', () => {
    expect(decodeEventLine({ seq: 3, line: line(3) }, context)).toMatchObject({
      seq: 3,
      type: 'user/message',
    })
    expect(() => decodeEventLine({ seq: 3, line: line(1) }, context)).toThrow(
      expect.objectContaining({ code: 'SEQ_DUPLICATE', details: { expected: 3, found: 1 } }),
    )
    expect(() => decodeEventLine({ seq: 3, line: line(-1) }, context)).toThrow(
      expect.objectContaining({
        code: 'INVALID_EVENT',
        seq: 3,
        details: expect.objectContaining({ field: 'seq' }),
      }),
    )
  })
})

describe('header checks', () => {
  const options = { expectedId: 'demo-1', maxDepth: 256, crc32c }

  it('refuses a newer version before the checksum, naming both versions', () => {
    const newer = FORMAT_HEADER.replace('"version":4', '"version":5')
    expect(() => parseHeaderLine(newer, options)).toThrow(
      expect.objectContaining({ code: 'VERSION_TOO_NEW', details: { expected: 4, found: 5 } }),
    )
  })

  it('refuses a damaged header, another id, and a missing integrity scheme', () => {
    expect(() => parseHeaderLine(FORMAT_HEADER.replace('demo-1', 'demo-2'), options)).toThrow(
      expect.objectContaining({ code: 'INVALID_HEADER', details: { reason: 'checksum' } }),
    )
    expect(() => parseHeaderLine(FORMAT_HEADER, { ...options, expectedId: 'demo-9' })).toThrow(
      expect.objectContaining({
        code: 'HEADER_ID_MISMATCH',
        details: { field: 'id', expected: 'demo-9', found: 'demo-1' },
      }),
    )
    const noIntegrity = checksumJson(
      '{"format":"agent-ledger.session","version":4,"id":"demo-1","createdAt":"2026-01-01T00:00:00.000Z"}',
      crc32c,
    ).line
    expect(() => parseHeaderLine(noIntegrity, options)).toThrow(
      expect.objectContaining({ code: 'INVALID_HEADER' }),
    )
  })

  it('refuses header input naming another id or a bad field, naming the field', () => {
    const context = {
      id: 'demo-1',
      createdAt: '2026-01-01T00:00:00.000Z',
      redaction: null,
      limits: DEFAULT_LIMITS,
      crc32c,
    }
    expect(() => buildHeader({ id: 'other' }, context)).toThrow(
      expect.objectContaining({ code: 'INVALID_HEADER', details: { field: 'id' } }),
    )
    expect(() => buildHeader({ delegationDepth: -1 }, context)).toThrow(
      expect.objectContaining({ code: 'INVALID_HEADER', details: { field: 'delegationDepth' } }),
    )
  })
})
