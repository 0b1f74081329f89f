/**
 * The records of a search index file (pure: no I/O, no clock). Every record is
 * {@link RECORD_BYTES} long and ends with the CRC-32C of the bytes before it, little-endian:
 *
 * - record 0, the header: `ALSI`, kind 1, version, the signature size, the block size
 *   the builder aims at, and what binds the index to its log: the log's file name, the
 *   header line's byte length (with its `\n`) and CRC-32C.
 * - records 1..n, blocks (kind 2): consecutive runs of whole event lines. A block holds its
 *   first and last seq, the byte offset of its first line, of its last line and of the end
 *   of its last line's `\n`, the 8 hex digits of the last line's `crc` (as a number), and
 *   the trigram signature of its lines ({@link addTrigrams}).
 *
 * A block continues the chain when it starts at the seq and offset where the one before it
 * ended (the first at seq 0, just after the header line); one that starts before is a
 * duplicate another builder appended concurrently, one that starts after is a gap.
 */
import type { Crc32c } from '../crc32c.ts'
import { SIGNATURE_BYTES } from './signature.ts'

/** Bytes of every record. */
export const RECORD_BYTES = 64 + SIGNATURE_BYTES
/** Where a block record's signature starts. */
export const SIGNATURE_OFFSET = 60
const MAGIC = 0x49534c41 // 'ALSI' little-endian
const VERSION = 1
const KIND_HEADER = 1
const KIND_BLOCK = 2
const MAX_NAME_BYTES = 40

/** What binds an index to its log (record 0). */
export interface IndexHeader {
  /** The log's file name in the session directory. */
  readonly log: string
  /** Bytes of the header line, its `\n` included. */
  readonly headerBytes: number
  /** CRC-32C of those bytes. */
  readonly headerCrc: number
  /** The block size the builder aims at (bytes of plain log). */
  readonly blockBytes: number
}

/** One block of lines (records 1..n); the signature stays in the record's bytes. */
export interface IndexBlock {
  readonly firstSeq: number
  readonly lastSeq: number
  /** Byte offset of the first line. */
  readonly start: number
  /** Byte offset of the last line. */
  readonly lastLine: number
  /** Byte offset just after the last line's `\n`. */
  readonly end: number
  /** The last line's `crc` digits as a number. */
  readonly lastCrc: number
}

function view(bytes: Uint8Array, offset: number): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset + offset, RECORD_BYTES)
}

function seal(record: Uint8Array, crc32c: Crc32c): Uint8Array {
  view(record, 0).setUint32(RECORD_BYTES - 4, crc32c(record.subarray(0, RECORD_BYTES - 4)) >>> 0, true)
  return record
}

/**
 * Encodes the header record.
 *
 * @param header - The binding.
 * @param crc32c - The CRC-32C function.
 * @returns {@link RECORD_BYTES} bytes.
 * @throws RangeError when the log name is longer than 40 bytes or not ASCII.
 */
export function encodeHeader(header: IndexHeader, crc32c: Crc32c): Uint8Array {
  const record = new Uint8Array(RECORD_BYTES)
  const data = view(record, 0)
  data.setUint32(0, MAGIC, true)
  record[4] = KIND_HEADER
  record[5] = VERSION
  data.setUint32(8, SIGNATURE_BYTES, true)
  data.setUint32(12, header.blockBytes, true)
  data.setFloat64(16, header.headerBytes, true)
  data.setUint32(24, header.headerCrc >>> 0, true)
  if (header.log.length > MAX_NAME_BYTES || !/^[\x21-\x7e]+$/.test(header.log)) {
    throw new RangeError(
      `an index log name must be 1 to ${MAX_NAME_BYTES} ASCII characters, found ${header.log}`,
    )
  }
  record[28] = header.log.length
  for (let index = 0; index < header.log.length; index += 1) record[29 + index] = header.log.charCodeAt(index)
  return seal(record, crc32c)
}

function checked(bytes: Uint8Array, offset: number, crc32c: Crc32c): DataView | null {
  if (bytes.length < offset + RECORD_BYTES) return null
  const data = view(bytes, offset)
  const stored = data.getUint32(RECORD_BYTES - 4, true)
  if (crc32c(bytes.subarray(offset, offset + RECORD_BYTES - 4)) >>> 0 !== stored) return null
  if (data.getUint32(0, true) !== MAGIC || bytes[offset + 5] !== VERSION) return null
  return data
}

