/**
 * The in-memory backend: the port's reference implementation, for tests, browsers and
 * short-lived agents. Real fencing (epochs), leases that expire by an injected clock,
 * dense seqs, all-or-nothing appends. Nothing survives the process: `reopen` means a new
 * backend instance over the same {@link MemoryStorage} object.
 */
import type {
  AcquireOptions,
  AcquireResult,
  AppendBatch,
  CheckpointRecord,
  CreateRequest,
  DeleteOptions,
  ListEntry,
  ListPage,
  ListQuery,
  ReadOptions,
  ServerForkRequest,
  SessionBackend,
  SessionHead,
  SignalOptions,
  StoredHeader,
  StoredLine,
  WriterLease,
} from './port.ts'
import type { Crc32c } from './crc32c.ts'
import { throwIfAborted as throwIfAbortedAs } from './checks.ts'
import { seedBatches } from './seed-lines.ts'
import { attempt, before, checkedSeq, isoOf, parseCursor } from './memory-helpers.ts'
import { deleteStored } from './memory-delete.ts'
import { SessionStoreError, SessionStoreErrorCode } from './session-store-error.ts'
import { assertSessionId } from './header.ts'

interface StoredSession {
  readonly id: string
  readonly headerLine: string
  readonly cwd: string | undefined
  readonly parentSession: string | undefined
  readonly lines: string[]
  lastCrc: string | null
  lastBatchId: string | null
  epoch: number
  owner: string | null
  leaseMs: number
  leaseUntil: number
  updatedAt: number
  checkpoint: CheckpointRecord | null
}

/**
 * The sessions of one or more memory backends. Create one with {@link createMemoryStorage}
 * and pass it to several {@link createMemoryBackend} calls to model several processes (or
 * a restart) over one storage. Opaque.
 */
export interface MemoryStorage {
  readonly kind: 'agent-ledger.memory-storage'
}

interface StorageImpl extends MemoryStorage {
  readonly sessions: Map<string, StoredSession>
  readonly waiters: Map<string, Set<() => void>>
}

/**
 * A new, empty storage.
 *
 * @returns The storage.
 */
export function createMemoryStorage(): MemoryStorage {
  const storage: StorageImpl = {
    kind: 'agent-ledger.memory-storage',
    sessions: new Map(),
    waiters: new Map(),
  }
  return storage
}

/**
 * Fault injection for tests (documented test hooks, not for production use).
 */
export interface MemoryTestHooks {
  /**
   * Simulates a full disk: while true, `create`, `acquire`, `append` and `putCheckpoint`
   * throw `DISK_FULL` and change nothing; `release`, `head` and reads keep working.
   */
  full: boolean
  /**
   * The next `append` throws `UNKNOWN_OUTCOME`: with `landed: true` after committing the
   * batch (the reply was lost), with `landed: false` without committing it.
   */
  failNextAppend(outcome: { readonly landed: boolean }): void
  /** Replaces the stored line of event `seq` (to simulate damage), or the header when `seq` is -1. */
  corruptLine(id: string, seq: number, line: string): void
  /** Removes stored event lines from `fromSeq` on, keeping the head's `lastCrc` and batch id (a backend that lost data). */
  dropLinesFrom(id: string, fromSeq: number): void
}

/** Options of {@link createMemoryBackend}. */
export interface MemoryBackendOptions {
  /** The storage to use; default a new one. Share it between instances to model a restart. */
  readonly storage?: MemoryStorage | undefined
  /**
   * The backend's clock in milliseconds since the epoch (lease expiry and `updatedAt`).
   * Default: a logical clock that starts at 0 and only moves when `advance` is called on
   * the returned backend, so leases never expire by themselves.
   */
  readonly now?: (() => number) | undefined
  /**
   * Which optional capabilities to offer (all by default): turn some off to exercise the
   * core's fallbacks (client-side fork, polling follow).
   */
  readonly offer?:
    | {
        readonly follow?: boolean | undefined
        readonly fork?: boolean | undefined
        readonly checkpoints?: boolean | undefined
        readonly delete?: boolean | undefined
      }
    | undefined
  /**
   * The CRC-32C to offer the core ({@link SessionBackend.crc32c}), e.g. a native one on Node;
   * default none (the core's pure one).
   */
  readonly crc32c?: Crc32c | undefined
}

