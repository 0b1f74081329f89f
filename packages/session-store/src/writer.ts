/**
 * The session writer, written once over the port: synchronous validated appends into a
 * buffer, `flush` = one `backend.append` under the lease, fencing and unknown outcomes
 * handled, idempotent and retryable close.
 */
import type {
  EventInput,
  EventRegistry,
  LoggedEvent,
  SessionEvent,
  SessionEventType,
  SessionHeader,
  WireMessage,
} from '@agent-ledger/session-events'
import type { RepairAction } from '@agent-ledger/loop-repair'
import type { Projection } from '@agent-ledger/session-projection'

import type { CheckpointUse } from './checkpoint-options.ts'
import type { CheckpointSchedule } from './checkpoint-writer.ts'
import type { Crc32c } from './crc32c.ts'
import type { SessionCipher } from './encryption.ts'
import { encodeEvent, eventError } from './event-codec.ts'
import type { EncodeContext, StoreLimits } from './event-codec.ts'
import { LineBytes } from './line-codec.ts'
import type { AcquireRepair, HeadScan, SessionBackend, WriterLease } from './port.ts'
import type { RedactionPolicy } from './redaction.ts'
import { SessionStoreError, SessionStoreErrorCode } from './session-store-error.ts'

/** What opening a session for write found and repaired before the writer was returned. */
export interface WriterRecovery {
  /** What the backend repaired while granting the lease (a file backend's quarantined torn tail). */
  readonly backendRepairs: readonly AcquireRepair[]
  /** Where the backend's check of the log's lines started (`AcquireResult.headScan`); null: it reports none. */
  readonly headScan: HeadScan | null
  /** The closing events loop-repair planned (already durable), one action per event. */
  readonly repairs: readonly RepairAction[]
  /** What the open did with the session's projection checkpoint (a new session: `missing`). */
  readonly checkpoint: CheckpointUse
}

/**
 * The writer's state: `open`; `fenced` (another writer took the lease: nothing more can be
 * written, reopen); `failed` (an append's outcome could not be settled, or the backend
 * broke the contract: reopen); `closed`.
 */
export type WriterState = 'open' | 'fenced' | 'failed' | 'closed'

/** Options of {@link SessionWriter.close}. */
export interface CloseOptions {
  /**
   * Release the lease without flushing what is buffered (those events were never
   * acknowledged and are dropped). For giving up after a flush keeps failing (a full disk).
   */
  readonly discardUnflushed?: boolean | undefined
}

/** An open session, for appending: the only writer of its session while its lease holds. */
export interface SessionWriter {
  readonly id: string
  readonly header: SessionHeader
  /** The projection of every appended event, including buffered (not yet durable) ones. */
  readonly projection: Projection
  readonly recovery: WriterRecovery
  /** Seq of the last durable event (-1 when none). */
  readonly durableSeq: number
  /** Events appended but not yet durable. */
  readonly bufferedEvents: number
  readonly state: WriterState
  /** The lease's fencing epoch. */
  readonly epoch: number
  /**
   * Validates, serializes and buffers one event, and returns it with its `seq` and `time`:
   * the returned event is exactly what the log will hold (the input is read once).
   * Synchronous: either the event is buffered and folded into the projection, or an error
   * is thrown and nothing changed. Durable only after a flush.
   *
   * @param input - The event's type, data and optional envelope fields.
   * @returns The logged event.
   * @throws {@link SessionStoreError} `INVALID_EVENT`, `UNKNOWN_EVENT_TYPE`, `TOO_DEEP`, `UNSERIALIZABLE_EVENT`,
   *   `EVENT_TOO_LARGE`, `REDACTION_FAILED`, `BUFFER_FULL`, `FENCED`, `WRITER_FAILED`, `WRITER_CLOSED`.
   */
  append<TType extends SessionEventType>(input: EventInput<TType>): SessionEvent<TType>
  /**
   * Writes every buffered event with one `backend.append`; resolves when they are durable.
   * An unknown outcome is settled with `head()` (the batch id); a refused batch stays
   * buffered with the same seqs, so a retry is safe.
   *
   * @returns The new durable seq.
   * @throws {@link SessionStoreError} `DISK_FULL`, `BACKEND_FAILED`, `ABORTED`, `UNKNOWN_OUTCOME` (retryable:
   *   still buffered), `FENCED` (the writer is fenced), `WRITER_FAILED`, `WRITER_CLOSED`.
   */
  flush(): Promise<{ readonly durableSeq: number }>
  /**
   * Extends the lease now (the writer also renews on flush when half the lease has passed).
   *
   * @throws {@link SessionStoreError} `FENCED` (the writer becomes fenced).
   */
  renew(): Promise<void>
  /** The model-visible history ({@link Projection.deriveMessages}). */
  deriveMessages(): readonly WireMessage[]
  /**
   * Flushes what is buffered, then releases the lease. Idempotent. When the flush fails
   * (a full disk), the lease is kept, the events stay buffered and the error is thrown: call
   * `close()` again to retry, or `close({ discardUnflushed: true })` to give up. A fenced or
   * failed writer just releases.
   */
  close(options?: CloseOptions): Promise<void>
}

