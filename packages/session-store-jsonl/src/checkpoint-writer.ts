import { randomBytes } from 'node:crypto'

import type { SessionHeader } from '@agent-ledger/session-events'
import type { Projection, ProjectionSnapshot } from '@agent-ledger/session-projection'

import { lineCrcMember, readHeaderFacts, registryDigest } from './checkpoint-binding.ts'
import type { HeaderFacts } from './checkpoint-binding.ts'
import { writeCheckpointFile } from './checkpoint-file.ts'
import {
  CHECKPOINT_FILE_NAME,
  CHECKPOINT_VERSION,
  encodeCheckpoint,
  SEQ_INDEX_STRIDE,
} from './checkpoint-format.ts'
import type { CheckpointRecord, LineRef, SeqIndexEntry } from './checkpoint-format.ts'
import type { CheckpointCarry, CheckpointContext, LastEventLine } from './checkpoint-open.ts'
import { lineRefOf, prefixCrc32c, pruneLineRefs } from './checkpoint-refs.ts'
import { errnoOf, toStoreError } from './fs-errors.ts'
import type { FileHandleOps } from './fs-ops.ts'
import { JsonlErrorCode } from './jsonl-store-error.ts'

/** How many of the first bytes of a line can hold its `"type"` member (canonical order: seq, time, type). */
const TYPE_PROBE_BYTES = 256
const TURN_END_TYPE = Buffer.from('"type":"turn/end"', 'latin1')
/** Levels the checkpoint adds above the repair state (body, repairState, pendingCalls...). */
const ENCODE_EXTRA_DEPTH = 16
/**
 * Bytes a checkpoint write costs beyond its own size (a new inode, a rename, a directory
 * entry: at least a block): the growth rule counts them.
 */
const CHECKPOINT_WRITE_OVERHEAD_BYTES = 4096
/** References a writer keeps beyond twice the surface (with no checkpoint in flight) before it prunes them. */
const PRUNE_SLACK = 4096
/** Any surrogate code unit (a fast first test: most strings have none). */
const ANY_SURROGATE = /[\uD800-\uDFFF]/
/** A lone surrogate: a string msgpack's UTF-8 encoding would not give back. */
const LONE_SURROGATE = /\p{Cs}/u

function hasLoneSurrogate(text: string): boolean {
  return ANY_SURROGATE.test(text) && LONE_SURROGATE.test(text)
}

/** One line of a flushed batch, as the writer buffers it. */
export interface BatchLine {
  readonly seq: number
  /** The line, `\n` included. */
  readonly bytes: Buffer
}

/** What a flush hands back once its batch is durable (from {@link CheckpointWriter.prepare}). */
export interface PreparedBatch {
  readonly lastLine: LastEventLine
  readonly indexEntries: readonly SeqIndexEntry[]
  /** The projection after the batch's last event, when a checkpoint is due; else null. */
  readonly snapshot: ProjectionSnapshot | null
}

interface Job {
  readonly snapshot: ProjectionSnapshot
  readonly lastLine: LastEventLine
  readonly seqIndex: readonly SeqIndexEntry[]
}

/**
 * A writer's checkpoint policy and its background writes. The writer calls
 * {@link CheckpointWriter.prepare} when a flush cuts its batch (synchronously: the
 * projection is then exactly at the batch's last seq), {@link CheckpointWriter.committed}
 * once that batch is durable, and {@link CheckpointWriter.close} before it releases its
 * lock. A checkpoint therefore never covers an event that is not durable.
 *
 * Writes run one at a time off the flush path (a flush never waits for one); a newer due
 * checkpoint replaces a queued one. A failed write is a warning, never a writer error.
 */
