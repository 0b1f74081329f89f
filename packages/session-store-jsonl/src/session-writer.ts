import { assertJsonValue, parseEvent, SessionEventsError } from '@agent-ledger/session-events'
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

import { appendDurably } from './durable-append.ts'
import { errnoOf, toStoreError } from './fs-errors.ts'
import type { FileHandleOps, FsOps } from './fs-ops.ts'
import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'
import type { FlushPolicy, StoreLimits } from './limits.ts'
import { canonicalEvent, encodeJsonLine } from './line-codec.ts'
import type { TornTail } from './log-scanner.ts'
import { snapshotJson } from './json-snapshot.ts'
import { redactJson } from './redaction.ts'
import type { RedactionPolicy } from './redaction.ts'
import type { WriterLock } from './writer-lock.ts'
import type { StoreLogger } from './store-logger.ts'
import type { CheckpointUse } from './checkpoint-open.ts'
import type { CheckpointWriter } from './checkpoint-writer.ts'

/** What opening a session for write found and repaired before the handle was returned. */
export interface WriterRecovery {
  /** The torn tail that was quarantined and truncated, or null. */
  readonly tornTail: TornTail | null
  /** The quarantine file's name (inside the session directory), or null. */
  readonly quarantineFile: string | null
  /** The repair events loop-repair planned (already durable), one action per event. */
  readonly repairs: readonly RepairAction[]
  /** True when the file had no valid header (crash during creation, RELIABILITY T4) and was re-initialised. */
  readonly headerMissing: boolean
  /** The projection checkpoint the open started from (only the tail after it was replayed), or null/absent after a full replay. */
  readonly checkpoint?: CheckpointUse | null
}

/**
 * An open session, for appending. The only writer of its session across processes (it
 * holds the writer lock until {@link SessionWriter.close}).
 */
export interface SessionWriter {
  /** The session id. */
  readonly id: string
  /** The session's header line. */
  readonly header: SessionHeader
  /** The log file, relative to the store root. */
  readonly file: string
  /** The projection of every appended event, including buffered (not yet durable) ones. */
  readonly projection: Projection
  /** What the open repaired. */
  readonly recovery: WriterRecovery
  /** Seq of the last event covered by a resolved flush (-1 when none). */
  readonly durableSeq: number
  /** Events appended but not yet durable. */
  readonly bufferedEvents: number
  /**
   * Validates, redacts (see the store's `redaction` option), serializes and buffers one event,
   * and returns it with its `seq` and `time`: the returned event is exactly what the log holds.
   *
   * Synchronous: either the event has a seq and is buffered (and folded into the
   * projection), or an error is thrown and nothing changed. Durable only after a flush.
   *
   * @param input - The event's type, data and optional envelope fields.
   * @returns The logged event (deep-frozen by the projection).
   * @throws {@link JsonlStoreError} `INVALID_EVENT`, `UNKNOWN_EVENT_TYPE`, `TOO_DEEP`, `UNSERIALIZABLE_EVENT`,
   *   `EVENT_TOO_LARGE`, `REDACTION_FAILED`, `BUFFER_FULL`, `WRITER_FAILED` (poisoned) or `WRITER_CLOSED`.
   */
  append<TType extends SessionEventType>(input: EventInput<TType>): SessionEvent<TType>
  /**
   * Writes every buffered event with one write and one fdatasync; resolves only when they are durable.
   *
   * @returns The new durable seq.
   * @throws {@link JsonlStoreError} `DISK_FULL` / `WRITE_FAILED` (rolled back, retryable: the events stay
   *   buffered with the same seqs), `FSYNC_FAILED`, `FILE_REPLACED`, `CONCURRENT_WRITE`, `LOCK_LOST` (the writer is poisoned),
   *   `WRITER_FAILED` (already poisoned).
   */
  flush(): Promise<{ readonly durableSeq: number }>
  /** The model-visible history ({@link Projection.deriveMessages}). */
  deriveMessages(): readonly WireMessage[]
  /**
   * Flushes what is buffered, closes the file and releases the lock. Idempotent (a closed
   * writer's `close()` resolves) and retryable: when the final flush fails with a retryable
   * error (`DISK_FULL`, `WRITE_FAILED`: rolled back, the events still buffered), `close()`
   * rejects with it and keeps the file and the lock, so that a later `close()`, once space is
   * freed, writes the events and then releases; no later `append` is accepted either way. A
   * poisoned writer (a failed fsync...) has nothing it may still write: the lock is released
   * and the poisoning error re-thrown. Releasing the lock needs no free space.
   */
  close(): Promise<void>
}

