/**
 * Reading a session through the port with every check (header, per-line, dense seq, type,
 * payload, history rules), once for every operation that reads: open for write, open for
 * read, verify, fork, salvage.
 */
import type { EventRegistry, LoggedEvent, SessionHeader } from '@agent-ledger/session-events'
import { createProjection } from '@agent-ledger/session-projection'
import type { Projection } from '@agent-ledger/session-projection'

import type { Crc32c } from './crc32c.ts'
import type { SessionKeyState, SessionKeys } from './encryption.ts'
import { decodeEventLine, locationText } from './event-codec.ts'
import type { DecodeContext, StoreLimits } from './event-codec.ts'
import { parseHeaderLine } from './header.ts'
import { lineCrc } from './line-codec.ts'
import type { SessionBackend, SignalOptions, StoredLine, TornTailInfo } from './port.ts'
import type { RedactionPolicy } from './redaction.ts'
import { SessionStoreError, SessionStoreErrorCode } from './session-store-error.ts'

/** What every reading operation needs (internal). */
export interface CoreContext {
  readonly backend: SessionBackend
  readonly registry: EventRegistry
  readonly limits: StoreLimits
  readonly crc32c: Crc32c
  /** Applied to every string of new events' data; null for none. */
  readonly redaction: RedactionPolicy | null
  /** The store's encryption option and the key state of the sessions it read. */
  readonly keys: SessionKeys
}

/** The outcome of {@link scanSession}: the header, then where the fold of every line stopped. */
export interface ScanResult extends FoldResult {
  readonly header: SessionHeader
  readonly headerLine: string
  /** The session's key state (null: plain). */
  readonly keys: SessionKeyState
  /** The projection of the good prefix. */
  readonly projection: Projection
}

/** Options of {@link scanSession}. */
export interface ScanOptions extends SignalOptions {
  /** Stop after this seq (inclusive). */
  readonly toSeq?: number | undefined
  /** Called with each good line and its event, in order. */
  readonly onEvent?: ((stored: StoredLine, event: LoggedEvent) => void) | undefined
}

const LINE_DAMAGE: ReadonlySet<string> = new Set([
  SessionStoreErrorCode.CORRUPT_LINE,
  SessionStoreErrorCode.LINE_TOO_LARGE,
  SessionStoreErrorCode.TOO_DEEP,
  SessionStoreErrorCode.SEQ_GAP,
  SessionStoreErrorCode.SEQ_DUPLICATE,
  SessionStoreErrorCode.SEQ_CONFLICT,
  SessionStoreErrorCode.INVALID_EVENT,
  SessionStoreErrorCode.UNKNOWN_EVENT_TYPE,
])

/**
 * True for the codes that say a stored line (not the call) is bad: a scan records them as
 * damage. `backend` adds its own damage codes ({@link SessionBackend.damageCodes}).
 */
export function isLineDamage(error: unknown, backend?: SessionBackend): error is SessionStoreError {
  if (!SessionStoreError.is(error)) return false
  return LINE_DAMAGE.has(error.code) || backend?.damageCodes?.includes(error.code) === true
}

/**
 * Reads and checks a session's header, and opens its data key when it is encrypted.
 *
 * @param context - Backend and checks.
 * @param id - The session.
 * @param options - The abort signal; `keyRequired: false` records a missing key instead of throwing.
 * @returns The header, its exact line and its key state.
 * @throws {@link SessionStoreError} `SESSION_NOT_FOUND`, `VERSION_TOO_NEW`, `INVALID_HEADER`, `HEADER_ID_MISMATCH`,
 *   `KEY_UNAVAILABLE`...
 */
export async function readHeader(
  context: CoreContext,
  id: string,
  options: SignalOptions & { readonly keyRequired?: boolean } = {},
): Promise<{ readonly header: SessionHeader; readonly line: string; readonly keys: SessionKeyState }> {
  const stored = await context.backend.readHeader(id, options)
  const header = parseHeaderLine(stored.line, {
    expectedId: id,
    location: stored.location,
    maxDepth: context.limits.maxDepth,
    crc32c: context.crc32c,
  })
  const keys = await context.keys.load(id, header, {
    signal: options.signal,
    required: options.keyRequired !== false,
  })
  return { header, line: stored.line, keys }
}

/**
 * Reads a whole session (or up to `toSeq`) with every check, folding a projection. Damage
 * in a line ends the scan and is returned (the good prefix stays usable); a refusal of the
 * session as a whole (header, version, not found, abort, backend failure) is thrown.
 *
 * @param context - Backend and checks.
 * @param id - The session.
 * @param options - `toSeq`, `onEvent`, the abort signal.
 * @returns The header, the projection of the good prefix, and any damage or torn tail.
 */
export async function scanSession(
  context: CoreContext,
  id: string,
  options: ScanOptions = {},
): Promise<ScanResult> {
  const { header, line: headerLine, keys } = await readHeader(context, id, options)
  const projection = createProjection({ registry: context.registry })
  const folded = await foldLines(context, { id, projection, lastSeq: -1, lastCrc: null, keys }, options)
  return { header, headerLine, keys, projection, ...folded }
}

