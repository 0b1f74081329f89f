/**
 * The v4 line codec over strings (FORMAT.md sections 4-6): one line is the JSON text of an
 * object whose last member is `"crc":"xxxxxxxx"`, the CRC-32C of the UTF-8 bytes before the
 * 18-byte suffix `,"crc":"xxxxxxxx"}`. Lines here never carry their `\n`.
 */
import type { Crc32c } from './crc32c.ts'

/** `TextEncoder` is a global in every runtime the core targets; declared here so the core needs no DOM or Node typings. */
declare const TextEncoder: new () => {
  encode(input: string): Uint8Array
  encodeInto(input: string, destination: Uint8Array): { read: number; written: number }
}

/** The fixed suffix length: `,"crc":"` + 8 hex digits + `"}`. */
const CRC_SUFFIX_LENGTH = 18
const SUFFIX_HEAD = ',"crc":"'
const HEX_DIGITS = /^[0-9a-f]{8}$/

const encoder = new TextEncoder()

/**
 * UTF-8 bytes of a string.
 *
 * @param text - Any string (lone surrogates become U+FFFD, as in every UTF-8 encoder).
 * @returns Its UTF-8 encoding.
 */
export function utf8(text: string): Uint8Array {
  return encoder.encode(text)
}

/** Largest scratch buffer kept between lines (bigger lines get a buffer of their own). */
const MAX_SCRATCH_BYTES = 1024 * 1024
let scratch = new Uint8Array(64 * 1024)

/**
 * The UTF-8 bytes of `text`, encoded into a reused scratch buffer (no allocation per line):
 * valid only until the next call, so use them at once.
 */
function scratchUtf8(text: string): Uint8Array {
  // A UTF-16 code unit is at most 3 UTF-8 bytes: a buffer of 3 x length always holds it.
  const worst = text.length * 3
  if (worst > scratch.length) {
    if (worst > MAX_SCRATCH_BYTES) return encoder.encode(text)
    scratch = new Uint8Array(Math.min(MAX_SCRATCH_BYTES, Math.max(worst, scratch.length * 2)))
  }
  return scratch.subarray(0, encoder.encodeInto(text, scratch).written)
}

/** Two lowercase hex digits of each byte value (`Number#toString(16)` is slow on the append path). */
const HEX_BYTES: readonly string[] = Array.from({ length: 256 }, (_, byte) =>
  byte.toString(16).padStart(2, '0'),
)

function hex8(value: number): string {
  return (
    HEX_BYTES[(value >>> 24) & 0xff]! +
    HEX_BYTES[(value >>> 16) & 0xff]! +
    HEX_BYTES[(value >>> 8) & 0xff]! +
    HEX_BYTES[value & 0xff]!
  )
}

/**
 * The line of a JSON text cut before its closing `}`, as a rope over the JSON text (no copy
 * of the text: V8 slices without copying and joins with a few small cons cells). A backend
 * that needs flat text flattens it once where it uses it (a byte backend writes the
 * writer's bytes and never does); building it flat here cost more than the rest of the
 * line's encoding on a small event (writer-cpu bench).
 */
function lineOf(json: string, crc: string): string {
  return json.slice(0, -1) + SUFFIX_HEAD + crc + '"}'
}

/**
 * Turns the JSON text of an object without a `crc` member into its checksummed line.
 *
 * @param json - `JSON.stringify` of a non-empty object without `crc` (ends with `}`).
 * @param crc32c - The CRC-32C function.
 * @returns The line (without `\n`), its checksum and its byte length.
 */
export function checksumJson(json: string, crc32c: Crc32c): EncodedLine {
  // The JSON ends with `}` (one UTF-8 byte): its bytes without the last one are the body's,
  // so the body string is cut only once, for the line (V8 slices without copying).
  const bytes = scratchUtf8(json)
  const byteLength = bytes.length - 1
  const crc = hex8(crc32c(bytes.subarray(0, byteLength)))
  return { line: lineOf(json, crc), crc, byteLength: byteLength + CRC_SUFFIX_LENGTH }
}

/** The bytes of {@link SUFFIX_HEAD}, and of the hex digits by value. */
const SUFFIX_HEAD_BYTES: readonly number[] = Array.from(SUFFIX_HEAD, (char) => char.charCodeAt(0))
const HEX_CODES: readonly number[] = Array.from('0123456789abcdef', (char) => char.charCodeAt(0))

/** The first buffer of a {@link LineBytes}. */
const MIN_LINE_BYTES = 64 * 1024
/**
 * Largest buffer a {@link LineBytes} keeps once its lines are flushed: batches of a few MB
 * (tool outputs) reuse it instead of growing a new one (zero-filled, copied) every flush.
 */
