import { isUtf8 } from 'node:buffer'

import { crc32c } from '@node-rs/crc32'

/**
 * The fixed suffix every v4 line ends with, before its `\n`: `,"crc":"XXXXXXXX"}`, 18 bytes.
 * The CRC covers every byte of the line before the suffix.
 */
export const CRC_SUFFIX_BYTES = 18

const NEWLINE = 0x0a
const QUOTE = 0x22
const CLOSE_BRACE = 0x7d
const OPEN_BRACE = 0x7b
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const BACKSLASH = 0x5c
/** `,"crc":"` */
const SUFFIX_HEAD = Buffer.from(',"crc":"', 'latin1')
const HEX = '0123456789abcdef'

/** Why one line failed the per-line checks (RELIABILITY I1-I3), in the order they are checked. */
export type LineFailureReason = 'too-large' | 'utf8' | 'too-deep' | 'json' | 'not-object' | 'checksum'

/** The outcome of {@link decodeLine}. */
export type DecodedLine =
  | {
      readonly ok: true
      /** The parsed object, with the `crc` member removed (own `__proto__` keys stay data). */
      readonly value: Record<string, unknown>
      /** The line decoded as UTF-8 (what was parsed), when the decoder had it. */
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
 * CRC-32C (Castagnoli) of `bytes`, as 8 lowercase hex digits.
 *
 * @param bytes - The bytes to hash.
 * @returns The checksum text used in the `crc` member.
 */
export function crc32cHex(bytes: Uint8Array): string {
  return (crc32c(bytes) >>> 0).toString(16).padStart(8, '0')
}

/** Lines whose JSON text is at most this many UTF-16 units are encoded into a shared slab. */
const SLAB_LINE_MAX_UNITS = 16 * 1024
/** Size of one slab: small, so a line kept alive pins little memory. */
const SLAB_BYTES = 256 * 1024
let slab = Buffer.allocUnsafe(SLAB_BYTES)
let slabUsed = 0

/**
 * Room for `json` (at most 3 UTF-8 bytes per UTF-16 unit) plus the suffix: the current slab
 * when it has room, else a fresh one; a long line gets an exact buffer of its own.
 */
function lineBuffer(json: string): { buffer: Buffer; start: number; bytes: number } {
  if (json.length > SLAB_LINE_MAX_UNITS) {
    const bytes = Buffer.byteLength(json, 'utf8')
    const buffer = Buffer.allocUnsafe(bytes + CRC_SUFFIX_BYTES)
    buffer.write(json, 0, 'utf8')
    return { buffer, start: 0, bytes }
  }
  if (slab.length - slabUsed < json.length * 3 + CRC_SUFFIX_BYTES) {
    slab = Buffer.allocUnsafe(SLAB_BYTES)
    slabUsed = 0
  }
  const start = slabUsed
  const bytes = slab.write(json, start, 'utf8')
  slabUsed = start + bytes + CRC_SUFFIX_BYTES
  return { buffer: slab, start, bytes }
}

/**
 * Turns the JSON text of an object WITHOUT its `crc` member into one checksummed v4 line:
 * `json` minus its final `}`, then `,"crc":"XXXXXXXX"}` and `\n`.
 *
 * The text is encoded to UTF-8 once: a short line straight into a shared 256 KiB slab (the
 * line is a view of it, as Node's own small buffers are views of a pool), a long one into
 * an exact buffer of its own.
 *
 * @param json - `JSON.stringify` of a non-empty object that has no `crc` member.
 * @returns The line's UTF-8 bytes, `\n` included.
 */
export function encodeJsonLine(json: string): Buffer {
  const { buffer, start, bytes } = lineBuffer(json)
  const line = buffer.subarray(start, start + bytes + CRC_SUFFIX_BYTES)
  const bodyEnd = bytes - 1
  const crc = crc32c(line.subarray(0, bodyEnd)) >>> 0
  let position = bodyEnd + SUFFIX_HEAD.copy(line, bodyEnd)
  for (let shift = 28; shift >= 0; shift -= 4) {
    line[position] = HEX.charCodeAt((crc >>> shift) & 0xf)
    position += 1
  }
  line[position] = QUOTE
  line[position + 1] = CLOSE_BRACE
  line[position + 2] = NEWLINE
  return line
}

/**
 * Serializes one event into its v4 line: members in the canonical order `seq`, `time`,
 * `type`, `data`, then `surfaceOp`, `sourceEventSeqs`, `ignorable` when present, then the
 * `crc` suffix and `\n`.
 *
 * The caller checks the event first (see the store's `append`); this function only builds
 * bytes. A fresh object is built, so nothing of `event` besides the envelope fields is copied.
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
 * The event as a fresh object with members in the canonical order (no `crc`).
 *
 * @param event - The event to copy.
 * @returns A new plain object sharing `data` with `event`.
 */
function canonicalEvent<
  TEvent extends { readonly seq: number; readonly time: string; readonly type: string },
>(
  event: TEvent & {
    readonly data: unknown
    readonly surfaceOp?: unknown
    readonly sourceEventSeqs?: readonly number[] | undefined
    readonly ignorable?: boolean | undefined
  },
): TEvent {
  const copy: Record<string, unknown> = {
    seq: event.seq,
    time: event.time,
    type: event.type,
    data: event.data,
  }
  if (event.surfaceOp !== undefined) copy['surfaceOp'] = event.surfaceOp
  if (event.sourceEventSeqs !== undefined) copy['sourceEventSeqs'] = event.sourceEventSeqs
  if (event.ignorable !== undefined) copy['ignorable'] = event.ignorable
  return copy as TEvent
}

/**
 * Checks the fixed `,"crc":"XXXXXXXX"}` suffix and the CRC-32C of the bytes before it.
 *
 * @param line - One line without its `\n`.
 * @returns True when the suffix is well formed (8 lowercase hex digits) and matches.
 */
export function verifyLineChecksum(line: Uint8Array): boolean {
  const expected = suffixChecksum(line)
  return expected !== -1 && crc32c(line.subarray(0, line.length - CRC_SUFFIX_BYTES)) >>> 0 === expected
}

/** The CRC written in a well-formed suffix, or -1 when the line does not end with one. */
function suffixChecksum(line: Uint8Array): number {
  const length = line.length
  if (length <= CRC_SUFFIX_BYTES) return -1
  const start = length - CRC_SUFFIX_BYTES
  for (let index = 0; index < SUFFIX_HEAD.length; index += 1) {
    if (line[start + index] !== SUFFIX_HEAD[index]) return -1
  }
  if (line[length - 2] !== QUOTE || line[length - 1] !== CLOSE_BRACE) return -1
  let expected = 0
  for (let index = start + SUFFIX_HEAD.length; index < length - 2; index += 1) {
    const byte = line[index]!
    let digit: number
    if (byte >= 0x30 && byte <= 0x39) digit = byte - 0x30
    else if (byte >= 0x61 && byte <= 0x66) digit = byte - 0x57
    else return -1
    expected = expected * 16 + digit
  }
  return expected
}

/**
 * Deepest nesting of arrays and objects in JSON text, counted on bytes outside strings,
 * without recursion and without parsing. Stops early once `limit` is exceeded.
 *
 * @param line - UTF-8 JSON text.
 * @param limit - Depth past which counting stops.
 * @returns The depth, or `limit + 1` when deeper than `limit`.
 */
export function jsonDepth(line: Uint8Array, limit: number): number {
  let depth = 0
  let deepest = 0
  let inString = false
  for (let index = 0; index < line.length; index += 1) {
    const byte = line[index]!
    if (inString) {
      if (byte === BACKSLASH) index += 1
      else if (byte === QUOTE) inString = false
      continue
    }
    if (byte === QUOTE) inString = true
    else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      depth += 1
      if (depth > deepest) {
        deepest = depth
        if (deepest > limit) return limit + 1
      }
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) depth -= 1
  }
  return deepest
}

