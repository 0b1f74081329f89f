import type { ZstdCorruptReason, ZstdTornPart } from './zstd-frame-error.ts'

/** Magic number of a Zstandard frame, 0xFD2FB528, as its four little-endian bytes (RFC 8878 §3.1.1). */
export const ZSTD_MAGIC_BYTES: readonly number[] = [0x28, 0xb5, 0x2f, 0xfd]

/** Largest block content any Zstandard frame may hold: 128 KiB (RFC 8878 §3.1.1.2.4, Block_Maximum_Size). */
export const ZSTD_BLOCK_SIZE_MAX = 128 * 1024

/** Size in bytes of a block header. */
const BLOCK_HEADER_BYTES = 3

/** Description of one frame found in a byte sequence, from its headers only (nothing decoded). */
export interface ZstdFrameInfo {
  /** `zstd` for a Zstandard frame, `skippable` for a skippable frame (magic 0x184D2A50..5F). */
  readonly kind: 'zstd' | 'skippable'
  /** 0-based index of the frame in the scanned input, counting skippable frames. */
  readonly index: number
  /** Offset of the frame's first (magic) byte in the scanned input. */
  readonly offset: number
  /** Total bytes of the frame: magic, header, blocks and checksum (or skippable header and data). */
  readonly length: number
  /** Bytes of magic plus frame header (plus block headers not included); 8 for a skippable frame. */
  readonly headerLength: number
  /**
   * Frame_Content_Size when the header declares it. Informational only: never used to size an
   * allocation. Values above 2^53 lose precision (they are far beyond any limit anyway).
   */
  readonly contentSize: number | undefined
  /** Window_Size the decoder must keep (for a single-segment frame, the content size); 0 for skippable frames. */
  readonly windowSize: number
  /** Number of blocks (0 for skippable frames). */
  readonly blockCount: number
  /**
   * Structural upper bound of the decompressed size: exact sizes of raw and RLE blocks plus
   * Block_Maximum_Size for each compressed block. A correct decoder never produces more.
   */
  readonly maxContentSize: number
  /** True when the frame ends with a 4-byte content checksum (XXH64, verified by the decoder). */
  readonly hasChecksum: boolean
  /** Dictionary_ID from the header, 0 when absent. */
  readonly dictionaryId: number
  /** For skippable frames, the low nibble of the magic number (0..15); undefined for Zstandard frames. */
  readonly skippableVariant: number | undefined
}

/** Result of {@link parseFrameAt}. */
export type ZstdFrameParse =
  | {
      readonly status: 'complete'
      /** The frame (its `index` is 0; callers renumber). */
      readonly frame: ZstdFrameInfo
      /**
       * End offsets (exclusive, in the input) of each block, with the maximum content each can
       * produce; only when `collectBlocks` was asked for.
       */
      readonly blocks: readonly ZstdBlockExtent[] | undefined
    }
  | {
      readonly status: 'incomplete'
      readonly part: ZstdTornPart
      /** Offset (exclusive) the input must reach before parsing can make progress. */
      readonly needed: number
    }
  | {
      readonly status: 'invalid'
      readonly reason: ZstdCorruptReason
      /** Offset of the offending field. */
      readonly at: number
    }

/** End of one block in the input and the most content it can produce. */
export interface ZstdBlockExtent {
  readonly end: number
  readonly maxContent: number
}

/** True when bytes `at..at+3` of `bytes` are a Zstandard or skippable magic number. */
export function isFrameMagicAt(bytes: Uint8Array, at: number): boolean {
  if (at + 4 > bytes.length) return false
  return isZstdMagic(bytes, at) || isSkippableMagic(bytes, at)
}

function isZstdMagic(bytes: Uint8Array, at: number): boolean {
  return bytes[at] === 0x28 && bytes[at + 1] === 0xb5 && bytes[at + 2] === 0x2f && bytes[at + 3] === 0xfd
}

function isSkippableMagic(bytes: Uint8Array, at: number): boolean {
  return (
    ((bytes[at] ?? 0) & 0xf0) === 0x50 &&
    bytes[at + 1] === 0x2a &&
    bytes[at + 2] === 0x4d &&
    bytes[at + 3] === 0x18
  )
}

