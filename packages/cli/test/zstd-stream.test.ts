import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'

import { loadZstdCodec } from '@agent-ledger/session-store-jsonl/format'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { zstdDecoderName, zstdText } from '../src/commands/zstd-stream.ts'
import { makeRoot } from './support/sessions.ts'

let root: string
let cleanup: () => void
beforeEach(() => {
  ;({ root, cleanup } = makeRoot('al-zstd-'))
})
afterEach(() => cleanup())

const encoder = new TextEncoder()

async function read(path: string): Promise<{ text: string; pieces: number; sha256: string; bytes: number }> {
  const hash = createHash('sha256')
  let bytes = 0
  let text = ''
  let pieces = 0
  for await (const piece of zstdText(path, hash, (count) => (bytes += count))) {
    text += piece
    pieces += 1
  }
  return { text, pieces, sha256: hash.digest('hex'), bytes }
}

function write(name: string, ...parts: Uint8Array[]): { path: string; file: Buffer } {
  const file = Buffer.concat(parts)
  const path = join(root, name)
  writeFileSync(path, file)
  return { path, file }
}

/** A skippable frame (RFC 8878 3.1.2): magic 0x184D2A5?, a 4-byte size, that many bytes. */
function skippable(content: string): Uint8Array {
  const body = encoder.encode(content)
  const frame = Buffer.alloc(8 + body.length)
  frame.writeUInt32LE(0x184d2a53, 0)
  frame.writeUInt32LE(body.length, 4)
  frame.set(body, 8)
  return frame
}

/**
 * A frame written by hand: single segment, one-byte content size, one raw block (as a
 * compressor writes incompressible data); with `checksum`, the flag and 4 bytes that are not
 * the content's XXH64 (a damaged checksum).
 */
function rawFrame(content: string, checksum = false): Uint8Array {
  const body = encoder.encode(content)
  const frame = Buffer.alloc(4 + 1 + 1 + 3 + body.length + (checksum ? 4 : 0))
  frame.writeUInt32LE(0xfd2fb528, 0)
  frame[4] = 0x20 | (checksum ? 0x04 : 0) // single segment; content size in 1 byte
  frame[5] = body.length
  const blockHeader = 1 | (0 << 1) | (body.length << 3) // last, raw
  frame[6] = blockHeader & 0xff
  frame[7] = (blockHeader >> 8) & 0xff
  frame[8] = (blockHeader >> 16) & 0xff
  frame.set(body, 9)
  return frame
}

function lines(from: number, count: number): string {
  let text = ''
  for (let index = from; index < from + count; index += 1)
    text += `${JSON.stringify({
      timestamp: '2026-03-03T08:00:00.000Z',
      type: 'event_msg',
      // A digest per line keeps the compressed file large (a real rollout compresses about 5 times).
      payload: { type: 'token_count', index, pad: createHash('sha256').update(String(index)).digest('hex') },
    })}\n`
  return text
}

