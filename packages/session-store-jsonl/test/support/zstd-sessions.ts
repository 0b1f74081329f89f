/**
 * Helpers of the store-level `.zstd` tests: sessions written through the store in either
 * encoding, `.zstd` files placed as a crash or a foreign tool would leave them, frame offsets.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import type { EventInput } from '@agent-ledger/session-events'

import { scanFrames } from '../../src/format.ts'
import type { SessionStore } from '../../src/index.ts'

/** `session.v4.jsonl.zstd`. */
export const ZSTD_NAME = 'session.v4.jsonl.zstd'

/** Puts `content` as the `.zstd` log of session `id` under `root` (0700 directory, 0600 file). */
export function placeZstdSession(root: string, id: string, content: Uint8Array): string {
  const directory = join(root, id)
  mkdirSync(directory, { recursive: true, mode: 0o700 })
  const path = join(directory, ZSTD_NAME)
  writeFileSync(path, content, { mode: 0o600 })
  return path
}

/**
 * Writes a session through the store in `encoding`, flushing after each batch (so a `.zstd`
 * log gets the header frame plus one frame per batch). Returns the log's path and bytes.
 */
export async function writeBatches(
  store: SessionStore,
  request: {
    readonly id: string
    readonly encoding: 'plain' | 'zstd'
    readonly batches: readonly (readonly EventInput[])[]
  },
): Promise<{ path: string; bytes: Buffer }> {
  const writer = await store.create({
    id: request.id,
    encoding: request.encoding,
    header: { cwd: '/srv/project' },
  })
  for (const batch of request.batches) {
    for (const input of batch) writer.append(input)
    await writer.flush()
  }
  await writer.close()
  const path = join(
    store.sessionDirectory(request.id),
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