/** True when the `count` (< 4) bytes at `at` could be the start of a Zstandard or skippable magic number. */
function isMagicPrefix(bytes: Uint8Array, at: number, count: number): boolean {
  let zstd = true
  let skippable = true
  for (let index = 0; index < count; index++) {
    const byte = bytes[at + index] ?? -1
    if (byte !== ZSTD_MAGIC_BYTES[index]) zstd = false
    const expected = index === 0 ? (byte & 0xf0) === 0x50 : byte === [0x50, 0x2a, 0x4d, 0x18][index]
    if (!expected) skippable = false
  }
  return zstd || skippable
}

function readLittleEndian(bytes: Uint8Array, at: number, count: number): number {
  let value = 0
  for (let index = count - 1; index >= 0; index--) value = value * 256 + (bytes[at + index] ?? 0)
  return value
}

const FCS_FIELD_SIZES = [0, 2, 4, 8] as const
const DID_FIELD_SIZES = [0, 1, 2, 4] as const

/**
 * Parses the frame starting at `offset` from its headers alone (RFC 8878 §3.1): magic number,
 * frame header, every block header (skipping block data), optional checksum. Nothing is
 * decompressed and nothing the header claims is trusted for sizing.
 *
 * Pure and bounded: reads only `bytes[offset..end)`, does O(number of blocks) work.
 *
 * @param bytes - The input.
 * @param offset - Where the frame's magic number should be.
 * @param options - `end` (exclusive, default `bytes.length`) bounds the bytes available;
 *   `collectBlocks` asks for each block's extent (used by decoders to feed block by block).
 * @returns `complete` with the frame, `incomplete` (the input ends inside it; `part` says where),
 *   or `invalid` (unknown magic, reserved bit or block type, oversized block).
 */
export function parseFrameAt(
  bytes: Uint8Array,
  offset: number,
  options: { readonly end?: number; readonly collectBlocks?: boolean } = {},
): ZstdFrameParse {
  const end = Math.min(options.end ?? bytes.length, bytes.length)
  const available = end - offset
  if (available < 4) {
    if (available > 0 && !isMagicPrefix(bytes, offset, available)) {
      return { status: 'invalid', reason: 'unknown-magic', at: offset }
    }
    return { status: 'incomplete', part: 'magic', needed: offset + 4 }
  }
  if (isSkippableMagic(bytes, offset)) return parseSkippable(bytes, offset, end)
  if (!isZstdMagic(bytes, offset)) return { status: 'invalid', reason: 'unknown-magic', at: offset }

  const descriptorAt = offset + 4
  if (descriptorAt >= end) return { status: 'incomplete', part: 'frame-header', needed: descriptorAt + 1 }
  const descriptor = bytes[descriptorAt] ?? 0
  const fcsFlag = descriptor >> 6
  const singleSegment = (descriptor & 0x20) !== 0
  if ((descriptor & 0x08) !== 0) return { status: 'invalid', reason: 'reserved-bit', at: descriptorAt }
  const hasChecksum = (descriptor & 0x04) !== 0
  const didSize = DID_FIELD_SIZES[descriptor & 0x03] ?? 0
  const fcsSize = fcsFlag === 0 ? (singleSegment ? 1 : 0) : (FCS_FIELD_SIZES[fcsFlag] ?? 0)
  const headerEnd = descriptorAt + 1 + (singleSegment ? 0 : 1) + didSize + fcsSize
  if (headerEnd > end) return { status: 'incomplete', part: 'frame-header', needed: headerEnd }

  let at = descriptorAt + 1
  let windowSize = 0
  if (!singleSegment) {
    const windowDescriptor = bytes[at] ?? 0
    const windowLog = 10 + (windowDescriptor >> 3)
    const windowBase = 2 ** windowLog
    windowSize = windowBase + (windowBase / 8) * (windowDescriptor & 0x07)
    at += 1
  }
  const dictionaryId = readLittleEndian(bytes, at, didSize)
  at += didSize
  let contentSize: number | undefined
  if (fcsSize > 0) {
    contentSize = readLittleEndian(bytes, at, fcsSize) + (fcsSize === 2 ? 256 : 0)
    at += fcsSize
  }
  if (singleSegment) windowSize = contentSize ?? 0
  const blockMaximum = Math.min(windowSize, ZSTD_BLOCK_SIZE_MAX)

  const blocks: ZstdBlockExtent[] | undefined = options.collectBlocks === true ? [] : undefined
  let blockCount = 0
  let maxContentSize = 0
  for (;;) {
    const blockAt = at
    if (blockAt + BLOCK_HEADER_BYTES > end) {
      return { status: 'incomplete', part: 'block-header', needed: blockAt + BLOCK_HEADER_BYTES }
    }
    const header =
      (bytes[blockAt] ?? 0) | ((bytes[blockAt + 1] ?? 0) << 8) | ((bytes[blockAt + 2] ?? 0) << 16)
    const last = (header & 1) !== 0
    const type = (header >> 1) & 3
    const size = header >>> 3
    if (type === 3) return { status: 'invalid', reason: 'reserved-block-type', at: blockAt }
    if (size > blockMaximum) return { status: 'invalid', reason: 'block-too-large', at: blockAt }
    // type 0 raw (size bytes, size out), 1 RLE (1 byte, size out), 2 compressed (size bytes, <= blockMaximum out)
    const dataBytes = type === 1 ? 1 : size
    const blockEnd = blockAt + BLOCK_HEADER_BYTES + dataBytes
    if (blockEnd > end) return { status: 'incomplete', part: 'block-data', needed: blockEnd }
    const maxContent = type === 2 ? blockMaximum : size
    maxContentSize += maxContent
    blockCount += 1
    blocks?.push({ end: blockEnd, maxContent })
    at = blockEnd
    if (last) break
  }
  if (hasChecksum) {
    if (at + 4 > end) return { status: 'incomplete', part: 'checksum', needed: at + 4 }
    at += 4
  }
  return {
    status: 'complete',
    frame: {
      kind: 'zstd',
      index: 0,
      offset,
      length: at - offset,
      headerLength: headerEnd - offset,
      contentSize,
      windowSize,
      blockCount,
      maxContentSize,
      hasChecksum,
      dictionaryId,
      skippableVariant: undefined,
    },
    blocks,
  }
}