/** Whether a backend error says its lease can no longer append (`details.poisoned: true`, see the port's `append`). */
function isPoisoned(error: SessionStoreError): boolean {
  const details: unknown = error.details
  return (
    typeof details === 'object' && details !== null && (details as { poisoned?: unknown }).poisoned === true
  )
}

/** Everything a writer is built from (internal). */
export interface WriterInit {
  readonly backend: SessionBackend
  readonly lease: WriterLease
  readonly header: SessionHeader
  readonly projection: Projection
  readonly registry: EventRegistry
  readonly limits: StoreLimits
  readonly crc32c: Crc32c
  readonly redaction: RedactionPolicy | null
  /** The session's data key when it is encrypted (its events are sealed), else null. */
  readonly cipher: SessionCipher | null
  readonly clock: () => string
  readonly leaseMs: number
  readonly backendRepairs: readonly AcquireRepair[]
  readonly headScan: HeadScan | null
  /** What the open did with the checkpoint. */
  readonly checkpointUse: CheckpointUse
  /** Checksum of the last durable event's line (null: none). */
  readonly lastCrc: string | null
  /** The checkpoint schedule (a no-op when the backend has no capability). */
  readonly checkpoints: CheckpointSchedule
  /** Called once the writer is closed (the store forgets it). */
  readonly onClosed: (writer: SessionWriterImpl) => void
}

interface Buffered {
  readonly line: string
  readonly crc: string
  readonly bytes: number
  readonly turnEnd: boolean
  /** Logical end of its bytes in the writer's {@link LineBytes}. */
  readonly end: number
}

function batchShape(entries: readonly Buffered[]): { events: number; chars: number; turnEnd: boolean } {
  let chars = 0
  let turnEnd = false
  for (const entry of entries) {
    chars += entry.line.length + 1
    turnEnd ||= entry.turnEnd
  }
  return { events: entries.length, chars, turnEnd }
}

function timeOf(clock: () => string): number {
  return Date.parse(clock())
}

/** The {@link SessionWriter} implementation (internal; built by the store). */
export class SessionWriterImpl implements SessionWriter {
  readonly id: string
  readonly header: SessionHeader
  readonly projection: Projection
  readonly #init: WriterInit
  #lease: WriterLease
  #leaseRenewedAt: number
  #recovery: WriterRecovery
  #buffered: Buffered[] = []
  /** The buffered lines' bytes, each line encoded once (for its checksum and for a byte backend). */
  readonly #lineBytes = new LineBytes()
  #eventContext: EncodeContext | null = null
  #bufferedBytes = 0
  #durableSeq: number
  #durableCrc: string | null
  #batchCounter = 0
  /** A batch whose outcome is not known yet: settled before the next append. */
  #unsettled: { readonly batchId: string; readonly count: number } | null = null
  #state: WriterState = 'open'
  #failure: SessionStoreError | null = null
  #closing = false
  #closeRun: Promise<void> | null = null
  #chain: Promise<unknown> = Promise.resolve()
  /** Flushes, renews and closes asked for and not settled yet ({@link SessionWriterImpl.#serialized}). */
  #pending = 0