const MAX_KEPT_LINE_BYTES = 8 * 1024 * 1024

/**
 * The UTF-8 bytes of a writer's buffered lines, each ended by `\n`, in one growing buffer:
 * a line is encoded once, into it, its checksum is taken over those bytes, and a backend
 * that writes bytes writes them as they are (`AppendBatch.bytes`) instead of encoding the
 * lines again. A line is {@link encode}d after the committed ones, then {@link commit}ted
 * once every check passed (a refused event leaves nothing: the next line overwrites it).
 * Offsets are logical (they keep counting across {@link drop}).
 */
export class LineBytes {
  #buffer = new Uint8Array(MIN_LINE_BYTES)
  /** Logical offset of `#buffer[0]`. */
  #base = 0
  /** Physical end of the committed lines, and of the line encoded last (not committed yet). */
  #end = 0
  #pending = 0

  /**
   * Encodes the line of `json` after the committed lines, not committing it.
   *
   * @param json - As for {@link checksumJson}.
   * @param crc32c - The CRC-32C function (must not keep the bytes).
   * @param maxBytes - A line certainly longer (more UTF-16 units than this) is encoded on its
   *   own, outside the buffer (its caller refuses it), so a refused giant does not grow it.
   * @returns The line, its checksum and byte length (without `\n`).
   */
  encode(json: string, crc32c: Crc32c, maxBytes: number): EncodedLine {
    if (json.length - 1 + CRC_SUFFIX_LENGTH > maxBytes) {
      this.#pending = this.#end
      return checksumJson(json, crc32c)
    }
    const at = this.#end
    // Room for an ASCII line first (most are); a longer encoding gets room for the rest.
    let buffer = this.#room(at + json.length + CRC_SUFFIX_LENGTH, at)
    const first = encoder.encodeInto(json, buffer.subarray(at))
    let written = first.written
    if (first.read < json.length) {
      const rest = json.length - first.read
      buffer = this.#room(at + written + 3 * rest + CRC_SUFFIX_LENGTH, at + written)
      written += encoder.encodeInto(json.slice(first.read), buffer.subarray(at + written)).written
    }
    // encodeInto fills what the buffer has past the room asked for: a non-ASCII line can
    // end nearer the buffer's end than its suffix needs (typed arrays drop writes past it).
    buffer = this.#room(at + written + CRC_SUFFIX_LENGTH, at + written)
    // The JSON's last byte is its `}`: the checksum covers the bytes before it.
    const bodyEnd = at + written - 1
    const value = crc32c(buffer.subarray(at, bodyEnd))
    let cursor = bodyEnd
    for (const code of SUFFIX_HEAD_BYTES) buffer[cursor++] = code
    for (let shift = 28; shift >= 0; shift -= 4) buffer[cursor++] = HEX_CODES[(value >>> shift) & 0xf]!
    buffer[cursor++] = 0x22
    buffer[cursor++] = 0x7d
    buffer[cursor++] = 0x0a
    this.#pending = cursor
    const crc = hex8(value)
    return { line: lineOf(json, crc), crc, byteLength: written - 1 + CRC_SUFFIX_LENGTH }
  }

  /**
   * Commits the line {@link encode}d last.
   *
   * @returns The logical end of the committed lines.
   */
  commit(): number {
    this.#end = this.#pending
    return this.#base + this.#end
  }

  /**
   * The committed bytes up to a logical end.
   *
   * @param end - A logical end {@link commit} returned.
   * @returns A view (valid until the next {@link drop}).
   */
  view(end: number): Uint8Array {
    return this.#buffer.subarray(0, end - this.#base)
  }

