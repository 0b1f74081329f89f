import { decode, encode, Encoder } from '@msgpack/msgpack'
import { crc32c } from '@node-rs/crc32'
import { SNAPSHOT_VERSION } from '@agent-ledger/session-projection'
import type { ProjectionSnapshot } from '@agent-ledger/session-projection'
import { z } from 'zod'

/** File name of a session's projection checkpoint, beside its log. A cache: deleting it loses nothing. */
export const CHECKPOINT_FILE_NAME = 'projection.checkpoint.msgpack'

/** The checkpoint layout this build writes and reads; a file with a larger one is ignored with a warning. */
export const CHECKPOINT_VERSION = 1

/** The `format` member of every checkpoint file. */
export const CHECKPOINT_FORMAT = 'agent-ledger.projection-checkpoint'

/** One entry of the sparse seq index: `[seq, byte offset where the line of that seq starts]`. */
export type SeqIndexEntry = readonly [seq: number, offset: number]

/**
 * What ties a checkpoint to one exact log prefix. A checkpoint is used only when every
 * field matches the log it is opened with.
 */
export interface CheckpointBinding {
  /** The session id (the header's `id`). */
  readonly sessionId: string
  /** The header's `createdAt`. */
  readonly createdAt: string
  /** The generation file the offsets point into, e.g. `session.v4.jsonl`. */
  readonly generationFile: string
  /** That file's format version (the header's `version`). */
  readonly formatVersion: number
  /** The `crc` member of the header line (8 lowercase hex digits). */
  readonly headerCrc: string
  /** SHA-256 of the header line's bytes, `\n` included (64 lowercase hex digits). */
  readonly headerSha256: string
  /** N: seq of the last event folded into the snapshot. */
  readonly seq: number
  /** The `crc` member of event N's line. */
  readonly eventCrc: string
  /** Byte offset where the line of event N starts. */
  readonly eventOffset: number
  /** Byte offset where the line of event N + 1 starts (just after event N's `\n`). */
  readonly offset: number
  /** For a zstd log, the compressed offset of the frame holding event N + 1; always null for a plain log. */
  readonly frameOffset: number | null
  /**
   * SHA-256 of the writer's known event types (sorted, one per line): a reader that knows
   * other types could judge the prefix differently, so it replays instead.
   */
  readonly registryDigest: string
  /** The writer's `maxLineBytes`: a reader with a smaller limit replays (a prefix line could exceed it). */
  readonly maxLineBytes: number
  /** The writer's `maxDepth`: a reader with a smaller limit replays. */
  readonly maxDepth: number
}

/** A decoded checkpoint: the binding, the projection snapshot at seq N and the sparse seq index. */
export interface CheckpointRecord {
  readonly checkpointVersion: typeof CHECKPOINT_VERSION
  readonly binding: CheckpointBinding
  /** `Projection.snapshot()` taken after event N (so `snapshot.nextSeq === binding.seq + 1`). */
  readonly snapshot: ProjectionSnapshot
  /** Sparse `[seq, offset]` pairs (every {@link SEQ_INDEX_STRIDE} events, ascending, all seq <= N). */
  readonly seqIndex: readonly SeqIndexEntry[]
}

/** Events between two entries of the sparse seq index a checkpoint carries. */
export const SEQ_INDEX_STRIDE = 4096

const hex8 = z.string().regex(/^[0-9a-f]{8}$/)
const count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER)

const bindingSchema = z.strictObject({
  sessionId: z.string().min(1),
  createdAt: z.string().min(1),
  generationFile: z.string().min(1),
  formatVersion: z.number().int().positive(),
  headerCrc: hex8,
  headerSha256: z.string().regex(/^[0-9a-f]{64}$/),
  seq: count,
  eventCrc: hex8,
  eventOffset: count,
  offset: count,
  frameOffset: count.nullable(),
  registryDigest: z.string().regex(/^[0-9a-f]{64}$/),
  maxLineBytes: count,
  maxDepth: count,
})

// The snapshot's insides are checked by restoreProjection (surface messages, repair state, stats).
// On disk its surface is an array of bin, each the msgpack of one node (encoded once per node).
const snapshotShellSchema = z.looseObject({
  snapshotVersion: z.literal(SNAPSHOT_VERSION),
  nextSeq: count,
  surface: z.array(z.instanceof(Uint8Array)),
})

