import { decode, encode, Encoder } from '@msgpack/msgpack'
import { crc32c } from '@node-rs/crc32'
import { SNAPSHOT_VERSION } from '@agent-ledger/session-projection'
import type { OpenCompaction, ProjectionSnapshot } from '@agent-ledger/session-projection'
import { z } from 'zod'

/** File name of a session's projection checkpoint, beside its log. A cache: deleting it loses nothing. */
export const CHECKPOINT_FILE_NAME = 'projection.checkpoint.msgpack'

/**
 * The checkpoint layout this build writes and reads (FORMAT.md section 15): version 2 refers
 * to surface nodes by their position in the log instead of copying them. A file with a
 * larger version is ignored with a warning; one with an older version is ignored with a
 * warning and replaced by the next checkpoint the writer writes.
 */
export const CHECKPOINT_VERSION = 2

/** The `format` member of every checkpoint file. */
export const CHECKPOINT_FORMAT = 'agent-ledger.projection-checkpoint'

/** One entry of the sparse seq index: `[seq, byte offset where the line of that seq starts]`. */
export type SeqIndexEntry = readonly [seq: number, offset: number]

/**
 * Where the line of one event is in the log: what a checkpoint keeps of a surface node (the
 * node itself is read back from the log).
 */
export interface LineRef {
  /** The event's seq. */
  readonly seq: number
  /** Byte offset of the line's first byte. */
  readonly offset: number
  /** The line's length in bytes, its `\n` included. */
  readonly length: number
  /** The line's CRC-32C (the value of its `crc` member). */
  readonly crc: number
}

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
  /** CRC-32C of the log's bytes `[0, offset)`: a write open checks the whole prefix with it. */
  readonly prefixCrc32c: number
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

/**
 * The projection state a checkpoint stores itself: everything of a snapshot except what the
 * log holds (the surface nodes, and `lastEvent`, which is event N).
 */
export interface CheckpointState {
  readonly snapshotVersion: typeof SNAPSHOT_VERSION
  readonly nextSeq: number
  readonly lastTime: string | null
  readonly repairState: ProjectionSnapshot['repairState']
  readonly openCompaction: OpenCompaction | null
  readonly stats: ProjectionSnapshot['stats']
}

/** A checkpoint as written: the binding, the sparse seq index, the state and the surface by reference. */
export interface CheckpointRecord {
  readonly checkpointVersion: typeof CHECKPOINT_VERSION
  readonly binding: CheckpointBinding
  /** The projection state after event N (`state.nextSeq === binding.seq + 1`). */
  readonly state: CheckpointState
  /** The surface after event N, in model order, each node by the position of its event's line. */
  readonly surface: readonly LineRef[]
  /** Sparse `[seq, offset]` pairs (every {@link SEQ_INDEX_STRIDE} events, ascending, all seq <= N). */
  readonly seqIndex: readonly SeqIndexEntry[]
}

/** Events between two entries of the sparse seq index a checkpoint carries. */
export const SEQ_INDEX_STRIDE = 4096

/** Numbers per surface node in the body's flat `surface` array: seq, offset, length, crc. */
const REF_WIDTH = 4

const hex8 = z.string().regex(/^[0-9a-f]{8}$/)
const count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER)
const uint32 = z.number().int().nonnegative().max(0xffffffff)

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
  prefixCrc32c: uint32,
  frameOffset: count.nullable(),
  registryDigest: z.string().regex(/^[0-9a-f]{64}$/),
  maxLineBytes: count,
  maxDepth: count,
})

// The state's insides are checked by restoreProjection (repair state, stats, open compaction).
const bodySchema = z.strictObject({
  snapshotVersion: z.literal(SNAPSHOT_VERSION),
  nextSeq: count,
  lastTime: z.string().nullable(),
  repairState: z.unknown(),
  openCompaction: z.unknown(),
  stats: z.unknown(),
  surface: z.array(z.unknown()),
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
  headCrc32c: uint32,
  head: z.instanceof(Uint8Array),
  bodyCrc32c: uint32,
  body: z.instanceof(Uint8Array),
})

