/**
 * Opening a session from its projection checkpoint (read and write opens): the newest
 * checkpoint the backend holds, checked against the log (header, registry, limits, head,
 * event `seq`'s checksum, body version and checksum, the snapshot), then only the later
 * events, with every check. Any doubt: the full replay, the same result, and a warning.
 */
import { restoreProjection } from '@agent-ledger/session-projection'
import type { Projection } from '@agent-ledger/session-projection'

import { decodeCheckpointBody } from './checkpoint-body.ts'
import type { CheckpointPayload } from './checkpoint-body.ts'
import type {
  CheckpointSkipReason,
  CheckpointUse,
  ResolvedCheckpointOptions,
  SessionStoreWarning,
} from './checkpoint-options.ts'
import { decodeEventLine } from './event-codec.ts'
import { lineCrc } from './line-codec.ts'
import type { CheckpointRecord, SignalOptions, UnreadableCheckpoint } from './port.ts'
import { foldLines, isLineDamage, readHeader, scanSession } from './scan.ts'
import type { CoreContext, ScanResult } from './scan.ts'
import type { SessionKeyState } from './encryption.ts'
import { SessionStoreError, SessionStoreErrorCode } from './session-store-error.ts'

/** What a checkpointed open needs beyond reading (internal). */
export interface CheckpointContext extends CoreContext {
  readonly checkpoint: ResolvedCheckpointOptions
  readonly registryDigest: string
  readonly warn: (warning: SessionStoreWarning) => void
}

/** Where the checkpoint bookkeeping of a writer starts (internal). */
export interface CheckpointBase {
  /** Seq the stored checkpoint covers (-1: none usable). */
  readonly seq: number
  /** Log size when it was taken. */
  readonly logChars: number
  /** Its body's size. */
  readonly bytes: number
}

/** A scan, what it did with the checkpoint, and where a writer's checkpoint rules start. */
export interface CheckpointedScan {
  readonly scan: ScanResult
  readonly use: CheckpointUse
  /** The log's size through the last good event. */
  readonly logChars: number
  readonly base: CheckpointBase
}

/** Options of {@link scanWithCheckpoint}. */
export interface CheckpointScanOptions extends SignalOptions {
  /** The head's `nextSeq` when the caller has it (a write open); a read open leaves it out and a checkpoint past the log's end is found by reading its event. */
  readonly nextSeq?: number | undefined
}

interface Refusal {
  readonly ok: false
  readonly reason: CheckpointSkipReason
  readonly message: string
  readonly cause?: unknown
}

type Attempt =
  | {
      readonly ok: true
      readonly scan: ScanResult
      readonly payload: CheckpointPayload
      readonly replayed: number
    }
  | Refusal

const QUIET: ReadonlySet<CheckpointSkipReason> = new Set(['unsupported', 'disabled', 'missing'])
const NO_BASE: CheckpointBase = Object.freeze({ seq: -1, logChars: 0, bytes: 0 })

function refuse(reason: CheckpointSkipReason, message: string, cause?: unknown): Refusal {
  return { ok: false, reason, message, ...(cause === undefined ? {} : { cause }) }
}

function isAbort(error: unknown): boolean {
  return SessionStoreError.is(error, SessionStoreErrorCode.ABORTED)
}

/**
 * Reads a session starting from its checkpoint when one can be trusted, else from seq 0.
 * The result equals a full replay's in every case (projection, `lastSeq`, `lastCrc`,
 * damage, torn tail).
 *
 * @param context - Backend, checks, checkpoint options and the warning sink.
 * @param id - The session.
 * @param options - The head's `nextSeq` if known, the abort signal.
 * @returns The scan and what was done with the checkpoint.
 */
export async function scanWithCheckpoint(
  context: CheckpointContext,
  id: string,
  options: CheckpointScanOptions = {},
): Promise<CheckpointedScan> {
  const capability = context.backend.capabilities.checkpoints
  if (capability === undefined)
    return await fullScan(context, { id, why: refuse('unsupported', ''), signal: options.signal })
  if (!context.checkpoint.enabled)
    return await fullScan(context, { id, why: refuse('disabled', ''), signal: options.signal })
  let record: CheckpointRecord | UnreadableCheckpoint | null
  try {
    record = await capability.getCheckpoint(id, { signal: options.signal })
  } catch (error) {
    if (isAbort(error)) throw error
    const message = `getCheckpoint failed: ${error instanceof Error ? error.message : String(error)}`
    return await fullScan(context, { id, why: refuse('backend', message, error), signal: options.signal })
  }
  if (record === null)
    return await fullScan(context, { id, why: refuse('missing', ''), signal: options.signal })
  if ('unreadable' in record)
    return await fullScan(context, {
      id,
      why: refuse('unreadable', record.unreadable),
      signal: options.signal,
    })
  const attempt = await fromCheckpoint(context, { id, record, options })
  if (!attempt.ok) return await fullScan(context, { id, why: attempt, signal: options.signal })
  return {
    scan: attempt.scan,
    use: { used: true, seq: record.seq, replayedEvents: attempt.replayed },
    logChars: attempt.payload.logChars + attempt.scan.chars,
    base: { seq: record.seq, logChars: attempt.payload.logChars, bytes: record.body.byteLength },
  }
}

