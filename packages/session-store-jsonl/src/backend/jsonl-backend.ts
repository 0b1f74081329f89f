/**
 * `createJsonlBackend`: the JSONL store as the `@agent-ledger/session-store` backend port's
 * file implementation, built from the store's own parts: create is `publishFile` (temp,
 * fsync, read back and verify, `link()`, directory fsync); the lease is the writer lock plus
 * a durable epoch (`lease-file.ts`); acquire repairs a torn tail with `quarantineTail`;
 * append is `appendDurably` (one write, one fdatasync, rollback); reads are the streaming
 * scanner in lines mode; plain or zstd is chosen once, by a `LogAdapter`.
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'

import { coreEventRegistry } from '@agent-ledger/session-events'
import type { EventRegistry } from '@agent-ledger/session-events'
import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type {
  AcquireOptions,
  AcquireRepair,
  AcquireResult,
  AppendBatch,
  BackendCapabilities,
  CreateRequest,
  ListPage,
  ListQuery,
  ReadOptions,
  SessionBackend,
  SessionHead,
  SignalOptions,
  StoredHeader,
  StoredLine,
  WriterLease,
} from '@agent-ledger/session-store'

import { appendDurably } from '../durable-append.ts'
import { nodeFsOps } from '../fs-ops.ts'
import type { FileHandleOps, FsOps } from '../fs-ops.ts'
import { listGenerations } from '../generations.ts'
import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import { resolveLimits } from '../limits.ts'
import type { StoreLimits } from '../limits.ts'
import { publishFile, removeStaleTemps } from '../publish.ts'
import { quarantineTail } from '../quarantine.ts'
import { assertSessionId } from '../session-id.ts'
import { acquireWriterLock, WRITER_LOCK_FILE_NAME } from '../writer-lock.ts'
import type { LockOptions, WriterLock } from '../writer-lock.ts'
import type { LogEncoding } from '../zstd-log-writer.ts'
import { maintenanceCapabilities } from './maintenance.ts'
import { waitForAppend } from './follow.ts'
import { readLease, writeLease } from './lease-file.ts'
import type { LeaseRecord } from './lease-file.ts'
import { logAdapter } from './log-adapter.ts'
import type { LogAdapter } from './log-adapter.ts'
import { readHeaderLine, readLines, scanHead, tornTailInfo } from './line-scan.ts'
import { listSessions } from './list.ts'
import { openLog } from './open-log.ts'
import { portError, throwIfAborted, toPortError } from './port-errors.ts'
import { checkRoot, ensureSessionDirectory, sessionDirectory } from './session-dirs.ts'

/** Options of {@link createJsonlBackend}. */
export interface JsonlBackendOptions {
  /** The store root: one directory per session (created 0700 on the first create). */
  readonly root: string
  /** The encoding of sessions this backend creates (`plain` default, or `zstd`); existing sessions are read and written in the encoding they have. */
  readonly encoding?: LogEncoding | undefined
  /** The file-system seam (fault injection); default the real one. */
  readonly fs?: FsOps | undefined
  /** Read limits (line length, depth, chunk size, zstd bounds, quarantine files kept). */
  readonly limits?: Partial<StoreLimits> | undefined
  /** Writer-lock settings (`staleMs`, `heartbeatMs`, `randomHex`); `timeoutMs` is ignored: acquire never waits. */
  readonly lock?: Partial<LockOptions> | undefined
  /** The backend's clock in ms since the epoch (lease expiry); default `Date.now`. */
  readonly now?: (() => number) | undefined
  /** Longest wait of a follower between checks when no watcher event arrives; default 1000 ms. */
  readonly followPollMs?: number | undefined
  /** Event types known to `compress` and `migrate` (which read events); default the core types. */
  readonly registry?: EventRegistry | undefined
}

/** The JSONL backend: a {@link SessionBackend} over a directory of sessions. */
export interface JsonlBackend extends SessionBackend {
  readonly root: string
  /** The encoding of new sessions. */
  readonly encoding: LogEncoding
}

