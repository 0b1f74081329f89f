/**
 * The JSONL backend's `checkpoints` capability: the core's projection checkpoint
 * (`CheckpointRecord`, its body in the core's one format) stored durably beside the log in
 * `core.checkpoint` (temp file, fsync, rename, directory fsync), plus a *seek point*: where
 * the log can be entered at the checkpoint's event (plain: that event's own line, the last of
 * its batch; `.zstd`: the frame where its batch starts), so a read from that seq starts there
 * instead of at byte 0.
 *
 * File layout: one JSON line (the envelope: binding, body size and CRC-32C, seek point,
 * its own CRC-32C), `\n`, then the core's body bytes. A file whose envelope does not decode
 * exactly (garbage, a symbolic link, a special file, a damaged or cut envelope line) is
 * unreadable: `getCheckpoint` says what it found (`{ unreadable }`), and the core replays
 * everything with a `CHECKPOINT_IGNORED` warning (reason `unreadable`), never silently.
 * A good envelope over body bytes of another size or checksum hands the core the bytes found:
 * the body carries its own checksum, so the core ignores it with a `CHECKPOINT_IGNORED`
 * warning (`checksum`, `decode`) instead of a silent replay.
 * `projection.checkpoint.msgpack`, the checkpoint file of the JSONL store API of older
 * versions (another format), is an orphan cache: never read or written here (ADR
 * 2026-12-01-one-store-api).
 *
 * A seek point is a hint, never trusted alone: the read that uses it checks that the line
 * found there has the checksum the point recorded, and reads from byte 0 otherwise.
 */
import { constants } from 'node:fs'
import { join } from 'node:path'

import { SessionStoreErrorCode } from '@agent-ledger/session-store'
import type {
  AppendBatch,
  CheckpointCapability,
  CheckpointRecord,
  SignalOptions,
  UnreadableCheckpoint,
  WriterLease,
} from '@agent-ledger/session-store'

import { errnoOf } from '../fs-errors.ts'
import { NOT_REGULAR_ERRNO, readFully } from '../fs-ops.ts'
import type { FileHandleOps, FsOps } from '../fs-ops.ts'
import type { Held } from './held-lease.ts'
import type { SeekPoint } from './seek-point.ts'
import { CORE_CHECKPOINT_FILE_NAME, TEMP_PREFIX } from '../layout.ts'
import { crc32cHex } from '../line-codec.ts'
import { checkedSessionId, portError, throwIfAborted } from './port-errors.ts'
import { replaceFile } from '../temp-file.ts'
import { sessionDirectory } from './session-dirs.ts'

const ENVELOPE_FORMAT = 'agent-ledger.jsonl-core-checkpoint'
const ENVELOPE_VERSION = 1
/** The envelope line is short; past this without `\n` the file is not ours. */
const MAX_ENVELOPE_BYTES = 4096
/** Largest checkpoint file read (the core refuses bodies over its own `maxBytes` anyway). */
const MAX_FILE_BYTES = 1024 * 1024 * 1024

/** The seek points of the batches a held lease appended (most recent last), and the plain end. */
export interface SeekTrack {
  plainEnd: number
  readonly batches: { readonly lastSeq: number; readonly point: SeekPoint }[]
}

/** Batches remembered per lease for {@link seekPointFor} (a checkpoint is stored soon after its batch). */
const TRACKED_BATCHES = 64

/**
 * The seek track of a lease just granted: the point the acquire's scan found for the last
 * durable event (a checkpoint at the head of a writer that appends nothing can seek there).
 *
 * @param held - The lease's state.
 * @returns The track.
 */
export function seekTrack(held: Held): SeekTrack {
  const tail = held.tailSeek
  return {
    plainEnd: held.plainEnd,
    batches: tail === null ? [] : [{ lastSeq: held.nextSeq - 1, point: tail }],
  }
}

/**
 * Remembers where a batch that just became durable starts.
 *
 * @param track - The lease's seek track (nothing is done without one).
 * @param appended - The lease's state after the append, the log size before it and the batch.
 */
