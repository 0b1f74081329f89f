import {
  SESSION_FORMAT_NAME,
  SESSION_FORMAT_VERSION,
  sessionHeaderSchema,
} from '@agent-ledger/session-events'
import type { SessionHeader } from '@agent-ledger/session-events'

import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'
import { decodeLine } from './line-codec.ts'
import type { DecodedLine, LineFailureReason, LineLimits } from './line-codec.ts'
import { describeFound } from './found.ts'

/** The integrity scheme v4 headers declare: a CRC-32C suffix on every line. */
export const INTEGRITY_CRC32C = 'crc32c'

/** The outcome of decoding a header line. */
export type HeaderDecode =
  | { readonly kind: 'header'; readonly header: SessionHeader }
  /** The line failed a per-line check: it may be a torn header (see the torn-tail rule). */
  | { readonly kind: 'failed'; readonly reason: LineFailureReason; readonly checksumValid: boolean }
  /** The line is a complete, readable header this library must refuse (too new, wrong format, invalid). */
  | { readonly kind: 'refused'; readonly error: JsonlStoreError }

/**
 * How the lines of one log format are decoded. The scanner runs the same torn-tail,
 * `seq` and projection rules over any format; a format only turns one line into a value.
 * v4 is the only one today; older formats plug in here for migration.
 */
export interface LogFormat {
  /** The format version this decoder reads. */
  readonly version: number
  /**
   * Decodes the first line of a log.
   *
   * @param line - The line without its `\n`.
   * @param context - Limits and the file name for errors.
   */
  decodeHeader(line: Buffer, context: { readonly limits: LineLimits; readonly file: string }): HeaderDecode
  /**
   * Decodes one event line into a plain object (its checksum member removed).
   *
   * @param line - The line without its `\n`.
   * @param limits - Length and depth bounds.
   */
  decodeEvent(line: Buffer, limits: LineLimits): DecodedLine
}

function refuse(
  file: string,
  code: JsonlErrorCode,
  parts: { readonly message: string; readonly details: Readonly<Record<string, unknown>> },
): HeaderDecode {
  return {
    kind: 'refused',
    error: new JsonlStoreError({
      code,
      message: parts.message,
      file,
      line: 1,
      offset: 0,
      details: parts.details,
    }),
  }
}

/**
 * Decodes a v4 header line. Checks, in order: the per-line checks up to "a JSON object";
 * the own `format` member; the own `version` member (newer than
 * {@link SESSION_FORMAT_VERSION}: `VERSION_TOO_NEW`, checked before the checksum because a
 * newer format may checksum differently); `integrity` = `crc32c`; the checksum; the header
 * schema. Members are read as own properties only, so a `__proto__` member cannot supply
 * `version` (RELIABILITY S3).
 *
 * @param line - The first line without its `\n`.
 * @param context - Limits and the file name for errors.
 * @returns The header, a failed check (maybe torn), or a refusal.
 */
export function decodeV4Header(
  line: Buffer,
  context: { readonly limits: LineLimits; readonly file: string },
): HeaderDecode {
  const decoded = decodeLine(line, context.limits)
  let value: Record<string, unknown>
  if (decoded.ok) {
    value = decoded.value
  } else {
    if (decoded.reason !== 'checksum') {
      return { kind: 'failed', reason: decoded.reason, checksumValid: decoded.checksumValid }
    }
    // A readable JSON object whose checksum fails: still refuse a newer version untouched.
    value = JSON.parse(line.toString('utf8')) as Record<string, unknown>
  }
  const format = Object.hasOwn(value, 'format') ? value['format'] : undefined
  const version = Object.hasOwn(value, 'version') ? value['version'] : undefined
  const { file } = context
  if (format !== SESSION_FORMAT_NAME) {
    return refuse(file, JsonlErrorCode.INVALID_HEADER, {
      message: `The header of ${file} is not an agent-ledger header: expected "format": "${SESSION_FORMAT_NAME}", found ${describeFound(format, 'format')}.`,
      details: { field: 'format', expected: SESSION_FORMAT_NAME, found: format ?? null },
    })
  }
  if (typeof version === 'number' && Number.isInteger(version) && version > SESSION_FORMAT_VERSION) {
    return refuse(file, JsonlErrorCode.VERSION_TOO_NEW, {
      message: `${file} was written by a newer agent-ledger (format version ${version}, this library reads up to ${SESSION_FORMAT_VERSION}): upgrade @agent-ledger/session-store-jsonl to open it.`,
      details: { found: version, supportedMax: SESSION_FORMAT_VERSION },
    })
  }
  if (version !== SESSION_FORMAT_VERSION) {
    return refuse(file, JsonlErrorCode.INVALID_HEADER, {
      message: `The header of ${file} has the wrong version for a v${SESSION_FORMAT_VERSION} file: expected ${SESSION_FORMAT_VERSION}, found ${describeFound(version, 'version')}.`,
      details: { field: 'version', expected: SESSION_FORMAT_VERSION, found: version ?? null },
    })
  }
  if (!decoded.ok) return { kind: 'failed', reason: decoded.reason, checksumValid: false }
  const integrity = Object.hasOwn(value, 'integrity') ? value['integrity'] : undefined
  if (integrity !== INTEGRITY_CRC32C) {
    return refuse(file, JsonlErrorCode.INVALID_HEADER, {
      message: `The header of ${file} declares an unsupported integrity scheme: expected "${INTEGRITY_CRC32C}", found ${describeFound(integrity, 'integrity')}.`,
      details: { field: 'integrity', expected: INTEGRITY_CRC32C, found: integrity ?? null },
    })
  }
  const parsed = sessionHeaderSchema.safeParse(value)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const field = issue === undefined ? '' : issue.path.map(String).join('.')
    return refuse(file, JsonlErrorCode.INVALID_HEADER, {
      message: `The header of ${file} is invalid: field "${field}": ${issue?.message ?? 'invalid value'}.`,
      details: { field },
    })
  }
  // The validated object itself (never the schema's rebuilt copy): unknown members survive.
  return { kind: 'header', header: value as SessionHeader }
}

/** The v4 format: checksummed JSON lines under a `format`/`version` header. */
export const V4_FORMAT: LogFormat = Object.freeze({
  version: SESSION_FORMAT_VERSION,
  decodeHeader: decodeV4Header,
  decodeEvent: decodeLine,
})
