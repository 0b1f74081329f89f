import type { Hash } from 'node:crypto'
import { open } from 'node:fs/promises'

import type { LoggedEvent } from '@agent-ledger/session-events'

import type { SessionWriter } from '@agent-ledger/session-store'

/** Bytes read back at a time when looking for the last newline. */
const BACK = 64 * 1024

/**
 * The offset just after the last newline in the first `size` bytes of a file (not before
 * `from`): what a follower may import, the rest being a line still being written.
 */
export async function completeEnd(
  path: string,
  range: { readonly from: number; readonly size: number },
): Promise<number> {
  const handle = await open(path, 'r')
  try {
    const buffer = Buffer.alloc(BACK)
    for (let end = range.size; end > range.from; end -= BACK) {
      const start = Math.max(range.from, end - BACK)
      const { bytesRead } = await handle.read(buffer, 0, end - start, start)
      const at = buffer.subarray(0, bytesRead).lastIndexOf(0x0a)
      if (at !== -1) return start + at + 1
    }
    return range.from
  } finally {
    await handle.close()
  }
}

/**
 * The text of bytes `[start, end)` of a file, in chunks; every byte of `[start, hashTo)` goes
 * into `hash` when given (a first pass hashing what it found, torn tail included).
 */
export async function* readRange(
  path: string,
  range: { readonly start: number; readonly end: number; readonly hashTo?: number },
  hash?: Hash,
): AsyncGenerator<string> {
  const handle = await open(path, 'r')
  try {
    const decoder = new TextDecoder('utf-8')
    const buffer = Buffer.alloc(1024 * 1024)
    const stop = Math.max(range.end, hash === undefined ? 0 : (range.hashTo ?? range.end))
    for (let at = range.start; at < stop;) {
      const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, stop - at), at)
      if (bytesRead === 0) break
      const chunk = buffer.subarray(0, bytesRead)
      hash?.update(chunk)
      if (at < range.end)
        yield decoder.decode(chunk.subarray(0, Math.min(bytesRead, range.end - at)), { stream: true })
      at += bytesRead
    }
    const rest = decoder.decode()
    if (rest !== '') yield rest
  } finally {
    await handle.close()
  }
}

/** True when bytes `[at, at + bytes.length)` of the file are still `bytes` (the file was not rewritten). */
export async function sameBytes(path: string, at: number, bytes: Buffer): Promise<boolean> {
  const handle = await open(path, 'r')
  try {
    const buffer = Buffer.alloc(bytes.length)
    const { bytesRead } = await handle.read(buffer, 0, bytes.length, at)
    return bytesRead === bytes.length && buffer.equals(bytes)
  } finally {
    await handle.close()
  }
}

/**
 * Appends a live import's new events through a writer kept open by the follow, when they follow
 * its last seq. Returns false (nothing written) when they do not: the stored session has events
 * the live import does not (closers an earlier import added), and the caller imports again.
 */
export async function appendEvents(
  writer: SessionWriter,
  events: readonly LoggedEvent[],
  setTime: (time: string) => void,
): Promise<boolean> {
  if (events.length === 0) return true
  if (writer.projection.nextSeq !== events[0]!.seq) return false
  for (const event of events) {
    setTime(event.time)
    const input: Record<string, unknown> = { type: event.type, data: event.data }
    if (event.surfaceOp !== undefined) input['surfaceOp'] = event.surfaceOp
    if (event.sourceEventSeqs !== undefined) input['sourceEventSeqs'] = event.sourceEventSeqs
    if (event.ignorable === true) input['ignorable'] = true
    const append = input as Parameters<SessionWriter['append']>[0]
    try {
      writer.append(append)
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'BUFFER_FULL') throw error
      await writer.flush()
      writer.append(append)
    }
  }
  await writer.flush()
  return true
}