/**
 * True when the line has more than `limit` opening brackets at all, counted natively (a
 * cheap, exact pre-filter for the depth check: a line with fewer cannot nest deeper).
 *
 * @param line - UTF-8 JSON text.
 * @param limit - The depth limit.
 * @returns Whether the depth must be checked.
 */
export function mayBeDeeperThan(line: Buffer, limit: number): boolean {
  let count = 0
  for (const bracket of [OPEN_BRACE, OPEN_BRACKET]) {
    let position = line.indexOf(bracket)
    while (position !== -1) {
      count += 1
      if (count > limit) return true
      position = line.indexOf(bracket, position + 1)
    }
  }
  return false
}

function seqOf(value: unknown): number | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
  const seq = (value as { seq?: unknown }).seq
  return typeof seq === 'number' && Object.hasOwn(value, 'seq') ? seq : undefined
}

/**
 * Deepest nesting of arrays and objects in a parsed JSON value, visiting nodes (not bytes)
 * without recursion. Stops early once `limit` is exceeded.
 *
 * @param value - A value `JSON.parse` returned.
 * @param limit - Depth past which counting stops.
 * @returns The depth (a scalar is 0), or `limit + 1` when deeper than `limit`.
 */
export function valueDepth(value: unknown, limit: number): number {
  if (typeof value !== 'object' || value === null) return 0
  let deepest = 1
  const stack: { readonly node: object; readonly depth: number }[] = [{ node: value, depth: 1 }]
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!
    const children: unknown[] = Array.isArray(node) ? node : Object.values(node)
    for (const child of children) {
      if (typeof child !== 'object' || child === null) continue
      const childDepth = depth + 1
      if (childDepth > deepest) {
        deepest = childDepth
        if (deepest > limit) return limit + 1
      }
      stack.push({ node: child, depth: childDepth })
    }
  }
  return deepest
}

