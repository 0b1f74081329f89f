/**
 * The append pipeline and the read checks, once for every backend: an event input becomes
 * exactly one validated event and its line; a stored line becomes a checked event.
 */
import { assertJsonValue, parseEvent } from '@agent-ledger/session-events'
import type { EventRegistry, LoggedEvent } from '@agent-ledger/session-events'
import type { Projection } from '@agent-ledger/session-projection'

import type { Crc32c } from './crc32c.ts'
import { openEventValue, sealEventJson } from './encryption.ts'
import type { SessionCipher, SessionKeyState } from './encryption.ts'
import { canonicalEvent, checksumJson, decodeLine } from './line-codec.ts'
import type { EncodedLine, LineBytes } from './line-codec.ts'
import type { StoredLine } from './port.ts'
import type { RedactionPolicy } from './redaction.ts'
import { snapshotInput } from './snapshot.ts'
import { SessionStoreError, SessionStoreErrorCode } from './session-store-error.ts'

/** Resource limits of the core; see `createSessionStore`'s `limits` option for the defaults. */
export interface StoreLimits {
  /** Deepest nesting of an event (the event object is level 1). Default 256. */
  readonly maxDepth: number
  /** Most JSON values (nodes) in one event. Default 5,000,000. */
  readonly maxEntries: number
  /** Largest encoded event line, in UTF-8 bytes without `\n`. Default 16 MiB. */
  readonly maxEventBytes: number
  /** Most bytes a writer buffers before `append` refuses with `BUFFER_FULL`. Default 64 MiB. */
  readonly maxBufferedBytes: number
  /** Longest stored line a reader accepts, in UTF-16 code units. Default 64 Mi. */
  readonly maxLineLength: number
}

/** The default {@link StoreLimits}. */
export const DEFAULT_LIMITS: StoreLimits = Object.freeze({
  maxDepth: 256,
  maxEntries: 5_000_000,
  maxEventBytes: 16 * 1024 * 1024,
  maxBufferedBytes: 64 * 1024 * 1024,
  maxLineLength: 64 * 1024 * 1024,
})

/** What encoding an event needs. */
export interface EncodeContext {
  readonly sessionId: string
  readonly registry: EventRegistry
  readonly limits: StoreLimits
  readonly crc32c: Crc32c
  /** When given, the event must also pass the projection's history rules (`check`, not `apply`). */
  readonly projection?: Projection | undefined
  /** What the event is, for messages (`event`, `seed event`, `repair event`). */
  readonly role?: string | undefined
  /** Applied to every string of the event's data before anything else is checked; null for none. */
  readonly redaction?: RedactionPolicy | null | undefined
  /** The session's cipher when it is encrypted: the line's event part is sealed (FORMAT.md section 17). */
  readonly cipher?: SessionCipher | null | undefined
  /**
   * A writer's buffered line bytes: the line is encoded into them (not committed: the writer
   * commits it once the event is buffered). Absent: encoded on its own.
   */
  readonly lineBytes?: LineBytes | undefined
}

/** An event ready to buffer: the validated event and its exact line. */
export interface PreparedEvent extends EncodedLine {
  readonly event: LoggedEvent
}

const PASSTHROUGH_CODES: ReadonlySet<string> = new Set([
  SessionStoreErrorCode.INVALID_EVENT,
  SessionStoreErrorCode.UNKNOWN_EVENT_TYPE,
  SessionStoreErrorCode.TOO_DEEP,
  SessionStoreErrorCode.EVENT_TOO_LARGE,
  SessionStoreErrorCode.UNSERIALIZABLE_EVENT,
])

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** The offending field a session-events error names (`time`, `data.message.role`...), as details. */
function fieldOf(error: unknown): { readonly field?: string } {
  const field = typeof error === 'object' && error !== null ? (error as { field?: unknown }).field : undefined
  return typeof field === 'string' ? { field } : {}
}

/** Maps a session-events or projection error to a store code (`details.projectionCode` keeps the original). */
export function eventError(
  error: unknown,
  context: { readonly sessionId: string; readonly seq: number; readonly what: string },
): SessionStoreError {
  const original =
    typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined
  const code =
    typeof original === 'string' && PASSTHROUGH_CODES.has(original)
      ? (original as SessionStoreErrorCode)
      : SessionStoreErrorCode.INVALID_EVENT
  return new SessionStoreError({
    code,
    sessionId: context.sessionId,
    seq: context.seq,
    message: `Cannot accept ${context.what} seq ${context.seq} for session ${context.sessionId}: ${messageOf(error)}; nothing was buffered.`,
    details: { projectionCode: typeof original === 'string' ? original : null, ...fieldOf(error) },
    cause: error,
  })
}

