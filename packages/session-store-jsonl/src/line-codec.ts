import { isUtf8 } from 'node:buffer'

import { crc32c } from '@node-rs/crc32'
import type { Crc32c } from '@agent-ledger/session-store'

import {
  canonicalEvent,
  checksumJson,
  decodeLine as decodeTextLine,
  suffixCrc,
  verifyLineBytes,
} from '@agent-ledger/session-store/line-codec'

/**
 * The byte side of the one line codec (the core's `@agent-ledger/session-store/line-codec`):
 * what a file backend checks on bytes before the core's checks on text (the length in bytes,
 * strict UTF-8), with the native CRC-32C. See docs/decisions/2026-12-02-one-line-codec.md.
 */

/**
 * The fixed suffix every v4 line ends with, before its `\n`: `,"crc":"XXXXXXXX"}`, 18 bytes.
 * The CRC covers every byte of the line before the suffix.
 */
export const CRC_SUFFIX_BYTES = 18

/** The integrity scheme v4 headers declare: a CRC-32C suffix on every line. */
export const INTEGRITY_CRC32C = 'crc32c'

/** Why one line failed the per-line checks (RELIABILITY I1-I3), in the order they are checked. */
export type LineFailureReason = 'too-large' | 'utf8' | 'too-deep' | 'json' | 'not-object' | 'checksum'

/** The outcome of {@link decodeLine}. */
export type DecodedLine =
  | {
      readonly ok: true
      /** The parsed object, with the `crc` member removed (own `__proto__` keys stay data). */
      readonly value: Record<string, unknown>
      /** The line decoded as UTF-8 (what was parsed). */
      readonly text?: string
    }
  | {
      readonly ok: false
      readonly reason: LineFailureReason
      /** The line's `seq` when it parsed far enough to have a numeric one. */
      readonly seq: number | undefined
      /** True when the bytes carry a well-formed suffix whose CRC matches (the line was written as is). */
      readonly checksumValid: boolean
    }

/** Limits {@link decodeLine} enforces. */
export interface LineLimits {
  /** Longest accepted line, in bytes without its `\n`. */
  readonly maxLineBytes: number
  /** Deepest accepted nesting of arrays and objects (the line's object is depth 1). */
  readonly maxDepth: number
}

/**
 * The native CRC-32C (the core's pure-JS one is the fallback for runtimes without an addon).
 *
 * @param bytes - The bytes to hash.
 * @returns The checksum as an unsigned 32-bit integer.
 */
export function nativeCrc32c(bytes: Uint8Array): number {
  return crc32c(bytes) >>> 0
}

/**
 * CRC-32C (Castagnoli) of `bytes`, as 8 lowercase hex digits.
 *
 * @param bytes - The bytes to hash.
 * @returns The checksum text used in the `crc` member.
 */
export function crc32cHex(bytes: Uint8Array): string {
  return nativeCrc32c(bytes).toString(16).padStart(8, '0')
}

/**
 * Turns the JSON text of an object WITHOUT its `crc` member into one checksummed v4 line
 * through the core's codec: `json` minus its final `}`, then `,"crc":"XXXXXXXX"}` and `\n`.
 *
 * @param json - `JSON.stringify` of a non-empty object that has no `crc` member.
 * @returns The line's UTF-8 bytes, `\n` included.
 */
export function encodeJsonLine(json: string): Buffer {
  return Buffer.from(`${checksumJson(json, nativeCrc32c).line}\n`, 'utf8')
}

/**
 * Serializes one event into its v4 line: members in the canonical order `seq`, `time`,
 * `type`, `data`, then `surfaceOp`, `sourceEventSeqs`, `ignorable` when present, then the
 * `crc` suffix and `\n`. The caller checks the event first; this function only builds bytes.
 *
 * @param event - A validated event (`seq`, `time`, `type`, `data`, optional envelope fields).
 * @returns The line's UTF-8 bytes, `\n` included.
 */
