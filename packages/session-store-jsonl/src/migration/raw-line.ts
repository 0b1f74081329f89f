/*
 * Byte-level helpers for carrying lines across a migration verbatim (RELIABILITY V5): an
 * ignorable unknown event keeps its exact bytes except the renumbered `seq` value (the v4
 * checksum suffix is then added by `encodeJsonLine`).
 */

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const COMMA = 0x2c
const COLON = 0x3a
const SEQ_KEY = Buffer.from('"seq"', 'latin1')

function isSpace(byte: number | undefined): boolean {
  return byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d
}

/** Index just after the string starting at `start` (a quote). */
function skipString(bytes: Buffer, start: number): number {
  let index = start + 1
  while (index < bytes.length) {
    const byte = bytes[index]!
    if (byte === BACKSLASH) index += 2
    else if (byte === QUOTE) return index + 1
    else index += 1
  }
  return index
}

/** Index just after the JSON value starting at `start` (the text is known to be valid JSON). */
function skipValue(bytes: Buffer, start: number): number {
  const first = bytes[start]
  if (first === QUOTE) return skipString(bytes, start)
  if (first === OPEN_BRACE || first === OPEN_BRACKET) {
    let depth = 0
    let index = start
    while (index < bytes.length) {
      const byte = bytes[index]!
      if (byte === QUOTE) {
        index = skipString(bytes, index)
        continue
      }
      if (byte === OPEN_BRACE || byte === OPEN_BRACKET) depth += 1
      else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
        depth -= 1
        if (depth === 0) return index + 1
      }
      index += 1
    }
    return index
  }
  let index = start
  while (index < bytes.length) {
    const byte = bytes[index]!
    if (byte === COMMA || byte === CLOSE_BRACE || byte === CLOSE_BRACKET || isSpace(byte)) break
    index += 1
  }
  return index
}

/**
 * The byte ranges of every top-level `"seq"` member value of a JSON object line (written
 * with the plain key `"seq"`; an escaped spelling is not found).
 *
 * @param bytes - A line that is known to parse as a JSON object.
 * @returns `[start, end)` ranges of the values, in order; null when the text is not shaped as expected.
 */
export function topLevelSeqValueRanges(bytes: Buffer): [number, number][] | null {
  let index = 0
  while (isSpace(bytes[index])) index += 1
  if (bytes[index] !== OPEN_BRACE) return null
  index += 1
  const ranges: [number, number][] = []
  for (;;) {
    while (isSpace(bytes[index])) index += 1
    if (bytes[index] === CLOSE_BRACE) return ranges
    if (bytes[index] !== QUOTE) return null
    const keyStart = index
    index = skipString(bytes, index)
    const keyEnd = index
    while (isSpace(bytes[index])) index += 1
    if (bytes[index] !== COLON) return null
    index += 1
    while (isSpace(bytes[index])) index += 1
    const valueStart = index
    index = skipValue(bytes, index)
    if (index === valueStart) return null
    if (keyEnd - keyStart === SEQ_KEY.length && bytes.subarray(keyStart, keyEnd).equals(SEQ_KEY)) {
      ranges.push([valueStart, index])
    }
    while (isSpace(bytes[index])) index += 1
    if (bytes[index] === COMMA) {
      index += 1
      continue
    }
    if (bytes[index] === CLOSE_BRACE) return ranges
    return null
  }
}

/**
 * The line with every top-level `seq` value replaced by `seq`, and the whitespace before
 * the opening and after the closing brace removed; every other byte is kept.
 *
 * @param bytes - A line known to parse as a JSON object with a top-level `seq`.
 * @param seq - The new seq.
 * @returns The new bytes, or null when no plain `"seq"` member was found (the caller re-serializes).
 */
export function spliceTopLevelSeq(bytes: Buffer, seq: number): Buffer | null {
  const ranges = topLevelSeqValueRanges(bytes)
  if (ranges === null || ranges.length === 0) return null
  let start = 0
  while (isSpace(bytes[start])) start += 1
  let end = bytes.length
  while (end > start && isSpace(bytes[end - 1])) end -= 1
  const value = Buffer.from(String(seq), 'latin1')
  const parts: Buffer[] = []
  let cursor = start
  for (const [valueStart, valueEnd] of ranges) {
    parts.push(bytes.subarray(cursor, valueStart), value)
    cursor = valueEnd
  }
  parts.push(bytes.subarray(cursor, end))
  return Buffer.concat(parts)
}

/** An own member's value (never an inherited one), undefined when absent. */
export function own(value: Readonly<Record<string, unknown>>, key: string): unknown {
  return Object.hasOwn(value, key) ? value[key] : undefined
}

/** Defines (never assigns) an enumerable member, so a `__proto__` key stays data (RELIABILITY S3). */
export function defineMember(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

/**
 * A fresh plain object with the own enumerable members of `source`, in order, with
 * `overrides` replacing members of the same name (in place) and the rest appended. Members
 * are defined, never assigned, so an own `__proto__` key stays data (RELIABILITY S3).
 *
 * @param source - The object to copy.
 * @param overrides - Members to replace or add; an `undefined` value removes the member.
 * @returns The copy.
 */
export function copyMembers(
  source: Readonly<Record<string, unknown>>,
  overrides: Readonly<Record<string, unknown>> = {},
): Record<string, unknown> {
  const copy: Record<string, unknown> = {}
  const define = (key: string, value: unknown): void => {
    if (value !== undefined) defineMember(copy, key, value)
  }
  for (const key of Object.keys(source)) {
    define(key, Object.hasOwn(overrides, key) ? overrides[key] : source[key])
  }
  for (const key of Object.keys(overrides)) {
    if (!Object.hasOwn(source, key)) define(key, overrides[key])
  }
  return copy
}
