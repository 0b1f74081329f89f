/**
 * The pure parts of a sidecar search index: a block holding a fragment always passes its
 * signature check (a miss would be a missed hit), records round-trip, and a flipped byte
 * anywhere in a record is refused.
 */
import { describe, expect, it } from 'vitest'

import { crc32c } from '../src/crc32c.ts'
import {
  BlockBuilder,
  chainStep,
  decodeBlock,
  decodeHeader,
  encodeHeader,
  fragmentBits,
  isIndexedLine,
  RECORD_BYTES,
  SIGNATURE_OFFSET,
  signatureHas,
} from '../src/search-index/index.ts'

/** UTF-8 bytes of `text` (the core has no Buffer; its tests keep to the standard library it uses). */
function utf8(text: string): Uint8Array {
  return Uint8Array.from(unescape(encodeURIComponent(text)), (char) => char.charCodeAt(0))
}

/** A log line as the store writes it: `{"seq":N,...,"crc":"xxxxxxxx"}` with a right checksum. */
function line(seq: number, text: string): Uint8Array {
  const body = `{"seq":${seq},"type":"user/message","data":{"content":${JSON.stringify(text)}}`
  const crc = (crc32c(utf8(body)) >>> 0).toString(16).padStart(8, '0')
  return utf8(`${body},"crc":"${crc}"}`)
}

function build(texts: readonly string[]): Uint8Array[] {
  const builder = new BlockBuilder({ nextSeq: 0, offset: 100 }, 1 << 20, crc32c)
  let offset = 100
  for (const [seq, text] of texts.entries()) {
    const bytes = line(seq, text)
    builder.add(seq, offset, bytes)
    offset += bytes.length + 1
  }
  return [builder.close(0)!]
}

describe('search index signatures and records', () => {
  it('a block holding a fragment, in any ASCII case, has every bit of it; an absent word mostly does not', () => {
    const words = ['Migration', 'createSessionStore', 'grep_tool', 'ZANZIBAR', 'db/007.sql', 'héllo wörld']
    const [record] = build(words.map((word, index) => `line ${index}: the ${word} broke`))
    for (const word of words) {
      for (const fragment of word
        .toLowerCase()
        .split(/\s+/u)
        .filter((part) => /^[\x20-\x7e]+$/u.test(part))) {
        expect(signatureHas(record!, SIGNATURE_OFFSET, fragmentBits([fragment])), fragment).toBe(true)
      }
    }
    expect(fragmentBits(['zz'])).toEqual([])
    expect(signatureHas(record!, SIGNATURE_OFFSET, fragmentBits(['kilimanjaro-qqxj']))).toBe(false)
  })

  it('U+212A KELVIN SIGN and U+017F LONG S count as k and s, as the core matcher folds them (a miss would hide a hit the scan finds)', () => {
    const [record] = build(['the \u212Aelvin scale', 'a \u017Ftatus line'])
    for (const fragment of ['kelvin', 'status', 'the kel', 'a sta']) {
      expect(signatureHas(record!, SIGNATURE_OFFSET, fragmentBits([fragment])), fragment).toBe(true)
    }
    expect(/kelvin/iu.test('\u212Aelvin') && /status/iu.test('\u017Ftatus')).toBe(true)
    const [plain] = build(['the elvin scale', 'a tatus line'])
    expect(signatureHas(plain!, SIGNATURE_OFFSET, fragmentBits(['kelvin']))).toBe(false)
  })

  it('records round-trip; a flipped byte anywhere is refused; the chain tells next, duplicate and gap apart', () => {
    const header = { log: 'session.v4.jsonl', headerBytes: 321, headerCrc: 0xdeadbeef, blockBytes: 32768 }
    const encoded = encodeHeader(header, crc32c)
    expect(encoded.length).toBe(RECORD_BYTES)
    expect(decodeHeader(encoded, 0, crc32c)).toEqual(header)
    const [record] = build(['one', 'two', 'three'])
    const block = decodeBlock(record!, 0, crc32c)!
    expect(block).toMatchObject({ firstSeq: 0, lastSeq: 2, start: 100 })
    for (const at of [0, 5, 13, 40, SIGNATURE_OFFSET + 7, RECORD_BYTES - 1]) {
      const flipped = Uint8Array.from(record!)
      flipped[at]! ^= 0x10
      expect(decodeBlock(flipped, 0, crc32c), `byte ${at}`).toBeNull()
    }
    expect(decodeBlock(record!.subarray(0, RECORD_BYTES - 1), 0, crc32c)).toBeNull()
    expect(chainStep({ nextSeq: 0, offset: 100 }, block)).toBe('next')
    expect(chainStep({ nextSeq: 3, offset: block.end }, block)).toBe('duplicate')
    expect(chainStep({ nextSeq: 0, offset: 50 }, block)).toBe('gap')
  })

  it('the last-line check wants the seq, the crc and a right checksum', () => {
    const bytes = line(7, 'hello')
    const crc = Number.parseInt(
      String.fromCharCode(...bytes.subarray(bytes.length - 10, bytes.length - 2)),
      16,
    )
    expect(isIndexedLine(bytes, { seq: 7, crc }, crc32c)).toBe(true)
    expect(isIndexedLine(bytes, { seq: 8, crc }, crc32c)).toBe(false)
    expect(isIndexedLine(bytes, { seq: 7, crc: crc ^ 1 }, crc32c)).toBe(false)
    const damaged = Uint8Array.from(bytes)
    damaged[20]! ^= 0x01
    expect(isIndexedLine(damaged, { seq: 7, crc }, crc32c)).toBe(false)
  })
})