export class CheckpointWriter {
  readonly #context: CheckpointContext
  readonly #handle: FileHandleOps
  readonly #header: SessionHeader
  readonly #now: () => number
  readonly #randomHex: (byteCount: number) => string
  #facts: HeaderFacts | null = null
  #lastLine: LastEventLine | null
  #seqIndex: SeqIndexEntry[]
  /** Seq covered by the last checkpoint written or queued. */
  #coveredSeq: number
  /** Log size the last checkpoint written or queued covers (what the growth rule measures from). */
  #coveredOffset: number
  /** Size of the last checkpoint file written (0 before the first). */
  #lastSize = 0
  #lastAt = Number.NEGATIVE_INFINITY
  #queued: Job | null = null
  #running: Promise<void> | null = null
  #disabled = false
  /** Where the lines of the surface nodes (and of every event since the last checkpoint) are. */
  readonly #refs: Map<number, LineRef>
  #refLimit: number
  /** CRC-32C of the log's bytes `[0, offset)`, extended by reading the log back before each checkpoint. */
  #prefix: { offset: number; crc: number }

  /**
   * @param init - The store context of the session, the open log, its header, what the open
   *   found (last event line, sparse index, the seq of the checkpoint it used, or -1), and seams.
   */
  constructor(init: {
    readonly context: CheckpointContext
    readonly handle: FileHandleOps
    readonly header: SessionHeader
    readonly lastLine: LastEventLine | null
    readonly seqIndex: readonly SeqIndexEntry[]
    readonly coveredSeq: number
    /** The surface's line references and a verified prefix CRC from the open (none: start from byte 0). */
    readonly carry?: CheckpointCarry | undefined
    readonly now?: () => number
    readonly randomHex?: (byteCount: number) => string
  }) {
    this.#context = init.context
    this.#handle = init.handle
    this.#header = init.header
    this.#lastLine = init.lastLine
    this.#seqIndex = [...init.seqIndex]
    this.#coveredSeq = init.coveredSeq
    const prefix = init.carry?.prefix ?? null
    this.#prefix = prefix === null ? { offset: 0, crc: 0 } : { ...prefix }
    this.#coveredOffset = init.coveredSeq >= 0 && prefix !== null ? prefix.offset : 0
    this.#refs = new Map(init.carry?.lineRefs ?? [])
    this.#refLimit = 2 * this.#refs.size + PRUNE_SLACK
    this.#now = init.now ?? (() => performance.now())
    this.#randomHex = init.randomHex ?? ((count) => randomBytes(count).toString('hex'))
  }

  /** Seq covered by the last checkpoint written or queued (-1 when none). */
  get coveredSeq(): number {
    return this.#coveredSeq
  }

