/**
 * Building and checking header lines (FORMAT.md sections 3 and 8), once for every backend.
 */
import {
  assertJsonValue,
  describeSessionId,
  isSessionId,
  SESSION_FORMAT_NAME,
  SESSION_FORMAT_VERSION,
  SESSION_ID_PATTERN,
  SESSION_ID_RULE,
  sessionHeaderSchema,
} from '@agent-ledger/session-events'
import type { JsonLimits, SessionHeader, SessionHeaderInput } from '@agent-ledger/session-events'

import type { Crc32c } from './crc32c.ts'
import type { EncryptionHeader } from './encryption.ts'
import { redactInPlace } from './redaction.ts'
import type { RedactionPolicy } from './redaction.ts'
import { checksumJson, jsonDepth, verifyLineChecksum } from './line-codec.ts'
import type { EncodedLine } from './line-codec.ts'
import type { LineLocation } from './port.ts'
import { SessionStoreError, SessionStoreErrorCode } from './session-store-error.ts'
import { describe } from './checks.ts'

/** The `integrity` member of every v4 header. */
const INTEGRITY_CRC32C = 'crc32c'

const HEADER_FIELDS = [
  'cwd',
  'parentSession',
  'seeded',
  'inheritedEventCount',
  'delegationDepth',
  'metadata',
] as const

/**
 * Checks a session id against `SESSION_ID_PATTERN`, the one rule of every backend (no
 * Windows device names either: `CON` is refused here whatever the backend).
 *
 * @param id - The candidate id.
 * @param role - What the id is, for the message (`session id`, `fork target`...).
 * @returns The id.
 * @throws {@link SessionStoreError} `INVALID_SESSION_ID` with `details.id` (escaped, at most 64 characters).
 */
export function assertSessionId(id: unknown, role = 'session id'): string {
  if (isSessionId(id)) return id
  const shown = describeSessionId(id)
  throw new SessionStoreError({
    code: SessionStoreErrorCode.INVALID_SESSION_ID,
    message: `Invalid ${role} ${shown}: expected ${SESSION_ID_RULE}, found ${typeof id === 'string' ? `${id.length} characters that do not match` : typeof id}.`,
    details: { id: shown, pattern: SESSION_ID_PATTERN.source },
  })
}

/** What {@link buildHeader} needs besides the caller's fields. */
export interface HeaderContext {
  readonly id: string
  /** The creation time, from the store's clock, unless the input has one. */
  readonly createdAt: string
  /**
   * The store's redaction policy: the caller's free-text fields (`cwd`, `metadata`) go
   * through it, like event data, and the header records it as `redaction`; null for none.
   */
  readonly redaction: RedactionPolicy | null
  readonly limits: JsonLimits
  readonly crc32c: Crc32c
  /** The new session's data key (the store's encryption option made it), or absent for a plain session. */
  readonly encryption?: EncryptionHeader | null | undefined
}

/**
 * Builds and checks a v4 header from caller fields.
 *
 * Every backend's header line is built here, so the redaction of `cwd` and `metadata`
 * (RELIABILITY S8) holds on every backend, for create, fork and salvage alike.
 *
 * @param input - Optional header fields (`id`, when given, must equal `context.id`).
 * @param context - Id, creation time, redaction policy, limits and the CRC function.
 * @returns The header object and its line (both redacted).
 * @throws {@link SessionStoreError} `INVALID_HEADER` naming the field, `REDACTION_FAILED`
 *   when the policy's hook throws or returns a non-string.
 */
export function buildHeader(
  input: Partial<SessionHeaderInput>,
  context: HeaderContext,
): { readonly header: SessionHeader } & EncodedLine {
  const { id } = context
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.INVALID_HEADER,
      sessionId: id,
      message: `Cannot create session ${id}: expected the header fields as an object, found ${describe(input)}.`,
      details: { field: '' },
    })
  }
  if (input.id !== undefined && input.id !== id) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.INVALID_HEADER,
      sessionId: id,
      message: `Cannot create session ${id}: expected header.id to be absent or ${describe(id)}, found ${describe(input.id)}.`,
      details: { field: 'id' },
    })
  }
  const header: Record<string, unknown> = {
    format: SESSION_FORMAT_NAME,
    version: SESSION_FORMAT_VERSION,
    id,
    createdAt: input.createdAt ?? context.createdAt,
  }
  for (const key of HEADER_FIELDS) {
    const value = input[key]
    if (value !== undefined) header[key] = value
  }
  const { redaction } = context
  if (redaction !== null) header['redaction'] = { policyVersion: redaction.policyVersion }
  const { encryption } = context
  if (encryption !== undefined && encryption !== null) {
    header['encryption'] = {
      scheme: encryption.scheme,
      keyId: encryption.keyId,
      dataKeyId: encryption.dataKeyId,
    }
  }
  header['integrity'] = INTEGRITY_CRC32C
  let json: string
  try {
    assertJsonValue(header, context.limits, 'header')
    json = JSON.stringify(header)
  } catch (error) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.INVALID_HEADER,
      sessionId: id,
      message: `Cannot create session ${id}: expected the header to be plain JSON within the limits, found ${error instanceof Error ? error.message : String(error)}.`,
      cause: error,
    })
  }
  // Snapshot: what is checked is exactly what is written (accessors ran once, in stringify).
  const snapshot = JSON.parse(json) as Record<string, unknown>
  if (redaction !== null) {
    // One header per session: encoding it again after the redaction costs nothing that shows.
    redactHeaderFields(snapshot, redaction, id)
    json = JSON.stringify(snapshot)
  }
  checkHeaderShape(snapshot, { id, location: undefined, verb: 'create' })
  return { header: snapshot as SessionHeader, ...checksumJson(json, context.crc32c) }
}

