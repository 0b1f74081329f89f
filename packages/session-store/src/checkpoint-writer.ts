/**
 * When a core writer stores a projection checkpoint, and storing it: the JSONL store's
 * amortisation rules (FORMAT.md section 15.3 of `@agent-ledger/session-store-jsonl`) over
 * the backend's `checkpoints` capability. Off the flush path: a flush never waits for a
 * checkpoint; `close()` does, under the lease.
 */
import type { Projection } from '@agent-ledger/session-projection'

import { encodeCheckpointBody } from './checkpoint-body.ts'
import type { CheckpointBase, CheckpointContext } from './checkpoint-open.ts'
import type { CheckpointUse } from './checkpoint-options.ts'
import { lineCrc } from './line-codec.ts'
import type { CheckpointRecord, WriterLease } from './port.ts'

/** Room added to the last checkpoint's size in the growth rule (as the JSONL store). */
const GROWTH_SLACK_BYTES = 4096

/** One durable batch, as the schedule counts it. */
export interface DurableBatch {
  readonly events: number
  readonly chars: number
  readonly turnEnd: boolean
}

/** What the schedule needs to know about its writer (internal). */
export interface CheckpointWriterInit {
  readonly context: CheckpointContext
  readonly sessionId: string
  readonly headerCrc: string
  readonly clock: () => string
  /** The log's size through the durable head. */
  readonly logChars: number
  readonly base: CheckpointBase
}

/** A checkpoint taken (synchronously) for a batch about to be appended. */
export interface PlannedCheckpoint {
  readonly record: CheckpointRecord
  readonly logChars: number
}

/** The checkpoint schedule and writes of one writer (internal). */
export class CheckpointSchedule {
  readonly #init: CheckpointWriterInit
  #logChars: number
  #durableSeq: number
  #base: CheckpointBase
  #lastAtMs = Number.NEGATIVE_INFINITY
  #inFlight: Promise<void> | null = null

  /** @param init - The store's context, the session and where its checkpoint stands. */
  constructor(init: CheckpointWriterInit) {
    this.#init = init
    this.#logChars = init.logChars
    this.#base = init.base
    this.#durableSeq = -1
  }

  /** True when the backend has the capability and checkpoints are on. */
  get active(): boolean {
    return (
      this.#init.context.checkpoint.enabled &&
      this.#init.context.backend.capabilities.checkpoints !== undefined
    )
  }

  /**
   * Records that events became durable.
   *
   * @param durableSeq - The new durable seq.
   * @param batch - What became durable.
   */
  noteDurable(durableSeq: number, batch: DurableBatch): void {
    this.#durableSeq = durableSeq
    this.#logChars += batch.chars
  }

  /** Sets the durable seq the writer opened with. */
  start(durableSeq: number): void {
    this.#durableSeq = durableSeq
  }

