/**
 * Building blocks of a search index and checking a block's last line (pure: no I/O, no
 * clock): the builder takes checked log lines in order and closes a block record every
 * `blockBytes` of log; `isIndexedLine` tells whether the bytes a block's last line points
 * at still are that line (seq, `crc` and its own checksum), the staleness check.
 */
import type { Crc32c } from '../crc32c.ts'
import { encodeBlock } from './records.ts'
import type { ChainEnd, IndexHeader } from './records.ts'
import { addTrigrams, SIGNATURE_BYTES } from './signature.ts'

/** Length of a line's `,"crc":"xxxxxxxx"}` suffix. */
const SUFFIX_BYTES = 18
const QUOTE = 0x22
const BRACE = 0x7d

function hexValue(byte: number): number {
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30
  if (byte >= 0x61 && byte <= 0x66) return byte - 0x57
  return -1
}

/**
 * The 8 hex digits of the `,"crc":"xxxxxxxx"}` suffix of the line `bytes[from, to)`, as a number.
 *
 * @param bytes - Holds the line (without `\n`).
 * @param from - Its first byte.
 * @param to - Its end (exclusive).
 * @returns The number, or null when the line does not end with 8 lowercase hex digits, `"` and `}`.
 */
function lineCrcDigits(bytes: Uint8Array, from: number, to: number): number | null {
  if (to - from <= SUFFIX_BYTES || bytes[to - 1] !== BRACE || bytes[to - 2] !== QUOTE) return null
  let value = 0
  for (let index = to - 10; index < to - 2; index += 1) {
    const digit = hexValue(bytes[index]!)
    if (digit < 0) return null
    value = value * 16 + digit
  }
  return value
}

/**
 * True when `line` is the line of event `seq` whose `crc` is `crc`, and that checksum is
 * right (CRC-32C of the bytes before the suffix).
 *
 * @param line - The line's bytes, without `\n`.
 * @param expected - The seq and `crc` the index recorded.
 * @param crc32c - The CRC-32C function.
 */
export function isIndexedLine(
  line: Uint8Array,
  expected: { readonly seq: number; readonly crc: number },
  crc32c: Crc32c,
): boolean {
  const prefix = `{"seq":${expected.seq},`
  if (line.length < prefix.length) return false
  for (let index = 0; index < prefix.length; index += 1) {
    if (line[index] !== prefix.charCodeAt(index)) return false
  }
  if (lineCrcDigits(line, 0, line.length) !== expected.crc) return false
  return crc32c(line.subarray(0, line.length - SUFFIX_BYTES)) >>> 0 === expected.crc
}

/**
 * True when two bindings name the same log (file name, header line length and CRC).
 *
 * @param a - One binding.
 * @param b - The other.
 */
export function sameBinding(a: IndexHeader, b: IndexHeader): boolean {
  return a.log === b.log && a.headerBytes === b.headerBytes && a.headerCrc === b.headerCrc
}

/** Gathers checked lines, in order, into block records of about `blockBytes` of log each. */
export class BlockBuilder {
  readonly #signature = new Uint8Array(SIGNATURE_BYTES)
  readonly #blockBytes: number
  readonly #crc32c: Crc32c
  #firstSeq: number
  #start: number
  #lastSeq = -1
  #lastLine = 0
  #end = 0
  #lastCrc = 0

  /**
   * @param end - Where the chain ends: the first line added is event `end.nextSeq` at `end.offset`.
   * @param blockBytes - Bytes of log per block.
   * @param crc32c - The CRC-32C function.
   */
  constructor(end: ChainEnd, blockBytes: number, crc32c: Crc32c) {
    this.#firstSeq = end.nextSeq
    this.#start = end.offset
    this.#blockBytes = blockBytes
    this.#crc32c = crc32c
  }

  /**
   * Adds the next line.
   *
   * @param seq - Its seq.
   * @param offset - Its byte offset in the log.
   * @param bytes - Its bytes, without `\n`.
   * @returns The closed block's record when this line filled it, else null.
   */
  add(seq: number, offset: number, bytes: Uint8Array): Uint8Array | null {
    addTrigrams(this.#signature, bytes)
    this.#lastSeq = seq
    this.#lastLine = offset
    this.#end = offset + bytes.length + 1
    this.#lastCrc = lineCrcDigits(bytes, 0, bytes.length) ?? 0
    return this.#end - this.#start >= this.#blockBytes ? this.close(0) : null
  }

  /**
   * Closes the open block when it holds a line and at least `minBytes` of log.
   *
   * @param minBytes - Fewer bytes leave the block open.
   * @returns Its record, or null.
   */
  close(minBytes: number): Uint8Array | null {
    if (this.#lastSeq < this.#firstSeq || this.#end - this.#start < minBytes) return null
    const block = {
      firstSeq: this.#firstSeq,
      lastSeq: this.#lastSeq,
      start: this.#start,
      lastLine: this.#lastLine,
      end: this.#end,
      lastCrc: this.#lastCrc,
    }
    const record = encodeBlock(block, this.#signature, this.#crc32c)
    this.#signature.fill(0)
    this.#firstSeq = this.#lastSeq + 1
    this.#start = this.#end
    return record
  }
}