  /**
   * Called synchronously when a flush cuts its batch, before any await: the projection then
   * holds exactly the events up to the batch's last seq.
   *
   * @param batch - The batch's lines, in seq order (non-empty).
   * @param projection - The writer's projection.
   * @param startOffset - Byte offset where the batch will be written (the durable size).
   * @returns What {@link CheckpointWriter.committed} needs once the batch is durable.
   */
  prepare(batch: readonly BatchLine[], projection: Projection, startOffset: number): PreparedBatch {
    const indexEntries: SeqIndexEntry[] = []
    let offset = startOffset
    let turnEnd = false
    let last: LastEventLine | null = null
    const recording = !this.#disabled
    for (const line of batch) {
      if (line.seq % SEQ_INDEX_STRIDE === 0) indexEntries.push([line.seq, offset])
      if (recording) {
        const ref = lineRefOf(line.bytes.subarray(0, line.bytes.length - 1), { seq: line.seq, offset })
        if (ref !== null) this.#refs.set(line.seq, ref)
      }
      if (!turnEnd) {
        turnEnd = line.bytes.subarray(0, TYPE_PROBE_BYTES).indexOf(TURN_END_TYPE) !== -1
      }
      last = {
        seq: line.seq,
        eventOffset: offset,
        offset: offset + line.bytes.length,
        crc: null,
      }
      offset += line.bytes.length
    }
    const lastBytes = batch[batch.length - 1]!.bytes
    const lastLine: LastEventLine = {
      ...last!,
      crc: lineCrcMember(lastBytes.subarray(0, lastBytes.length - 1)),
    }
    const options = this.#context.options
    const due =
      !this.#disabled &&
      projection.nextSeq === lastLine.seq + 1 &&
      this.#grewEnough(lastLine) &&
      this.#now() - this.#lastAt >= options.minIntervalMs &&
      (turnEnd || lastLine.seq - this.#coveredSeq >= options.everyEvents)
    if (!due && this.#running === null && this.#refs.size > this.#refLimit) {
      // No checkpoint in flight: the next one needs only today's surface and what follows.
      const surface = projection.surface()
      pruneLineRefs(this.#refs, { surface, afterSeq: projection.nextSeq - 1 })
      this.#refLimit = 2 * surface.length + PRUNE_SLACK
    }
    return { lastLine, indexEntries, snapshot: due ? projection.snapshot() : null }
  }

  /**
   * The size rules: the log is at least `minLogBytes`, and it grew since the last checkpoint
   * by at least `minGrowthRatio` times that checkpoint's cost, so checkpoints add at most
   * about 1 / `minGrowthRatio` to the bytes a writer writes, however long the session.
   */
  #grewEnough(last: LastEventLine): boolean {
    const options = this.#context.options
    if (last.offset < options.minLogBytes) return false
    if (options.minGrowthRatio === 0) return true
    const cost = this.#lastSize + CHECKPOINT_WRITE_OVERHEAD_BYTES
    return last.offset - this.#coveredOffset >= options.minGrowthRatio * cost
  }

  /**
   * Called once the prepared batch is durable (acknowledged): records its last line and
   * index entries, and queues the checkpoint when one was due.
   *
   * @param prepared - From {@link CheckpointWriter.prepare}.
   */
  committed(prepared: PreparedBatch): void {
    this.#lastLine = prepared.lastLine
    for (const entry of prepared.indexEntries) this.#seqIndex.push(entry)
    if (prepared.snapshot !== null) {
      this.#enqueue({
        snapshot: prepared.snapshot,
        lastLine: prepared.lastLine,
        seqIndex: [...this.#seqIndex],
      })
    }
  }