describe('zstdText: .jsonl.zst read as a stream', () => {
  it('decodes several frames and skips skippable frames; hashes and counts the compressed bytes', async () => {
    const codec = await loadZstdCodec()
    const first = lines(0, 200)
    const second = lines(200, 300)
    const { path, file } = write(
      'multi.jsonl.zst',
      codec.compressFrame(encoder.encode(first), 3),
      skippable('an index a writer left'),
      codec.compressFrame(encoder.encode(second), 3),
      rawFrame('{"raw": true}\n'),
    )
    const result = await read(path)
    expect(result.text).toBe(`${first}${second}{"raw": true}\n`)
    expect(result.sha256).toBe(createHash('sha256').update(file).digest('hex'))
    expect(result.bytes).toBe(file.length)
  })

  it('a file cut short names the offset of the frame it cuts', async () => {
    const codec = await loadZstdCodec()
    const one = codec.compressFrame(encoder.encode(lines(0, 50)), 3)
    const two = codec.compressFrame(encoder.encode(lines(50, 50)), 3)
    const { path } = write('cut.jsonl.zst', one, two.subarray(0, two.length - 5))
    await expect(read(path)).rejects.toMatchObject({
      code: 'IO_ERROR',
      message: `${path}: expected Zstandard frames, found a frame cut short at offset ${one.length}`,
    })
    // Cut inside a frame header, and right after a magic number.
    const { path: header } = write('header.jsonl.zst', one, two.subarray(0, 6))
    await expect(read(header)).rejects.toMatchObject({
      message: expect.stringContaining(`cut short at offset ${one.length}`) as unknown,
    })
  })

  it('a corrupted byte is refused with the offset where the stream breaks', async () => {
    const codec = await loadZstdCodec()
    const one = codec.compressFrame(encoder.encode(lines(0, 50)), 3)
    const two = Buffer.from(codec.compressFrame(encoder.encode(lines(50, 50)), 3))
    // The magic number of the second frame.
    const magic = Buffer.from(two)
    magic[0] = 0x29
    const { path: notFrame } = write('magic.jsonl.zst', one, magic)
    await expect(read(notFrame)).rejects.toMatchObject({
      code: 'IO_ERROR',
      message: `${notFrame}: expected Zstandard frames, found bytes that are not a frame at offset ${one.length}`,
    })
    // A block header whose type is the reserved one (3): hand-made frame, block header at byte 6.
    const raw = Buffer.from(rawFrame('{"a": 1}\n'))
    raw[6] = raw[6]! | 0b110
    const { path: reserved } = write('reserved.jsonl.zst', one, raw)
    await expect(read(reserved)).rejects.toMatchObject({
      message: `${reserved}: expected Zstandard frames, found a block of the reserved type at offset ${one.length + 6}`,
    })
    // The first byte of a compressed block (its literals header: magic 4, descriptor 1,
    // window 1, block header 3): the decoder refuses the block; the frame's offset is named.
    const body = Buffer.from(two)
    body[9] = body[9]! ^ 0xff
    const { path: damaged } = write('block.jsonl.zst', one, body)
    await expect(read(damaged)).rejects.toMatchObject({
      code: 'IO_ERROR',
      message: expect.stringContaining(
        `${damaged}: expected Zstandard frames, found a frame its decoder refuses at offset ${one.length} (`,
      ) as unknown,
    })
    // A content checksum that does not match: libzstd (node:zlib) checks it, fzstd does not.
    const { path: checksum } = write('checksum.jsonl.zst', one, rawFrame('{"a": 1}\n', true))
    if (zstdDecoderName() === 'node:zlib') {
      await expect(read(checksum)).rejects.toMatchObject({
        message: expect.stringContaining(
          `found a frame its decoder refuses at offset ${one.length}`,
        ) as unknown,
      })
    } else expect((await read(checksum)).text).toBe(`${lines(0, 50)}{"a": 1}\n`)
    // The reserved bit of a frame header descriptor.
    const descriptor = Buffer.from(rawFrame('{"a": 1}\n'))
    descriptor[4] = descriptor[4]! | 0x08
    const { path: reservedBit } = write('bit.jsonl.zst', descriptor)
    await expect(read(reservedBit)).rejects.toMatchObject({
      message: `${reservedBit}: expected Zstandard frames, found a frame header with its reserved bit set at offset 4`,
    })
  })

  it('decodes a large single frame as a stream: its text arrives in many pieces while the file is read', async () => {
    // A Codex rollout is usually one frame: it must not be decoded whole. 4 MB of lines in
    // one frame; the file is read in 256 KiB chunks and each yields what it decoded.
    const codec = await loadZstdCodec()
    const text = lines(0, 40_000)
    expect(text.length).toBeGreaterThan(4_000_000)
    const frame = codec.compressFrame(encoder.encode(text), 1)
    const { path } = write('large.jsonl.zst', frame)
    const result = await read(path)
    expect(result.text).toBe(text)
    expect(result.pieces).toBeGreaterThanOrEqual(Math.floor(frame.length / (256 * 1024)))
    expect(result.pieces).toBeGreaterThan(1)
    expect(['node:zlib', 'fzstd']).toContain(zstdDecoderName())
  })
})
