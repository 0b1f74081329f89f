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
 * A seek point is a hint, never trusted alone: the read (and the write open's head scan,
 * `held-lease.ts`) that uses it checks that the line found there has the seq and checksum
 * the point recorded, and reads from byte 0 otherwise.
 */
import { SessionStoreErrorCode } from '@agent-ledger/session-store'
import type {
  AppendBatch,
  CheckpointCapability,
  CheckpointRecord,
  SignalOptions,
  UnreadableCheckpoint,
  WriterLease,
} from '@agent-ledger/session-store'

import type { FsOps } from '../fs-ops.ts'
import {
  decodeCheckpointFile,
  encodeCheckpointFile,
  isSeq,
  readCheckpointFile,
  readSeekPoint,
} from './checkpoint-envelope.ts'
import type { CheckpointFileRead } from './checkpoint-envelope.ts'
import type { Held } from './held-lease.ts'
import type { SeekPoint } from './seek-point.ts'
import { CORE_CHECKPOINT_FILE_NAME, TEMP_PREFIX } from '../layout.ts'
import { checkedSessionId, portError, throwIfAborted } from './port-errors.ts'
import { replaceFile } from '../temp-file.ts'
import { sessionDirectory } from './session-dirs.ts'

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
      const previous = (await readSeekPoint(context.fs, directory, log)).seek
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