/**
 * Validates and encodes one new event at `position`. The input is read once (a structural
 * copy calls every getter one time), the copy is validated and serialized, and the event
 * that is checked, returned and folded is parsed back from that serialization: accessor
 * properties cannot make the written line differ from what was checked.
 *
 * @param input - `{ type, data, surfaceOp?, sourceEventSeqs?, ignorable? }` from the caller.
 * @param position - The seq and time the event gets.
 * @param context - Registry, limits, CRC function and (optionally) the projection to check against.
 * @returns The event (a fresh plain object) and its line.
 * @throws {@link SessionStoreError} `INVALID_EVENT`, `UNKNOWN_EVENT_TYPE`, `TOO_DEEP`, `EVENT_TOO_LARGE`,
 *   `UNSERIALIZABLE_EVENT`, `REDACTION_FAILED`.
 */
export function encodeEvent(
  input: unknown,
  position: { readonly seq: number; readonly time: string },
  context: EncodeContext,
): PreparedEvent {
  const { seq } = position
  const what = context.role ?? 'event'
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw eventError(
      new Error(
        `expected an object with "type" and "data", found ${input === null ? 'null' : Array.isArray(input) ? 'an array' : typeof input}`,
      ),
      { sessionId: context.sessionId, seq, what },
    )
  }
  const fields = input as Record<string, unknown>
  // The store's limits carry the two the JSON checks need (maxDepth, maxEntries).
  const jsonLimits = context.limits
  const redaction = context.redaction ?? null
  // The one read of the caller's input: every field and every getter below it, once. The
  // canonical event is our own new object: its members are copied into it in place. The
  // same walk redacts the strings of `data` as it copies them (our copy holds the redacted
  // text, the caller's object is never written) and freezes a plain copy: it becomes the
  // event the projection keeps, so `apply` finds it frozen already.
  let snapshot: ReturnType<typeof snapshotInput>
  try {
    snapshot = snapshotInput(
      canonicalEvent({
        seq,
        time: position.time,
        type: fields['type'] as string,
        data: fields['data'],
        surfaceOp: fields['surfaceOp'],
        sourceEventSeqs: fields['sourceEventSeqs'],
        ignorable: fields['ignorable'],
      }),
      jsonLimits,
      { ownRoot: true, redaction, freeze: true },
    )
  } catch (error) {
    // A getter that throws, a Proxy whose trap throws: the caller's error is the cause.
    throw new SessionStoreError({
      code: SessionStoreErrorCode.UNSERIALIZABLE_EVENT,
      sessionId: context.sessionId,
      seq,
      message: `Cannot accept ${what} seq ${seq} for session ${context.sessionId}: expected plain data that can be read, found a getter or a Proxy trap that threw while reading it (${messageOf(error)}); nothing was buffered.`,
      details: { reason: 'read-threw' },
      cause: error,
    })
  }
  const candidate = snapshot.copy
  let json: string
  // A copy the snapshot proved plain JSON data passes this check by construction; anything
  // else gets it (precise refusals: cycles, BigInt, NaN, class instances, depth, no recursion).
  if (!snapshot.plain) {
    try {
      assertJsonValue(candidate, jsonLimits, 'event')
    } catch (error) {
      throw eventError(error, { sessionId: context.sessionId, seq, what })
    }
  }
  if (redaction !== null && snapshot.redactionError !== undefined) {
    const error = snapshot.redactionError
    throw new SessionStoreError({
      code: SessionStoreErrorCode.REDACTION_FAILED,
      sessionId: context.sessionId,
      seq,
      message: `Cannot accept ${what} seq ${seq} for session ${context.sessionId}: expected the redaction hook (policy ${redaction.policyVersion}) to return a string for every string, found ${messageOf(error)}; nothing was buffered.`,
      details: { policyVersion: redaction.policyVersion },
      cause: error,
    })
  }
  try {
    json = JSON.stringify(candidate)
  } catch (error) {
    if (error instanceof RangeError) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.TOO_DEEP,
        sessionId: context.sessionId,
        seq,
        message: `Cannot accept ${what} seq ${seq} for session ${context.sessionId}: expected at most ${jsonLimits.maxDepth} levels of nesting, found deeper data while serializing; nothing was buffered.`,
        cause: error,
      })
    }
    if (error instanceof TypeError) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.UNSERIALIZABLE_EVENT,
        sessionId: context.sessionId,
        seq,
        message: `Cannot accept ${what} seq ${seq} for session ${context.sessionId}: expected JSON data, found a value JSON cannot hold (${messageOf(error)}); nothing was buffered.`,
        cause: error,
      })
    }
    throw eventError(error, { sessionId: context.sessionId, seq, what })
  }
  // What is checked, kept and returned is exactly what will be written: the copy itself when
  // it is plain JSON data (parsing it back would give the same members in the same order;
  // redaction only put strings in it), else the parse of the line.
  const event = (snapshot.plain ? candidate : JSON.parse(json)) as LoggedEvent
  try {
    parseEvent(event, context.registry)
    context.projection?.check(event)
  } catch (error) {
    throw eventError(error, { sessionId: context.sessionId, seq, what })
  }
  const cipher = context.cipher
  const text =
    cipher === undefined || cipher === null
      ? json
      : sealEventJson(json, event, { sessionId: context.sessionId, cipher })
  const encoded =
    context.lineBytes === undefined
      ? checksumJson(text, context.crc32c)
      : context.lineBytes.encode(text, context.crc32c, context.limits.maxEventBytes)
  if (encoded.byteLength > context.limits.maxEventBytes) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.EVENT_TOO_LARGE,
      sessionId: context.sessionId,
      seq,
      message: `Cannot accept ${what} seq ${seq} (${event.type}) for session ${context.sessionId}: expected at most ${context.limits.maxEventBytes} bytes, found ${encoded.byteLength}; nothing was buffered.`,
      details: { bytes: encoded.byteLength, limit: context.limits.maxEventBytes },
    })
  }
  return { event, line: encoded.line, crc: encoded.crc, byteLength: encoded.byteLength }
}

