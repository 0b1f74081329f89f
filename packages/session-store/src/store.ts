/**
 * The session store: the API an agent builder calls, written once over a
 * {@link SessionBackend}. Pure: time comes from the injected clock, ids from the caller.
 */
import type { LoggedEvent, SessionHeader } from '@agent-ledger/session-events'
import { planRepairFromState } from '@agent-ledger/loop-repair'
import type { RepairAction } from '@agent-ledger/loop-repair'
import { createProjection } from '@agent-ledger/session-projection'
import type { Projection } from '@agent-ledger/session-projection'

import { scanWithCheckpoint } from './checkpoint-open.ts'
import type { CheckpointContext } from './checkpoint-open.ts'
import { createdLines, createdOpen, writerCheckpointParts } from './checkpoint-writer.ts'
import type { SessionCipher } from './encryption.ts'
import { decodeEventLine } from './event-codec.ts'
import { assertSessionId, buildHeader } from './header.ts'
import { lineCrc } from './line-codec.ts'
import type { DeleteOptions, DeleteResult, SessionBackend, SignalOptions } from './port.ts'
import { isLineDamage, readHeader, scanSession } from './scan.ts'
import { encodeSeed, encodeSeedStream, isSeedStream, planForkedSession, SeedEncoder } from './seed.ts'
import { SessionStoreError, SessionStoreErrorCode } from './session-store-error.ts'
import type {
  CreateSessionRequest,
  FollowOptions,
  ForkOptions,
  ListOptions,
  ListResult,
  OpenWriterOptions,
  PrunePolicy,
  PruneReport,
  ReadEventsOptions,
  SalvageReport,
  SearchOptions,
  SearchPage,
  SessionReadResult,
  SessionStore,
  SessionStoreOptions,
  VerifyReport,
  WriterLeaseOptions,
} from './store-api.ts'
import { describe, invalidOption, isAborted, seqOption, throwIfAborted } from './checks.ts'
import { checkedLease, resolveStoreContext } from './store-context.ts'
import { listSessions, salvageSession } from './store-maintenance.ts'
import { deleteOne, pruneSessions } from './store-retention.ts'
import { searchSessions } from './search.ts'
import { verifySealed } from './verify-sealed.ts'
import { SessionWriterImpl } from './writer.ts'
import type { SessionWriter } from './writer.ts'

class SessionStoreImpl implements SessionStore {
  readonly backend: SessionBackend
  readonly #context: CheckpointContext
  readonly #clock: () => string
  readonly #owner: string
  readonly #leaseMs: number
  readonly #sleep: SessionStoreOptions['sleep']
  readonly #writers = new Set<SessionWriterImpl>()
  #closed = false
  #closing: Promise<void> | null = null

  constructor(options: SessionStoreOptions) {
    const resolved = resolveStoreContext(options)
    this.backend = resolved.context.backend
    this.#context = resolved.context
    this.#clock = resolved.clock
    this.#owner = resolved.owner
    this.#leaseMs = resolved.leaseMs
    this.#sleep = resolved.sleep
  }