export function encodeEventLine(event: {
  readonly seq: number
  readonly time: string
  readonly type: string
  readonly data: unknown
  readonly surfaceOp?: unknown
  readonly sourceEventSeqs?: readonly number[] | undefined
  readonly ignorable?: boolean | undefined
}): Buffer {
  return encodeJsonLine(JSON.stringify(canonicalEvent(event)))
}

/**
 * Checks the fixed `,"crc":"XXXXXXXX"}` suffix and the CRC-32C of the bytes before it.
 *
 * @param line - One line without its `\n`.
 * @returns True when the suffix is well formed (8 lowercase hex digits) and matches.
 */
export function verifyLineChecksum(line: Uint8Array): boolean {
  return verifyLineBytes(line, nativeCrc32c)
}

const REPLACEMENT_CHARACTER = '\uFFFD'

/**
 * Runs the per-line checks on one line (without its `\n`), in order: length in bytes, strict
 * UTF-8 (no replacement characters), then the core's checks (depth, JSON, a JSON object, the
 * CRC-32C suffix, taken over these bytes). On success the `crc` member is removed.
 *
 * The line is decoded once: strict UTF-8 is checked only when the decoded text holds a
 * U+FFFD (the decoder's mark for invalid bytes; a valid line may also carry one).
 *
 * The `\n` terminator is the splitter's check; `seq`, type and projection rules are the
 * scanner's (or the core's, over the backend). `crc: null` reads a format without line
 * checksums (v0): every check but the checksum.
 *
 * @param line - The line's bytes, without its `\n`.
 * @param limits - Length and depth bounds.
 * @param crc - The CRC-32C function (default the native one), or null for no checksum.
 * @returns The object, or the first failed check.
 */
export function decodeLine(line: Buffer, limits: LineLimits, crc: Crc32c | null = nativeCrc32c): DecodedLine {
  if (line.length > limits.maxLineBytes) {
    return { ok: false, reason: 'too-large', seq: undefined, checksumValid: false }
  }
  const text = line.toString('utf8')
  if (text.includes(REPLACEMENT_CHARACTER) && !isUtf8(line)) {
    return { ok: false, reason: 'utf8', seq: undefined, checksumValid: false }
  }
  const decoded = decodeTextLine(text, {
    maxLineLength: limits.maxLineBytes,
    maxDepth: limits.maxDepth,
    crc32c: crc,
    bytes: line,
  })
  if (decoded.ok) return { ok: true, value: decoded.value, text }
  // A checksummed line beyond the depth limit was written whole (the scanner's verdict needs it).
  const checksumValid = decoded.reason === 'too-deep' && verifyLineChecksum(line)
  return { ok: false, reason: decoded.reason, seq: decoded.seq, checksumValid }
}

/** Bytes of `"{\"seq\":"`, the canonical start of an event line. */
const EVENT_LINE_START = Buffer.from('{"seq":', 'latin1')
/** Most embedded candidates {@link findEmbeddedValidLine} checks in one line (bounds the work on hostile input). */
const MAX_EMBEDDED_CANDIDATES = 64

/**
 * Looks inside a line that failed its checks for a complete, checksum-valid event line
 * glued onto it (a torn line followed by a later append without repair, the Claude Code
 * #52387 bug): any later `{"seq":` from which the rest of the line passes the checks.
 *
 * @param line - A failed line, without its `\n`.
 * @param limits - Length and depth bounds.
 * @returns The byte index of the embedded valid line, or -1.
 */
export function findEmbeddedValidLine(line: Buffer, limits: LineLimits): number {
  if (suffixCrc(line) === -1) return -1
  let candidates = 0
  let position = line.indexOf(EVENT_LINE_START, 1)
  while (position !== -1 && candidates < MAX_EMBEDDED_CANDIDATES) {
    candidates += 1
    const rest = line.subarray(position)
    if (verifyLineChecksum(rest) && decodeLine(rest, limits).ok) return position
    position = line.indexOf(EVENT_LINE_START, position + 1)
  }
  return -1
}