const headSchema = z
  .strictObject({
    binding: bindingSchema,
    seqIndex: z.array(z.tuple([count, count])),
  })
  .superRefine((head, context) => {
    const { binding, seqIndex } = head
    if (binding.eventOffset >= binding.offset) {
      context.addIssue({ code: 'custom', path: ['binding', 'offset'], message: 'must follow eventOffset' })
    }
    for (let index = 0; index < seqIndex.length; index += 1) {
      const [seq, offset] = seqIndex[index]!
      const previous = seqIndex[index - 1]
      if (
        seq > binding.seq ||
        offset > binding.eventOffset ||
        (previous !== undefined && seq <= previous[0])
      ) {
        context.addIssue({ code: 'custom', path: ['seqIndex', index], message: 'out of order or past N' })
        return
      }
    }
  })

const envelopeSchema = z.strictObject({
  format: z.literal(CHECKPOINT_FORMAT),
  checkpointVersion: z.literal(CHECKPOINT_VERSION),
  headCrc32c: z.number().int().nonnegative().max(0xffffffff),
  head: z.instanceof(Uint8Array),
  bodyCrc32c: z.number().int().nonnegative().max(0xffffffff),
  body: z.instanceof(Uint8Array),
})

/** Why a checkpoint file was not used (the open then replays the whole log). */
export type CheckpointRejection =
  | 'decode'
  | 'schema'
  | 'checksum'
  | 'newer-version'
  | 'snapshot'
  | 'binding'
  /** A write open's checksum pass found a prefix line failing its checksum (the log is damaged). */
  | 'prefix'
  | 'too-large'
  | 'not-a-file'
  | 'read-failed'

/** The binding and the sparse index of a checkpoint: small, decoded before the snapshot. */
export interface CheckpointHead {
  readonly binding: CheckpointBinding
  readonly seqIndex: readonly SeqIndexEntry[]
}

/** The outcome of {@link decodeCheckpointHead}: the head, and the still-encoded snapshot. */
export type CheckpointHeadDecode =
  | {
      readonly ok: true
      readonly head: CheckpointHead
      /** The msgpack snapshot, checked and decoded only when the binding holds ({@link decodeCheckpointSnapshot}). */
      readonly body: Uint8Array
      readonly bodyCrc32c: number
    }
  | { readonly ok: false; readonly reason: CheckpointRejection; readonly detail: string }

/** The outcome of {@link decodeCheckpointSnapshot}. */
export type CheckpointSnapshotDecode =
  | { readonly ok: true; readonly snapshot: ProjectionSnapshot }
  | { readonly ok: false; readonly reason: CheckpointRejection; readonly detail: string }