  /**
   * Before the writer closes its file and releases its lock: queues a last checkpoint when
   * the log moved since the last one (and the projection is at the durable seq), then waits
   * for every queued write. Never throws.
   *
   * @param projection - The writer's projection.
   * @param healthy - False for a poisoned writer or a failed final flush: nothing new is queued.
   */
  async close(projection: Projection, healthy: boolean): Promise<void> {
    const last = this.#lastLine
    if (
      healthy &&
      !this.#disabled &&
      last !== null &&
      projection.nextSeq === last.seq + 1 &&
      last.seq > this.#coveredSeq &&
      this.#grewEnough(last)
    ) {
      this.#enqueue({ snapshot: projection.snapshot(), lastLine: last, seqIndex: [...this.#seqIndex] })
    }
    while (this.#running !== null) await this.#running
  }

  #enqueue(job: Job): void {
    this.#coveredSeq = job.lastLine.seq
    this.#coveredOffset = job.lastLine.offset
    this.#lastAt = this.#now()
    this.#queued = job
    this.#running ??= this.#drain()
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queued !== null) {
        const job = this.#queued
        this.#queued = null
        await this.#write(job)
      }
    } finally {
      this.#running = null
    }
  }

  async #write(job: Job): Promise<void> {
    const context = this.#context
    try {
      if (this.#disabled) return
      const refusal = unencodable(job.snapshot)
      if (refusal !== null) {
        this.#stop(refusal, 'unencodable')
        return
      }
      this.#facts ??= await readHeaderFacts(this.#handle, context)
      const facts = this.#facts
      if (facts === null) return
      const crc = job.lastLine.crc ?? (await this.#readCrc(job.lastLine))
      if (crc === null) return
      const surface = this.#surfaceRefs(job)
      if (surface === null) return
      const prefixCrc = await this.#extendPrefix(job.lastLine.offset)
      if (prefixCrc === null) return
      const { snapshot } = job
      const record: CheckpointRecord = {
        checkpointVersion: CHECKPOINT_VERSION,
        binding: {
          sessionId: this.#header.id,
          createdAt: this.#header.createdAt,
          generationFile: context.generationFile,
          formatVersion: this.#header.version,
          headerCrc: facts.headerCrc,
          headerSha256: facts.headerSha256,
          seq: job.lastLine.seq,
          eventCrc: crc,
          eventOffset: job.lastLine.eventOffset,
          offset: job.lastLine.offset,
          prefixCrc32c: prefixCrc,
          frameOffset: null,
          registryDigest: registryDigest(context.registry),
          maxLineBytes: context.limits.maxLineBytes,
          maxDepth: context.limits.maxDepth,
        },
        state: {
          snapshotVersion: snapshot.snapshotVersion,
          nextSeq: snapshot.nextSeq,
          lastTime: snapshot.lastTime,
          repairState: snapshot.repairState,
          openCompaction: snapshot.openCompaction,
          stats: snapshot.stats,
        },
        surface,
        seqIndex: job.seqIndex,
      }
      const bytes = encodeCheckpoint(record, { maxDepth: context.limits.maxDepth + ENCODE_EXTRA_DEPTH })
      await writeCheckpointFile(context.fs, {
        directory: context.directory,
        bytes,
        randomHex: this.#randomHex,
      })
      this.#lastSize = bytes.length
    } catch (error) {
      // Typed like every store error (a full disk is DISK_FULL naming the checkpoint); a warning only.
      const typed = toStoreError(error, {
        op: 'write the checkpoint',
        file: `${context.id}/${CHECKPOINT_FILE_NAME}`,
        fallback: JsonlErrorCode.WRITE_FAILED,
      })
      context.logger.warn(
        `Could not write the projection checkpoint of session ${context.id} (${typed.code}: ${typed.message}); the log is unaffected.`,
        {
          id: context.id,
          file: `${context.id}/${CHECKPOINT_FILE_NAME}`,
          code: typed.code,
          cause: errnoOf(error) ?? typed.code,
        },
      )
    }
  }

  /**
   * The line references of the job's surface, then drops those no later checkpoint needs.
   * Null (with a warning, and no more checkpoints) when a node's line is unknown, which the
   * writer's own bookkeeping rules out.
   */
  #surfaceRefs(job: Job): LineRef[] | null {
    const refs: LineRef[] = []
    for (const node of job.snapshot.surface) {
      const ref = this.#refs.get(node.seq)
      if (ref === undefined) {
        this.#stop(`the line of surface node seq ${node.seq} is unknown to the writer`, 'unreferenced')
        return null
      }
      refs.push(ref)
    }
    pruneLineRefs(this.#refs, { surface: job.snapshot.surface, afterSeq: job.lastLine.seq })
    this.#refLimit = 2 * job.snapshot.surface.length + PRUNE_SLACK
    return refs
  }

  /** CRC-32C of the log's bytes `[0, end)`, reading only what the last call did not (the log is append-only under the lock). */
  async #extendPrefix(end: number): Promise<number | null> {
    const prefix = this.#prefix
    if (end < prefix.offset) return null
    const crc = await prefixCrc32c(this.#handle, { start: prefix.offset, crc: prefix.crc, end })
    if (crc === null) return null
    this.#prefix = { offset: end, crc }
    return crc
  }

  #stop(why: string, reason: string): void {
    const context = this.#context
    this.#disabled = true
    this.#refs.clear()
    context.logger.warn(
      `Stopped writing projection checkpoints for session ${context.id}: ${why}; cold opens replay the whole log.`,
      { id: context.id, file: `${context.id}/${CHECKPOINT_FILE_NAME}`, reason },
    )
  }

  async #readCrc(line: LastEventLine): Promise<string | null> {
    const length = line.offset - line.eventOffset
    const buffer = Buffer.allocUnsafe(Math.min(length, 32))
    const start = line.offset - buffer.length
    const count = await this.#handle.read(buffer, 0, buffer.length, start)
    if (count !== buffer.length || buffer[buffer.length - 1] !== 0x0a) return null
    return lineCrcMember(buffer.subarray(0, buffer.length - 1))
  }
}