  #grown(logChars: number): boolean {
    const options = this.#init.context.checkpoint
    return (
      logChars >= options.minLogBytes &&
      logChars - this.#base.logChars >= options.minGrowthRatio * (this.#base.bytes + GROWTH_SLACK_BYTES)
    )
  }

  /**
   * Before a batch is appended: when it will make a checkpoint due, takes the snapshot now
   * (the projection then ends exactly with the batch).
   *
   * @param batch - The batch about to be appended (every buffered event).
   * @param projection - The writer's projection, ending with the batch.
   * @returns The checkpoint to store once the batch is durable, or null.
   */
  plan(batch: DurableBatch & { readonly lastCrc: string }, projection: Projection): PlannedCheckpoint | null {
    if (!this.active || this.#inFlight !== null) return null
    const options = this.#init.context.checkpoint
    const seq = this.#durableSeq + batch.events
    const logChars = this.#logChars + batch.chars
    const trigger = batch.turnEnd || seq - this.#base.seq >= options.everyEvents
    const now = Date.parse(this.#init.clock())
    if (!trigger || !(now - this.#lastAtMs >= options.minIntervalMs) || !this.#grown(logChars)) return null
    return this.#take({ seq, lastCrc: batch.lastCrc, logChars }, projection)
  }

  #take(
    at: { readonly seq: number; readonly lastCrc: string; readonly logChars: number },
    projection: Projection,
  ): PlannedCheckpoint {
    const { context, headerCrc } = this.#init
    const body = encodeCheckpointBody(
      {
        seq: at.seq,
        logChars: at.logChars,
        maxDepth: context.limits.maxDepth,
        maxLineLength: context.limits.maxLineLength,
        snapshot: projection.snapshot(),
      },
      context.crc32c,
    )
    return {
      record: { seq: at.seq, eventCrc: at.lastCrc, headerCrc, registryDigest: context.registryDigest, body },
      logChars: at.logChars,
    }
  }

  /**
   * Stores a planned checkpoint in the background (its batch is durable). A failure is a
   * `CHECKPOINT_WRITE_FAILED` warning; the log is unaffected.
   *
   * @param planned - From {@link plan}.
   * @param lease - The writer's lease.
   */
  store(planned: PlannedCheckpoint, lease: WriterLease): void {
    if (this.#inFlight !== null) return
    this.#inFlight = this.#put(planned, lease).finally(() => {
      this.#inFlight = null
    })
  }

  async #put(planned: PlannedCheckpoint, lease: WriterLease): Promise<void> {
    const capability = this.#init.context.backend.capabilities.checkpoints
    if (capability === undefined) return
    this.#lastAtMs = Date.parse(this.#init.clock())
    try {
      await capability.putCheckpoint(lease, planned.record)
      this.#base = {
        seq: planned.record.seq,
        logChars: planned.logChars,
        bytes: planned.record.body.byteLength,
      }
    } catch (error) {
      try {
        this.#init.context.warn({
          code: 'CHECKPOINT_WRITE_FAILED',
          sessionId: this.#init.sessionId,
          message: `Could not store the projection checkpoint of session ${this.#init.sessionId} at seq ${planned.record.seq} (${error instanceof Error ? error.message : String(error)}); the log is unaffected, the next open replays more.`,
          details: { seq: planned.record.seq, code: (error as { code?: unknown }).code ?? null },
          cause: error,
        })
      } catch {
        // A throwing warning handler must not break the writer.
      }
    }
  }

  /**
   * On close, after the final flush: waits for a checkpoint in flight, then stores one for
   * the durable head if events were added since the last one and the growth rules allow.
   *
   * @param head - The durable seq and its line's checksum; the projection ends there.
   * @param lease - The writer's lease (still held).
   */
  async finish(
    head: { readonly seq: number; readonly lastCrc: string | null; readonly projection: Projection },
    lease: WriterLease,
  ): Promise<void> {
    await this.#inFlight
    if (!this.active || head.lastCrc === null || head.seq <= this.#base.seq || !this.#grown(this.#logChars))
      return
    if (head.projection.nextSeq !== head.seq + 1) return
    const planned = this.#take(
      { seq: head.seq, lastCrc: head.lastCrc, logChars: this.#logChars },
      head.projection,
    )
    this.store(planned, lease)
    await this.#inFlight
  }

  /** Waits for a checkpoint in flight (it never rejects). */
  async settled(): Promise<void> {
    await this.#inFlight
  }
}

/** How a session was opened, as far as its writer's checkpoints care (internal). */
export interface OpenedForWrite {
  readonly id: string
  readonly headerLine: string
  /** Checksum of the last durable line (null: none). */
  readonly lastCrc: string | null
  readonly logChars: number
  readonly base: CheckpointBase
  readonly use: CheckpointUse
  /** An encrypted session: its writer stores no checkpoint (a snapshot would hold its data in the clear). */
  readonly encrypted?: boolean | undefined
}

/**
 * The opening of a session this store just published (create, fork): no checkpoint yet.
 *
 * @param id - The session.
 * @param created - Its header line and every line it was published with.
 * @returns How it was opened.
 */
export function createdOpen(
  id: string,
  created: { readonly headerLine: string; readonly lastLine: string | null; readonly chars: number },
): OpenedForWrite {
  return {
    id,
    headerLine: created.headerLine,
    lastCrc: created.lastLine === null ? null : lineCrc(created.lastLine),
    logChars: created.chars,
    base: { seq: -1, logChars: 0, bytes: 0 },
    use: { used: false, reason: 'missing', message: '', replayedEvents: 0 },
  }
}

/**
 * The members of a writer's init that depend on how its session was opened.
 *
 * @param context - The store's context.
 * @param clock - The store's clock.
 * @param opened - How the session was opened.
 * @returns The checkpoint schedule, what the open did with the checkpoint, the last durable crc.
 */
export function writerCheckpointParts(
  context: CheckpointContext,
  clock: () => string,
  opened: OpenedForWrite,
): { checkpoints: CheckpointSchedule; checkpointUse: CheckpointUse; lastCrc: string | null } {
  return {
    checkpoints: new CheckpointSchedule({
      context:
        opened.encrypted === true
          ? { ...context, checkpoint: { ...context.checkpoint, enabled: false } }
          : context,
      sessionId: opened.id,
      headerCrc: lineCrc(opened.headerLine) ?? '',
      clock,
      logChars: opened.logChars,
      base: opened.base,
    }),
    checkpointUse: opened.use,
    lastCrc: opened.lastCrc,
  }
}

/** What a created session's writer keeps of the lines it was published with ({@link createdOpen}). */
export function createdLines(lines: readonly string[]): {
  count: number
  lastLine: string | null
  chars: number
} {
  let chars = 0
  for (const line of lines) chars += line.length + 1
  return { count: lines.length, lastLine: lines.at(-1) ?? null, chars }
}