function crcHex(value: number): string {
  return value.toString(16).padStart(8, '0')
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/**
 * Encodes a checkpoint file: an outer msgpack map `{format, checkpointVersion, headCrc32c,
 * head, bodyCrc32c, body}` where `head` is the msgpack of `{binding, seqIndex}` and `body` the
 * msgpack of the snapshot, each under its own CRC-32C: a flipped byte anywhere is caught
 * before it is decoded, and a checkpoint whose binding fails is rejected without decoding
 * its snapshot. In `body`, `surface` is an array of bin, each the msgpack of one surface
 * node: surface nodes never change, so a writer encodes each once (`nodeCache`) and a
 * checkpoint at every `turn/end` costs the new nodes plus a copy, not a re-encode of the
 * whole history.
 *
 * @param record - The binding, snapshot and sparse index.
 * @param options - `maxDepth`: deepest nesting to encode (event data depth plus the checkpoint's own levels);
 *   `nodeCache`: encoded surface nodes kept across calls (keyed by node object).
 * @returns The file's bytes.
 */
export function encodeCheckpoint(
  record: CheckpointRecord,
  options: { readonly maxDepth: number; readonly nodeCache?: WeakMap<object, Uint8Array> },
): Uint8Array {
  const head = encode({ binding: record.binding, seqIndex: record.seqIndex }, { ignoreUndefined: true })
  const encodeOptions = { ignoreUndefined: true, maxDepth: options.maxDepth }
  const cache = options.nodeCache
  let surfaceBytes = 0
  const surface = record.snapshot.surface.map((node) => {
    let bytes = cache?.get(node)
    if (bytes === undefined) {
      bytes = encode(node, encodeOptions)
      cache?.set(node, bytes)
    }
    surfaceBytes += bytes.length + 5
    return bytes
  })
  // Sized up front: a growing buffer would be copied at every doubling.
  const body = new Encoder({ ...encodeOptions, initialBufferSize: surfaceBytes + 64 * 1024 }).encode({
    ...record.snapshot,
    surface,
  })
  return new Encoder({ ignoreUndefined: true, initialBufferSize: head.length + body.length + 1024 }).encode({
    format: CHECKPOINT_FORMAT,
    checkpointVersion: record.checkpointVersion,
    headCrc32c: crc32c(head) >>> 0,
    head,
    bodyCrc32c: crc32c(body) >>> 0,
    body,
  })
}

function issueText(error: z.ZodError): string {
  const issue = error.issues[0]
  return issue === undefined ? 'invalid' : `${issue.path.map(String).join('.') || '(root)'}: ${issue.message}`
}

/**
 * Decodes a checkpoint file's envelope and head (never throws): msgpack, the version (a
 * newer one is `newer-version`), the envelope's schema, the head's CRC-32C and schema.
 *
 * @param bytes - The whole file.
 * @returns The head and the encoded snapshot, or why the file cannot be used.
 */
export function decodeCheckpointHead(bytes: Uint8Array): CheckpointHeadDecode {
  let outer: unknown
  try {
    outer = decode(bytes)
  } catch (error) {
    return { ok: false, reason: 'decode', detail: messageOf(error) }
  }
  const versionProbe = z.looseObject({ checkpointVersion: z.number().int() }).safeParse(outer)
  if (versionProbe.success && versionProbe.data.checkpointVersion > CHECKPOINT_VERSION) {
    return {
      ok: false,
      reason: 'newer-version',
      detail: `checkpointVersion ${versionProbe.data.checkpointVersion}, this build reads up to ${CHECKPOINT_VERSION}`,
    }
  }
  const envelope = envelopeSchema.safeParse(outer)
  if (!envelope.success) return { ok: false, reason: 'schema', detail: issueText(envelope.error) }
  const { head, headCrc32c, body, bodyCrc32c } = envelope.data
  const actual = crc32c(head) >>> 0
  if (actual !== headCrc32c) {
    return {
      ok: false,
      reason: 'checksum',
      detail: `head CRC-32C ${crcHex(actual)}, recorded ${crcHex(headCrc32c)}`,
    }
  }
  let inner: unknown
  try {
    inner = decode(head)
  } catch (error) {
    return { ok: false, reason: 'decode', detail: messageOf(error) }
  }
  const parsed = headSchema.safeParse(inner)
  if (!parsed.success) return { ok: false, reason: 'schema', detail: issueText(parsed.error) }
  return { ok: true, head: parsed.data, body, bodyCrc32c }
}

/**
 * Checks the snapshot's CRC-32C, decodes it and checks its shell (version, `nextSeq = N + 1`);
 * its insides are left to `restoreProjection`. Never throws.
 *
 * @param head - The decoded head (for N).
 * @param body - The encoded snapshot.
 * @param bodyCrc32c - Its recorded CRC-32C.
 * @returns The snapshot, or why it cannot be used.
 */
export function decodeCheckpointSnapshot(
  head: CheckpointHead,
  body: Uint8Array,
  bodyCrc32c: number,
): CheckpointSnapshotDecode {
  const actual = crc32c(body) >>> 0
  if (actual !== bodyCrc32c) {
    return {
      ok: false,
      reason: 'checksum',
      detail: `body CRC-32C ${crcHex(actual)}, recorded ${crcHex(bodyCrc32c)}`,
    }
  }
  let snapshot: unknown
  try {
    snapshot = decode(body)
  } catch (error) {
    return { ok: false, reason: 'decode', detail: messageOf(error) }
  }
  const shell = snapshotShellSchema.safeParse(snapshot)
  if (!shell.success) return { ok: false, reason: 'schema', detail: `snapshot.${issueText(shell.error)}` }
  if (shell.data.nextSeq !== head.binding.seq + 1) {
    return {
      ok: false,
      reason: 'schema',
      detail: `snapshot.nextSeq ${shell.data.nextSeq} is not N + 1 = ${head.binding.seq + 1}`,
    }
  }
  let surface: unknown[]
  try {
    surface = shell.data.surface.map((bytes) => decode(bytes))
  } catch (error) {
    return { ok: false, reason: 'decode', detail: `snapshot.surface: ${messageOf(error)}` }
  }
  // The decoded objects themselves, not zod's copies: the snapshot's insides stay as decoded.
  return { ok: true, snapshot: { ...(snapshot as ProjectionSnapshot), surface } as ProjectionSnapshot }
}
