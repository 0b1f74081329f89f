import { isSurfaceEventType } from '@agent-ledger/session-events'
import type { EventRegistry, LoggedEvent, WireMessage } from '@agent-ledger/session-events'
import { createProjection, restoreProjection } from '@agent-ledger/session-projection'
import type { Projection, ProjectionSnapshot, SurfaceNode } from '@agent-ledger/session-projection'

import { checkBinding, readHeaderFacts, registryDigest } from './checkpoint-binding.ts'
import type { HeaderFacts } from './checkpoint-binding.ts'
import { readCheckpointFile } from './checkpoint-file.ts'
import {
  CHECKPOINT_FILE_NAME,
  crcHex,
  decodeCheckpointBody,
  decodeCheckpointHead,
  SEQ_INDEX_STRIDE,
} from './checkpoint-format.ts'
import type { CheckpointHead, CheckpointRejection, LineRef, SeqIndexEntry } from './checkpoint-format.ts'
import type { CheckpointOptions } from './checkpoint-options.ts'
import { lineRefOf, prefixCrc32c, pruneLineRefs, readReferencedLines } from './checkpoint-refs.ts'
import type { ReferencedLines } from './checkpoint-refs.ts'
import { toStoreError } from './fs-errors.ts'
import type { FileHandleOps, FsOps } from './fs-ops.ts'
import { JsonlErrorCode } from './jsonl-store-error.ts'
import type { StoreLimits } from './limits.ts'
import type { LogFormat } from './log-format.ts'
import type { LineLocation, ScanOutcome, ScanResume } from './log-scanner.ts'
import { readFileChunks, refineRepeatedSeq, scanLog } from './read-log.ts'
import type { ByteSource } from './read-log.ts'
import type { StoreLogger } from './store-logger.ts'

/** How an open used a projection checkpoint (reported by `openReader` and on a writer's `recovery`). */
export interface CheckpointUse {
  /** N: seq of the last event the checkpoint covered (restored, not replayed). */
  readonly seq: number
  /** Byte offset where the replayed tail started (the line of event N + 1). */
  readonly offset: number
  /** Events replayed after N. */
  readonly replayedEvents: number
}

/** Where the line of the last good event is: enough for a writer to bind its next checkpoint. */
export interface LastEventLine {
  readonly seq: number
  /** Byte offset of the line's first byte. */
  readonly eventOffset: number
  /** Byte offset just after its `\n`. */
  readonly offset: number
  /** Its `crc` member when already known, else null (read back from the file when needed). */
  readonly crc: string | null
}

/** What the store needs to find, verify and use a checkpoint for one session's log. */
export interface CheckpointContext {
  readonly fs: FsOps
  /** The session directory (absolute). */
  readonly directory: string
  readonly id: string
  /** The log, relative to the store root (for errors). */
  readonly file: string
  /** The log's file name inside the session directory (the generation the offsets point into). */
  readonly generationFile: string
  readonly format: LogFormat
  readonly limits: StoreLimits
  readonly registry: EventRegistry
  readonly logger: StoreLogger
  readonly options: CheckpointOptions
}

/** A checkpoint whose head (binding and index) matches the open log; its body is not decoded yet. */
interface BoundCheckpoint {
  readonly head: CheckpointHead
  readonly facts: HeaderFacts
  readonly body: Uint8Array
  readonly bodyCrc32c: number
}

/** A checkpoint that passed every check, with its projection restored and the log's header facts. */
interface LoadedCheckpoint {
  readonly head: CheckpointHead
  readonly facts: HeaderFacts
  readonly projection: Projection
  /** Where the surface nodes' lines are (a writer continues from them). */
  readonly surface: readonly LineRef[]
}

/**
 * What a writer continues from for its next checkpoint (FORMAT.md section 15.3): where the
 * lines of the surface's nodes are, and a verified CRC-32C of a prefix of the log.
 */
export interface CheckpointCarry {
  /** The line of at least every node of the projection's surface, by seq. */
  readonly lineRefs: Map<number, LineRef>
  /** CRC-32C of the log's bytes `[0, offset)`, verified by this open; null when none is known yet. */
  readonly prefix: { readonly offset: number; readonly crc: number } | null
}