  /**
   * Forgets the bytes before a logical end (they are durable): the rest moves to the front.
   *
   * @param end - A logical end {@link commit} returned.
   */
  drop(end: number): void {
    const cut = end - this.#base
    const rest = this.#end - cut
    if (this.#buffer.length > MAX_KEPT_LINE_BYTES && rest < MAX_KEPT_LINE_BYTES / 2) {
      // A giant batch made the buffer giant: back to one a usual batch fits in.
      const smaller = new Uint8Array(Math.max(MAX_KEPT_LINE_BYTES / 4, 2 * rest))
      smaller.set(this.#buffer.subarray(cut, this.#end))
      this.#buffer = smaller
    } else if (rest > 0) {
      this.#buffer.copyWithin(0, cut, this.#end)
    }
    this.#base = end
    this.#end = rest
    this.#pending = rest
  }

  /** The buffer with room for `size` bytes, keeping its first `keep` (a new one when it grows). */
  #room(size: number, keep: number): Uint8Array {
    if (size <= this.#buffer.length) return this.#buffer
    const grown = new Uint8Array(Math.max(size, 2 * this.#buffer.length))
    grown.set(this.#buffer.subarray(0, keep))
    this.#buffer = grown
    return grown
  }
}

/** One encoded line and its facts. */
export interface EncodedLine {
  /** The line, without `\n`. */
  readonly line: string
  /** Its checksum (8 lowercase hex digits). */
  readonly crc: string
  /** Its UTF-8 length in bytes, without `\n`. */
  readonly byteLength: number
}

/**
 * The checksum a well-formed line carries in its suffix (the head's `lastCrc`), without verifying it.
 *
 * @param line - A line without `\n`.
 * @returns The 8 hex digits, or null when the line does not end with a well-formed suffix.
 */
export function lineCrc(line: string): string | null {
  if (line.length <= CRC_SUFFIX_LENGTH) return null
  const start = line.length - CRC_SUFFIX_LENGTH
  if (!line.startsWith(SUFFIX_HEAD, start) || !line.endsWith('"}')) return null
  const digits = line.slice(start + SUFFIX_HEAD.length, -2)
  return HEX_DIGITS.test(digits) ? digits : null
}

/**
 * Checks a line's suffix and its CRC-32C.
 *
 * @param line - A line without `\n`.
 * @param crc32c - The CRC-32C function.
 * @returns True when the suffix is well formed and matches the bytes before it.
 */
export function verifyLineChecksum(line: string, crc32c: Crc32c): boolean {
  const expected = lineCrc(line)
  if (expected === null) return false
  return hex8(crc32c(utf8(line.slice(0, line.length - CRC_SUFFIX_LENGTH)))) === expected
}

/**
 * The CRC a well-formed suffix of a line's UTF-8 bytes carries, or -1 when the bytes do not
 * end with one (8 lowercase hex digits between `,"crc":"` and `"}`).
 *
 * @param bytes - A line's bytes without `\n`.
 * @returns The checksum as an unsigned 32-bit integer, or -1.
 */
export function suffixCrc(bytes: Uint8Array): number {
  const length = bytes.length
  if (length <= CRC_SUFFIX_LENGTH) return -1
  const start = length - CRC_SUFFIX_LENGTH
  for (let index = 0; index < SUFFIX_HEAD_BYTES.length; index += 1) {
    if (bytes[start + index] !== SUFFIX_HEAD_BYTES[index]) return -1
  }
  if (bytes[length - 2] !== 0x22 || bytes[length - 1] !== 0x7d) return -1
  let expected = 0
  for (let index = start + SUFFIX_HEAD_BYTES.length; index < length - 2; index += 1) {
    const byte = bytes[index]!
    let digit: number
    if (byte >= 0x30 && byte <= 0x39) digit = byte - 0x30
    else if (byte >= 0x61 && byte <= 0x66) digit = byte - 0x57
    else return -1
    expected = expected * 16 + digit
  }
  return expected
}

/**
 * {@link verifyLineChecksum} over the line's UTF-8 bytes, for a backend that read bytes: the
 * checksum is taken over them as they are, without encoding the text again.
 *
 * @param bytes - A line's bytes without `\n`.
 * @param crc32c - The CRC-32C function.
 * @returns True when the suffix is well formed and matches the bytes before it.
 */
export function verifyLineBytes(bytes: Uint8Array, crc32c: Crc32c): boolean {
  const expected = suffixCrc(bytes)
  return expected !== -1 && crc32c(bytes.subarray(0, bytes.length - CRC_SUFFIX_LENGTH)) >>> 0 === expected
}

/**
 * Deepest nesting of `[`/`{` outside strings, counted without parsing; stops past `limit`.
 *
 * @param text - JSON text.
 * @param limit - Depth past which counting stops.
 * @returns The depth, or `limit + 1` when deeper than `limit`.
 */
export function jsonDepth(text: string, limit: number): number {
  let depth = 0
  let deepest = 0
  let inString = false
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index)
    if (inString) {
      if (code === 0x5c) index += 1
      else if (code === 0x22) inString = false
      continue
    }
    if (code === 0x22) inString = true
    else if (code === 0x7b || code === 0x5b) {
      depth += 1
      if (depth > deepest) {
        deepest = depth
        if (deepest > limit) return limit + 1
      }
    } else if (code === 0x7d || code === 0x5d) depth -= 1
  }
  return deepest
}

/**
 * Deepest nesting of arrays and objects in a parsed JSON value, visiting nodes without
 * recursion; stops past `limit`.
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
      if (depth + 1 > deepest) {
        deepest = depth + 1
        if (deepest > limit) return limit + 1
      }
      stack.push({ node: child, depth: depth + 1 })
    }
  }
  return deepest
}

/**
 * True when the text has more than `limit` opening brackets at all, counted with the native
 * `indexOf` (a cheap, exact pre-filter for the depth check: a line with fewer cannot nest deeper).
 *
 * @param text - JSON text.
 * @param limit - The depth limit.
 * @returns Whether the depth must be checked.
 */
export function mayNestDeeper(text: string, limit: number): boolean {
  let count = 0
  for (const bracket of ['{', '[']) {
    let position = text.indexOf(bracket)
    while (position !== -1) {
      count += 1
      if (count > limit) return true
      position = text.indexOf(bracket, position + 1)
    }
  }
  return false
}

/** Why a line failed the per-line checks, in the order they run. */
type LineFailure = 'too-large' | 'too-deep' | 'json' | 'not-object' | 'checksum'

/** The outcome of {@link decodeLine}. */
export type DecodedLine =
  | { readonly ok: true; readonly value: Record<string, unknown> }
  | { readonly ok: false; readonly reason: LineFailure; readonly seq: number | undefined }

/** Limits of {@link decodeLine}. */
export interface LineLimits {
  /** Longest line, in UTF-16 code units (a bound on bytes / 3 at worst; the byte bound is the backend's). */
  readonly maxLineLength: number
  readonly maxDepth: number
}

/**
 * The per-line checks on a line as text: length, depth, JSON, an object, then the checksum.
 * Depth is checked after parsing, on the parsed nodes (V8's `JSON.parse` does not recurse on
 * the call stack); a line that fails to parse is counted on characters, so the reason is the
 * one a count before parsing gives. On success the `crc` member is removed (own `__proto__` keys stay data).
 *
 * A backend that read the line as bytes passes them too (`bytes`): the checksum is then taken
 * over them, not over the text encoded again (the one decode of a JSONL line: its backend
 * checks the length in bytes and strict UTF-8 first, then calls this). `crc32c: null` is a
 * format without line checksums (v0, read only to migrate it): every check but the checksum,
 * and no member removed.
 *
 * @param line - A line without `\n`.
 * @param options - Limits, the CRC-32C function (null: no checksum) and the line's UTF-8 bytes when the caller has them.
 * @returns The object, or the first failed check.
 */
export function decodeLine(
  line: string,
  options: LineLimits & { readonly crc32c: Crc32c | null; readonly bytes?: Uint8Array | undefined },
): DecodedLine {
  if (line.length > options.maxLineLength) return { ok: false, reason: 'too-large', seq: undefined }
  const { maxDepth } = options
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    // The character count only for a line that failed to parse: the same reason as counting first.
    if (jsonDepth(line, maxDepth) > maxDepth) return { ok: false, reason: 'too-deep', seq: undefined }
    return { ok: false, reason: 'json', seq: undefined }
  }
  // Nesting past maxDepth needs more than maxDepth opening brackets: a line with fewer cannot be too deep.
  if (mayNestDeeper(line, maxDepth) && valueDepth(value, maxDepth) > maxDepth) {
    return { ok: false, reason: 'too-deep', seq: undefined }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, reason: 'not-object', seq: undefined }
  }
  const { bytes, crc32c } = options
  if (crc32c === null) return { ok: true, value: value as Record<string, unknown> }
  if (!(bytes === undefined ? verifyLineChecksum(line, crc32c) : verifyLineBytes(bytes, crc32c))) {
    const seq = (value as { seq?: unknown }).seq
    return { ok: false, reason: 'checksum', seq: typeof seq === 'number' ? seq : undefined }
  }
  delete (value as { crc?: unknown }).crc
  return { ok: true, value: value as Record<string, unknown> }
}

/**
 * The event as a fresh object with members in the canonical order `seq`, `time`, `type`,
 * `data`, then `surfaceOp`, `sourceEventSeqs`, `ignorable` when present (FORMAT.md section 4).
 *
 * @param event - The event fields.
 * @returns A new plain object (never built by merging: an own `__proto__` in `data` stays data).
 */
export function canonicalEvent(event: {
  readonly seq: number
  readonly time: string
  readonly type: string
  readonly data: unknown
  readonly surfaceOp?: unknown
  readonly sourceEventSeqs?: unknown
  readonly ignorable?: unknown
}): Record<string, unknown> {
  const copy: Record<string, unknown> = {
    seq: event.seq,
    time: event.time,
    type: event.type,
    data: event.data,
  }
  if (event.surfaceOp !== undefined) copy['surfaceOp'] = event.surfaceOp
  if (event.sourceEventSeqs !== undefined) copy['sourceEventSeqs'] = event.sourceEventSeqs
  if (event.ignorable !== undefined) copy['ignorable'] = event.ignorable
  return copy
}