/**
 * Decodes the header record at `bytes[offset]`.
 *
 * @param bytes - Holds the record.
 * @param offset - Where it starts.
 * @param crc32c - The CRC-32C function.
 * @returns The header, or null when the record is torn, fails its checksum, is not a header
 *   of this version or was written with another signature size.
 */
export function decodeHeader(bytes: Uint8Array, offset: number, crc32c: Crc32c): IndexHeader | null {
  const data = checked(bytes, offset, crc32c)
  if (data === null || bytes[offset + 4] !== KIND_HEADER || data.getUint32(8, true) !== SIGNATURE_BYTES)
    return null
  const length = bytes[offset + 28]!
  let log = ''
  for (let index = 0; index < length; index += 1) log += String.fromCharCode(bytes[offset + 29 + index]!)
  return {
    log,
    headerBytes: data.getFloat64(16, true),
    headerCrc: data.getUint32(24, true),
    blockBytes: data.getUint32(12, true),
  }
}

/**
 * Encodes a block record.
 *
 * @param block - Its seqs and offsets.
 * @param signature - Its {@link SIGNATURE_BYTES}-byte signature.
 * @param crc32c - The CRC-32C function.
 * @returns {@link RECORD_BYTES} bytes.
 */
export function encodeBlock(block: IndexBlock, signature: Uint8Array, crc32c: Crc32c): Uint8Array {
  const record = new Uint8Array(RECORD_BYTES)
  const data = view(record, 0)
  data.setUint32(0, MAGIC, true)
  record[4] = KIND_BLOCK
  record[5] = VERSION
  data.setUint32(8, block.lastCrc >>> 0, true)
  data.setFloat64(12, block.firstSeq, true)
  data.setFloat64(20, block.lastSeq, true)
  data.setFloat64(28, block.start, true)
  data.setFloat64(36, block.lastLine, true)
  data.setFloat64(44, block.end, true)
  record.set(signature.subarray(0, SIGNATURE_BYTES), SIGNATURE_OFFSET)
  return seal(record, crc32c)
}

/**
 * Decodes the block record at `bytes[offset]` (its signature is read in place with
 * `signatureHas(bytes, offset + SIGNATURE_OFFSET, bits)`).
 *
 * @param bytes - Holds the record.
 * @param offset - Where it starts.
 * @param crc32c - The CRC-32C function.
 * @returns The block, or null when the record is torn, fails its checksum or its fields are
 *   not a block (negative or unordered seqs or offsets).
 */
export function decodeBlock(bytes: Uint8Array, offset: number, crc32c: Crc32c): IndexBlock | null {
  const data = checked(bytes, offset, crc32c)
  if (data === null || bytes[offset + 4] !== KIND_BLOCK) return null
  const block: IndexBlock = {
    lastCrc: data.getUint32(8, true),
    firstSeq: data.getFloat64(12, true),
    lastSeq: data.getFloat64(20, true),
    start: data.getFloat64(28, true),
    lastLine: data.getFloat64(36, true),
    end: data.getFloat64(44, true),
  }
  const ordered =
    Number.isSafeInteger(block.firstSeq) &&
    Number.isSafeInteger(block.lastSeq) &&
    Number.isSafeInteger(block.end) &&
    block.firstSeq >= 0 &&
    block.lastSeq >= block.firstSeq &&
    block.start > 0 &&
    block.lastLine >= block.start &&
    block.end > block.lastLine
  return ordered ? block : null
}

/** Where the chain of blocks ends: the next block must start at this seq and offset. */
export interface ChainEnd {
  readonly nextSeq: number
  readonly offset: number
}

/**
 * How a decoded block relates to the chain so far.
 *
 * @param end - Where the chain ends.
 * @param block - The next record's block.
 * @returns `next` (it continues the chain), `duplicate` (it starts before the end: a
 *   concurrent builder's copy, skipped) or `gap` (it starts after: the chain ends here).
 */
export function chainStep(end: ChainEnd, block: IndexBlock): 'next' | 'duplicate' | 'gap' {
  if (block.firstSeq === end.nextSeq && block.start === end.offset) return 'next'
  return block.firstSeq < end.nextSeq && block.start < end.offset ? 'duplicate' : 'gap'
}