/** The outcome of {@link scanWithCheckpoint}: the scan, the projection, and what a writer continues from. */
export interface SessionScan {
  readonly outcome: ScanOutcome
  readonly projection: Projection
  /** The checkpoint used, or null after a full replay. */
  readonly checkpoint: CheckpointUse | null
  /** The last good event's line, or null when the log has no event. */
  readonly lastLine: LastEventLine | null
  /** Sparse `[seq, offset]` pairs of the good events, every {@link SEQ_INDEX_STRIDE}. */
  readonly seqIndex: SeqIndexEntry[]
  /** For a write open: the surface's line references and the verified prefix CRC (empty for a read). */
  readonly carry?: CheckpointCarry | undefined
}

function warnIgnored(context: CheckpointContext, reason: CheckpointRejection, detail: string): null {
  const replaced = reason === 'old-version' ? ' (the next checkpoint replaces it)' : ''
  context.logger.warn(
    `Ignored the projection checkpoint of session ${context.id} (${reason}: ${detail}); replaying the whole log instead${replaced}.`,
    { id: context.id, file: `${context.id}/${CHECKPOINT_FILE_NAME}`, reason, detail },
  )
  return null
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function readError(context: CheckpointContext, error: unknown): Error {
  return toStoreError(error, { op: 'read', file: context.file, fallback: JsonlErrorCode.READ_FAILED })
}

/**
 * Finds a session's checkpoint and checks its head against the open log: file (never a
 * symlink, bounded size), envelope, version, CRC-32C, schema, binding (session, creation
 * time, generation, header line, event N's line, registry, limits). Never throws for a bad
 * checkpoint: it warns through the logger and returns null (the caller replays the whole
 * log). A missing checkpoint returns null silently.
 *
 * @param context - The session, its log's name, limits, registry, logger and options.
 * @param handle - The open log.
 * @returns The bound checkpoint (body still encoded), or null.
 * @throws {@link JsonlStoreError} `READ_FAILED` when the log itself cannot be read.
 */
async function bindCheckpoint(
  context: CheckpointContext,
  handle: FileHandleOps,
): Promise<BoundCheckpoint | null> {
  if (!context.options.enabled) return null
  const read = await readCheckpointFile(context.fs, context.directory, context.options.maxBytes)
  if (read.kind === 'absent') return null
  if (read.kind === 'unusable') return warnIgnored(context, read.reason, read.detail)
  const decoded = decodeCheckpointHead(read.bytes)
  if (!decoded.ok) return warnIgnored(context, decoded.reason, decoded.detail)
  const { head } = decoded
  let facts: HeaderFacts | null
  let mismatch: string | null
  try {
    facts = await readHeaderFacts(handle, context)
    mismatch =
      facts === null
        ? 'the log has no valid header line'
        : await checkBinding(handle, {
            binding: head.binding,
            facts,
            generationFile: context.generationFile,
            limits: context.limits,
            registryDigest: registryDigest(context.registry),
          })
  } catch (error) {
    throw readError(context, error)
  }
  if (mismatch !== null || facts === null) return warnIgnored(context, 'binding', mismatch ?? 'no header')
  return { head, facts, body: decoded.body, bodyCrc32c: decoded.bodyCrc32c }
}

/**
 * Decodes a bound checkpoint's body (CRC-32C, msgpack, shell, references), reads event N and
 * every surface node back from the log (each line checked as a full scan checks it, and
 * against the CRC the checkpoint recorded for it) and restores the projection. Never throws
 * for a bad checkpoint: warns and returns null.
 *
 * @param context - The session context (format, limits, registry, logger).
 * @param handle - The open log.
 * @param bound - From {@link bindCheckpoint}.
 * @returns The loaded checkpoint, or null.
 * @throws {@link JsonlStoreError} `READ_FAILED` when the log itself cannot be read.
 */
async function restoreCheckpoint(
  context: CheckpointContext,
  handle: FileHandleOps,
  bound: BoundCheckpoint,
): Promise<LoadedCheckpoint | null> {
  const { binding } = bound.head
  const decoded = decodeCheckpointBody(bound.head, {
    body: bound.body,
    bodyCrc32c: bound.bodyCrc32c,
    headerEndOffset: bound.facts.headerEndOffset,
  })
  if (!decoded.ok) return warnIgnored(context, decoded.reason, decoded.detail)
  const lastRef: LineRef = {
    seq: binding.seq,
    offset: binding.eventOffset,
    length: binding.offset - binding.eventOffset,
    crc: Number.parseInt(binding.eventCrc, 16),
  }
  let read: ReferencedLines
  try {
    read = await readReferencedLines(handle, { refs: [...decoded.surface, lastRef], context })
  } catch (error) {
    throw readError(context, error)
  }
  if (!read.ok) return warnIgnored(context, 'reference', read.detail)
  const surface: SurfaceNode[] = []
  for (let index = 0; index < decoded.surface.length; index += 1) {
    const value = read.values[index]!
    const { type, data } = value
    if (typeof type !== 'string' || !isSurfaceEventType(type) || !isRecord(data)) {
      return warnIgnored(
        context,
        'reference',
        `surface node seq ${decoded.surface[index]!.seq} is a ${JSON.stringify(type) ?? 'line without a type'}, not a message`,
      )
    }
    // The message is checked by restoreProjection (shape and role), as a restored snapshot's always is.
    surface.push({ seq: decoded.surface[index]!.seq, type, message: data['message'] as WireMessage })
  }
  // Event N is checked against the event contract by restoreProjection.
  const lastEvent = read.values.at(-1) as unknown as LoggedEvent
  const snapshot: ProjectionSnapshot = { ...decoded.state, lastEvent, surface }
  let projection: Projection
  try {
    projection = restoreProjection(snapshot, { registry: context.registry })
  } catch (error) {
    return warnIgnored(context, 'snapshot', error instanceof Error ? error.message : String(error))
  }
  return { head: bound.head, facts: bound.facts, projection, surface: decoded.surface }
}

/**
 * The resume point of a scan after a loaded checkpoint: header, seq N, offset and the
 * prefix's counters (so a checkpointed open reports the same counters as a full replay).
 *
 * @param loaded - A checkpoint from {@link restoreCheckpoint}.
 * @returns The scanner's resume option.
 */
function resumeOf(loaded: LoadedCheckpoint): ScanResume {
  const { binding } = loaded.head
  return {
    header: loaded.facts.header,
    headerEndOffset: loaded.facts.headerEndOffset,
    lastSeq: binding.seq,
    offset: binding.offset,
    stats: {
      goodLines: binding.seq + 2,
      events: binding.seq + 1,
      ignoredUnknown: loaded.projection.stats.ignoredUnknown,
    },
  }
}

/**
 * A write open's guard on a checkpoint (FORMAT.md section 15.2): the prefix it lets the open
 * skip must be the very bytes the checkpoint was written over, checked with one CRC-32C of
 * `[0, offset)` in 4 MiB reads. A failure drops the checkpoint with a warning; the full
 * replay that follows reports any damage (writes refused).
 *
 * @returns True when the prefix holds.
 */
async function prefixHolds(
  context: CheckpointContext,
  handle: FileHandleOps,
  bound: BoundCheckpoint,
): Promise<boolean> {
  const { binding } = bound.head
  let crc: number | null
  try {
    crc = await prefixCrc32c(handle, { start: 0, crc: 0, end: binding.offset })
  } catch (error) {
    throw readError(context, error)
  }
  if (crc === binding.prefixCrc32c) return true
  warnIgnored(
    context,
    'prefix',
    crc === null
      ? `the log ends before byte ${binding.offset}`
      : `the log's bytes [0, ${binding.offset}) have CRC-32C ${crcHex(crc)}, the checkpoint was written over ${crcHex(binding.prefixCrc32c)} (the prefix changed under it)`,
  )
  return false
}

/** Keeps a write open's line references bounded while a long log replays. */
class RefCollector {
  readonly refs: Map<number, LineRef>
  #limit: number

  constructor(initial: readonly LineRef[]) {
    this.refs = new Map(initial.map((ref) => [ref.seq, ref]))
    this.#limit = 2 * this.refs.size + PRUNE_SLACK
  }

  add(event: LoggedEvent, location: LineLocation, projection: Projection): void {
    if (!isSurfaceEventType(event.type)) return
    const ref = lineRefOf(location.bytes, { seq: event.seq, offset: location.offset })
    if (ref !== null) this.refs.set(event.seq, ref)
    if (this.refs.size > this.#limit) this.prune(projection)
  }

  prune(projection: Projection): void {
    const surface = projection.surface()
    pruneLineRefs(this.refs, { surface, afterSeq: projection.nextSeq - 1 })
    this.#limit = 2 * surface.length + PRUNE_SLACK
  }
}

/** References a replay collects beyond twice the surface before it prunes them. */
const PRUNE_SLACK = 4096

/**
 * Scans a session's log for an open: from a verified checkpoint when there is one (restore
 * the state and the surface nodes read back from the log, seek to the line after event N,
 * replay the tail), else from byte 0. Every line read gets every check; the torn-tail and
 * damage rules of the tail are unchanged. The prefix before the checkpoint is not re-parsed
 * (run `verify` for that: it never uses a checkpoint).
 *
 * @param context - The session, its log's name, limits, registry, logger and options.
 * @param handle - The open log.
 * @param options - `verifyPrefix`: a write open (checks the whole-prefix CRC, collects what its writer continues from).
 * @returns The scan outcome, the projection, the checkpoint used, the last event's line, the sparse index and the carry.
 * @throws {@link JsonlStoreError} `READ_FAILED` (or a mapped errno code) when the log cannot be read.
 */
export async function scanWithCheckpoint(
  context: CheckpointContext,
  handle: FileHandleOps,
  options: { readonly verifyPrefix?: boolean } = {},
): Promise<SessionScan> {
  const writing = options.verifyPrefix === true
  let bound = await bindCheckpoint(context, handle)
  if (bound !== null && writing && !(await prefixHolds(context, handle, bound))) bound = null
  const loaded = bound === null ? null : await restoreCheckpoint(context, handle, bound)
  const projection = loaded?.projection ?? createProjection({ registry: context.registry })
  const seqIndex: SeqIndexEntry[] = loaded === null ? [] : [...loaded.head.seqIndex]
  const collector = writing ? new RefCollector(loaded?.surface ?? []) : null
  let lastEventOffset = loaded?.head.binding.eventOffset ?? -1
  let lastEnd = loaded?.head.binding.offset ?? -1
  let replayed = 0
  const { limits } = context
  const source = (): ByteSource => readFileChunks(handle, { chunkBytes: limits.readChunkBytes })
  let outcome: ScanOutcome
  try {
    outcome = await scanLog(
      loaded === null
        ? source()
        : readFileChunks(handle, { chunkBytes: limits.readChunkBytes, start: loaded.head.binding.offset }),
      {
        format: context.format,
        limits,
        registry: context.registry,
        file: context.file,
        sessionId: context.id,
        onEvent: (event: LoggedEvent, location: LineLocation) => {
          projection.apply(event)
          replayed += 1
          if (event.seq % SEQ_INDEX_STRIDE === 0) seqIndex.push([event.seq, location.offset])
          collector?.add(event, location, projection)
          lastEventOffset = location.offset
          lastEnd = location.offset + location.bytes.length + 1
        },
        ...(loaded === null ? {} : { resume: resumeOf(loaded) }),
      },
    )
    outcome = await refineRepeatedSeq(outcome, source, limits.maxLineBytes)
  } catch (error) {
    throw readError(context, error)
  }
  collector?.prune(projection)
  const binding = loaded?.head.binding
  const lastCrc = replayed === 0 && binding !== undefined ? binding.eventCrc : null
  return {
    outcome,
    projection,
    checkpoint:
      binding === undefined ? null : { seq: binding.seq, offset: binding.offset, replayedEvents: replayed },
    lastLine:
      outcome.lastSeq < 0
        ? null
        : { seq: outcome.lastSeq, eventOffset: lastEventOffset, offset: lastEnd, crc: lastCrc },
    seqIndex,
    carry: {
      lineRefs: collector?.refs ?? new Map<number, LineRef>(),
      prefix: writing && binding !== undefined ? { offset: binding.offset, crc: binding.prefixCrc32c } : null,
    },
  }
}

/** Where {@link planReadFrom} starts a read from a seq. */
export interface ReadStart {
  /** The scanner's resume point, or null to scan from byte 0. */
  readonly resume: ScanResume | null
  /** The projection to fold the events read into (checks the session rules). */
  readonly projection: Projection
  /**
   * Events with a seq up to this one are covered by the checkpoint (their projection state is
   * in it): they get every line, seq and type check but are not folded again. -1 for none.
   */
  readonly trustedThrough: number
}

async function startsLineWithSeq(handle: FileHandleOps, offset: number, seq: number): Promise<boolean> {
  const expected = Buffer.from(`\n{"seq":${seq},`, 'latin1')
  const buffer = Buffer.allocUnsafe(expected.length)
  const count = await handle.read(buffer, 0, buffer.length, offset - 1)
  return count === buffer.length && buffer.equals(expected)
}

/**
 * Plans a read from `fromSeq` (`readEvents`): after a verified checkpoint at seq N, a read
 * from N + 1 or later starts at the checkpoint's offset with its restored projection; a read
 * from an earlier seq starts at the checkpoint's closest sparse-index entry at or before it
 * (events up to N then get the line checks only, events after N are folded into the restored
 * projection). Without a usable checkpoint, or before the first index entry, from byte 0.
 *
 * @param context - The session, its log's name, limits, registry, logger and options.
 * @param handle - The open log.
 * @param fromSeq - The first seq the caller wants.
 * @returns Where to start and what to fold into.
 */
export async function planReadFrom(
  context: CheckpointContext,
  handle: FileHandleOps,
  fromSeq: number,
): Promise<ReadStart> {
  const fromStart = (): ReadStart => ({
    resume: null,
    projection: createProjection({ registry: context.registry }),
    trustedThrough: -1,
  })
  if (!context.options.enabled || !Number.isSafeInteger(fromSeq) || fromSeq <= 0) return fromStart()
  const bound = await bindCheckpoint(context, handle)
  if (bound === null) return fromStart()
  const { binding, seqIndex } = bound.head
  if (fromSeq > binding.seq) {
    const loaded = await restoreCheckpoint(context, handle, bound)
    return loaded === null
      ? fromStart()
      : { resume: resumeOf(loaded), projection: loaded.projection, trustedThrough: -1 }
  }
  let entry: SeqIndexEntry | undefined
  for (const candidate of seqIndex) {
    if (candidate[0] > fromSeq) break
    if (candidate[0] > 0) entry = candidate
  }
  if (entry === undefined) return fromStart()
  const [seq, offset] = entry
  let starts: boolean
  try {
    starts = offset > bound.facts.headerEndOffset && (await startsLineWithSeq(handle, offset, seq))
  } catch (error) {
    throw toStoreError(error, { op: 'read', file: context.file, fallback: JsonlErrorCode.READ_FAILED })
  }
  if (!starts) {
    warnIgnored(context, 'binding', `its index entry for seq ${seq} does not point at that line`)
    return fromStart()
  }
  const loaded = await restoreCheckpoint(context, handle, bound)
  if (loaded === null) return fromStart()
  return {
    resume: {
      header: bound.facts.header,
      headerEndOffset: bound.facts.headerEndOffset,
      lastSeq: seq - 1,
      offset,
      stats: { goodLines: seq + 1, events: seq, ignoredUnknown: 0 },
    },
    projection: loaded.projection,
    trustedThrough: binding.seq,
  }
}