/** A lease this backend instance granted and still holds: the lock, the open log and its durable end. */
interface Held {
  readonly id: string
  readonly directory: string
  readonly path: string
  readonly adapter: LogAdapter
  readonly handle: FileHandleOps
  readonly lock: WriterLock
  readonly epoch: number
  record: LeaseRecord
  offset: number
  nextSeq: number
  lastCrc: string | null
  /** Set when a failure left the log in a state no retry on this lease can fix. */
  failed: SessionStoreError | null
}

interface CachedHead {
  readonly key: string
  readonly nextSeq: number
  readonly lastCrc: string | null
}

function heldKey(id: string, epoch: number): string {
  return `${id}\u0000${epoch}`
}

function defaultRandomHex(byteCount: number): string {
  return randomBytes(byteCount).toString('hex')
}

class JsonlBackendImpl implements JsonlBackend {
  readonly name = 'jsonl'
  readonly root: string
  readonly encoding: LogEncoding
  readonly capabilities: BackendCapabilities
  readonly #fs: FsOps
  readonly #limits: StoreLimits
  readonly #lock: Partial<LockOptions>
  readonly #randomHex: (byteCount: number) => string
  readonly #now: () => number
  readonly #held = new Map<string, Held>()
  readonly #heads = new Map<string, CachedHead>()
  readonly #lastBatch = new Map<string, { batchId: string; nextSeq: number; epoch: number }>()
  #closed = false

  constructor(options: JsonlBackendOptions) {
    if (typeof options.root !== 'string' || !options.root.startsWith('/')) {
      throw portError(SessionStoreErrorCode.INVALID_OPTION, {
        message: `JSONL backend option root must be an absolute path, found ${JSON.stringify(options.root) ?? String(options.root)}.`,
        details: { option: 'root' },
      })
    }
    const encoding = options.encoding ?? 'plain'
    if (encoding !== 'plain' && encoding !== 'zstd') {
      throw portError(SessionStoreErrorCode.INVALID_OPTION, {
        message: `JSONL backend option encoding must be 'plain' or 'zstd', found ${JSON.stringify(encoding)}.`,
        details: { option: 'encoding' },
      })
    }
    const followPollMs = options.followPollMs ?? 1000
    if (!Number.isSafeInteger(followPollMs) || followPollMs <= 0) {
      throw portError(SessionStoreErrorCode.INVALID_OPTION, {
        message: `JSONL backend option followPollMs must be a positive integer, found ${String(followPollMs)}.`,
        details: { option: 'followPollMs' },
      })
    }
    this.root = options.root
    this.encoding = encoding
    this.#fs = options.fs ?? nodeFsOps
    try {
      this.#limits = resolveLimits(options.limits)
    } catch (error) {
      throw toPortError(error, { action: 'create the JSONL backend' })
    }
    this.#randomHex = options.lock?.randomHex ?? defaultRandomHex
    this.#lock = { ...options.lock, timeoutMs: 0, randomHex: this.#randomHex }
    this.#now = options.now ?? Date.now
    const context = { fs: this.#fs, root: this.root, limits: this.#limits }
    this.capabilities = {
      follow: {
        waitForAppend: (id, waitOptions) =>
          waitForAppend(
            {
              head: (sessionId, signalOptions) => this.head(sessionId, signalOptions),
              directory: (sessionId) => join(this.root, this.#id(sessionId)),
              pollMs: followPollMs,
            },
            id,
            waitOptions,
          ),
      },
      ...maintenanceCapabilities({
        ...context,
        lock: this.#lock,
        registry: options.registry ?? coreEventRegistry,
        assertOpen: () => this.#open(),
      }),
    }
  }

  #open(): void {
    if (this.#closed) {
      throw portError(SessionStoreErrorCode.BACKEND_CLOSED, {
        message: `The JSONL backend over ${this.root} was closed: expected an open backend, found it closed.`,
      })
    }
  }

  #id(id: string): string {
    try {
      return assertSessionId(id)
    } catch (error) {
      throw portError(SessionStoreErrorCode.INVALID_OPTION, {
        message: JsonlStoreError.is(error) ? error.message : `Invalid session id ${JSON.stringify(id)}.`,
        details: { option: 'id' },
        cause: error,
      })
    }
  }