export type { StoreLogger } from './store-logger.ts'

/** Everything a writer is built from (internal). */
export interface WriterInit {
  readonly id: string
  readonly header: SessionHeader
  /** Absolute path of the log. */
  readonly path: string
  /** The log relative to the store root. */
  readonly file: string
  readonly fs: FsOps
  readonly handle: FileHandleOps
  readonly lock: WriterLock
  readonly projection: Projection
  /** File size that is known durable (the end of the last good line). */
  readonly durableOffset: number
  readonly registry: EventRegistry
  readonly limits: StoreLimits
  readonly flushPolicy: FlushPolicy
  readonly clock: () => string
  readonly logger: StoreLogger
  readonly recovery: WriterRecovery
  /** Applied to every string of an appended event's data, or null for none. */
  readonly redaction: RedactionPolicy | null
  /** Writes projection checkpoints after durable flushes and on close; absent when checkpoints are off. */
  readonly checkpoints?: CheckpointWriter | undefined
  /**
   * Turns a batch's lines into the bytes written (a `.zstd` log: whole frames ending on line
   * boundaries); absent for a plain log. Throws a typed error before anything is written.
   */
  readonly encodeBatch?: ((lines: Buffer) => Buffer) | undefined
}

/** First retry delay of a failed automatic flush; doubles per consecutive failure. */
const AUTO_FLUSH_RETRY_BASE_MS = 100
/** Longest wait between automatic flush retries. */
const AUTO_FLUSH_RETRY_MAX_MS = 30_000

interface Buffered {
  readonly seq: number
  readonly bytes: Buffer
}

const EVENTS_ERROR_CODES: Readonly<Record<string, JsonlErrorCode>> = {
  INVALID_EVENT: JsonlErrorCode.INVALID_EVENT,
  UNKNOWN_EVENT_TYPE: JsonlErrorCode.UNKNOWN_EVENT_TYPE,
  TOO_DEEP: JsonlErrorCode.TOO_DEEP,
  EVENT_TOO_LARGE: JsonlErrorCode.EVENT_TOO_LARGE,
  UNSERIALIZABLE_EVENT: JsonlErrorCode.UNSERIALIZABLE_EVENT,
}

/** The {@link SessionWriter} implementation (internal; built by the store). */
export class SessionWriterImpl implements SessionWriter {
  readonly id: string
  readonly header: SessionHeader
  readonly file: string
  readonly projection: Projection
  readonly #init: WriterInit
  #recovery: WriterRecovery
  #buffered: Buffered[] = []
  #bufferedBytes = 0
  #durableOffset: number
  #durableSeq: number
  #chain: Promise<unknown> = Promise.resolve()
  #poison: JsonlStoreError | null = null
  #closing: Promise<void> | null = null
  /** Set by the first `close()`: no append is accepted after it, even while a retryable close is pending. */
  #closed = false
  #closeDone = false
  #timer: ReturnType<typeof setTimeout> | undefined
  #autoQueued = false
  /** Consecutive failed automatic flushes (the next retry waits 2^n x the base delay). */
  #autoFailures = 0

