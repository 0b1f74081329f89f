/**
 * The envelope of a `core.checkpoint` file (see `checkpoints.ts` for the capability): one
 * JSON line (the checkpoint's binding, the body's size and CRC-32C, the seek point, its own
 * CRC-32C), `\n`, then the core's body bytes. Its own module: the checkpoint capability
 * writes and reads it, and the write open reads its seek point (`held-lease.ts`).
 */
import { constants } from 'node:fs'
import { join } from 'node:path'

import type { CheckpointRecord } from '@agent-ledger/session-store'

import { errnoOf } from '../fs-errors.ts'
import { NOT_REGULAR_ERRNO, readFully } from '../fs-ops.ts'
import type { FileHandleOps, FsOps } from '../fs-ops.ts'
import { CORE_CHECKPOINT_FILE_NAME } from '../layout.ts'
import { crc32cHex } from '../line-codec.ts'
import type { SeekPoint } from './seek-point.ts'

const ENVELOPE_FORMAT = 'agent-ledger.jsonl-core-checkpoint'
const ENVELOPE_VERSION = 1
/** The envelope line is short; past this without `\n` the file is not ours. */
const MAX_ENVELOPE_BYTES = 4096

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

export function isSeq(value: unknown): value is number {
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

/** The outcome of {@link readCheckpointFile}. */
export type CheckpointFileRead =
  | { readonly kind: 'absent' }
  | { readonly kind: 'bytes'; readonly bytes: Buffer }
  | {
      readonly kind: 'unusable'
      readonly reason: 'too-large' | 'not-a-file' | 'read-failed'
      readonly detail: string
    }

/**
 * Reads a session's checkpoint file (`core.checkpoint`) whole, never through a symbolic link, refusing one
 * larger than `maxBytes` (`'envelope'`: reads only the envelope line's bytes, any size).
 * Never throws: a missing file is `absent`, anything else that stops the read is `unusable`
 * (the open then replays the log). The one reader of the file: the capability and {@link readSeekPoint}.
 *
 * @param fs - The file-system seam.
 * @param directory - The session directory.
 * @param maxBytes - Largest checkpoint read, or `'envelope'`.
 * @returns The bytes, `absent`, or why the file cannot be used.
 */
export async function readCheckpointFile(
  fs: FsOps,
  directory: string,
  maxBytes: number | 'envelope',
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
    if (maxBytes !== 'envelope' && stats.size > maxBytes) {
      return { kind: 'unusable', reason: 'too-large', detail: `${stats.size} bytes, limit ${maxBytes}` }
    }
    const bytes = Buffer.allocUnsafe(
      maxBytes === 'envelope' ? Math.min(stats.size, MAX_ENVELOPE_BYTES + 1) : stats.size,
    )
    return { kind: 'bytes', bytes: bytes.subarray(0, await readFully(handle, bytes)) }
  } catch (error) {
    return { kind: 'unusable', reason: 'read-failed', detail: errnoOf(error) ?? String(error) }
  } finally {
    await handle.close().catch(() => undefined)
  }
}

/** What {@link readSeekPoint} found: the point, or why there is none. */
export type SeekPointRead =
  | { readonly seek: SeekPoint }
  | { readonly seek: null; readonly missing: 'checkpoint-absent' | 'checkpoint-unreadable' | 'no-seek-point' }

/**
 * The seek point of a session's stored checkpoint for `log`, reading only the envelope line.
 * Never throws: a missing file is `checkpoint-absent`; a file that cannot be opened or read,
 * or whose envelope line does not decode exactly, is `checkpoint-unreadable`; a good envelope
 * without a point (or with one into another log, or at seq 0) is `no-seek-point`.
 *
 * @param fs - The file-system seam.
 * @param directory - The session directory.
 * @param log - The log's file name.
 * @returns The point, or why there is none.
 */
export async function readSeekPoint(fs: FsOps, directory: string, log: string): Promise<SeekPointRead> {
  const read = await readCheckpointFile(fs, directory, 'envelope')
  if (read.kind === 'absent') return { seek: null, missing: 'checkpoint-absent' }
  const decoded = read.kind === 'bytes' ? decodeEnvelope(read.bytes) : null
  if (decoded === null) return { seek: null, missing: 'checkpoint-unreadable' }
  const seek = decoded.envelope.seek
  return seek !== null && seek.log === log && seek.fromSeq > 0
    ? { seek }
    : { seek: null, missing: 'no-seek-point' }
}