/** Why a checkpoint file was not used (the open then replays the whole log). */
export type CheckpointRejection =
  | 'decode'
  | 'schema'
  | 'checksum'
  | 'newer-version'
  /** Written by an older checkpoint layout: never trusted; the writer replaces it. */
  | 'old-version'
  | 'snapshot'
  | 'binding'
  /** A surface node's line is not where the checkpoint says, or is not the line it recorded. */
  | 'reference'
  /** A write open's pass over the prefix found bytes other than those the checkpoint was written over. */
  | 'prefix'
  | 'too-large'
  | 'not-a-file'
  | 'read-failed'

/** The binding and the sparse index of a checkpoint: small, decoded before the state. */
export interface CheckpointHead {
  readonly binding: CheckpointBinding
  readonly seqIndex: readonly SeqIndexEntry[]
}

/** The outcome of {@link decodeCheckpointHead}: the head, and the still-encoded body. */
export type CheckpointHeadDecode =
  | {
      readonly ok: true
      readonly head: CheckpointHead
      /** The msgpack body, checked and decoded only when the binding holds ({@link decodeCheckpointBody}). */
      readonly body: Uint8Array
      readonly bodyCrc32c: number
    }
  | { readonly ok: false; readonly reason: CheckpointRejection; readonly detail: string }

/** The outcome of {@link decodeCheckpointBody}: the state and the surface references. */
export type CheckpointBodyDecode =
  | { readonly ok: true; readonly state: CheckpointState; readonly surface: readonly LineRef[] }
  | { readonly ok: false; readonly reason: CheckpointRejection; readonly detail: string }

/**
 * 8 lowercase hex digits of a CRC-32C (the form of a line's `crc` member).
 *
 * @param value - An unsigned 32-bit value.
 * @returns The hex text.
 */
