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

/** What a header decoder needs besides the line. */
export interface HeaderContext {
  readonly limits: LineLimits
  /** The file, as errors name it. */
  readonly file: string
  /**
   * The session directory's name: the header's `id` must equal it (`HEADER_ID_MISMATCH` naming
   * both otherwise). Absent where no directory applies (a log read on its own).
   */
  readonly sessionId?: string | undefined
}

/**
 * Checks a header's `id` against the directory the log sits in (FORMAT.md section 3): a log
 * copied or renamed into another session's directory is refused, never read as that session.
 *
 * @param id - The header's own `id` member.
 * @param context - The file and the expected id.
 * @returns The `HEADER_ID_MISMATCH` error, or null when they match (or no id is expected).
 */
function checkHeaderId(id: unknown, context: HeaderContext): JsonlStoreError | null {
  const expected = context.sessionId
  if (expected === undefined || id === expected) return null
  return new JsonlStoreError({
    code: JsonlErrorCode.HEADER_ID_MISMATCH,
    message: `The header of ${context.file} names another session: expected "id": ${JSON.stringify(expected)} (the session directory's name), found ${describeFound(id, 'id')}; a log copied or renamed into this directory is never read as this session.`,
    file: context.file,
    line: 1,
    offset: 0,
    details: { field: 'id', expected, found: id ?? null },
  })
}

/** The outcome of decoding a header line. */
export type HeaderDecode =
  | { readonly kind: 'header'; readonly header: SessionHeader }
  /** The line failed a per-line check (checksum included): damage when complete, since a header is durable before a log is visible. */
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
  decodeHeader(line: Buffer, context: HeaderContext): HeaderDecode
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
 * Decodes a v4 header line. Checks, in order (FORMAT.md section 8): the per-line checks of
 * section 6, **checksum included** (a header line failing any of them is `failed`: the
 * scanner reports a complete one as damage, since a published header is durable before the
 * session is visible); then the own `format` member; the own `version` member (newer than
 * {@link SESSION_FORMAT_VERSION}: `VERSION_TOO_NEW`); `integrity` = `crc32c`; the header
 * schema; and, when `context.sessionId` is given, the `id` against the session directory's
 * name. The checksum comes first because every format version keeps the section 5 checksum
 * on its header line: a bit flip turning `"version":4` into `5` is damage, never an upgrade
 * request. Members are read as own properties only, so a `__proto__` member cannot supply
 * `version` (RELIABILITY S3).
 *
 * @param line - The first line without its `\n`.
 * @param context - Limits, the file name for errors, and the expected session id.
 * @returns The header, a failed check, or a refusal.
 */
export function decodeV4Header(line: Buffer, context: HeaderContext): HeaderDecode {
  const decoded = decodeLine(line, context.limits)
  if (!decoded.ok) return { kind: 'failed', reason: decoded.reason, checksumValid: decoded.checksumValid }
  const value = decoded.value
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
      details: { found: version, expected: SESSION_FORMAT_VERSION, supportedMax: SESSION_FORMAT_VERSION },
    })
  }
  if (version !== SESSION_FORMAT_VERSION) {
    return refuse(file, JsonlErrorCode.INVALID_HEADER, {
      message: `The header of ${file} has the wrong version for a v${SESSION_FORMAT_VERSION} file: expected ${SESSION_FORMAT_VERSION}, found ${describeFound(version, 'version')}.`,
      details: { field: 'version', expected: SESSION_FORMAT_VERSION, found: version ?? null },
    })
  }
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
  const idError = checkHeaderId(value['id'], context)
  if (idError !== null) return { kind: 'refused', error: idError }
  // The validated object itself (never the schema's rebuilt copy): unknown members survive.
  return { kind: 'header', header: value as SessionHeader }
}

/** The v4 format: checksummed JSON lines under a `format`/`version` header. */
export const V4_FORMAT: LogFormat = Object.freeze({
  version: SESSION_FORMAT_VERSION,
  decodeHeader: decodeV4Header,
  decodeEvent: decodeLine,
})