/** What checking a stored line needs. */
export interface DecodeContext {
  readonly sessionId: string
  readonly registry: EventRegistry
  readonly limits: StoreLimits
  readonly crc32c: Crc32c
  /** The seq the line must have (dense from the read's `fromSeq`). */
  readonly expectedSeq: number
  /** The last seq that passed, for error context (-1 when none). */
  readonly lastGoodSeq: number
  /** The session's key state (its header read it): null or absent for a plain session. */
  readonly keys?: SessionKeyState | undefined
}

/**
 * Checks one stored line: the per-line checks (FORMAT.md section 6, 2-7), the dense seq
 * (8), the type and payload (9-10). History rules are the caller's projection's.
 *
 * @param stored - The line as the backend yielded it.
 * @param context - Registry, limits, CRC and the expected seq.
 * @returns The event (without `crc`).
 * @throws {@link SessionStoreError} `CORRUPT_LINE`, `LINE_TOO_LARGE`, `TOO_DEEP`, `SEQ_GAP`, `SEQ_DUPLICATE`,
 *   `SEQ_CONFLICT`, `INVALID_EVENT`, `UNKNOWN_EVENT_TYPE`, each with the location and `lastGoodSeq`.
 */
export function decodeEventLine(stored: StoredLine, context: DecodeContext): LoggedEvent {
  const { sessionId, expectedSeq, lastGoodSeq } = context
  const location = stored.location
  const where = locationText(stored)
  const checked = stored.checked
  // A line the backend already parsed, checksummed and depth-checked (within our depth
  // limit) is not decoded again: each line is decoded once (see `StoredLine.checked`).
  const decoded =
    checked !== undefined &&
    checked.maxDepth <= context.limits.maxDepth &&
    stored.line.length <= context.limits.maxLineLength
      ? ({ ok: true, value: checked.value } as const)
      : decodeLine(stored.line, {
          maxLineLength: context.limits.maxLineLength,
          maxDepth: context.limits.maxDepth,
          crc32c: context.crc32c,
        })
  if (!decoded.ok) {
    const code =
      decoded.reason === 'too-large'
        ? SessionStoreErrorCode.LINE_TOO_LARGE
        : decoded.reason === 'too-deep'
          ? SessionStoreErrorCode.TOO_DEEP
          : SessionStoreErrorCode.CORRUPT_LINE
    throw new SessionStoreError({
      code,
      sessionId,
      seq: decoded.seq ?? expectedSeq,
      lastGoodSeq,
      location,
      message: `Session ${sessionId} is damaged at ${where}: expected a whole checksummed v4 line for seq ${expectedSeq}, found one that fails the ${decoded.reason} check.`,
      details: { reason: decoded.reason },
    })
  }
  const keys = context.keys
  const value =
    keys === undefined || keys === null ? decoded.value : openLine(decoded.value, { stored, keys }, context)
  const ownSeq = Object.hasOwn(value, 'seq') ? value['seq'] : undefined
  // A negative seq is not a position at all: the event check below refuses it (INVALID_EVENT, field seq).
  if (typeof ownSeq === 'number' && Number.isSafeInteger(ownSeq) && ownSeq >= 0 && ownSeq !== expectedSeq) {
    throw new SessionStoreError({
      code: ownSeq > expectedSeq ? SessionStoreErrorCode.SEQ_GAP : SessionStoreErrorCode.SEQ_DUPLICATE,
      sessionId,
      seq: ownSeq,
      lastGoodSeq,
      location,
      message: `Session ${sessionId} is damaged at ${where}: ${ownSeq > expectedSeq ? 'skips events' : 'repeats an earlier seq'}: expected "seq" to be ${expectedSeq}, found ${ownSeq}.`,
      details: { expected: expectedSeq, found: ownSeq },
    })
  }
  if (stored.seq !== expectedSeq) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.SEQ_CONFLICT,
      sessionId,
      seq: expectedSeq,
      lastGoodSeq,
      location,
      message: `Session ${sessionId} is damaged at ${where}: the backend stored a line for seq ${expectedSeq} at position ${stored.seq}; expected the two to agree.`,
      details: { expected: expectedSeq, found: stored.seq },
    })
  }
  try {
    return parseEvent(value, context.registry)
  } catch (error) {
    const original = (error as { code?: unknown }).code
    throw new SessionStoreError({
      code:
        original === SessionStoreErrorCode.UNKNOWN_EVENT_TYPE
          ? SessionStoreErrorCode.UNKNOWN_EVENT_TYPE
          : SessionStoreErrorCode.INVALID_EVENT,
      sessionId,
      seq: expectedSeq,
      lastGoodSeq,
      location,
      message: `Session ${sessionId} has an invalid event at ${where}: ${messageOf(error)}.`,
      details: {
        projectionCode: typeof original === 'string' ? original : null,
        ...fieldOf(error),
        ...(typeof value['type'] === 'string' ? { type: value['type'] } : {}),
      },
      cause: error,
    })
  }
}