/** What {@link foldLines} continues from. */
export interface FoldStart {
  readonly id: string
  /** Folded up to `lastSeq`; receives every later good event. */
  readonly projection: Projection
  readonly lastSeq: number
  readonly lastCrc: string | null
  /** The session's key state, from its header read. */
  readonly keys: SessionKeyState
}

/** What {@link foldLines} found. */
export interface FoldResult {
  readonly lastSeq: number
  readonly lastCrc: string | null
  readonly damage: SessionStoreError | null
  readonly tornTail: TornTailInfo | null
  /** Events folded. */
  readonly events: number
  /** Size of the lines folded, each counted with its `\n` (UTF-16 code units: bytes for ASCII). */
  readonly chars: number
}

/**
 * Reads lines from `start.lastSeq + 1` with every check and folds them into `start.projection`
 * (internal: the full scan and the tail after a checkpoint).
 *
 * @param context - Backend and checks.
 * @param start - The session, the projection and where it stands.
 * @param options - `toSeq`, `onEvent`, the abort signal.
 * @returns Where the fold stopped, and any damage or torn tail.
 */
export async function foldLines(
  context: CoreContext,
  start: FoldStart,
  options: ScanOptions = {},
): Promise<FoldResult> {
  const { id, projection } = start
  let lastSeq = start.lastSeq
  let lastCrc = start.lastCrc
  let damage: SessionStoreError | null = null
  let tornTail: TornTailInfo | null = null
  let events = 0
  let chars = 0
  // The line being checked: a repeated seq is compared with the first line of that seq.
  let current: StoredLine | null = null
  // One decode context for the whole read, its two seqs moved per line (no copy per line).
  const decode: { -readonly [K in keyof DecodeContext]: DecodeContext[K] } = {
    sessionId: id,
    registry: context.registry,
    limits: context.limits,
    crc32c: context.crc32c,
    expectedSeq: lastSeq + 1,
    lastGoodSeq: lastSeq,
    keys: start.keys,
  }
  try {
    for await (const stored of context.backend.read(id, {
      fromSeq: lastSeq + 1,
      toSeq: options.toSeq,
      signal: options.signal,
      onTornTail: (tail) => {
        tornTail = tail
      },
    })) {
      decode.expectedSeq = lastSeq + 1
      decode.lastGoodSeq = lastSeq
      current = stored
      const event = decodeEventLine(stored, decode)
      try {
        projection.apply(event)
      } catch (error) {
        throw new SessionStoreError({
          code: SessionStoreErrorCode.INVALID_EVENT,
          sessionId: id,
          seq: event.seq,
          lastGoodSeq: lastSeq,
          location: stored.location,
          message: `Session ${id} has an event that breaks the history rules at ${locationText(stored)}: ${error instanceof Error ? error.message : String(error)}.`,
          details: { projectionCode: (error as { code?: unknown }).code ?? null },
          cause: error,
        })
      }
      lastSeq = event.seq
      lastCrc = lineCrc(stored.line)
      events += 1
      chars += stored.line.length + 1
      options.onEvent?.(stored, event)
    }
  } catch (error) {
    if (!isLineDamage(error, context.backend)) throw error
    damage =
      current !== null && SessionStoreError.is(error, SessionStoreErrorCode.SEQ_DUPLICATE)
        ? await refineRepeatedSeq(context, { id, repeat: current, signal: options.signal }, error)
        : error
  }
  return { lastSeq, lastCrc, damage, tornTail, events, chars }
}

/**
 * A repeated seq told apart (only on that error path): `SEQ_DUPLICATE` when the line repeats
 * the first line of its seq byte for byte, `SEQ_CONFLICT` (two writers) when it is another
 * event; `details.identical` and `details.offsets` (first line, repeat) say which. The first
 * line is read again through the port; when it cannot be read, the error is kept as it is.
 */
async function refineRepeatedSeq(
  context: CoreContext,
  at: SignalOptions & { readonly id: string; readonly repeat: StoredLine },
  error: SessionStoreError,
): Promise<SessionStoreError> {
  const seq = error.details['found']
  if (typeof seq !== 'number') return error
  let first: StoredLine | undefined
  try {
    for await (const stored of context.backend.read(at.id, {
      fromSeq: seq,
      toSeq: seq,
      signal: at.signal,
    })) {
      first = stored
      break
    }
  } catch {
    return error
  }
  if (first === undefined) return error
  const { repeat } = at
  const identical = first.line === repeat.line
  return new SessionStoreError({
    code: identical ? SessionStoreErrorCode.SEQ_DUPLICATE : SessionStoreErrorCode.SEQ_CONFLICT,
    sessionId: at.id,
    seq: error.seq,
    lastGoodSeq: error.lastGoodSeq,
    location: error.location,
    message: identical
      ? `${error.message} The line repeats the first line of seq ${seq} (${locationText(first)}) byte for byte.`
      : `${error.message} The line holds another event than the first line of seq ${seq} (${locationText(first)}), as two writers without a lease would write.`,
    details: {
      ...error.details,
      identical,
      offsets: [first.location?.offset ?? null, repeat.location?.offset ?? null],
      ...(identical ? {} : { hint: 'two writers' }),
    },
  })
}