function parseSkippable(bytes: Uint8Array, offset: number, end: number): ZstdFrameParse {
  if (offset + 8 > end) return { status: 'incomplete', part: 'skippable-header', needed: offset + 8 }
  const dataSize = readLittleEndian(bytes, offset + 4, 4)
  const frameEnd = offset + 8 + dataSize
  if (frameEnd > end) return { status: 'incomplete', part: 'skippable-data', needed: frameEnd }
  return {
    status: 'complete',
    frame: {
      kind: 'skippable',
      index: 0,
      offset,
      length: 8 + dataSize,
      headerLength: 8,
      contentSize: undefined,
      windowSize: 0,
      blockCount: 0,
      maxContentSize: 0,
      hasChecksum: false,
      dictionaryId: 0,
      skippableVariant: (bytes[offset] ?? 0) & 0x0f,
    },
    blocks: undefined,
  }
}

/**
 * Finds the first offset in `[from, end)` where a structurally complete frame starts
 * (resynchronisation after damage).
 *
 * @param bytes - The input.
 * @param range - `from` (first candidate offset), `end` (exclusive end of the available bytes)
 *   and `final` (true when no more input will come, so candidates running past `end` are skipped).
 * @returns `{ offset }` of a complete frame; `{ pendingAt }` (only when not `final`) when a
 *   plausible candidate runs past `end` before any complete one; `undefined` when none remains.
 */
export function findNextFrame(
  bytes: Uint8Array,
  range: { readonly from: number; readonly end: number; readonly final: boolean },
): { readonly offset: number } | { readonly pendingAt: number } | undefined {
  const { end } = range
  for (let at = range.from; at + 4 <= end; at++) {
    // cheap filter on the last magic byte: 0xFD (Zstandard) or 0x18 (skippable)
    const last = bytes[at + 3]
    if (last !== 0xfd && last !== 0x18) continue
    if (!isFrameMagicAt(bytes, at)) continue
    const parsed = parseFrameAt(bytes, at, { end })
    if (parsed.status === 'complete') return { offset: at }
    if (parsed.status === 'incomplete' && !range.final) return { pendingAt: at }
  }
  return undefined
}