  /** @param init - The lease, the recovered projection and the options. */
  constructor(init: WriterInit) {
    this.#init = init
    this.id = init.lease.sessionId
    this.header = init.header
    this.projection = init.projection
    this.#lease = init.lease
    this.#leaseRenewedAt = timeOf(init.clock)
    this.#durableSeq = init.projection.nextSeq - 1
    this.#durableCrc = init.lastCrc
    init.checkpoints.start(this.#durableSeq)
    this.#recovery = Object.freeze({
      backendRepairs: init.backendRepairs,
      headScan: init.headScan,
      repairs: Object.freeze([]),
      checkpoint: init.checkpointUse,
    })
  }

  get durableSeq(): number {
    return this.#durableSeq
  }

  get bufferedEvents(): number {
    return this.#buffered.length
  }

  get state(): WriterState {
    return this.#state
  }

  get epoch(): number {
    return this.#lease.epoch
  }

  get recovery(): WriterRecovery {
    return this.#recovery
  }

  /**
   * Records the repair events the open appended and made durable (internal, once).
   *
   * @param repairs - One action per repair event.
   */
  recordRepairs(repairs: readonly RepairAction[]): void {
    this.#recovery = Object.freeze({ ...this.#recovery, repairs: Object.freeze([...repairs]) })
  }

  #refusal(action: string): SessionStoreError | null {
    if (this.#state === 'closed' || this.#closing) {
      return new SessionStoreError({
        code: SessionStoreErrorCode.WRITER_CLOSED,
        sessionId: this.id,
        message: `Cannot ${action} session ${this.id}: expected an open writer, found it ${this.#state === 'closed' ? 'closed' : 'closing'}; open the session again to write.`,
      })
    }
    return this.#stateRefusal(action)
  }

  #stateRefusal(action: string): SessionStoreError | null {
    if (this.#state === 'closed') {
      return new SessionStoreError({
        code: SessionStoreErrorCode.WRITER_CLOSED,
        sessionId: this.id,
        message: `Cannot ${action} session ${this.id}: expected an open writer, found it closed; open the session again to write.`,
      })
    }
    if (this.#state === 'fenced') {
      return new SessionStoreError({
        code: SessionStoreErrorCode.FENCED,
        sessionId: this.id,
        message: `Cannot ${action} session ${this.id}: this writer (epoch ${this.#lease.epoch}) was fenced by a newer writer; reopen the session to continue.`,
        details: { epoch: this.#lease.epoch },
        cause: this.#failure,
      })
    }
    if (this.#state === 'failed') {
      return new SessionStoreError({
        code: SessionStoreErrorCode.WRITER_FAILED,
        sessionId: this.id,
        message: `Cannot ${action} session ${this.id}: the writer failed earlier (${this.#failure?.message ?? 'unknown'}); reopen the session to continue.`,
        details: { cause: this.#failure?.code ?? 'unknown' },
        cause: this.#failure,
      })
    }
    return null
  }

  append<TType extends SessionEventType>(input: EventInput<TType>): SessionEvent<TType> {
    const refusal = this.#refusal('append to')
    if (refusal !== null) throw refusal
    return this.appendChecked(input, 'event') as SessionEvent<TType>
  }

  /**
   * Appends without the public type (internal: repair events).
   *
   * @param input - The event input.
   * @param role - What the event is, for messages.
   * @returns The logged event.
   */
  appendChecked(input: unknown, role: string): LoggedEvent {
    const init = this.#init
    const seq = this.projection.nextSeq
    let time: string
    try {
      time = init.clock()
    } catch (error) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.INVALID_EVENT,
        sessionId: this.id,
        seq,
        message: `Cannot append event seq ${seq} to session ${this.id}: the clock threw (${error instanceof Error ? error.message : String(error)}); nothing was buffered.`,
        details: { field: 'time' },
        cause: error,
      })
    }
    const prepared = encodeEvent(input, { seq, time }, this.#encodeContext(role))
    if (
      this.#buffered.length > 0 &&
      this.#bufferedBytes + prepared.byteLength > init.limits.maxBufferedBytes
    ) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.BUFFER_FULL,
        sessionId: this.id,
        seq,
        message: `Cannot buffer event seq ${seq} for session ${this.id}: expected at most ${init.limits.maxBufferedBytes} buffered bytes, found ${this.#bufferedBytes} already buffered; await flush() first.`,
        details: {
          bufferedBytes: this.#bufferedBytes,
          bytes: prepared.byteLength,
          limit: init.limits.maxBufferedBytes,
        },
      })
    }
    try {
      // Throws before it changes anything when the event breaks a history rule.
      this.projection.apply(prepared.event)
    } catch (error) {
      throw eventError(error, { sessionId: this.id, seq, what: role })
    }
    this.#buffered.push({
      line: prepared.line,
      crc: prepared.crc,
      bytes: prepared.byteLength,
      turnEnd: prepared.event.type === 'turn/end',
      end: this.#lineBytes.commit(),
    })
    this.#bufferedBytes += prepared.byteLength
    return prepared.event
  }

  /** What encoding an event needs, built once for the usual role (`event`): nothing per append. */
  #encodeContext(role: string): EncodeContext {
    if (role === 'event' && this.#eventContext !== null) return this.#eventContext
    const init = this.#init
    const context: EncodeContext = {
      sessionId: this.id,
      registry: init.registry,
      limits: init.limits,
      crc32c: init.crc32c,
      redaction: init.redaction,
      cipher: init.cipher,
      // The history rules are checked once, by apply() (it plans before it changes anything).
      projection: undefined,
      role,
      lineBytes: this.#lineBytes,
    }
    if (role === 'event') this.#eventContext = context
    return context
  }

  flush(): Promise<{ readonly durableSeq: number }> {
    return this.#serialized(() => this.#flushNow())
  }

  /**
   * Runs `operation` after every flush, renew or close already asked for (one at a time, in
   * order); at once when none is in flight (no link added to the chain).
   */
  #serialized<T>(operation: () => Promise<T>): Promise<T> {
    const run = this.#pending === 0 ? operation() : this.#chain.then(operation)
    this.#pending += 1
    const done = (): void => {
      this.#pending -= 1
    }
    this.#chain = run.then(done, done)
    return run
  }

  deriveMessages(): readonly WireMessage[] {
    return this.projection.deriveMessages()
  }

  renew(): Promise<void> {
    return this.#serialized(() => this.#renewNow())
  }

  async #renewNow(): Promise<void> {
    const refusal = this.#stateRefusal('renew the lease of')
    if (refusal !== null) throw refusal
    try {
      this.#lease = await this.#init.backend.renew(this.#lease)
      this.#leaseRenewedAt = timeOf(this.#init.clock)
    } catch (error) {
      throw this.#settleFailure(error)
    }
  }

  /** Turns a backend failure into the writer's state; returns what to throw. */
  #settleFailure(error: unknown): unknown {
    if (SessionStoreError.is(error, SessionStoreErrorCode.FENCED)) {
      this.#state = 'fenced'
      this.#failure = error
    } else if (
      SessionStoreError.is(error, SessionStoreErrorCode.CONFLICT, SessionStoreErrorCode.SESSION_NOT_FOUND) ||
      // The backend says no retry on this lease can fix it (a failed fdatasync or rollback).
      (SessionStoreError.is(error) && isPoisoned(error))
    ) {
      this.#state = 'failed'
      this.#failure = error
    }
    return error
  }

  #markDurable(count: number): void {
    const written = this.#buffered.splice(0, count)
    for (const entry of written) this.#bufferedBytes -= entry.bytes
    if (written.length > 0) this.#lineBytes.drop(written.at(-1)!.end)
    this.#durableSeq += count
    this.#durableCrc = written.at(-1)?.crc ?? this.#durableCrc
    this.#init.checkpoints.noteDurable(this.#durableSeq, batchShape(written))
  }

  /** Settles a batch whose append outcome was unknown, with the head's batch id. */
  async #settle(): Promise<void> {
    const unsettled = this.#unsettled
    if (unsettled === null) return
    const head = await this.#init.backend.head(this.id)
    if (head.epoch !== this.#lease.epoch) {
      throw this.#settleFailure(
        new SessionStoreError({
          code: SessionStoreErrorCode.FENCED,
          sessionId: this.id,
          message: `Session ${this.id} was taken over (epoch ${head.epoch}, this writer ${this.#lease.epoch}) while batch ${unsettled.batchId} had an unknown outcome; reopen the session.`,
          details: { expected: this.#lease.epoch, found: head.epoch, batchId: unsettled.batchId },
        }),
      )
    }
    this.#unsettled = null
    if (head.lastBatchId === unsettled.batchId && head.nextSeq === this.#durableSeq + 1 + unsettled.count) {
      this.#markDurable(unsettled.count)
    } else if (head.nextSeq !== this.#durableSeq + 1) {
      this.#state = 'failed'
      this.#failure = new SessionStoreError({
        code: SessionStoreErrorCode.WRITER_FAILED,
        sessionId: this.id,
        message: `Session ${this.id}: expected the head at seq ${this.#durableSeq + 1} (or after batch ${unsettled.batchId}), found ${head.nextSeq} with batch ${head.lastBatchId ?? 'none'}.`,
        details: { expected: this.#durableSeq + 1, found: head.nextSeq },
      })
      throw this.#failure
    }
  }

  /** True when half the lease has passed since it was last renewed (by the store's clock). */
  #renewDue(): boolean {
    const now = timeOf(this.#init.clock)
    return Number.isFinite(now) && now - this.#leaseRenewedAt >= this.#init.leaseMs / 2
  }

  async #flushNow(): Promise<{ readonly durableSeq: number }> {
    const refusal = this.#stateRefusal('flush')
    if (refusal !== null) throw refusal
    if (this.#unsettled !== null) {
      try {
        await this.#settle()
      } catch (error) {
        throw this.#settleFailure(error)
      }
    }
    if (this.#buffered.length === 0) return { durableSeq: this.#durableSeq }
    if (this.#renewDue()) await this.#renewNow()
    const batch = this.#buffered.slice()
    const lastCrc = batch.at(-1)!.crc
    // Taken now, while the projection ends exactly with the batch; stored once it is durable.
    const checkpoint = this.#init.checkpoints.plan({ ...batchShape(batch), lastCrc }, this.projection)
    this.#batchCounter += 1
    const batchId = `${this.#lease.owner}:${this.#lease.epoch}:${this.#batchCounter}`
    try {
      await this.#init.backend.append(this.#lease, {
        expectedSeq: this.#durableSeq + 1,
        lines: batch.map((entry) => entry.line),
        bytes: this.#lineBytes.view(batch.at(-1)!.end),
        lastCrc,
        batchId,
      })
    } catch (error) {
      if (SessionStoreError.is(error, SessionStoreErrorCode.UNKNOWN_OUTCOME)) {
        this.#unsettled = { batchId, count: batch.length }
        const before = this.#durableSeq
        try {
          await this.#settle()
        } catch (settleError) {
          // The head is unreachable: stay unsettled, retry on the next flush.
          if (this.#state !== 'open') throw this.#settleFailure(settleError)
          throw error
        }
        if (this.#durableSeq === before + batch.length) return { durableSeq: this.#durableSeq }
        throw new SessionStoreError({
          code: SessionStoreErrorCode.UNKNOWN_OUTCOME,
          sessionId: this.id,
          message: `Batch ${batchId} (${batch.length} events) of session ${this.id} did not land (settled with head()); the events stay buffered with the same seqs: flush again.`,
          details: { batchId, landed: false },
          cause: error,
        })
      }
      throw this.#settleFailure(error)
    }
    this.#markDurable(batch.length)
    if (checkpoint !== null) this.#init.checkpoints.store(checkpoint, this.#lease)
    return { durableSeq: this.#durableSeq }
  }

  close(options: CloseOptions = {}): Promise<void> {
    if (this.#state === 'closed') return Promise.resolve()
    this.#closeRun ??= this.#closeNow(options).finally(() => {
      this.#closeRun = null
    })
    return this.#closeRun
  }

  async #closeNow(options: CloseOptions): Promise<void> {
    this.#closing = true
    if (this.#state === 'open' && options.discardUnflushed !== true) {
      // Throws (keeping the lease and the buffer) when the flush fails: close() again retries.
      try {
        await this.#serialized(() => this.#flushNow())
      } catch (error) {
        if (this.#state === 'open') throw error
      }
    } else {
      await this.#chain
    }
    if (this.#state === 'open') {
      await this.#init.checkpoints.finish(
        { seq: this.#durableSeq, lastCrc: this.#durableCrc, projection: this.projection },
        this.#lease,
      )
    } else {
      await this.#init.checkpoints.settled()
    }
    await this.#init.backend.release(this.#lease)
    this.#state = 'closed'
    this.#init.onClosed(this)
  }
}