/** The header members that hold caller text; the others are ids, times, counts and flags. */
const REDACTED_HEADER_FIELDS = ['cwd', 'metadata'] as const

/** Redacts the snapshot's {@link REDACTED_HEADER_FIELDS} in place (our own plain copy). */
function redactHeaderFields(snapshot: Record<string, unknown>, policy: RedactionPolicy, id: string): void {
  for (const key of REDACTED_HEADER_FIELDS) {
    if (!Object.hasOwn(snapshot, key)) continue
    try {
      snapshot[key] = redactInPlace(snapshot[key], policy, true)
    } catch (error) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.REDACTION_FAILED,
        sessionId: id,
        message: `Cannot create session ${id}: expected the redaction hook (policy ${policy.policyVersion}) to return a string for every string of header.${key}, found ${error instanceof Error ? error.message : String(error)}; nothing was written.`,
        details: { policyVersion: policy.policyVersion, field: key },
        cause: error,
      })
    }
  }
}

function checkHeaderShape(
  value: Record<string, unknown>,
  context: { readonly id: string; readonly location: LineLocation | undefined; readonly verb: string },
): SessionHeader {
  const parsed = sessionHeaderSchema.safeParse(value)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const field = issue === undefined ? '' : issue.path.map(String).join('.')
    throw new SessionStoreError({
      code: SessionStoreErrorCode.INVALID_HEADER,
      sessionId: context.id,
      location: context.location,
      message: `Cannot ${context.verb} session ${context.id}: header field "${field}" is invalid: ${issue?.message ?? 'invalid value'} (found ${describe(field === '' ? value : fieldValue(value, issue?.path ?? []))}).`,
      details: { field },
    })
  }
  if (value['integrity'] !== INTEGRITY_CRC32C) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.INVALID_HEADER,
      sessionId: context.id,
      location: context.location,
      message: `Cannot ${context.verb} session ${context.id}: expected header integrity "${INTEGRITY_CRC32C}", found ${describe(value['integrity'])}.`,
      details: { field: 'integrity' },
    })
  }
  return value as SessionHeader
}

function fieldValue(value: unknown, path: readonly PropertyKey[]): unknown {
  let current = value
  for (const key of path) {
    if (typeof current !== 'object' || current === null || !Object.hasOwn(current, key)) return undefined
    current = (current as Record<PropertyKey, unknown>)[key]
  }
  return current
}

/** Options of {@link parseHeaderLine}. */
export interface ParseHeaderOptions {
  /** The session the caller asked for: a header naming another id is `HEADER_ID_MISMATCH`. */
  readonly expectedId: string
  readonly location?: LineLocation | undefined
  readonly maxDepth: number
  readonly crc32c: Crc32c
}

/**
 * Checks a stored header line: a newer `version` is refused first (before the checksum,
 * FORMAT.md section 8), then JSON, the checksum, the schema, the integrity scheme and the id.
 *
 * @param line - The header line, without `\n`.
 * @param options - The expected id, where the line is, limits and the CRC function.
 * @returns The header (without `crc`).
 * @throws {@link SessionStoreError} `VERSION_TOO_NEW`, `INVALID_HEADER`, `HEADER_ID_MISMATCH`.
 */
export function parseHeaderLine(line: string, options: ParseHeaderOptions): SessionHeader {
  const { expectedId: id, location } = options
  const fail = (message: string, details: Record<string, unknown>): SessionStoreError =>
    new SessionStoreError({
      code: SessionStoreErrorCode.INVALID_HEADER,
      sessionId: id,
      location,
      message,
      details,
    })
  if (jsonDepth(line, options.maxDepth) > options.maxDepth) {
    throw fail(
      `Session ${id} has a damaged header line: expected at most ${options.maxDepth} levels of nesting, found more.`,
      {
        reason: 'too-deep',
      },
    )
  }
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    throw fail(
      `Session ${id} has a damaged header line: expected a JSON object, found text that does not parse.`,
      {
        reason: 'json',
      },
    )
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw fail(`Session ${id} has a damaged header line: expected a JSON object, found ${describe(value)}.`, {
      reason: 'not-object',
    })
  }
  const record = value as Record<string, unknown>
  const version = Object.hasOwn(record, 'version') ? record['version'] : undefined
  if (typeof version === 'number' && version > SESSION_FORMAT_VERSION) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.VERSION_TOO_NEW,
      sessionId: id,
      location,
      message: `Session ${id} was written by a newer agent-ledger: expected format version ${SESSION_FORMAT_VERSION} or older, found ${version}; upgrade @agent-ledger/session-store to read it. Nothing was changed.`,
      details: { expected: SESSION_FORMAT_VERSION, found: version },
    })
  }
  if (!verifyLineChecksum(line, options.crc32c)) {
    throw fail(
      `Session ${id} has a damaged header line: expected a matching crc32c suffix, found a checksum mismatch.`,
      {
        reason: 'checksum',
      },
    )
  }
  delete record['crc']
  if (version !== SESSION_FORMAT_VERSION) {
    throw fail(
      `Session ${id} has a header of format version ${describe(version)}: expected ${SESSION_FORMAT_VERSION}; migrate it first (the backend's migrate capability).`,
      { field: 'version', expected: SESSION_FORMAT_VERSION, found: version },
    )
  }
  const header = checkHeaderShape(record, { id, location, verb: 'open' })
  if (header.id !== id) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.HEADER_ID_MISMATCH,
      sessionId: id,
      location,
      message: `Session ${id} has a header naming another session: expected id ${describe(id)}, found ${describe(header.id)}.`,
      details: { field: 'id', expected: id, found: header.id },
    })
  }
  return header
}
