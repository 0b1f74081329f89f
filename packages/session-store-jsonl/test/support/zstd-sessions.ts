/**
 * Helpers of the store-level `.zstd` tests: sessions written through the store in either
 * encoding, `.zstd` files placed as a crash or a foreign tool would leave them, frame offsets.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import type { EventInput } from '@agent-ledger/session-events'

import { scanFrames } from '../../src/format.ts'
import type { JsonlStore } from '../../src/index.ts'
import { withHeaderId } from './sessions.ts'

/** `session.v4.jsonl.zstd`. */
export const ZSTD_NAME = 'session.v4.jsonl.zstd'

const ZSTD_MAGIC = [0x28, 0xb5, 0x2f, 0xfd]
/** Frame header of {@link rawHeaderFrame}: no content size, not single-segment, window 1 MiB (windowLog 20). */
const RAW_FRAME_HEADER = [...ZSTD_MAGIC, 0x00, 0x50]

/**
 * A Zstandard frame holding `line` in one raw (stored) block: its compressed size is the
 * line's size plus 9 bytes, whatever the line says. Fixtures whose header frame is such a
 * frame can be placed under another id at the same byte offsets (see {@link placeZstdSession}).
 *
 * @param line - The header line, `\n` included (at most 128 KiB).
 */
function rawHeaderFrame(line: Uint8Array): Buffer {
  const block = 1 | (line.length << 3) // last block, type raw
  return Buffer.concat([
    Buffer.from([...RAW_FRAME_HEADER, block & 0xff, (block >> 8) & 0xff, (block >> 16) & 0xff]),
    line,
  ])
}

/** The header line inside a leading {@link rawHeaderFrame}, or null. */
function rawHeaderLine(content: Buffer): { line: Buffer; end: number } | null {
  if (content.length < 9 || !content.subarray(0, 6).equals(Buffer.from(RAW_FRAME_HEADER))) return null
  const block = content[6]! | (content[7]! << 8) | (content[8]! << 16)
  if ((block & 7) !== 1) return null
  const end = 9 + (block >> 3)
  return end <= content.length ? { line: content.subarray(9, end), end } : null
}

/**
 * `.zstd` log bytes whose header frame is re-encoded as a {@link rawHeaderFrame}: the same
 * content, and a header frame that {@link placeZstdSession} can give another id without
 * moving any later byte.
 *
 * @param bytes - A `.zstd` log the store wrote (the header in a frame of its own).
 * @param headerLine - That log's header line (`\n` included).
 */
export function withRawHeaderFrame(bytes: Buffer, headerLine: Buffer): Buffer {
  const second = frameStarts(bytes)[1] ?? bytes.length
  return Buffer.concat([rawHeaderFrame(headerLine), bytes.subarray(second)])
}

/**
 * Puts `content` as the `.zstd` log of session `id` under `root` (0700 directory, 0600
 * file). A leading {@link rawHeaderFrame} holding a valid header of another session gets the
 * id `id` at the same length (the header names its directory: FORMAT.md section 3).
 */
export function placeZstdSession(root: string, id: string, content: Uint8Array): string {
  const directory = join(root, id)
  mkdirSync(directory, { recursive: true, mode: 0o700 })
  const path = join(directory, ZSTD_NAME)
  writeFileSync(path, zstdWithHeaderId(content, id), { mode: 0o600 })
  return path
}

/**
 * The bytes {@link placeZstdSession} writes for `content` placed as session `id`.
 *
 * @param content - `.zstd` log bytes.
 * @param id - The session they are placed as.
 */
export function zstdWithHeaderId(content: Uint8Array, id: string): Buffer {
  const bytes = Buffer.from(content)
  const header = rawHeaderLine(bytes)
  if (header === null) return bytes
  const line = withHeaderId(header.line, id)
  return line === header.line ? bytes : Buffer.concat([rawHeaderFrame(line), bytes.subarray(header.end)])
}

/**
 * Writes a session through the one store API in `encoding` (the store's: a store over the
 * JSONL backend creates sessions in the encoding it was made with), flushing after each
 * batch (so a `.zstd` log gets the header frame plus one frame per batch). Returns the log's
 * path and bytes.
 *
 * @throws Error when `encoding` is not the store's (make the store with that encoding).
 */
export async function writeBatches(
  store: JsonlStore,
  request: {
    readonly id: string
    readonly encoding: 'plain' | 'zstd'
    readonly batches: readonly (readonly EventInput[])[]
  },
): Promise<{ path: string; bytes: Buffer }> {
  if (store.backend.encoding !== request.encoding) {
    throw new Error(
      `writeBatches: the store creates ${store.backend.encoding} sessions, the request asks for ${request.encoding}`,
    )
  }
  const writer = await store.create({ id: request.id, header: { cwd: '/srv/project' } })
  for (const batch of request.batches) {
    for (const input of batch) writer.append(input)
    await writer.flush()
  }
  await writer.close()
  const path = join(
    store.backend.capabilities.files.sessionDirectory(request.id),
    request.encoding === 'zstd' ? ZSTD_NAME : 'session.v4.jsonl',
  )
  return { path, bytes: readFileSync(path) }
}

/** Splits inputs into batches of the given sizes (the rest in a last batch). */
export function batchesOf(inputs: readonly EventInput[], sizes: readonly number[]): EventInput[][] {
  const batches: EventInput[][] = []
  let at = 0
  for (const size of sizes) {
    batches.push(inputs.slice(at, at + size))
    at += size
  }
  if (at < inputs.length) batches.push(inputs.slice(at))
  return batches
}

/** Start offsets of the frames of a `.zstd` file (every frame complete). */
export function frameStarts(bytes: Uint8Array): number[] {
  return scanFrames(bytes).frames.map((frame) => frame.offset)
}

/** A skippable frame (magic 0x184D2A5`variant`) holding `data`. */
export function skippableFrame(data: Uint8Array, variant = 0): Buffer {
  const header = Buffer.alloc(8)
  header.writeUInt32LE(0x184d2a50 + variant, 0)
  header.writeUInt32LE(data.length, 4)
  return Buffer.concat([header, data])
}