const REPLACEMENT_CHARACTER = '\uFFFD'

/**
 * Runs the per-line checks on one line (without its `\n`), in order: length, strict UTF-8
 * (no replacement characters), nesting depth, JSON, a JSON object, then the CRC-32C suffix.
 * On success the `crc` member is removed from the parsed object.
 *
 * The line is decoded once: strict UTF-8 is checked only when the decoded text holds a
 * U+FFFD (the decoder's mark for invalid bytes; a valid line may also carry one). Depth is
 * checked after parsing, on the parsed nodes, and only for a line with more opening brackets
 * than the limit (counted natively); a line that fails to parse gets the byte count instead,
 * so the reason reported is the same as checking depth before parsing.
 *
 * The `\n` terminator is the splitter's check; `seq`, type and projection rules are the
 * scanner's.
 *
 * @param line - The line's bytes, without its `\n`.
 * @param limits - Length and depth bounds.
 * @returns The object, or the first failed check.
 */
export function decodeLine(line: Buffer, limits: LineLimits): DecodedLine {
  if (line.length > limits.maxLineBytes) {
    return { ok: false, reason: 'too-large', seq: undefined, checksumValid: false }
  }
  const text = line.toString('utf8')
  if (text.includes(REPLACEMENT_CHARACTER) && !isUtf8(line)) {
    return { ok: false, reason: 'utf8', seq: undefined, checksumValid: false }
  }
  const { maxDepth } = limits
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    if (mayBeDeeperThan(line, maxDepth) && jsonDepth(line, maxDepth) > maxDepth) {
      return { ok: false, reason: 'too-deep', seq: undefined, checksumValid: verifyLineChecksum(line) }
    }
    return { ok: false, reason: 'json', seq: undefined, checksumValid: false }
  }
  if (mayBeDeeperThan(line, maxDepth) && valueDepth(value, maxDepth) > maxDepth) {
    return { ok: false, reason: 'too-deep', seq: undefined, checksumValid: verifyLineChecksum(line) }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, reason: 'not-object', seq: undefined, checksumValid: false }
  }
  if (!verifyLineChecksum(line))
    return { ok: false, reason: 'checksum', seq: seqOf(value), checksumValid: false }
  // The suffix guarantees `crc` is the object's last own member: deleting it is cheap and safe.
  delete (value as { crc?: unknown }).crc
  return { ok: true, value: value as Record<string, unknown>, text }
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
  if (suffixChecksum(line) === -1) return -1
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