export function trackBatch(
  track: SeekTrack | undefined,
  appended: { readonly held: Held; readonly offset: number; readonly batch: AppendBatch },
): void {
  if (track === undefined) return
  const { held, offset, batch } = appended
  const lastSeq = batch.expectedSeq + batch.lines.length - 1
  const last = batch.lines.at(-1)!
  let point: SeekPoint
  let plainBytes = held.offset - offset
  if (held.adapter.encoding === 'plain') {
    // A plain log can be entered at any line: the batch's last one, where the core's
    // checkpoints fall (a checkpoint is taken at the end of a batch), so a cold open never
    // reads the rest of a large batch.
    const lastStart = held.offset - Buffer.byteLength(last, 'utf8') - 1
    point = {
      log: held.adapter.log.name,
      fromSeq: lastSeq,
      offset: lastStart,
      plainOffset: track.plainEnd + (lastStart - offset),
      firstCrc: last.slice(-10, -2),
    }
  } else {
    plainBytes = 0
    for (const line of batch.lines) plainBytes += Buffer.byteLength(line, 'utf8') + 1
    // A .zstd log is entered at a frame: the batch's first.
    point = {
      log: held.adapter.log.name,
      fromSeq: batch.expectedSeq,
      offset,
      plainOffset: track.plainEnd,
      firstCrc: batch.lines[0]!.slice(-10, -2),
    }
  }
  track.batches.push({ lastSeq, point })
  if (track.batches.length > TRACKED_BATCHES) track.batches.shift()
  track.plainEnd += plainBytes
}

/**
 * The seek point of the tracked batch holding `seq`, else the stored checkpoint's own one
 * when it is at or before `seq`, else null (the read starts at byte 0).
 */
function seekPointFor(
  track: SeekTrack | undefined,
  seq: number,
  previous: SeekPoint | null,
): SeekPoint | null {
  const batch = track?.batches.find((entry) => entry.point.fromSeq <= seq && seq <= entry.lastSeq)
  if (batch !== undefined) return batch.point
  return previous !== null && previous.fromSeq <= seq ? previous : null
}

interface Envelope {
  readonly format: string
  readonly version: number
  readonly seq: number
  readonly eventCrc: string
  readonly headerCrc: string
  readonly registryDigest: string
  readonly bodyBytes: number
  readonly bodyCrc32c: string
  readonly seek: SeekPoint | null
}

/**
 * The bytes of a checkpoint file.
 *
 * @param record - The core's record.
 * @param seek - Where a read of its event may start, or null.
 * @returns The file's bytes.
 */
export function encodeCheckpointFile(record: CheckpointRecord, seek: SeekPoint | null): Buffer {
  const envelope: Envelope = {
    format: ENVELOPE_FORMAT,
    version: ENVELOPE_VERSION,
    seq: record.seq,
    eventCrc: record.eventCrc,
    headerCrc: record.headerCrc,
    registryDigest: record.registryDigest,
    bodyBytes: record.body.byteLength,
    bodyCrc32c: crc32cHex(record.body),
    seek,
  }
  const json = JSON.stringify(envelope)
  const line = `${JSON.stringify({ ...envelope, envelopeCrc32c: crc32cHex(Buffer.from(json, 'utf8')) })}\n`
  return Buffer.concat([Buffer.from(line, 'utf8'), record.body])
}

const HEX8 = /^[0-9a-f]{8}$/