/**
 * Why msgpack would not give the stored part of this snapshot back exactly, or null: a string
 * (or key) with a lone surrogate (UTF-8 cannot carry it), or an own `__proto__` key (the
 * decoder refuses it). Only the repair state and the open compaction are stored; messages are
 * read back from the log, so they never need to round-trip through msgpack.
 */
function unencodable(snapshot: ProjectionSnapshot): string | null {
  for (const root of [snapshot.repairState, snapshot.openCompaction]) {
    const problem = findUnencodable(root)
    if (problem !== null) return problem
  }
  return null
}

/**
 * Walks a JSON value without recursion and names the first thing msgpack would not round-trip.
 *
 * @param root - A JSON value.
 * @returns A description, or null when the value round-trips.
 */
function findUnencodable(root: unknown): string | null {
  const stack: unknown[] = [root]
  while (stack.length > 0) {
    const value = stack.pop()
    if (typeof value === 'string') {
      if (hasLoneSurrogate(value)) return 'a string holds a lone surrogate (not representable in UTF-8)'
    } else if (Array.isArray(value)) {
      for (const item of value) stack.push(item)
    } else if (typeof value === 'object' && value !== null) {
      for (const key of Object.keys(value)) {
        if (key === '__proto__')
          return 'an object holds an own "__proto__" key (refused by the msgpack decoder)'
        if (hasLoneSurrogate(key)) return 'a key holds a lone surrogate (not representable in UTF-8)'
        stack.push((value as Record<string, unknown>)[key])
      }
    }
  }
  return null
}

/** What a writer over a freshly written log starts from (see {@link linesFacts}). */
export interface LinesFacts {
  readonly lastLine: LastEventLine | null
  readonly seqIndex: SeqIndexEntry[]
  readonly carry: CheckpointCarry
}

/**
 * {@link linesFacts} line by line, for a log written as a stream (a streamed create): the
 * line bytes are not kept, only their small per-line facts.
 *
 * @param startOffset - The plain offset of the first line (the header line's length).
 * @param firstSeq - The seq of the first line.
 */
export function linesFactsBuilder(
  startOffset: number,
  firstSeq: number,
): { push(line: Buffer): void; facts(): LinesFacts } {
  const seqIndex: SeqIndexEntry[] = []
  const lineRefs = new Map<number, LineRef>()
  let offset = startOffset
  let seq = firstSeq
  let lastLine: LastEventLine | null = null
  return {
    push(line) {
      if (seq % SEQ_INDEX_STRIDE === 0) seqIndex.push([seq, offset])
      const ref = lineRefOf(line.subarray(0, line.length - 1), { seq, offset })
      if (ref !== null) lineRefs.set(seq, ref)
      lastLine = { seq, eventOffset: offset, offset: offset + line.length, crc: null }
      offset += line.length
      seq += 1
    },
    facts: () => ({ lastLine, seqIndex, carry: { lineRefs, prefix: null } }),
  }
}

/**
 * The last line, the sparse index entries and the line references of consecutive event
 * lines that end at `endOffset` (e.g. the seed events of a new session).
 *
 * @param lines - The lines, `\n` included, in seq order.
 * @param endOffset - Byte offset just after the last line.
 * @param firstSeq - Seq of the first line.
 * @returns The last line (null when `lines` is empty), the index entries, and the carry of a new writer.
 */
export function linesFacts(lines: readonly Buffer[], endOffset: number, firstSeq: number): LinesFacts {
  let offset = endOffset
  for (const line of lines) offset -= line.length
  const builder = linesFactsBuilder(offset, firstSeq)
  for (const line of lines) builder.push(line)
  return builder.facts()
}