export function crcHex(value: number): string {
  return value.toString(16).padStart(8, '0')
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/**
 * Encodes a checkpoint file: an outer msgpack map `{format, checkpointVersion, headCrc32c,
 * head, bodyCrc32c, body}` where `head` is the msgpack of `{binding, seqIndex}` and `body` the
 * msgpack of the state with `surface` as one flat array of `seq, offset, length, crc` per
 * node, each under its own CRC-32C: a flipped byte anywhere is caught before it is decoded.
 * Nothing the log holds is copied: the file grows with the number of surface nodes (about 20
 * bytes each), not with their size.
 *
 * @param record - The binding, state, surface references and sparse index.
 * @param options - `maxDepth`: deepest nesting to encode (the repair state's depth plus the checkpoint's own levels).
 * @returns The file's bytes.
 */
export function encodeCheckpoint(
  record: CheckpointRecord,
  options: { readonly maxDepth: number },
): Uint8Array {
  const head = encode({ binding: record.binding, seqIndex: record.seqIndex }, { ignoreUndefined: true })
  const flat = new Array<number>(record.surface.length * REF_WIDTH)
  record.surface.forEach((ref, index) => {
    const at = index * REF_WIDTH
    flat[at] = ref.seq
    flat[at + 1] = ref.offset
    flat[at + 2] = ref.length
    flat[at + 3] = ref.crc
  })
  const body = new Encoder({
    ignoreUndefined: true,
    maxDepth: options.maxDepth,
    initialBufferSize: flat.length * 9 + 64 * 1024,
  }).encode({ ...record.state, surface: flat })
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
 * newer one is `newer-version`, an older one `old-version`), the envelope's schema, the
 * head's CRC-32C and schema.
 *
 * @param bytes - The whole file.
 * @returns The head and the encoded body, or why the file cannot be used.
 */
export function decodeCheckpointHead(bytes: Uint8Array): CheckpointHeadDecode {
  let outer: unknown
  try {
    outer = decode(bytes)
  } catch (error) {
    return { ok: false, reason: 'decode', detail: messageOf(error) }
  }
  const versionProbe = z
    .looseObject({ format: z.literal(CHECKPOINT_FORMAT), checkpointVersion: z.number().int() })
    .safeParse(outer)
  if (versionProbe.success && versionProbe.data.checkpointVersion !== CHECKPOINT_VERSION) {
    const found = versionProbe.data.checkpointVersion
    return found > CHECKPOINT_VERSION
      ? {
          ok: false,
          reason: 'newer-version',
          detail: `checkpointVersion ${found}, this build reads up to ${CHECKPOINT_VERSION}`,
        }
      : {
          ok: false,
          reason: 'old-version',
          detail: `checkpointVersion ${found} is an older layout than ${CHECKPOINT_VERSION}; never trusted, replaced by the next checkpoint`,
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

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

/**
 * Reads the body's flat surface array into references, each inside `[start, end)` of the
 * log, with a unique seq at most N.
 */
function readRefs(
  flat: readonly unknown[],
  bounds: { readonly start: number; readonly end: number; readonly seq: number },
): LineRef[] | string {
  if (flat.length % REF_WIDTH !== 0) return `surface: ${flat.length} numbers, not a multiple of ${REF_WIDTH}`
  const refs: LineRef[] = []
  const seen = new Set<number>()
  for (let at = 0; at < flat.length; at += REF_WIDTH) {
    const [seq, offset, length, crc] = [flat[at], flat[at + 1], flat[at + 2], flat[at + 3]]
    const where = `surface[${at / REF_WIDTH}]`
    if (!isCount(seq) || !isCount(offset) || !isCount(length) || !isCount(crc) || crc > 0xffffffff) {
      return `${where}: expected four non-negative integers`
    }
    if (seq > bounds.seq || seen.has(seq)) return `${where}: seq ${seq} is not a unique seq up to N`
    if (length < 2 || offset < bounds.start || offset + length > bounds.end) {
      return `${where}: bytes [${offset}, ${offset + length}) are not inside the checkpointed events`
    }
    seen.add(seq)
    refs.push({ seq, offset, length, crc })
  }
  return refs
}

/**
 * Checks the body's CRC-32C, decodes it, checks its shell (version, `nextSeq = N + 1`) and
 * its surface references (inside `[headerEnd, offset)` of the binding, unique seqs up to N);
 * the state's insides are left to `restoreProjection`. Never throws.
 *
 * @param head - The decoded head (for N and the offsets).
 * @param encoded - The body, its recorded CRC-32C, and where the header line ends in the log.
 * @returns The state and the references, or why they cannot be used.
 */
export function decodeCheckpointBody(
  head: CheckpointHead,
  encoded: { readonly body: Uint8Array; readonly bodyCrc32c: number; readonly headerEndOffset: number },
): CheckpointBodyDecode {
  const actual = crc32c(encoded.body) >>> 0
  if (actual !== encoded.bodyCrc32c) {
    return {
      ok: false,
      reason: 'checksum',
      detail: `body CRC-32C ${crcHex(actual)}, recorded ${crcHex(encoded.bodyCrc32c)}`,
    }
  }
  let value: unknown
  try {
    value = decode(encoded.body)
  } catch (error) {
    return { ok: false, reason: 'decode', detail: messageOf(error) }
  }
  const shell = bodySchema.safeParse(value)
  if (!shell.success) return { ok: false, reason: 'schema', detail: `body.${issueText(shell.error)}` }
  const { binding } = head
  if (shell.data.nextSeq !== binding.seq + 1) {
    return {
      ok: false,
      reason: 'schema',
      detail: `body.nextSeq ${shell.data.nextSeq} is not N + 1 = ${binding.seq + 1}`,
    }
  }
  const refs = readRefs(shell.data.surface, {
    start: encoded.headerEndOffset,
    end: binding.offset,
    seq: binding.seq,
  })
  if (typeof refs === 'string') return { ok: false, reason: 'schema', detail: `body.${refs}` }
  // The decoded objects themselves, not zod's copies: restoreProjection checks and freezes them.
  const { surface: _surface, ...state } = value as CheckpointState & { surface: unknown }
  return { ok: true, state, surface: refs }
}