/**
 * The event of an encrypted session's line: its `enc` member opened with the session's data
 * key (the checksum, checked before, covers the stored text; the tag covers the plaintext).
 *
 * @throws {@link SessionStoreError} `KEY_UNAVAILABLE` without the key; `CORRUPT_LINE` when the
 *   line is not in the encrypted form or its tag does not verify (`details.reason`).
 */
function openLine(
  value: Record<string, unknown>,
  at: { readonly stored: StoredLine; readonly keys: NonNullable<SessionKeyState> },
  context: DecodeContext,
): Record<string, unknown> {
  const { stored, keys } = at
  const { sessionId, expectedSeq, lastGoodSeq } = context
  if (keys.cipher === null) throw keys.unavailable!
  const opened = openEventValue(value, { sessionId, cipher: keys.cipher })
  if (typeof opened === 'object') return opened
  const found =
    opened === 'not-encrypted'
      ? 'a line that is not in the encrypted form (seq, time, type, enc)'
      : opened === 'auth-tag'
        ? 'one whose AES-GCM tag does not verify (tampered, or moved from another session or seq)'
        : 'one whose plaintext is not a JSON object'
  throw new SessionStoreError({
    code: SessionStoreErrorCode.CORRUPT_LINE,
    sessionId,
    seq: typeof value['seq'] === 'number' ? value['seq'] : expectedSeq,
    lastGoodSeq,
    location: stored.location,
    message: `Session ${sessionId} is damaged at ${locationText(stored)}: expected an encrypted line for seq ${expectedSeq} that opens under data key ${keys.header.dataKeyId}, found ${found}.`,
    details: { reason: opened },
  })
}

/**
 * A location as text for messages: `file line L (offset O)`, or `seq N`.
 *
 * @param stored - A stored line's seq and location.
 * @returns The text.
 */
export function locationText(stored: {
  readonly seq: number
  readonly location?: StoredLine['location']
}): string {
  const location = stored.location
  if (location === undefined) return `seq ${stored.seq}`
  const parts = [location.file ?? `seq ${stored.seq}`]
  if (location.line !== undefined) parts.push(`line ${location.line}`)
  if (location.offset !== undefined) parts.push(`(byte offset ${location.offset})`)
  return parts.join(' ')
}