  // ------------------------------------------------------------------ create

  async create(request: CreateRequest): Promise<void> {
    this.#open()
    const id = this.#id(request.id)
    throwIfAborted(request.signal, `Creating session ${id}`, id)
    const action = `create session ${id}`
    const adapter = await logAdapter(id, this.encoding, this.#limits).catch((error: unknown) => {
      throw toPortError(error, { sessionId: id, action })
    })
    const start = adapter.start(
      Buffer.from(`${request.headerLine}\n`, 'utf8'),
      Buffer.from(request.lines.map((line) => `${line}\n`).join(''), 'utf8'),
    )
    await checkRoot(this.#fs, this.root, true)
    const directory = await ensureSessionDirectory(this.#fs, this.root, id)
    await this.#assertNoLog(id, directory)
    let lock: WriterLock
    try {
      lock = await acquireWriterLock(this.#fs, directory, this.#lock)
    } catch (error) {
      if (JsonlStoreError.is(error) && error.code === JsonlErrorCode.SESSION_LOCKED) {
        throw portError(SessionStoreErrorCode.SESSION_EXISTS, {
          sessionId: id,
          message: `Cannot create session ${id}: expected no session with that id, found its directory locked by another writer (${error.message}).`,
          cause: error,
        })
      }
      throw toPortError(error, { sessionId: id, action })
    }
    try {
      await this.#assertNoLog(id, directory)
      await removeStaleTemps(this.#fs, directory)
      await publishFile({
        fs: this.#fs,
        directory,
        target: adapter.log.name,
        kind: 'create',
        content: async function* content() {
          yield start
        },
        // Read back from disk and checked before the link: the header, every seed line, nothing torn.
        verify: async (staged) => {
          const scanned = await scanHead(adapter, staged)
          throwIfAborted(request.signal, `Creating session ${id}`, id)
          const { outcome } = scanned
          if (
            outcome.damage !== null ||
            outcome.tornTail !== null ||
            scanned.headerLine !== request.headerLine ||
            scanned.nextSeq !== request.lines.length ||
            scanned.lastCrc !== request.lastCrc
          ) {
            throw portError(SessionStoreErrorCode.BACKEND_FAILED, {
              sessionId: id,
              message: `Creating session ${id}: the staged ${adapter.log.name} does not read back as written: expected the header and ${request.lines.length} lines ending with crc ${request.lastCrc ?? 'none'}, found ${scanned.nextSeq} lines ending with crc ${scanned.lastCrc ?? 'none'}${outcome.damage === null ? '' : ` and damage (${outcome.damage.message})`}; nothing was published.`,
            })
          }
        },
        ifExists: 'refuse',
        randomHex: this.#randomHex,
        display: id,
        lock,
      })
    } catch (error) {
      const cause = (error as { cause?: unknown }).cause
      throw toPortError(JsonlStoreError.is(error) && SessionStoreError.is(cause) ? cause : error, {
        sessionId: id,
        action,
      })
    } finally {
      await lock.release().catch(() => undefined)
    }
  }

  /** A session has one log: no generation of any version or encoding may exist yet. */
  async #assertNoLog(id: string, directory: string): Promise<void> {
    const existing = await listGenerations(this.#fs, directory).catch((error: unknown) => {
      throw toPortError(error, { sessionId: id, action: `create session ${id}` })
    })
    if (existing.length === 0) return
    throw portError(SessionStoreErrorCode.SESSION_EXISTS, {
      sessionId: id,
      message: `Cannot create session ${id}: expected no session with that id, found ${id}/${existing[0]!.file}; it was left untouched.`,
      details: { file: `${id}/${existing[0]!.file}` },
    })
  }

  // ------------------------------------------------------------------ leases

  async acquire(id: string, options: AcquireOptions): Promise<AcquireResult> {
    this.#open()
    const checked = this.#id(id)
    throwIfAborted(options.signal, `Acquiring session ${checked}`, checked)
    if (!Number.isSafeInteger(options.leaseMs) || options.leaseMs <= 0) {
      throw portError(SessionStoreErrorCode.INVALID_OPTION, {
        sessionId: checked,
        message: `Lease length must be a positive integer of milliseconds, found ${String(options.leaseMs)}.`,
        details: { option: 'leaseMs' },
      })
    }
    const directory = await sessionDirectory(this.#fs, this.root, checked)
    const before = await readLease(this.#fs, directory, checked)
    const now = this.#now()
    const lock = await this.#takeLock(checked, { directory, before, now, options })
    let opened: Awaited<ReturnType<typeof openLog>> | undefined
    try {
      // Under the lock: the epoch that fences every earlier lease, durably, before anything else.
      const prior = await readLease(this.#fs, directory, checked)
      const record: LeaseRecord = {
        epoch: (prior?.epoch ?? 0) + 1,
        owner: options.owner,
        nonce: lock.nonce,
        leaseMs: options.leaseMs,
        expiresAt: now + options.leaseMs,
      }
      throwIfAborted(options.signal, `Acquiring session ${checked}`, checked)
      await writeLease(this.#fs, { directory, id: checked, randomHex: this.#randomHex }, record)
      await removeStaleTemps(this.#fs, directory)
      opened = await openLog({ fs: this.#fs, root: this.root, limits: this.#limits }, checked, 'write')
      const held = await this.#recover(checked, { opened, lock, record })
      this.#held.set(heldKey(checked, record.epoch), held.held)
      this.#heads.delete(checked)
      const lease: WriterLease = {
        sessionId: checked,
        owner: options.owner,
        epoch: record.epoch,
        expiresAt: new Date(record.expiresAt).toISOString(),
        token: lock.nonce,
      }
      return { lease, head: await this.#headOf(held.held, null), repaired: held.repaired }
    } catch (error) {
      await opened?.handle.close().catch(() => undefined)
      await lock.release().catch(() => undefined)
      throw toPortError(error, { sessionId: checked, action: `acquire session ${checked}` })
    }
  }

  /** The writer lock; a live holder is broken only for a takeover, the same owner, or an expired lease. */
  async #takeLock(
    id: string,
    state: {
      readonly directory: string
      readonly before: LeaseRecord | null
      readonly now: number
      readonly options: AcquireOptions
    },
  ): Promise<WriterLock> {
    const { before, now, options } = state
    try {
      return await acquireWriterLock(this.#fs, state.directory, {
        ...this.#lock,
        breakLive: ({ token }) => {
          if (options.takeover === true) return `taken over by ${options.owner}`
          if (before === null || before.nonce !== token) return null
          if (before.owner === options.owner) return `the same owner ${options.owner} acquired again`
          if (before.expiresAt <= now)
            return `the lease of ${before.owner} expired at ${new Date(before.expiresAt).toISOString()}`
          return null
        },
      })
    } catch (error) {
      if (!(JsonlStoreError.is(error) && error.code === JsonlErrorCode.SESSION_LOCKED)) {
        throw toPortError(error, { sessionId: id, action: `acquire session ${id}` })
      }
      const holder =
        before?.owner ?? `pid ${String(error.details['holderPid'])} on ${String(error.details['holderHost'])}`
      const expiresAt = before === null ? null : new Date(before.expiresAt).toISOString()
      throw portError(SessionStoreErrorCode.SESSION_LOCKED, {
        sessionId: id,
        message: `Session ${id} is being written by ${holder}${expiresAt === null ? '' : ` (lease until ${expiresAt})`}: expected no live lease; wait, or take over if that writer is dead.`,
        details: { holder, expiresAt, lock: error.details },
        cause: error,
      })
    }
  }

  /** Scans the log under the new lease and repairs a torn tail (quarantined, truncated, durable). */
  async #recover(
    id: string,
    state: {
      readonly opened: Awaited<ReturnType<typeof openLog>>
      readonly lock: WriterLock
      readonly record: LeaseRecord
    },
  ): Promise<{ held: Held; repaired: AcquireRepair[] }> {
    const { opened, lock, record } = state
    const { handle } = opened
    const stats = await handle.stat()
    if (stats.nlink !== 1) {
      throw portError(SessionStoreErrorCode.BACKEND_FAILED, {
        sessionId: id,
        message: `${opened.log.file} has ${stats.nlink} hard links: expected exactly one (another name could be a victim file); nothing was written.`,
        details: { jsonlCode: JsonlErrorCode.HARDLINK_REFUSED, nlink: stats.nlink },
      })
    }
    const adapter = await logAdapter(id, opened.log.encoding, this.#limits)
    const scanned = await scanHead(adapter, handle)
    const { outcome } = scanned
    const repaired: AcquireRepair[] = []
    let failed: SessionStoreError | null = null
    if (outcome.damage !== null) {
      // Damage in the middle is the core's to report; this lease may not append after it.
      failed = toPortError(outcome.damage, { sessionId: id, action: `append to session ${id}` })
    } else if (outcome.tornTail !== null || (outcome.headerMissing && stats.size > 0)) {
      const tail = outcome.tornTail
      const quarantined = await quarantineTail({
        fs: this.#fs,
        directory: opened.directory,
        id,
        logName: opened.log.name,
        log: handle,
        offset: outcome.goodEndOffset,
        chunkBytes: this.#limits.readChunkBytes,
        keep: this.#limits.maxQuarantineFiles,
      })
      const dropped = stats.size - outcome.goodEndOffset
      repaired.push({
        kind: 'torn-tail',
        description: `Dropped ${dropped} unacknowledged bytes (${tail?.reason ?? 'tailGarbage'}) at the end of ${opened.log.file}, after ${scanned.nextSeq} events; kept in ${id}/${quarantined}.`,
        ...(tail === null ? {} : { location: tornTailInfo(adapter, tail).location }),
        droppedBytes: dropped,
        quarantinedTo: `${id}/${quarantined}`,
      })
    } else {
      // What a crashed writer left in the page cache becomes durable before anything builds on it.
      await handle.datasync()
    }
    const held: Held = {
      id,
      directory: opened.directory,
      path: opened.path,
      adapter,
      handle,
      lock,
      epoch: record.epoch,
      record,
      offset: outcome.goodEndOffset,
      nextSeq: scanned.nextSeq,
      lastCrc: scanned.lastCrc,
      failed,
    }
    this.#lastBatch.delete(id)
    this.#cacheHead(id, await handle.stat(), { nextSeq: scanned.nextSeq, lastCrc: scanned.lastCrc })
    return { held, repaired }
  }

  /**
   * The lease is still this one: `writer.lease` holds its epoch and `writer.lock` its nonce.
   *
   * @throws {@link SessionStoreError} `FENCED`.
   */
  async #assertFence(held: Held): Promise<void> {
    const current = await readLease(this.#fs, held.directory, held.id)
    if (current === null || current.epoch !== held.epoch) {
      throw portError(SessionStoreErrorCode.FENCED, {
        sessionId: held.id,
        message: `The lease of ${held.record.owner} on session ${held.id} was fenced: expected epoch ${held.epoch}, found ${current?.epoch ?? 'none'} (held by ${current?.owner ?? 'nobody'}); nothing was written.`,
        details: { expected: held.epoch, found: current?.epoch ?? null, holder: current?.owner ?? null },
      })
    }
    try {
      await held.lock.assertHeld()
    } catch (error) {
      throw toPortError(error, {
        sessionId: held.id,
        action: `write session ${held.id} (epoch ${held.epoch})`,
      })
    }
  }

  #heldFor(lease: WriterLease): Held {
    const held = this.#held.get(heldKey(lease.sessionId, lease.epoch))
    if (held === undefined) {
      throw portError(SessionStoreErrorCode.FENCED, {
        sessionId: lease.sessionId,
        message: `The lease of ${lease.owner} on session ${lease.sessionId} (epoch ${lease.epoch}) is not held by this JSONL backend instance (released, or granted by another instance); nothing was written.`,
        details: { expected: lease.epoch },
      })
    }
    return held
  }

  async append(lease: WriterLease, batch: AppendBatch): Promise<void> {
    this.#open()
    const id = lease.sessionId
    throwIfAborted(batch.signal, `Appending to session ${id}`, id)
    if (
      !Array.isArray(batch.lines) ||
      batch.lines.length === 0 ||
      batch.lines.some((line) => line.includes('\n'))
    ) {
      throw portError(SessionStoreErrorCode.INVALID_OPTION, {
        sessionId: id,
        message: `Cannot append to session ${id}: expected at least one line and no line containing a newline, found ${Array.isArray(batch.lines) ? `${batch.lines.length} lines` : 'no array'}.`,
        details: { option: 'lines' },
      })
    }
    this.#id(id)
    const held = this.#heldFor(lease)
    await this.#append(held, batch)
  }

  async #append(held: Held, batch: AppendBatch): Promise<void> {
    const { id } = held
    if (held.failed !== null) throw held.failed
    await this.#assertFence(held)
    if (batch.expectedSeq !== held.nextSeq) {
      throw portError(SessionStoreErrorCode.CONFLICT, {
        sessionId: id,
        message: `Cannot append to session ${id}: expected the next seq to be ${batch.expectedSeq}, found ${held.nextSeq}; nothing was written.`,
        details: { expected: batch.expectedSeq, found: held.nextSeq },
      })
    }
    const size = (await held.handle.stat()).size
    if (size !== held.offset) {
      throw portError(SessionStoreErrorCode.CONFLICT, {
        sessionId: id,
        message: `Cannot append to session ${id}: expected ${held.adapter.log.file} to end at byte ${held.offset}, found ${size} bytes (written outside this lease); nothing was written.`,
        details: { expectedSize: held.offset, foundSize: size },
      })
    }
    const action = `append to session ${id}`
    let bytes: Buffer
    try {
      bytes = held.adapter.batch(Buffer.from(batch.lines.map((line) => `${line}\n`).join(''), 'utf8'))
    } catch (error) {
      throw toPortError(error, { sessionId: id, action })
    }
    throwIfAborted(batch.signal, `Appending to session ${id}`, id)
    let poisoned: JsonlStoreError | null = null
    try {
      held.offset = await appendDurably({
        fs: this.#fs,
        handle: held.handle,
        path: held.path,
        file: held.adapter.log.file,
        offset: held.offset,
        bytes,
        count: batch.lines.length,
        lastSeq: batch.expectedSeq + batch.lines.length - 1,
        lock: { assertHeld: () => this.#assertFence(held) },
        poison: (error) => {
          poisoned = error
          return error
        },
      })
    } catch (error) {
      throw await this.#appendFailure(held, { error, poisoned, end: held.offset + bytes.length })
    }
    held.nextSeq += batch.lines.length
    held.lastCrc = batch.lastCrc
    this.#lastBatch.set(id, { batchId: batch.batchId, nextSeq: held.nextSeq, epoch: held.epoch })
    this.#heads.delete(id)
  }

  /** A failed append: rolled back (retryable), fenced after the write (withdrawn when still ours), or fatal for this lease. */
  async #appendFailure(
    held: Held,
    failure: { readonly error: unknown; readonly poisoned: JsonlStoreError | null; readonly end: number },
  ): Promise<SessionStoreError> {
    const action = `append to session ${held.id}`
    const mapped = toPortError(failure.error, { sessionId: held.id, action })
    if (failure.poisoned === null) return mapped
    this.#heads.delete(held.id)
    if (mapped.code === SessionStoreErrorCode.FENCED) {
      // Fenced between the write and the ack: withdraw our bytes if nobody wrote after them.
      const size = await held.handle.stat().then(
        (stats) => stats.size,
        () => -1,
      )
      if (size === failure.end) {
        await held.handle
          .truncate(held.offset)
          .then(() => held.handle.datasync())
          .catch(() => undefined)
      }
      held.failed = mapped
      return mapped
    }
    held.failed = portError(SessionStoreErrorCode.BACKEND_FAILED, {
      sessionId: held.id,
      message: `${mapped.message} This lease can no longer append (the next acquire repairs the log); acquire again.`,
      details: { ...mapped.details, poisoned: true },
      cause: failure.error,
    })
    return held.failed
  }

  async renew(lease: WriterLease, options: SignalOptions = {}): Promise<WriterLease> {
    this.#open()
    throwIfAborted(options.signal, `Renewing the lease on session ${lease.sessionId}`, lease.sessionId)
    const held = this.#heldFor(lease)
    await this.#assertFence(held)
    const record = { ...held.record, expiresAt: this.#now() + held.record.leaseMs }
    await writeLease(this.#fs, { directory: held.directory, id: held.id, randomHex: this.#randomHex }, record)
    held.record = record
    return { ...lease, expiresAt: new Date(record.expiresAt).toISOString() }
  }

  async release(lease: WriterLease): Promise<void> {
    const key = heldKey(lease.sessionId, lease.epoch)
    const held = this.#held.get(key)
    if (held === undefined) return
    this.#held.delete(key)
    await held.handle.close().catch(() => undefined)
    // The lock's own release claims its token first (a new file); on a full disk that fails, so
    // fall back to removing writer.lock while it still carries our nonce: a release needs no space.
    const released = await held.lock.release().then(
      () => true,
      () => false,
    )
    if (!released && (await this.#lockNonce(held.directory)) === held.lock.nonce) {
      await this.#fs.unlink(join(held.directory, WRITER_LOCK_FILE_NAME)).catch(() => undefined)
    }
  }

  // ------------------------------------------------------------------ reads

  #cacheHead(
    id: string,
    stats: { ino: number; size: number; mtimeMs: number; ctimeMs: number },
    head: { nextSeq: number; lastCrc: string | null },
  ): void {
    this.#heads.set(id, { key: `${stats.ino}:${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}`, ...head })
  }

  async #headOf(
    held: Held | null,
    known: { id: string; directory: string; mtimeMs: number; nextSeq: number; lastCrc: string | null } | null,
  ): Promise<SessionHead> {
    const id = held?.id ?? known!.id
    const directory = held?.directory ?? known!.directory
    const lease = held?.record ?? (await readLease(this.#fs, directory, id))
    const nextSeq = held?.nextSeq ?? known!.nextSeq
    const lastCrc = held === null ? known!.lastCrc : held.lastCrc
    const mtimeMs = held === null ? known!.mtimeMs : (await held.handle.stat()).mtimeMs
    const live =
      lease !== null && lease.expiresAt > this.#now() && (await this.#lockNonce(directory)) === lease.nonce
    const last = this.#lastBatch.get(id)
    return {
      nextSeq,
      lastCrc,
      lastBatchId:
        last !== undefined && last.nextSeq === nextSeq && last.epoch === lease?.epoch ? last.batchId : null,
      epoch: lease?.epoch ?? 0,
      owner: live ? lease.owner : null,
      updatedAt: new Date(mtimeMs).toISOString(),
    }
  }

  /** The nonce in `writer.lock`, or null when there is no readable lock. */
  async #lockNonce(directory: string): Promise<string | null> {
    try {
      const handle = await this.#fs.open(join(directory, WRITER_LOCK_FILE_NAME), 0)
      try {
        const buffer = Buffer.alloc(4096)
        const count = await handle.read(buffer, 0, buffer.length, 0)
        const value = JSON.parse(buffer.toString('utf8', 0, count)) as { nonce?: unknown }
        return typeof value.nonce === 'string' ? value.nonce : null
      } finally {
        await handle.close().catch(() => undefined)
      }
    } catch {
      return null
    }
  }

  async head(id: string, options: SignalOptions = {}): Promise<SessionHead> {
    this.#open()
    const checked = this.#id(id)
    throwIfAborted(options.signal, `Reading the head of session ${checked}`, checked)
    const opened = await openLog({ fs: this.#fs, root: this.root, limits: this.#limits }, checked)
    try {
      const stats = await opened.handle.stat()
      const key = `${stats.ino}:${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}`
      let cached = this.#heads.get(checked)
      if (cached?.key !== key) {
        const adapter = await logAdapter(checked, opened.log.encoding, this.#limits)
        const scanned = await scanHead(adapter, opened.handle)
        this.#cacheHead(checked, stats, scanned)
        cached = this.#heads.get(checked)!
      }
      return await this.#headOf(null, {
        id: checked,
        directory: opened.directory,
        mtimeMs: stats.mtimeMs,
        nextSeq: cached.nextSeq,
        lastCrc: cached.lastCrc,
      })
    } catch (error) {
      throw toPortError(error, { sessionId: checked, action: `read the head of session ${checked}` })
    } finally {
      await opened.handle.close().catch(() => undefined)
    }
  }

  async readHeader(id: string, options: SignalOptions = {}): Promise<StoredHeader> {
    this.#open()
    const checked = this.#id(id)
    throwIfAborted(options.signal, `Reading the header of session ${checked}`, checked)
    const opened = await openLog({ fs: this.#fs, root: this.root, limits: this.#limits }, checked)
    try {
      const adapter = await logAdapter(checked, opened.log.encoding, this.#limits)
      const { line, location } = await readHeaderLine(adapter, opened.handle, checked)
      return { line, location }
    } catch (error) {
      throw toPortError(error, { sessionId: checked, action: `read the header of session ${checked}` })
    } finally {
      await opened.handle.close().catch(() => undefined)
    }
  }

  async *read(id: string, options: ReadOptions): AsyncGenerator<StoredLine, void, undefined> {
    this.#open()
    const checked = this.#id(id)
    const fromSeq = seqOption(options.fromSeq, 'fromSeq')
    const toSeq = options.toSeq === undefined ? undefined : seqOption(options.toSeq, 'toSeq')
    const opened = await openLog({ fs: this.#fs, root: this.root, limits: this.#limits }, checked)
    try {
      const adapter = await logAdapter(checked, opened.log.encoding, this.#limits).catch((error: unknown) => {
        throw toPortError(error, { sessionId: checked, action: `read session ${checked}` })
      })
      yield* readLines(adapter, opened.handle, {
        sessionId: checked,
        fromSeq,
        toSeq,
        signal: options.signal,
        onTornTail: options.onTornTail,
      })
    } finally {
      await opened.handle.close().catch(() => undefined)
    }
  }

  list(query: ListQuery): Promise<ListPage> {
    this.#open()
    return listSessions({ fs: this.#fs, root: this.root, limits: this.#limits }, query)
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    // Leases are not released (the port's rule): their locks stay until released, expired or
    // their process is gone; only the open logs are closed, so no append can follow.
    for (const held of this.#held.values()) {
      held.failed = portError(SessionStoreErrorCode.BACKEND_CLOSED, {
        sessionId: held.id,
        message: `The JSONL backend over ${this.root} was closed: expected an open backend, found it closed.`,
      })
      await held.handle.close().catch(() => undefined)
    }
  }
}

function seqOption(value: unknown, option: string): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value
  throw portError(SessionStoreErrorCode.INVALID_OPTION, {
    message: `Read option ${option} must be a non-negative integer, found ${JSON.stringify(value) ?? String(value)}.`,
    details: { option },
  })
}

/**
 * Creates the JSONL backend over a store root.
 *
 * @param options - The root, the encoding of new sessions, and optional seams and limits.
 * @returns The backend; pass it to `createSessionStore({ backend })`.
 * @throws {@link SessionStoreError} `INVALID_OPTION` (a relative root, an unknown encoding, bad limits).
 */
export function createJsonlBackend(options: JsonlBackendOptions): JsonlBackend {
  return new JsonlBackendImpl(options)
}
