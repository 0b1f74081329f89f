import { fc, test as propertyTest } from '@fast-check/vitest'
import { describe, expect, it } from 'vitest'

import {
  CRC_SUFFIX_BYTES,
  crc32cHex,
  decodeLine,
  encodeEventLine,
  encodeJsonLine,
  findEmbeddedValidLine,
  verifyLineChecksum,
} from '../src/line-codec.ts'

const limits = { maxLineBytes: 1024 * 1024, maxDepth: 256 }

/** Without the trailing `\n`. */
function body(line: Buffer): Buffer {
  return line.subarray(0, line.length - 1)
}

describe('line codec', () => {
  it('computes the standard CRC-32C check value', () => {
    expect(crc32cHex(Buffer.from('123456789'))).toBe('e3069283')
  })

  it('encodes the worked example of FORMAT.md exactly', () => {
    const event = { seq: 0, time: '2026-01-01T00:00:00.000Z', type: 'turn/start', data: { turn: 1 } }
    const expected =
      '{"seq":0,"time":"2026-01-01T00:00:00.000Z","type":"turn/start","data":{"turn":1},"crc":"79ea275d"}\n'
    expect(encodeEventLine(event).toString('utf8')).toBe(expected)
    const hashed = '{"seq":0,"time":"2026-01-01T00:00:00.000Z","type":"turn/start","data":{"turn":1}'
    expect(crc32cHex(Buffer.from(hashed, 'utf8'))).toBe('79ea275d')
  })

  it('writes members in the canonical order whatever the input order', () => {
    const line = encodeEventLine({
      ignorable: true,
      data: { x: 1 },
      type: 'future/thing',
      time: '2026-01-01T00:00:00.000Z',
      seq: 3,
    })
    expect(line.toString('utf8')).toMatch(
      /^\{"seq":3,"time":"[^"]+","type":"future\/thing","data":\{"x":1\},"ignorable":true,"crc":"[0-9a-f]{8}"\}\n$/,
    )
  })

  it('ends every line with the fixed 18-byte suffix and one newline', () => {
    const line = encodeJsonLine(JSON.stringify({ a: 'é\u2028', b: [1, 2] }))
    expect(line[line.length - 1]).toBe(0x0a)
    const suffix = line.subarray(line.length - 1 - CRC_SUFFIX_BYTES, line.length - 1).toString('latin1')
    expect(suffix).toMatch(/^,"crc":"[0-9a-f]{8}"\}$/)
    expect(line.indexOf(0x0a)).toBe(line.length - 1)
  })

  it('round-trips a value and strips the crc member', () => {
    const line = encodeJsonLine(JSON.stringify({ seq: 1, text: 'a\u2028b', nested: { deep: [null, true] } }))
    const decoded = decodeLine(body(line), limits)
    expect(decoded).toEqual({
      ok: true,
      value: { seq: 1, text: 'a\u2028b', nested: { deep: [null, true] } },
      // The UTF-8 text that was parsed, handed on so a reader need not decode the bytes again.
      text: body(line).toString('utf8'),
    })
  })

  it('S3: keeps an own __proto__ member as data and pollutes nothing', () => {
    const json = '{"seq":1,"data":{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}}'
    const decoded = decodeLine(body(encodeJsonLine(json)), limits)
    expect(decoded.ok).toBe(true)
    if (!decoded.ok) return
    const data = decoded.value['data'] as Record<string, unknown>
    expect(Object.hasOwn(data, '__proto__')).toBe(true)
    expect(Object.getPrototypeOf(data)).toBe(Object.prototype)
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined()
    expect(JSON.stringify(decoded.value)).toBe(
      '{"seq":1,"data":{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}}',
    )
  })

  it('I2: reports json and not-object failures', () => {
    expect(decodeLine(Buffer.from('{"seq":7,"ty'), limits)).toMatchObject({ ok: false, reason: 'json' })
    for (const text of ['[]', 'null', '"x"', '12']) {
      expect(decodeLine(Buffer.from(text), limits)).toMatchObject({ ok: false, reason: 'not-object' })
    }
  })

  it('I3: refuses invalid UTF-8 instead of substituting U+FFFD', () => {
    const good = body(encodeJsonLine(JSON.stringify({ seq: 1, text: 'héllo' })))
    const bad = Buffer.from(good)
    bad[good.indexOf(0xc3)] = 0xff
    expect(decodeLine(bad, limits)).toMatchObject({ ok: false, reason: 'utf8' })
    // An encoded lone surrogate (CESU-8) is not UTF-8 either.
    const surrogate = Buffer.concat([
      Buffer.from('{"a":"'),
      Buffer.from([0xed, 0xa0, 0x80]),
      Buffer.from('"}'),
    ])
    expect(decodeLine(surrogate, limits)).toMatchObject({ ok: false, reason: 'utf8' })
  })

  it('I1: a changed byte that keeps the JSON valid fails the checksum', () => {
    const line = body(encodeJsonLine(JSON.stringify({ seq: 7, data: { text: 'hello' } })))
    const flipped = Buffer.from(line)
    const at = flipped.indexOf('hello')
    flipped[at] = flipped[at]! ^ 0x01
    expect(decodeLine(flipped, limits)).toMatchObject({ ok: false, reason: 'checksum', seq: 7 })
  })

  it('rejects a suffix with upper-case hex or a missing brace', () => {
    const line = body(encodeJsonLine(JSON.stringify({ seq: 1 })))
    const upper = Buffer.from(
      line
        .toString('latin1')
        .replace(/"crc":"([0-9a-f]{8})"/, (_, hex: string) => `"crc":"${hex.toUpperCase()}"`),
      'latin1',
    )
    if (!upper.equals(line)) expect(verifyLineChecksum(upper)).toBe(false)
    expect(verifyLineChecksum(line.subarray(0, line.length - 1))).toBe(false)
    expect(verifyLineChecksum(Buffer.from('{}'))).toBe(false)
  })

  // The depth counters themselves are the core's (session-store test/codec.test.ts).
  it('I8/S9: refuses a line nested past the limit, not one wide with brackets', () => {
    const line = body(encodeJsonLine(`{"a":${'['.repeat(300)}${']'.repeat(300)}}`))
    expect(decodeLine(line, limits)).toMatchObject({ ok: false, reason: 'too-deep', checksumValid: true })
    // Many brackets side by side are not deep.
    const wide = body(encodeJsonLine(JSON.stringify({ a: Array.from({ length: 1000 }, () => ({})) })))
    expect(decodeLine(wide, limits).ok).toBe(true)
  })

  it('I8/S9: checks depth after parsing, on the parsed nodes, with the same verdict as the byte count', () => {
    // Exactly at the limit is accepted; one more level is refused, with the checksum judged.
    const atLimit = body(encodeJsonLine(`{"a":${'['.repeat(255)}${']'.repeat(255)}}`))
    expect(decodeLine(atLimit, limits).ok).toBe(true)
    const over = body(encodeJsonLine(`{"a":${'['.repeat(256)}${']'.repeat(256)}}`))
    expect(decodeLine(over, limits)).toMatchObject({ ok: false, reason: 'too-deep', checksumValid: true })
    // Brackets inside strings (code, quoted JSON in a tool output) never count.
    const quoted = body(
      encodeJsonLine(JSON.stringify({ text: `${'[{'.repeat(5000)}`, more: '}]'.repeat(300) })),
    )
    expect(decodeLine(quoted, limits).ok).toBe(true)
    // A deep line cut short is still reported too-deep (not json), as the byte count before parsing did.
    const torn = Buffer.from(`{"a":${'['.repeat(300)}`)
    expect(decodeLine(torn, limits)).toMatchObject({ ok: false, reason: 'too-deep', checksumValid: false })
    // Deep objects as well as deep arrays.
    const objects = body(encodeJsonLine(`${'{"a":'.repeat(300)}1${'}'.repeat(300)}`))
    expect(decodeLine(objects, limits)).toMatchObject({ ok: false, reason: 'too-deep', checksumValid: true })
  })

  it('I2: invalid UTF-8 fails the utf8 check while a genuine U+FFFD in a valid line passes', () => {
    const valid = body(encodeJsonLine(JSON.stringify({ seq: 1, text: 'replacement \uFFFD kept' })))
    expect(decodeLine(valid, limits)).toMatchObject({
      ok: true,
      value: { seq: 1, text: 'replacement \uFFFD kept' },
    })
    for (const bad of [[0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82]]) {
      const line = Buffer.concat([Buffer.from('{"seq":1,"text":"'), Buffer.from(bad), Buffer.from('"}')])
      expect(decodeLine(line, limits), bad.join(',')).toMatchObject({ ok: false, reason: 'utf8' })
    }
  })

  it('reports too-large before reading the bytes', () => {
    const line = body(encodeJsonLine(JSON.stringify({ seq: 1, text: 'x'.repeat(100) })))
    expect(decodeLine(line, { maxLineBytes: 50, maxDepth: 256 })).toMatchObject({
      ok: false,
      reason: 'too-large',
    })
  })

  it('T6: finds a valid event line glued onto a torn one', () => {
    const torn = Buffer.from('{"seq":20,"time":"2026-01-01T00:0')
    const valid = body(
      encodeEventLine({ seq: 20, time: '2026-01-01T00:00:00.000Z', type: 'turn/start', data: { turn: 2 } }),
    )
    const glued = Buffer.concat([torn, valid])
    expect(findEmbeddedValidLine(glued, limits)).toBe(torn.length)
    expect(findEmbeddedValidLine(Buffer.alloc(100), limits)).toBe(-1)
    expect(findEmbeddedValidLine(valid, limits)).toBe(-1)
  })

  propertyTest.prop([fc.jsonValue({ maxDepth: 6 }), fc.nat()])(
    'decodes what it encodes for any JSON payload',
    (payload, seq) => {
      const value = { seq, payload }
      const line = encodeJsonLine(JSON.stringify(value))
      const decoded = decodeLine(body(line), limits)
      expect(decoded.ok).toBe(true)
      if (decoded.ok) expect(JSON.stringify(decoded.value)).toBe(JSON.stringify(value))
    },
  )
})
