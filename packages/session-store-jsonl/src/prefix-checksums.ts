import { crc32c } from '@node-rs/crc32'

import type { FileHandleOps } from './fs-ops.ts'
import { CRC_SUFFIX_BYTES } from './line-codec.ts'
import { readFileChunks } from './read-log.ts'

const NEWLINE = 0x0a
/** `,"crc":"` */
const SUFFIX_HEAD = Buffer.from(',"crc":"', 'latin1')
const QUOTE = 0x22
const CLOSE_BRACE = 0x7d

/** What {@link verifyPrefixChecksums} found. */
export type PrefixCheck =
  | { readonly ok: true; readonly lines: number }
  | {
      readonly ok: false
      /** Byte offset of the first line that fails (or where the line count went wrong). */
      readonly offset: number
      /** 1-based line number in the log (the header is line 1). */
      readonly line: number
      readonly reason: 'checksum' | 'line-count'
    }

/** The CRC in a well-formed suffix of `bytes[start, end)`, or -1 (same rule as `verifyLineChecksum`). */
function suffixChecksum(bytes: Buffer, start: number, end: number): number {
  if (end - start <= CRC_SUFFIX_BYTES) return -1
  const suffix = end - CRC_SUFFIX_BYTES
  for (let index = 0; index < SUFFIX_HEAD.length; index += 1) {
    if (bytes[suffix + index] !== SUFFIX_HEAD[index]) return -1
  }
  if (bytes[end - 2] !== QUOTE || bytes[end - 1] !== CLOSE_BRACE) return -1
  let value = 0
  for (let index = suffix + SUFFIX_HEAD.length; index < end - 2; index += 1) {
    const byte = bytes[index]!
    let digit: number
    if (byte >= 0x30 && byte <= 0x39) digit = byte - 0x30
    else if (byte >= 0x61 && byte <= 0x66) digit = byte - 0x57
    else return -1
    value = value * 16 + digit
  }
  return value
}

function lineOk(bytes: Buffer, start: number, end: number): boolean {
  const expected = suffixChecksum(bytes, start, end)
  return expected !== -1 && crc32c(bytes.subarray(start, end - CRC_SUFFIX_BYTES)) >>> 0 === expected
}

/**
 * The checksum-only pass a write open runs over the prefix a projection checkpoint lets it
 * skip (issue 10, item 4): every line of `[start, end)` must end with `\n` and pass its
 * CRC-32C (FORMAT.md section 5), and there must be exactly `expectedLines` of them. No JSON
 * is parsed and no event is built: the native CRC runs at memory speed, so the pass costs a
 * read of the prefix plus a few hundred nanoseconds per line (see `pnpm bench --only checkpoint`).
 *
 * @param handle - The open log.
 * @param range - The byte range (the end of the header line to the end of event N's line),
 *   the number of lines it must hold, the first line's number, and the read size.
 * @returns `ok`, or the first line that fails.
 */
export async function verifyPrefixChecksums(
  handle: FileHandleOps,
  range: {
    readonly start: number
    readonly end: number
    readonly expectedLines: number
    readonly firstLine: number
    readonly chunkBytes: number
  },
): Promise<PrefixCheck> {
  let lines = 0
  let carry: Buffer | null = null
  let position = range.start
  const fail = (offset: number, reason: 'checksum' | 'line-count'): PrefixCheck => ({
    ok: false,
    offset,
    line: range.firstLine + lines,
    reason,
  })
  for await (const chunk of readFileChunks(handle, {
    chunkBytes: range.chunkBytes,
    start: range.start,
    end: range.end,
  })) {
    let base = position
    let from = 0
    if (carry !== null) {
      // Only a line straddling two reads is copied.
      base -= carry.length
      const newline = chunk.indexOf(NEWLINE)
      if (newline === -1) {
        carry = Buffer.concat([carry, chunk])
        position += chunk.length
        continue
      }
      const line = Buffer.concat([carry, chunk.subarray(0, newline)])
      if (!lineOk(line, 0, line.length)) return fail(base, 'checksum')
      lines += 1
      carry = null
      from = newline + 1
      base = position
    }
    let newline = chunk.indexOf(NEWLINE, from)
    while (newline !== -1) {
      if (!lineOk(chunk, from, newline)) return fail(base + from, 'checksum')
      lines += 1
      from = newline + 1
      newline = chunk.indexOf(NEWLINE, from)
    }
    if (from < chunk.length) carry = Buffer.from(chunk.subarray(from))
    position += chunk.length
  }
  if (carry !== null || position !== range.end) return fail(position - (carry?.length ?? 0), 'line-count')
  if (lines !== range.expectedLines) return fail(range.end, 'line-count')
  return { ok: true, lines }
}