async function fullScan(
  context: CheckpointContext,
  request: { readonly id: string; readonly why: Refusal } & SignalOptions,
): Promise<CheckpointedScan> {
  const { id, why } = request
  const scan = await scanSession(context, id, { signal: request.signal })
  if (!QUIET.has(why.reason)) {
    const warning: SessionStoreWarning = {
      code: 'CHECKPOINT_IGNORED',
      sessionId: id,
      message: `The projection checkpoint of session ${id} was ignored (${why.reason}: ${why.message}); every event was replayed instead.`,
      details: { reason: why.reason },
      ...(why.cause === undefined ? {} : { cause: why.cause }),
    }
    try {
      context.warn(warning)
    } catch {
      // A throwing warning handler must not turn a good open into a failed one.
    }
  }
  return {
    scan,
    use: { used: false, reason: why.reason, message: why.message, replayedEvents: scan.events },
    logChars: scan.chars,
    base: NO_BASE,
  }
}

/** Reads event `seq` with every line check; its checksum must be the record's. */
async function boundEvent(
  context: CheckpointContext,
  request: {
    readonly id: string
    readonly record: CheckpointRecord
    readonly keys: SessionKeyState
  } & SignalOptions,
): Promise<{ readonly event: unknown } | Refusal> {
  const { id, record } = request
  let found: unknown
  try {
    for await (const stored of context.backend.read(id, {
      fromSeq: record.seq,
      toSeq: record.seq,
      signal: request.signal,
    })) {
      const event = decodeEventLine(stored, {
        ...context,
        sessionId: id,
        expectedSeq: record.seq,
        lastGoodSeq: record.seq - 1,
        keys: request.keys,
      })
      const crc = lineCrc(stored.line)
      if (crc !== record.eventCrc) {
        return refuse(
          'event',
          `expected event ${record.seq} with crc ${record.eventCrc}, found crc ${crc ?? 'none'}`,
        )
      }
      found = event
    }
  } catch (error) {
    if (!isLineDamage(error, context.backend)) throw error
    return refuse('event', `event ${record.seq} fails its checks (${error.code})`, error)
  }
  if (found === undefined) {
    return refuse(
      'past-head',
      `expected a seq below the head of the log, found ${record.seq} (no such event)`,
    )
  }
  return { event: found }
}

async function fromCheckpoint(
  context: CheckpointContext,
  request: {
    readonly id: string
    readonly record: CheckpointRecord
    readonly options: CheckpointScanOptions
  },
): Promise<Attempt> {
  const { id, record, options } = request
  const { header, line: headerLine, keys } = await readHeader(context, id, options)
  const headerCrc = lineCrc(headerLine)
  if (record.headerCrc !== headerCrc) {
    return refuse('header', `expected header crc ${headerCrc ?? 'none'}, found ${record.headerCrc}`)
  }
  if (record.registryDigest !== context.registryDigest) {
    return refuse('registry', `expected registry ${context.registryDigest}, found ${record.registryDigest}`)
  }
  // A read open does not ask for the head (a file backend would scan the whole log for it):
  // a checkpoint past the head has no stored event `seq`, which `boundEvent` finds.
  const nextSeq = options.nextSeq
  if (
    !Number.isSafeInteger(record.seq) ||
    record.seq < 0 ||
    (nextSeq !== undefined && record.seq >= nextSeq)
  ) {
    return refuse(
      'past-head',
      `expected a seq below the head ${nextSeq ?? 'of the log'}, found ${record.seq}`,
    )
  }
  // The binding first: a record whose event is not stored (past the head) or has another
  // checksum is refused for that, whatever its body says.
  const bound = await boundEvent(context, { id, record, keys, signal: options.signal })
  if ('ok' in bound) return bound
  if (record.body.byteLength > context.checkpoint.maxBytes) {
    return refuse(
      'too-large',
      `expected at most ${context.checkpoint.maxBytes} bytes, found ${record.body.byteLength}`,
    )
  }
  const payload = decodeCheckpointBody(record.body, context.crc32c)
  if ('reason' in payload) return refuse(payload.reason, payload.message)
  if (payload.seq !== record.seq)
    return refuse('schema', `expected a payload for seq ${record.seq}, found ${payload.seq}`)
  if (payload.maxDepth > context.limits.maxDepth || payload.maxLineLength > context.limits.maxLineLength) {
    return refuse(
      'limits',
      `expected limits up to maxDepth ${context.limits.maxDepth} and maxLineLength ${context.limits.maxLineLength}, found ${payload.maxDepth} and ${payload.maxLineLength}`,
    )
  }
  let projection: Projection
  try {
    projection = restoreProjection(payload.snapshot, { registry: context.registry })
  } catch (error) {
    return refuse(
      'snapshot',
      `the snapshot does not restore (${error instanceof Error ? error.message : String(error)})`,
      error,
    )
  }
  if (
    projection.nextSeq !== record.seq + 1 ||
    JSON.stringify(projection.lastEvent) !== JSON.stringify(bound.event)
  ) {
    return refuse(
      'schema',
      `expected a snapshot ending with event ${record.seq} as stored, found nextSeq ${projection.nextSeq} and another last event`,
    )
  }
  const folded = await foldLines(
    context,
    { id, projection, lastSeq: record.seq, lastCrc: record.eventCrc, keys },
    { signal: options.signal },
  )
  if (folded.damage !== null || folded.tornTail !== null) {
    return refuse(
      'tail',
      folded.damage !== null
        ? `the events after ${record.seq} are damaged (${folded.damage.code} after seq ${folded.lastSeq})`
        : `the events after ${record.seq} end in a torn tail`,
    )
  }
  return {
    ok: true,
    scan: { header, headerLine, keys, projection, ...folded },
    payload,
    replayed: folded.events,
  }
}