  /** The owner and lease length of one writer: the call's, else the store's. */
  #lease(options: WriterLeaseOptions): { readonly owner: string; readonly leaseMs: number } {
    return checkedLease(options, { owner: this.#owner, leaseMs: this.#leaseMs })
  }

  #assertOpen(): void {
    if (this.#closed || this.#closing !== null) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.STORE_CLOSED,
        message: 'The session store was closed: expected an open store, found it closed; create a new one.',
      })
    }
  }

  // ------------------------------------------------------------------ create

  async create(request: CreateSessionRequest): Promise<SessionWriter> {
    this.#assertOpen()
    const id = assertSessionId(request.id)
    this.#lease(request) // refused before anything is published
    const headerContext = {
      id,
      createdAt: this.#clock(),
      limits: this.#context.limits,
      crc32c: this.#context.crc32c,
      redaction: this.#context.redaction,
    }
    if (this.#context.keys.encryption !== null) buildHeader(request.header ?? {}, headerContext) // refused before a data key is made
    const made = await this.#context.keys.create(id, { signal: request.signal })
    const cipher = made?.state.cipher ?? null
    const { header, line: headerLine } = buildHeader(request.header ?? {}, {
      ...headerContext,
      encryption: made?.header,
    })
    const projection = createProjection({ registry: this.#context.registry })
    const seed = request.seed ?? []
    if (isSeedStream(seed)) {
      // Each batch is checked, encoded and folded when the backend takes it; the backend
      // writes it where no reader sees it and publishes the whole seed at the end.
      const encoder = new SeedEncoder(this.#context, { id, header, projection, cipher })
      throwIfAborted(request.signal, `Creating session ${id}`)
      await this.backend.create({
        id,
        headerLine,
        header,
        lines: encodeSeedStream(encoder, seed),
        signal: request.signal,
      })
      return this.#openCreated(
        id,
        {
          header,
          headerLine,
          projection,
          count: encoder.count,
          lastLine: encoder.lastLine,
          chars: encoder.chars,
          cipher,
          signal: request.signal,
        },
        request,
      )
    }
    const lines = encodeSeed(this.#context, { id, header, seed, projection, cipher })
    throwIfAborted(request.signal, `Creating session ${id}`)
    await this.backend.create({
      id,
      headerLine,
      header,
      lines,
      lastCrc: lines.length === 0 ? null : lineCrc(lines.at(-1)!),
      signal: request.signal,
    })
    return this.#openCreated(
      id,
      {
        header,
        headerLine,
        projection,
        ...createdLines(lines),
        cipher,
        signal: request.signal,
      },
      request,
    )
  }

  /** Opens a session this store just published, reusing its projection when nobody wrote in between. */
  async #openCreated(
    id: string,
    created: {
      readonly header: SessionHeader
      readonly headerLine: string
      readonly projection: Projection
      /** How many event lines it was published with, the last of them, and their characters. */
      readonly count: number
      readonly lastLine: string | null
      readonly chars: number
      /** Its data key when encrypted, else null. */
      readonly cipher: SessionCipher | null
    } & SignalOptions,
    leaseOptions: WriterLeaseOptions,
  ): Promise<SessionWriter> {
    const { owner, leaseMs } = this.#lease(leaseOptions)
    const acquired = await this.backend.acquire(id, { owner, leaseMs, signal: created.signal })
    if (acquired.head.nextSeq !== created.count || acquired.head.lastBatchId !== null) {
      // Someone wrote between create and acquire: read it all like any open.
      await this.backend.release(acquired.lease)
      return this.openWriter(id, { owner, leaseMs, signal: created.signal })
    }
    return this.#repairAndReturn(
      new SessionWriterImpl({
        ...this.#context,
        lease: acquired.lease,
        header: created.header,
        projection: created.projection,
        clock: this.#clock,
        leaseMs,
        cipher: created.cipher,
        backendRepairs: acquired.repaired,
        headScan: acquired.headScan ?? null,
        ...writerCheckpointParts(this.#context, this.#clock, {
          ...createdOpen(id, created),
          encrypted: created.cipher !== null,
        }),
        onClosed: (writer) => this.#writers.delete(writer),
      }),
    )
  }

  // ------------------------------------------------------------------ open for write

  async openWriter(id: string, options: OpenWriterOptions = {}): Promise<SessionWriter> {
    this.#assertOpen()
    assertSessionId(id)
    const { owner, leaseMs } = this.#lease(options)
    // A header this library cannot write after (newer version, not valid, another id, no
    // whole header line) is refused before the lease: nothing is locked, repaired or written.
    await readHeader(this.#context, id, { signal: options.signal })
    const acquired = await this.backend.acquire(id, {
      owner,
      leaseMs,
      takeover: options.takeover,
      signal: options.signal,
    })
    let writer: SessionWriterImpl
    try {
      const opened = await scanWithCheckpoint(this.#context, id, {
        signal: options.signal,
        nextSeq: acquired.head.nextSeq,
      })
      const { scan } = opened
      if (scan.damage !== null) throw scan.damage
      const found = scan.lastSeq + 1
      if (found !== acquired.head.nextSeq || scan.lastCrc !== acquired.head.lastCrc) {
        throw new SessionStoreError({
          code: SessionStoreErrorCode.CORRUPT_LINE,
          sessionId: id,
          lastGoodSeq: scan.lastSeq,
          message: `Session ${id} disagrees with its head: expected ${acquired.head.nextSeq} events ending with crc ${acquired.head.lastCrc ?? 'none'}, found ${found} ending with crc ${scan.lastCrc ?? 'none'}; writes refused.`,
          details: {
            expected: acquired.head.nextSeq,
            found,
            expectedCrc: acquired.head.lastCrc,
            foundCrc: scan.lastCrc,
          },
        })
      }
      writer = new SessionWriterImpl({
        ...this.#context,
        lease: acquired.lease,
        header: scan.header,
        projection: scan.projection,
        clock: this.#clock,
        leaseMs,
        cipher: scan.keys?.cipher ?? null,
        backendRepairs: acquired.repaired,
        headScan: acquired.headScan ?? null,
        ...writerCheckpointParts(this.#context, this.#clock, {
          id,
          ...opened,
          headerLine: scan.headerLine,
          lastCrc: scan.lastCrc,
          encrypted: scan.keys !== null,
        }),
        onClosed: (closed) => this.#writers.delete(closed),
      })
    } catch (error) {
      await this.backend.release(acquired.lease).catch(() => undefined)
      throw error
    }
    return this.#repairAndReturn(writer)
  }

  /** Appends loop-repair's closers (if any) and makes them durable before handing the writer out. */
  async #repairAndReturn(writer: SessionWriterImpl): Promise<SessionWriter> {
    this.#writers.add(writer)
    try {
      const plan = planRepairFromState(writer.projection.repairState, {
        nextSeq: writer.projection.nextSeq,
        time: this.#clock(),
      })
      const repairs: RepairAction[] = []
      for (const [index, planned] of plan.events.entries()) {
        writer.appendChecked(
          {
            type: planned.type,
            data: planned.data,
            ...(planned.sourceEventSeqs === undefined ? {} : { sourceEventSeqs: planned.sourceEventSeqs }),
          },
          'repair event',
        )
        repairs.push(plan.actions[index]!)
      }
      if (repairs.length > 0) {
        await writer.flush()
        writer.recordRepairs(repairs)
      }
      return writer
    } catch (error) {
      await writer.close({ discardUnflushed: true }).catch(() => undefined)
      throw error
    }
  }

  // ------------------------------------------------------------------ read

  async openReader(
    id: string,
    options: SignalOptions & { readonly allowDamaged?: boolean } = {},
  ): Promise<SessionReadResult> {
    this.#assertOpen()
    assertSessionId(id)
    const { scan, use } = await scanWithCheckpoint(this.#context, id, { signal: options.signal })
    if (scan.damage !== null && options.allowDamaged !== true) throw scan.damage
    return {
      checkpoint: use,
      header: scan.header,
      projection: scan.projection,
      lastSeq: scan.lastSeq,
      tornTail: scan.tornTail,
      error: scan.damage,
      pendingToolCalls: scan.projection.repairState.pendingCalls,
    }
  }

  readEvents(id: string, options: ReadEventsOptions = {}): AsyncIterable<LoggedEvent> {
    this.#assertOpen()
    assertSessionId(id)
    if (typeof options !== 'object' || options === null) throw invalidOption('options', 'an object', options)
    const fromSeq = seqOption(options.fromSeq, 'fromSeq') ?? 0
    const toSeq = seqOption(options.toSeq, 'toSeq')
    if (toSeq !== undefined && fromSeq > toSeq) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.INVALID_OPTION,
        sessionId: id,
        message: `Option fromSeq (${fromSeq}) must not be greater than toSeq (${toSeq}).`,
        details: { option: 'fromSeq', expected: `<= ${toSeq}`, found: fromSeq },
      })
    }
    return this.#readRange(id, { fromSeq, toSeq, signal: options.signal })
  }

  async *#readRange(
    id: string,
    range: { readonly fromSeq: number; readonly toSeq: number | undefined } & SignalOptions,
  ): AsyncGenerator<LoggedEvent> {
    const { keys } = await readHeader(this.#context, id, range)
    let expected = range.fromSeq
    for await (const stored of this.backend.read(id, range)) {
      const event = decodeEventLine(stored, {
        ...this.#context,
        sessionId: id,
        expectedSeq: expected,
        lastGoodSeq: expected - 1,
        keys,
      })
      expected += 1
      yield event
    }
  }

  follow(id: string, options: FollowOptions = {}): AsyncIterable<LoggedEvent> {
    this.#assertOpen()
    assertSessionId(id)
    const fromSeq = seqOption(options.fromSeq, 'fromSeq') ?? 0
    const pollMs = options.pollMs ?? 250
    if (!Number.isSafeInteger(pollMs) || pollMs <= 0)
      throw invalidOption('pollMs', 'a positive integer', pollMs)
    const capability = this.backend.capabilities.follow
    const sleep = this.#sleep
    if (capability === undefined && sleep === undefined) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.UNSUPPORTED,
        sessionId: id,
        message: `Cannot follow session ${id}: the ${this.backend.name} backend has no follow capability and the store has no sleep option to poll with; pass createSessionStore({ sleep }).`,
        details: { capability: 'follow' },
      })
    }
    return this.#follow(id, { fromSeq, pollMs, signal: options.signal, sleep })
  }

  async *#follow(
    id: string,
    options: {
      readonly fromSeq: number
      readonly pollMs: number
      readonly sleep: SessionStoreOptions['sleep']
    } & SignalOptions,
  ): AsyncGenerator<LoggedEvent> {
    const { signal } = options
    const capability = this.backend.capabilities.follow
    let next = options.fromSeq
    try {
      while (signal?.aborted !== true) {
        for await (const event of this.#readRange(id, { fromSeq: next, toSeq: undefined, signal })) {
          yield event
          next = event.seq + 1
        }
        if (isAborted(signal)) return
        const head = await this.backend.head(id, { signal })
        if (head.nextSeq > next) continue
        if (capability !== undefined) await capability.waitForAppend(id, { nextSeq: next, signal })
        else await options.sleep!(options.pollMs, signal)
      }
    } catch (error) {
      if (
        isAborted(signal) &&
        (SessionStoreError.is(error, SessionStoreErrorCode.ABORTED) || !SessionStoreError.is(error))
      ) {
        return
      }
      throw error
    }
  }

  // ------------------------------------------------------------------ fork and salvage

  async fork(id: string, options: ForkOptions): Promise<SessionWriter> {
    this.#assertOpen()
    assertSessionId(id)
    const to = assertSessionId(options.to, 'fork target id')
    this.#lease(options) // refused before anything is published
    const { atSeq } = options
    if (typeof atSeq !== 'number' || !Number.isSafeInteger(atSeq) || atSeq < 0) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.FORK_REFUSED,
        sessionId: id,
        message: `Cannot fork ${id}: atSeq must be a non-negative integer seq, found ${describe(atSeq)}.`,
        details: { option: 'atSeq', found: typeof atSeq === 'number' ? atSeq : typeof atSeq },
      })
    }
    await this.#assertAbsent(to, `Cannot fork ${id} into ${to}`, options.signal)
    const made = await this.#context.keys.create(to, { signal: options.signal })
    const cipher = made?.state.cipher ?? null
    const { header, headerLine, projection, prefixLines, verbatim, tailLines } = await planForkedSession(
      this.#context,
      {
        id,
        to,
        atSeq,
        openTurn: options.openTurn,
        signal: options.signal,
        createdAt: this.#clock(),
        child: made === null ? null : { header: made.header, cipher: made.state.cipher! },
      },
    )
    const lastLine = tailLines.at(-1) ?? prefixLines.at(-1)!
    throwIfAborted(options.signal, `Forking ${id} into ${to}`)
    // A server-side copy only of the parent's exact lines (a sealed prefix was encoded here).
    const serverFork = verbatim ? this.backend.capabilities.fork : undefined
    const child = { id: to, headerLine, header, lastCrc: lineCrc(lastLine), signal: options.signal }
    if (serverFork !== undefined) {
      await serverFork.fork({
        parentId: id,
        boundarySeq: atSeq,
        boundaryCrc: lineCrc(prefixLines.at(-1)!)!,
        child: { ...child, lines: tailLines },
        signal: options.signal,
      })
    } else {
      await this.backend.create({ ...child, lines: [...prefixLines, ...tailLines] })
    }
    return this.#openCreated(
      to,
      {
        header,
        headerLine,
        projection,
        ...createdLines([...prefixLines, ...tailLines]),
        cipher,
        signal: options.signal,
      },
      options,
    )
  }

  /**
   * Refuses a target id that already holds a session, before the source is read (the
   * backend's create or fork checks again at its publish).
   */
  async #assertAbsent(to: string, what: string, signal: SignalOptions['signal']): Promise<void> {
    try {
      await this.backend.head(to, { signal })
    } catch (error) {
      if (SessionStoreError.is(error, SessionStoreErrorCode.SESSION_NOT_FOUND)) return
      throw error
    }
    // Where the existing session is (its header line), when the backend says: the caller sees what is in the way.
    const location = await this.backend.readHeader(to, { signal }).then(
      (stored) => stored.location,
      () => undefined,
    )
    throw new SessionStoreError({
      code: SessionStoreErrorCode.SESSION_EXISTS,
      sessionId: to,
      location,
      message: `${what}: expected no session ${to}, found one on the ${this.backend.name} backend${location?.file === undefined ? '' : ` (${location.file})`}; nothing was read or written.`,
    })
  }

  async salvage(id: string, options: SignalOptions & { readonly to: string }): Promise<SalvageReport> {
    this.#assertOpen()
    assertSessionId(id)
    const to = assertSessionId(options.to, 'salvage target id')
    await this.#assertAbsent(to, `Cannot salvage ${id} into ${to}`, options.signal)
    return await salvageSession(
      { context: this.#context, clock: this.#clock },
      { id, to, signal: options.signal },
    )
  }

  // ------------------------------------------------------------------ list and verify

  async list(options: ListOptions = {}): Promise<ListResult> {
    this.#assertOpen()
    return await listSessions(this.#context, options)
  }

  async search(query: string, options: SearchOptions = {}): Promise<SearchPage> {
    this.#assertOpen()
    return await searchSessions(this.#context, query, options)
  }

  async verify(id: string, options: SignalOptions = {}): Promise<VerifyReport> {
    this.#assertOpen()
    assertSessionId(id)
    let scan
    let sawEndSeed = false as boolean
    try {
      scan = await scanSession(this.#context, id, {
        ...options,
        onEvent: (_stored, event) => {
          if (event.type === 'session/end-seed') sawEndSeed = true
        },
      })
    } catch (error) {
      // Integrity needs no key: the checksums cover the sealed text.
      if (SessionStoreError.is(error, SessionStoreErrorCode.KEY_UNAVAILABLE)) {
        return await verifySealed(this.#context, id, options)
      }
      if (
        !SessionStoreError.is(
          error,
          SessionStoreErrorCode.INVALID_HEADER,
          SessionStoreErrorCode.HEADER_ID_MISMATCH,
          SessionStoreErrorCode.VERSION_TOO_NEW,
        ) &&
        !isLineDamage(error, this.backend)
      ) {
        throw error
      }
      return { id, status: 'damaged', header: null, events: 0, lastSeq: -1, tornTail: null, damage: error }
    }
    let damage = scan.damage
    if (damage === null && scan.header.seeded === true && !sawEndSeed) {
      damage = new SessionStoreError({
        code: SessionStoreErrorCode.INVALID_SEED,
        sessionId: id,
        message: `Session ${id} has a seeded header but no session/end-seed event among its ${scan.lastSeq + 1} events.`,
      })
    }
    return {
      id,
      status: damage !== null ? 'damaged' : scan.tornTail !== null ? 'torn-tail' : 'ok',
      header: scan.header,
      events: scan.lastSeq + 1,
      lastSeq: scan.lastSeq,
      tornTail: scan.tornTail,
      damage,
    }
  }

  // ------------------------------------------------------------------ delete and prune

  async delete(id: string, options: DeleteOptions = {}): Promise<DeleteResult> {
    this.#assertOpen()
    return await deleteOne(this.backend, id, options)
  }

  async prune(policy: PrunePolicy): Promise<PruneReport> {
    this.#assertOpen()
    return await pruneSessions(this.backend, this.#clock(), policy)
  }

  // ------------------------------------------------------------------ close

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve()
    this.#closing ??= this.#closeNow()
    return this.#closing
  }

  async #closeNow(): Promise<void> {
    const results = await Promise.allSettled([...this.#writers].map((writer) => writer.close()))
    const failures = results.filter((result) => result.status === 'rejected')
    if (failures.length > 0) {
      this.#closing = null
      throw new SessionStoreError({
        code: SessionStoreErrorCode.WRITER_FAILED,
        message: `Closing the store: ${failures.length} of ${results.length} writers failed to close (their leases are kept, their events still buffered); call close() again to retry.`,
        details: { failed: failures.length },
        cause: failures[0]!.reason,
      })
    }
    await this.backend.close()
    this.#closed = true
  }
}

/**
 * Creates a session store over a backend.
 *
 * @param options - The backend, the clock, and optional registry, owner, lease length, CRC, limits and sleep.
 * @returns The store.
 * @throws {@link SessionStoreError} `INVALID_OPTION`.
 */
export function createSessionStore(options: SessionStoreOptions): SessionStore {
  return new SessionStoreImpl(options)
}