  /** @param init - The open file, the held lock, the recovered projection and the options. */
  constructor(init: WriterInit) {
    this.#init = init
    this.id = init.id
    this.header = init.header
    this.file = init.file
    this.projection = init.projection
    this.#recovery = init.recovery
    this.#durableOffset = init.durableOffset
    this.#durableSeq = init.projection.nextSeq - 1
  }

  get durableSeq(): number {
    return this.#durableSeq
  }

  get recovery(): WriterRecovery {
    return this.#recovery
  }

  /**
   * Records the repair events the open appended and made durable (internal: called by the store once).
   *
   * @param repairs - One action per appended repair event.
   */
  recordRepairs(repairs: readonly RepairAction[]): void {
    this.#recovery = Object.freeze({ ...this.#recovery, repairs: Object.freeze([...repairs]) })
  }

  get bufferedEvents(): number {
    return this.#buffered.length
  }

  append<TType extends SessionEventType>(input: EventInput<TType>): SessionEvent<TType> {
    if (this.#closed) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.WRITER_CLOSED,
        message: `Cannot append to ${this.file}: expected an open writer, found it closed.`,
        file: this.file,
      })
    }
    if (this.#poison !== null) throw this.#poisoned()
    const { limits, registry } = this.#init
    const seq = this.projection.nextSeq
    let time: string
    try {
      time = this.#init.clock()
    } catch (error) {
      throw this.#invalid(seq, { code: JsonlErrorCode.INVALID_EVENT, field: 'time', error })
    }
    // Every field of the caller's input is read exactly once, into a copy: what is validated
    // below is what is written (an accessor answering differently later changes nothing).
    let fields: EventInput
    try {
      fields = snapshotJson(input, limits) as EventInput
    } catch (error) {
      // A getter that throws, a Proxy whose trap throws: the caller's error is the cause.
      throw this.#invalid(seq, { code: JsonlErrorCode.UNSERIALIZABLE_EVENT, field: undefined, error })
    }
    let event = canonicalEvent({
      seq,
      time,
      type: fields.type,
      data: fields.data,
      surfaceOp: fields.surfaceOp,
      sourceEventSeqs: fields.sourceEventSeqs,
      ignorable: fields.ignorable,
    }) as LoggedEvent
    try {
      // Bounds and JSON-ness first, without recursion: schemas and stringify walk recursively.
      assertJsonValue(event, { maxDepth: limits.maxDepth, maxEntries: limits.maxEntries }, 'event')
    } catch (error) {
      throw this.#invalid(seq, { code: undefined, field: undefined, error })
    }
    const redaction = this.#init.redaction
    if (redaction !== null) {
      let data: unknown
      try {
        data = redactJson(event.data, (text) => redaction.redact(text))
      } catch (error) {
        throw new JsonlStoreError({
          code: JsonlErrorCode.REDACTION_FAILED,
          message: `Cannot append event seq ${seq} to ${this.file}: the redaction hook failed (${error instanceof Error ? error.message : String(error)}); nothing was written.`,
          file: this.file,
          seq,
          details: { policyVersion: redaction.policyVersion },
          cause: error,
        })
      }
      if (data !== event.data) event = canonicalEvent({ ...event, data }) as LoggedEvent
    }
    try {
      parseEvent(event, registry)
      this.projection.check(event)
    } catch (error) {
      throw this.#invalid(seq, { code: undefined, field: undefined, error })
    }
    // `event` is canonical already (built by canonicalEvent above): encodeEventLine's copy is not needed.
    const bytes = encodeJsonLine(JSON.stringify(event))
    const lineBytes = bytes.length - 1
    if (lineBytes > limits.maxEventBytes) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.EVENT_TOO_LARGE,
        message: `Event seq ${seq} (${event.type}) is too large for ${this.file}: expected at most ${limits.maxEventBytes} bytes, found ${lineBytes}.`,
        file: this.file,
        seq,
        details: { bytes: lineBytes, limit: limits.maxEventBytes },
      })
    }
    if (this.#buffered.length > 0 && this.#bufferedBytes + bytes.length > limits.maxBufferedBytes) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.BUFFER_FULL,
        message: `Cannot buffer event seq ${seq} for ${this.file}: expected at most ${limits.maxBufferedBytes} buffered bytes, found ${this.#bufferedBytes} already buffered; await flush() first.`,
        file: this.file,
        seq,
        details: { bufferedBytes: this.#bufferedBytes, bytes: bytes.length, limit: limits.maxBufferedBytes },
      })
    }
    this.projection.apply(event)
    this.#buffered.push({ seq, bytes })
    this.#bufferedBytes += bytes.length
    this.#scheduleAutoFlush()
    return event as SessionEvent<TType>
  }

  flush(): Promise<{ readonly durableSeq: number }> {
    const run = this.#chain.then(() => this.#flushNow())
    this.#chain = run.catch(() => undefined)
    return run
  }

  deriveMessages(): readonly WireMessage[] {
    return this.projection.deriveMessages()
  }

  close(): Promise<void> {
    this.#closed = true
    this.#clearTimer()
    if (this.#closeDone) return Promise.resolve()
    this.#closing ??= this.#closeNow().then(
      () => {
        this.#closeDone = true
      },
      (error: unknown) => {
        // Retryable: the next close() starts again from the step that failed.
        this.#closing = null
        throw error
      },
    )
    return this.#closing
  }

  #fileClosed = false

  async #closeNow(): Promise<void> {
    let failure: Error | undefined
    if (!this.#fileClosed) {
      try {
        if (this.#poison === null) await this.flush()
      } catch (error) {
        // Retryable (rolled back, still buffered): keep the file and the lock for the next close().
        if (this.#poison === null) throw error
        failure = error instanceof Error ? error : new Error(String(error))
      }
      // A last checkpoint of what is durable, written under the lock, before the file closes.
      await this.#init.checkpoints?.close(this.projection, this.#poison === null && failure === undefined)
      await this.#init.handle.close().catch(() => undefined)
      this.#fileClosed = true
    }
    try {
      await this.#init.lock.release()
    } catch (error) {
      throw toStoreError(error, {
        op: 'release the writer lock of',
        file: this.file,
        fallback: JsonlErrorCode.WRITE_FAILED,
      })
    }
    if (failure !== undefined) throw failure
  }

  #invalid(
    seq: number,
    problem: {
      readonly code: JsonlErrorCode | undefined
      readonly field: string | undefined
      readonly error: unknown
    },
  ): JsonlStoreError {
    const { error } = problem
    const errorCode =
      typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : undefined
    const code =
      problem.code ??
      (SessionEventsError.is(error)
        ? (EVENTS_ERROR_CODES[error.code] ?? JsonlErrorCode.INVALID_EVENT)
        : undefined) ??
      (errorCode !== undefined ? EVENTS_ERROR_CODES[errorCode] : undefined) ??
      JsonlErrorCode.INVALID_EVENT
    const field = problem.field ?? (SessionEventsError.is(error) ? error.field : undefined)
    const message = error instanceof Error ? error.message : String(error)
    return new JsonlStoreError({
      code,
      message: `Cannot append event seq ${seq} to ${this.file}: ${message}`,
      file: this.file,
      seq,
      details: {
        ...(field === undefined ? {} : { field }),
        ...(errorCode === undefined || SessionEventsError.is(error) ? {} : { projectionCode: errorCode }),
      },
      cause: error,
    })
  }

  #poisoned(): JsonlStoreError {
    const cause = this.#poison!
    return new JsonlStoreError({
      code: JsonlErrorCode.WRITER_FAILED,
      message: `The writer of ${this.file} failed earlier (${cause.code}): expected a healthy writer, found a poisoned one; reopen the session to continue.`,
      file: this.file,
      details: { cause: cause.code },
      cause,
    })
  }

  #poisonWith(error: JsonlStoreError): JsonlStoreError {
    this.#poison ??= error
    this.#clearTimer()
    return error
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#timer = undefined
  }

  #scheduleAutoFlush(): void {
    // Backing off after a failed automatic flush: the pending retry comes first.
    if (this.#autoFailures > 0 && this.#timer !== undefined) return
    const policy = this.#init.flushPolicy
    const countTrigger = policy.maxBufferedEvents > 0 && this.#buffered.length >= policy.maxBufferedEvents
    const bytesTrigger = policy.maxBufferedBytes > 0 && this.#bufferedBytes >= policy.maxBufferedBytes
    if (countTrigger || bytesTrigger) {
      this.#autoFlush()
      return
    }
    if (this.#timer === undefined && policy.maxDelayMs > 0) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined
        this.#autoFlush()
      }, policy.maxDelayMs)
      this.#timer.unref()
    }
  }

  #autoFlush(): void {
    this.#clearTimer()
    if (this.#autoQueued || this.#poison !== null) return
    this.#autoQueued = true
    let retryInMs = 0
    this.flush()
      .then(() => {
        this.#autoFailures = 0
      })
      .catch((error: unknown) => {
        this.#autoFailures += 1
        retryInMs = Math.min(
          AUTO_FLUSH_RETRY_MAX_MS,
          AUTO_FLUSH_RETRY_BASE_MS * 2 ** (this.#autoFailures - 1),
        )
        const poisoned = this.#poison !== null
        // The writer's error channel: the store's logger, with the typed error itself.
        this.#init.logger.warn(
          poisoned
            ? `Automatic flush of ${this.file} failed and the writer is poisoned; reopen the session.`
            : `Automatic flush of ${this.file} failed; the events stay buffered, retrying in ${retryInMs} ms.`,
          {
            code: JsonlStoreError.is(error) ? error.code : errnoOf(error),
            file: this.file,
            attempt: this.#autoFailures,
            ...(poisoned ? {} : { retryInMs }),
            error,
          },
        )
      })
      .finally(() => {
        this.#autoQueued = false
        if (this.#buffered.length === 0 || this.#poison !== null || this.#closed) return
        if (retryInMs === 0) {
          this.#scheduleAutoFlush()
          return
        }
        // Back off: a full disk is not retried in a tight loop.
        this.#timer = setTimeout(() => {
          this.#timer = undefined
          this.#autoFlush()
        }, retryInMs)
        this.#timer.unref()
      })
  }

  async #flushNow(): Promise<{ readonly durableSeq: number }> {
    if (this.#poison !== null) throw this.#poisoned()
    const count = this.#buffered.length
    if (count === 0) return { durableSeq: this.#durableSeq }
    const { handle, file } = this.#init
    const batch = this.#buffered.slice(0, count)
    const lines = batch.length === 1 ? batch[0]!.bytes : Buffer.concat(batch.map((entry) => entry.bytes))
    const bytes = this.#init.encodeBatch === undefined ? lines : this.#init.encodeBatch(lines)
    const lastSeq = batch[count - 1]!.seq
    const offset = this.#durableOffset
    // Before any await: the projection is exactly at lastSeq here (every buffered event is in the batch).
    // Plain logs only: a checkpoint's offsets are plain byte offsets (zstd frame offsets are not written yet).
    const checkpoint =
      this.#init.encodeBatch === undefined
        ? this.#init.checkpoints?.prepare(batch, this.projection, offset)
        : undefined
    const durableOffset = await appendDurably({
      fs: this.#init.fs,
      handle,
      path: this.#init.path,
      file,
      offset,
      bytes,
      count,
      lastSeq,
      lock: this.#init.lock,
      poison: (error) => this.#poisonWith(error),
    })
    this.#durableOffset = durableOffset
    this.#durableSeq = lastSeq
    this.#buffered.splice(0, count)
    this.#bufferedBytes -= lines.length
    if (checkpoint !== undefined) this.#init.checkpoints?.committed(checkpoint)
    return { durableSeq: lastSeq }
  }
}