/** The memory backend: a {@link SessionBackend} plus its storage and test hooks. */
export interface MemoryBackend extends SessionBackend {
  readonly storage: MemoryStorage
  readonly testHooks: MemoryTestHooks
  /** Moves the default logical clock forward (no effect with an injected `now`). */
  advance(ms: number): void
}

/** The memory backend changes nothing of an aborted call. */
function throwIfAborted(signal: SignalOptions['signal'], what: string): void {
  throwIfAbortedAs(signal, what, 'nothing was changed')
}

class MemoryBackendImpl implements MemoryBackend {
  readonly name = 'memory'
  readonly crc32c: Crc32c | undefined
  readonly storage: MemoryStorage
  readonly capabilities: MemoryBackend['capabilities']
  readonly testHooks: MemoryTestHooks
  readonly #sessions: Map<string, StoredSession>
  readonly #waiters: Map<string, Set<() => void>>
  readonly #now: () => number
  #logicalNow = 0
  #closed = false
  #nextAppendFault: { readonly landed: boolean } | null = null

  constructor(options: MemoryBackendOptions) {
    this.crc32c = options.crc32c
    const storage = (options.storage ?? createMemoryStorage()) as StorageImpl
    this.storage = storage
    this.#sessions = storage.sessions
    this.#waiters = storage.waiters
    this.#now = options.now ?? (() => this.#logicalNow)
    const hooks: MemoryTestHooks = {
      full: false,
      failNextAppend: (outcome) => {
        this.#nextAppendFault = outcome
      },
      corruptLine: (id, seq, line) => {
        const session = this.#session(id)
        if (seq === -1) (session as { headerLine: string }).headerLine = line
        else session.lines[seq] = line
      },
      dropLinesFrom: (id, fromSeq) => {
        this.#session(id).lines.length = fromSeq
      },
    }
    this.testHooks = hooks
    const offer = options.offer ?? {}
    this.capabilities = {
      ...(offer.follow === false
        ? {}
        : {
            follow: {
              waitForAppend: (id: string, waitOptions: { readonly nextSeq: number } & SignalOptions) =>
                this.#waitForAppend(id, waitOptions),
            },
          }),
      ...(offer.checkpoints === false
        ? {}
        : {
            checkpoints: {
              getCheckpoint: (id: string) => {
                this.#open()
                return Promise.resolve(this.#session(id).checkpoint)
              },
              putCheckpoint: (lease: WriterLease, record: CheckpointRecord) => {
                this.#open()
                this.#assertSpace('store a checkpoint')
                this.#assertLease(lease).checkpoint = record
                return Promise.resolve()
              },
            },
          }),
      ...(offer.fork === false
        ? {}
        : { fork: { fork: (request: ServerForkRequest) => this.#fork(request) } }),
      ...(offer.delete === false
        ? {}
        : {
            delete: {
              delete: (id: string, deleteOptions?: DeleteOptions) =>
                attempt(() => {
                  this.#open()
                  throwIfAborted(deleteOptions?.signal, `Deleting session ${id}`)
                  return deleteStored(
                    this.#sessions,
                    { id, now: this.#now(), options: deleteOptions ?? {} },
                    (gone) => this.#wake(gone),
                  )
                }),
            },
          }),
    }
  }

  advance(ms: number): void {
    this.#logicalNow += ms
  }

  #open(): void {
    if (this.#closed) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.BACKEND_CLOSED,
        message: 'The memory backend was closed: expected an open backend, found it closed.',
      })
    }
  }

  #assertSpace(what: string): void {
    if (this.testHooks.full) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.DISK_FULL,
        message: `Cannot ${what}: the memory backend is full (test hook); nothing was written.`,
      })
    }
  }

  #session(id: string): StoredSession {
    assertSessionId(id)
    const session = this.#sessions.get(id)
    if (session === undefined) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.SESSION_NOT_FOUND,
        sessionId: id,
        message: `Session ${id} was not found in the memory backend.`,
      })
    }
    return session
  }

  #assertLease(lease: WriterLease): StoredSession {
    const session = this.#session(lease.sessionId)
    if (session.epoch !== lease.epoch) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.FENCED,
        sessionId: lease.sessionId,
        message: `The lease of ${lease.owner} on session ${lease.sessionId} was fenced: expected epoch ${lease.epoch}, found ${session.epoch} (held by ${session.owner ?? 'nobody'}); nothing was written.`,
        details: { expected: lease.epoch, found: session.epoch, holder: session.owner },
      })
    }
    return session
  }

  #insert(request: CreateRequest & { readonly lastCrc: string | null }, lines: readonly string[]): void {
    const now = this.#now()
    this.#sessions.set(request.id, {
      id: request.id,
      headerLine: request.headerLine,
      cwd: request.header.cwd,
      parentSession: request.header.parentSession,
      lines: [...lines],
      lastCrc: request.lastCrc,
      lastBatchId: null,
      epoch: 0,
      owner: null,
      leaseMs: 0,
      leaseUntil: 0,
      updatedAt: now,
      checkpoint: null,
    })
    this.#wake(request.id)
  }

  #assertAbsent(id: string): void {
    assertSessionId(id)
    if (this.#sessions.has(id)) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.SESSION_EXISTS,
        sessionId: id,
        message: `Cannot create session ${id}: expected no session with that id, found one in the memory backend; it was left untouched.`,
      })
    }
  }

  async create(request: CreateRequest): Promise<void> {
    const streamed = await attempt(() => {
      this.#open()
      throwIfAborted(request.signal, `Creating session ${request.id}`)
      this.#assertAbsent(request.id)
      this.#assertSpace(`create session ${request.id}`)
      if (!Array.isArray(request.lines)) return true
      this.#insert(
        { ...request, lastCrc: seedBatches(request, `Creating session ${request.id}`).lastCrc() },
        request.lines as readonly string[],
      )
      return false
    })
    if (streamed) await this.#createStreamed(request)
  }

  /** A streamed seed: gathered in a private array, published by the same insert as an array seed. */
  async #createStreamed(request: CreateRequest): Promise<void> {
    const action = `Creating session ${request.id}`
    const seed = seedBatches(request, action)
    const lines: string[] = []
    for await (const batch of seed) {
      this.#open()
      this.#assertSpace(`create session ${request.id}`)
      for (const line of batch) lines.push(line)
    }
    this.#open()
    // Checked again at the publish: another create may have won meanwhile.
    this.#assertAbsent(request.id)
    this.#insert({ ...request, lastCrc: seed.lastCrc() }, lines)
  }

  #fork(request: ServerForkRequest): Promise<void> {
    return attempt(() => {
      this.#open()
      const { child } = request
      throwIfAborted(request.signal, `Forking session ${request.parentId} into ${child.id}`)
      const parent = this.#session(request.parentId)
      this.#assertAbsent(child.id)
      const boundary = parent.lines[request.boundarySeq]
      if (boundary === undefined || !boundary.endsWith(`,"crc":"${request.boundaryCrc}"}`)) {
        throw new SessionStoreError({
          code: SessionStoreErrorCode.CONFLICT,
          sessionId: request.parentId,
          message: `Cannot fork ${request.parentId} at seq ${request.boundarySeq}: expected its line to carry crc ${request.boundaryCrc}, found ${boundary === undefined ? 'no such line' : 'another line'}.`,
          details: { expected: request.boundaryCrc },
        })
      }
      this.#assertSpace(`fork session ${request.parentId}`)
      this.#insert(child, [...parent.lines.slice(0, request.boundarySeq + 1), ...child.lines])
      return undefined
    })
  }

  acquire(id: string, options: AcquireOptions): Promise<AcquireResult> {
    return attempt(() => {
      this.#open()
      throwIfAborted(options.signal, `Acquiring session ${id}`)
      const session = this.#session(id)
      if (!Number.isSafeInteger(options.leaseMs) || options.leaseMs <= 0) {
        throw new SessionStoreError({
          code: SessionStoreErrorCode.INVALID_OPTION,
          sessionId: id,
          message: `Lease length must be a positive integer of milliseconds, found ${String(options.leaseMs)}.`,
          details: { option: 'leaseMs' },
        })
      }
      const now = this.#now()
      const live = session.owner !== null && session.leaseUntil > now
      if (live && session.owner !== options.owner && options.takeover !== true) {
        throw new SessionStoreError({
          code: SessionStoreErrorCode.SESSION_LOCKED,
          sessionId: id,
          message: `Session ${id} is being written by ${session.owner ?? 'unknown'} until ${isoOf(session.leaseUntil)}: expected no live lease; wait, or take over if that writer is dead.`,
          details: { holder: session.owner, expiresAt: isoOf(session.leaseUntil) },
        })
      }
      this.#assertSpace(`acquire session ${id}`)
      session.epoch += 1
      session.owner = options.owner
      session.leaseMs = options.leaseMs
      session.leaseUntil = now + options.leaseMs
      const lease: WriterLease = {
        sessionId: id,
        owner: options.owner,
        epoch: session.epoch,
        expiresAt: isoOf(session.leaseUntil),
      }
      return { lease, head: this.#head(session), repaired: [] }
    })
  }

  append(lease: WriterLease, batch: AppendBatch): Promise<void> {
    return attempt(() => {
      this.#open()
      throwIfAborted(batch.signal, `Appending to session ${lease.sessionId}`)
      const session = this.#assertLease(lease)
      const found = session.lines.length
      if (found !== batch.expectedSeq) {
        throw new SessionStoreError({
          code: SessionStoreErrorCode.CONFLICT,
          sessionId: lease.sessionId,
          message: `Cannot append to session ${lease.sessionId}: expected the next seq to be ${batch.expectedSeq}, found ${found}; nothing was written.`,
          details: { expected: batch.expectedSeq, found },
        })
      }
      if (batch.lines.length === 0) {
        throw new SessionStoreError({
          code: SessionStoreErrorCode.INVALID_OPTION,
          sessionId: lease.sessionId,
          message: `Cannot append to session ${lease.sessionId}: expected at least one line, found none.`,
          details: { option: 'lines' },
        })
      }
      this.#assertSpace(`append to session ${lease.sessionId}`)
      const fault = this.#nextAppendFault
      this.#nextAppendFault = null
      if (fault === null || fault.landed) {
        session.lines.push(...batch.lines)
        session.lastCrc = batch.lastCrc
        session.lastBatchId = batch.batchId
        session.updatedAt = this.#now()
        this.#wake(lease.sessionId)
      }
      if (fault !== null) {
        throw new SessionStoreError({
          code: SessionStoreErrorCode.UNKNOWN_OUTCOME,
          sessionId: lease.sessionId,
          message: `Append of batch ${batch.batchId} to session ${lease.sessionId} has an unknown outcome (test hook); resolve it with head().lastBatchId.`,
          details: { batchId: batch.batchId },
        })
      }
      return undefined
    })
  }

  renew(lease: WriterLease): Promise<WriterLease> {
    return attempt(() => {
      this.#open()
      const session = this.#assertLease(lease)
      session.leaseUntil = this.#now() + session.leaseMs
      session.owner = lease.owner
      return { ...lease, expiresAt: isoOf(session.leaseUntil) }
    })
  }

  release(lease: WriterLease): Promise<void> {
    const session = this.#sessions.get(lease.sessionId)
    if (session !== undefined && session.epoch === lease.epoch && session.owner !== null) {
      session.owner = null
      session.leaseUntil = 0
    }
    return Promise.resolve()
  }

  #head(session: StoredSession): SessionHead {
    const live = session.owner !== null && session.leaseUntil > this.#now()
    return {
      nextSeq: session.lines.length,
      lastCrc: session.lastCrc,
      lastBatchId: session.lastBatchId,
      epoch: session.epoch,
      owner: live ? session.owner : null,
      updatedAt: isoOf(session.updatedAt),
    }
  }

  head(id: string, options?: SignalOptions): Promise<SessionHead> {
    return attempt(() => {
      this.#open()
      throwIfAborted(options?.signal, `Reading the head of session ${id}`)
      return this.#head(this.#session(id))
    })
  }

  readHeader(id: string, options?: SignalOptions): Promise<StoredHeader> {
    return attempt(() => {
      this.#open()
      throwIfAborted(options?.signal, `Reading the header of session ${id}`)
      return { line: this.#session(id).headerLine }
    })
  }

  // Memory needs no await; the port's read is async for every other backend.
  // eslint-disable-next-line @typescript-eslint/require-await
  async *read(id: string, options: ReadOptions): AsyncIterable<StoredLine> {
    this.#open()
    const session = this.#session(id)
    const fromSeq = checkedSeq(options.fromSeq, 'fromSeq')
    const toSeq = options.toSeq === undefined ? undefined : checkedSeq(options.toSeq, 'toSeq')
    const end = Math.min(session.lines.length, toSeq === undefined ? Infinity : toSeq + 1)
    for (let seq = fromSeq; seq < end; seq += 1) {
      throwIfAborted(options.signal, `Reading session ${id}`)
      const line = session.lines[seq]
      if (line === undefined) return
      yield { seq, line, location: { file: `memory:${id}` } }
    }
  }

  list(query: ListQuery): Promise<ListPage> {
    return attempt(() => {
      this.#open()
      throwIfAborted(query.signal, 'Listing sessions')
      if (!Number.isSafeInteger(query.limit) || query.limit <= 0) {
        throw new SessionStoreError({
          code: SessionStoreErrorCode.INVALID_OPTION,
          message: `List limit must be a positive integer, found ${String(query.limit)}.`,
          details: { option: 'limit' },
        })
      }
      const cursor = query.cursor === undefined ? undefined : parseCursor(query.cursor)
      const filter = query.filter ?? {}
      const since = filter.updatedSince === undefined ? undefined : Date.parse(filter.updatedSince)
      const matching = [...this.#sessions.values()]
        .filter(
          (session) =>
            (filter.cwd === undefined || session.cwd === filter.cwd) &&
            (filter.parentSession === undefined || session.parentSession === filter.parentSession) &&
            (since === undefined || session.updatedAt >= since) &&
            (cursor === undefined ||
              (!before(session, cursor) && !(session.updatedAt === cursor.u && session.id === cursor.i))),
        )
        .sort((a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      const page = matching.slice(0, query.limit)
      const entries: ListEntry[] = page.map((session) => ({
        id: session.id,
        headerLine: session.headerLine,
        nextSeq: session.lines.length,
        updatedAt: isoOf(session.updatedAt),
      }))
      const last = page.at(-1)
      return {
        entries,
        cursor:
          matching.length > page.length && last !== undefined
            ? JSON.stringify({ u: last.updatedAt, i: last.id })
            : null,
      }
    })
  }

  #wake(id: string): void {
    const waiters = this.#waiters.get(id)
    if (waiters === undefined) return
    this.#waiters.delete(id)
    for (const wake of waiters) wake()
  }

  #waitForAppend(id: string, options: { readonly nextSeq: number } & SignalOptions): Promise<void> {
    this.#open()
    const session = this.#session(id)
    if (session.lines.length > options.nextSeq) return Promise.resolve()
    const signal = options.signal
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.#waiters.get(id)?.delete(wake)
        reject(
          new SessionStoreError({
            code: SessionStoreErrorCode.ABORTED,
            sessionId: id,
            message: `Following session ${id} was aborted.`,
            cause: signal?.reason,
          }),
        )
      }
      const wake = (): void => {
        signal?.removeEventListener('abort', onAbort)
        resolve()
      }
      if (signal?.aborted === true) {
        onAbort()
        return
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      let set = this.#waiters.get(id)
      if (set === undefined) {
        set = new Set()
        this.#waiters.set(id, set)
      }
      set.add(wake)
    })
  }

  close(): Promise<void> {
    this.#closed = true
    return Promise.resolve()
  }
}

/**
 * Creates an in-memory backend.
 *
 * @param options - Shared storage, the clock, and whether to offer server-side fork.
 * @returns The backend, its storage and its test hooks.
 */
export function createMemoryBackend(options: MemoryBackendOptions = {}): MemoryBackend {
  return new MemoryBackendImpl(options)
}