function isSeq(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

function seekOf(value: unknown): SeekPoint | null | undefined {
  if (value === null) return null
  if (typeof value !== 'object' || Array.isArray(value)) return undefined
  const point = value as Record<string, unknown>
  if (
    typeof point['log'] !== 'string' ||
    !isSeq(point['fromSeq']) ||
    !isSeq(point['offset']) ||
    !isSeq(point['plainOffset']) ||
    typeof point['firstCrc'] !== 'string' ||
    !HEX8.test(point['firstCrc'])
  ) {
    return undefined
  }
  return {
    log: point['log'],
    fromSeq: point['fromSeq'],
    offset: point['offset'],
    plainOffset: point['plainOffset'],
    firstCrc: point['firstCrc'],
  }
}

/** The envelope of a checkpoint file's first bytes, or null when it is not exactly one of ours. */
function decodeEnvelope(bytes: Buffer): { readonly envelope: Envelope; readonly bodyStart: number } | null {
  const newline = bytes.indexOf(0x0a)
  if (newline === -1 || newline > MAX_ENVELOPE_BYTES) return null
  let parsed: unknown
  try {
    parsed = JSON.parse(bytes.toString('utf8', 0, newline))
  } catch {
    return null
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return null
  const { envelopeCrc32c, ...rest } = parsed as Record<string, unknown>
  if (envelopeCrc32c !== crc32cHex(Buffer.from(JSON.stringify(rest), 'utf8'))) return null
  const seek = seekOf(rest['seek'])
  if (
    rest['format'] !== ENVELOPE_FORMAT ||
    rest['version'] !== ENVELOPE_VERSION ||
    !isSeq(rest['seq']) ||
    typeof rest['eventCrc'] !== 'string' ||
    typeof rest['headerCrc'] !== 'string' ||
    typeof rest['registryDigest'] !== 'string' ||
    !isSeq(rest['bodyBytes']) ||
    typeof rest['bodyCrc32c'] !== 'string' ||
    seek === undefined
  ) {
    return null
  }
  return { envelope: { ...(rest as unknown as Envelope), seek }, bodyStart: newline + 1 }
}

/**
 * Decodes a checkpoint file.
 *
 * @param bytes - The whole file.
 * @returns The record (its body as stored) and its seek point, or null when the envelope line is not exactly one of this version.
 */
export function decodeCheckpointFile(
  bytes: Buffer,
): { readonly record: CheckpointRecord; readonly seek: SeekPoint | null } | null {
  const decoded = decodeEnvelope(bytes)
  if (decoded === null) return null
  const { envelope, bodyStart } = decoded
  // The body as found, even when its size or checksum differs from the envelope's: the core
  // checks the body's own checksum and reports a damaged one (never trusted, never silent).
  const body = bytes.subarray(bodyStart)
  return {
    record: {
      seq: envelope.seq,
      eventCrc: envelope.eventCrc,
      headerCrc: envelope.headerCrc,
      registryDigest: envelope.registryDigest,
      body: new Uint8Array(body.buffer, body.byteOffset, body.byteLength),
    },
    seek: envelope.seek,
  }
}

/**
 * The seek point of a session's stored checkpoint for `log`, reading only the envelope line.
 * Never throws: anything unreadable is null.
 *
 * @param fs - The file-system seam.
 * @param directory - The session directory.
 * @param log - The log's file name.
 * @returns The point, or null.
 */
export async function readSeekPoint(fs: FsOps, directory: string, log: string): Promise<SeekPoint | null> {
  try {
    const handle = await fs.open(
      join(directory, CORE_CHECKPOINT_FILE_NAME),
      constants.O_RDONLY | constants.O_NOFOLLOW,
    )
    try {
      const buffer = Buffer.allocUnsafe(MAX_ENVELOPE_BYTES + 1)
      const count = await handle.read(buffer, 0, buffer.length, 0)
      const seek = decodeEnvelope(buffer.subarray(0, count))?.envelope.seek ?? null
      return seek !== null && seek.log === log ? seek : null
    } finally {
      await handle.close().catch(() => undefined)
    }
  } catch {
    return null
  }
}

/** The outcome of {@link readCheckpointFile}. */
type CheckpointFileRead =
  | { readonly kind: 'absent' }
  | { readonly kind: 'bytes'; readonly bytes: Buffer }
  | {
      readonly kind: 'unusable'
      readonly reason: 'too-large' | 'not-a-file' | 'read-failed'
      readonly detail: string
    }

/**
 * Reads a session's checkpoint file (`core.checkpoint`) whole, never through a symbolic link, refusing one
 * larger than `maxBytes`. Never throws: a missing file is `absent`, anything else that
 * stops the read is `unusable` (the open then replays the log).
 *
 * @param fs - The file-system seam.
 * @param directory - The session directory.
 * @param maxBytes - Largest checkpoint read.
 * @returns The bytes, `absent`, or why the file cannot be used.
 */
async function readCheckpointFile(
  fs: FsOps,
  directory: string,
  maxBytes: number,
): Promise<CheckpointFileRead> {
  let handle: FileHandleOps
  try {
    handle = await fs.open(
      join(directory, CORE_CHECKPOINT_FILE_NAME),
      constants.O_RDONLY | constants.O_NOFOLLOW,
    )
  } catch (error) {
    const code = errnoOf(error)
    if (code === 'ENOENT') return { kind: 'absent' }
    if (code === 'ELOOP')
      return { kind: 'unusable', reason: 'not-a-file', detail: 'a symbolic link (never followed)' }
    if (code === NOT_REGULAR_ERRNO) {
      const kind = (error as { kind?: unknown }).kind
      return {
        kind: 'unusable',
        reason: 'not-a-file',
        detail: `a ${typeof kind === 'string' ? kind : 'special file'} (not read)`,
      }
    }
    return { kind: 'unusable', reason: 'read-failed', detail: code ?? String(error) }
  }
  try {
    const stats = await handle.stat()
    if (!stats.isFile()) return { kind: 'unusable', reason: 'not-a-file', detail: 'not a regular file' }
    if (stats.size > maxBytes) {
      return { kind: 'unusable', reason: 'too-large', detail: `${stats.size} bytes, limit ${maxBytes}` }
    }
    const bytes = Buffer.allocUnsafe(stats.size)
    return { kind: 'bytes', bytes: bytes.subarray(0, await readFully(handle, bytes)) }
  } catch (error) {
    return { kind: 'unusable', reason: 'read-failed', detail: errnoOf(error) ?? String(error) }
  } finally {
    await handle.close().catch(() => undefined)
  }
}

/** What the capability needs from the backend. */
export interface CheckpointContext {
  readonly fs: FsOps
  readonly root: string
  readonly randomHex: (byteCount: number) => string
  readonly assertOpen: () => void
  /**
   * Checks that `lease` is held by this instance and still the session's lease (`FENCED`
   * otherwise), and returns its directory, its log's name and its seek track.
   */
  readonly fenced: (lease: WriterLease) => Promise<{
    readonly directory: string
    readonly log: string
    readonly track: SeekTrack
    /** The durable head's `nextSeq` under the lease. */
    readonly nextSeq: number
  }>
}

/** What was found where a checkpoint file should be, in words. */
function unusableText(read: Extract<CheckpointFileRead, { kind: 'unusable' }>): string {
  if (read.reason === 'too-large')
    return `expected a checkpoint file, found one too large to read (${read.detail})`
  if (read.reason === 'not-a-file') return `expected a regular file, found ${read.detail}`
  return `expected a readable checkpoint file, found a read error (${read.detail})`
}

/**
 * The `checkpoints` capability of a JSONL root.
 *
 * @param context - File system, root, lease checks.
 * @returns The capability.
 */
export function checkpointCapability(context: CheckpointContext): CheckpointCapability {
  return {
    async getCheckpoint(
      id: string,
      options: SignalOptions = {},
    ): Promise<CheckpointRecord | UnreadableCheckpoint | null> {
      context.assertOpen()
      const checked = checkedSessionId(id)
      throwIfAborted(options.signal, `Reading the checkpoint of session ${checked}`, checked)
      let directory: string
      try {
        directory = await sessionDirectory(context.fs, context.root, checked)
      } catch {
        return null
      }
      const read = await readCheckpointFile(context.fs, directory, MAX_FILE_BYTES)
      const file = `${checked}/${CORE_CHECKPOINT_FILE_NAME}`
      if (read.kind === 'absent') return null
      if (read.kind === 'unusable') return { unreadable: `${file}: ${unusableText(read)}` }
      return (
        decodeCheckpointFile(read.bytes)?.record ?? {
          unreadable: `${file}: expected a checkpoint envelope line (JSON with its own CRC-32C) then the body, found ${read.bytes.length} bytes whose first line does not decode as one`,
        }
      )
    },

    async putCheckpoint(lease: WriterLease, record: CheckpointRecord, options: SignalOptions = {}) {
      context.assertOpen()
      const id = lease.sessionId
      throwIfAborted(options.signal, `Storing the checkpoint of session ${id}`, id)
      const { directory, log, track, nextSeq } = await context.fenced(lease)
      if (!isSeq(record.seq) || record.seq >= nextSeq) {
        throw portError(SessionStoreErrorCode.INVALID_OPTION, {
          sessionId: id,
          message: `Cannot store a checkpoint of session ${id} at seq ${String(record.seq)}: expected a seq below the durable head ${nextSeq}; nothing was written.`,
          details: { option: 'seq', expected: `< ${nextSeq}`, found: record.seq },
        })
      }
      const previous = await readSeekPoint(context.fs, directory, log)
      const bytes = encodeCheckpointFile(record, seekPointFor(track, record.seq, previous))
      try {
        // A crash leaves the old checkpoint or the new one; `rename` (which replaces) is right
        // here: a checkpoint is a cache, never the only copy of anything.
        await replaceFile(context.fs, {
          directory,
          name: CORE_CHECKPOINT_FILE_NAME,
          tempPrefix: `${TEMP_PREFIX}checkpoint-`,
          randomHex: context.randomHex,
          bytes,
        })
      } catch (error) {
        throw portError(
          (error as { code?: unknown }).code === 'ENOSPC'
            ? SessionStoreErrorCode.DISK_FULL
            : SessionStoreErrorCode.BACKEND_FAILED,
          {
            sessionId: id,
            message: `Storing the checkpoint of session ${id} at seq ${record.seq} failed: expected ${id}/${CORE_CHECKPOINT_FILE_NAME} written durably, found ${error instanceof Error ? error.message : String(error)}; the log is unaffected.`,
            location: { file: `${id}/${CORE_CHECKPOINT_FILE_NAME}` },
            cause: error,
          },
        )
      }
    },
  }
}
