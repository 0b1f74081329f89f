/**
 * `createJsonlBackend`: the JSONL store as the `@agent-ledger/session-store` backend port's
 * file implementation, built from the store's own parts: create is `publishFile` (temp,
 * fsync, read back and verify, `link()`, directory fsync; `create.ts`); the lease is the writer lock plus
 * a durable epoch (`lease-file.ts`); acquire repairs a torn tail with `quarantineTail`;
 * append is `appendDurably` (one write, one fdatasync, rollback); reads are the streaming
 * scanner in lines mode; plain or zstd is chosen once, by a `LogAdapter`.
 */
import { join } from 'node:path'

import { coreEventRegistry } from '@agent-ledger/session-events'
import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type {
  AcquireOptions,
  AcquireResult,
  AppendBatch,
  BackendCapabilities,
  CreateRequest,
  FollowCapability,
  ListPage,
  ListQuery,
  MigrateCapability,
  QuarantineCapability,
  ReadOptions,
  SessionBackend,
  SessionHead,
  SignalOptions,
  StoredHeader,
  StoredLine,
  WriterLease,
} from '@agent-ledger/session-store'

import { nodeFsOps } from '../fs-ops.ts'
import type { FsOps } from '../fs-ops.ts'
import { nativeCrc32c } from '../line-codec.ts'
import { resolveLimits } from '../limits.ts'
import type { StoreLimits } from '../limits.ts'
import { removeStaleTemps } from '../publish.ts'
import { defaultRandomHex } from '../temp-file.ts'
import { WRITER_LOCK_FILE_NAME } from '../writer-lock.ts'
import type { LockOptions } from '../writer-lock.ts'
import type { LogEncoding } from '../zstd-log-writer.ts'
import { batchBytes, countNewlines } from './batch-bytes.ts'
import { appendToHeld, assertFence, lockNonce, recoverLog, takeLock } from './held-lease.ts'
import type { Held, LeaseContext } from './held-lease.ts'
import { checkedOptions } from './backend-options.ts'
import type { JsonlBackendOptions } from './backend-options.ts'
import { readSeekPoint } from './checkpoint-envelope.ts'
import { checkpointCapability, seekTrack, trackBatch } from './checkpoints.ts'
import type { SeekTrack } from './checkpoints.ts'
import { createSession } from './create.ts'
import type { CreateContext } from './create.ts'
import { deleteCapability } from './delete.ts'
import type { JsonlDeleteCapability } from './delete.ts'
import { filesCapability } from './files.ts'
import type { JsonlFilesCapability } from './files.ts'
import { maintenanceCapabilities } from './maintenance.ts'
import type { JsonlCompressCapability } from './maintenance.ts'
import { processWarnings } from './session-access.ts'
import { isOlderGeneration, olderHead, readOlderHeader, readOlderLines } from './older-read.ts'
import type { OlderReadContext } from './older-read.ts'
import { waitForAppend } from './follow.ts'
import { openOwnLease, readLease, writeLease } from './lease-file.ts'
import type { LeaseRecord } from './lease-file.ts'
import { readHeaderLine, readLines, scanHead } from './line-scan.ts'
import type { PublishedHead } from './published-head.ts'
import { listSessions } from './list.ts'
import { searchCapability } from './search-index.ts'
import { checkGenerations, openLog } from './open-log.ts'
import {
  checkedSessionId,
  JSONL_DAMAGE_CODES,
  portError,
  seqOption,
  throwIfAborted,
  toPortError,
} from './port-errors.ts'
import { sessionDirectory } from './session-dirs.ts'

/** The JSONL backend: a {@link SessionBackend} over a directory of sessions. */
export interface JsonlBackend extends SessionBackend {
  readonly root: string
  /** The encoding of new sessions. */
  readonly encoding: LogEncoding
  /** The port's capabilities, plus `files`: read-only views of session directories (see {@link JsonlFilesCapability}). */
  readonly capabilities: JsonlCapabilities
}

/** What a {@link JsonlBackend} always offers: the port's `follow`, `compress`, `migrate`, `quarantine`, `delete`, and `files`. */
export interface JsonlCapabilities extends BackendCapabilities {
  readonly follow: FollowCapability
  readonly delete: JsonlDeleteCapability
  readonly compress: JsonlCompressCapability
  readonly migrate: MigrateCapability
  readonly quarantine: QuarantineCapability
  readonly files: JsonlFilesCapability
}

interface CachedHead {
  readonly key: string
  readonly nextSeq: number
  readonly lastCrc: string | null
}

function heldKey(id: string, epoch: number): string {
  return `${id}\u0000${epoch}`
}

class JsonlBackendImpl implements JsonlBackend {
  readonly name = 'jsonl'
  /** `.zstd` frame damage: recorded by a scan like `CORRUPT_LINE`, with its own code kept. */
  readonly damageCodes = JSONL_DAMAGE_CODES
  /** The native CRC-32C, offered to the core for every line it encodes and checks. */
  readonly crc32c = nativeCrc32c
  readonly root: string
  readonly encoding: LogEncoding
  readonly capabilities: JsonlCapabilities
  readonly #fs: FsOps
  readonly #limits: StoreLimits
  readonly #lock: Partial<LockOptions> & { readonly randomHex: (byteCount: number) => string }
  readonly #now: () => number
  readonly #held = new Map<string, Held>()
  /** Per held lease: where its recent batches start (the seek points of its checkpoints). */
  readonly #seeks = new Map<string, SeekTrack>()
  readonly #heads = new Map<string, CachedHead>()
  /** Heads of plain logs this instance published, for the first lease after the create. */
  readonly #published = new Map<string, PublishedHead>()
  readonly #lastBatch = new Map<string, { batchId: string; nextSeq: number; epoch: number }>()
  readonly #leaseContext: LeaseContext
  readonly #createContext: CreateContext
  readonly #older: OlderReadContext
  #closed = false

  constructor(options: JsonlBackendOptions) {
    const { encoding, writeOpenCheck, followPollMs } = checkedOptions(options)
    this.root = options.root
    this.encoding = encoding
    this.#fs = options.fs ?? nodeFsOps
    try {
      this.#limits = resolveLimits(options.limits)
    } catch (error) {
      throw toPortError(error, { action: 'create the JSONL backend' })
    }
    this.#lock = { ...options.lock, timeoutMs: 0, randomHex: options.lock?.randomHex ?? defaultRandomHex }
    this.#now = options.now ?? Date.now
    this.#leaseContext = { fs: this.#fs, limits: this.#limits, lock: this.#lock, writeOpenCheck }
    this.#createContext = {
      ...this.#leaseContext,
      root: this.root,
      encoding,
      randomHex: this.#lock.randomHex,
      published: this.#published,
    }
    const context = { fs: this.#fs, root: this.root, limits: this.#limits }
    this.#older = { ...context, registry: options.registry ?? coreEventRegistry }
    this.capabilities = {
      follow: {
        waitForAppend: (id, waitOptions) =>
          waitForAppend(
            {
              head: (sessionId, signalOptions) => this.head(sessionId, signalOptions),
              directory: (sessionId) => join(this.root, checkedSessionId(sessionId)),
              pollMs: followPollMs,
            },
            id,
            waitOptions,
          ),
      },
      checkpoints: checkpointCapability({
        fs: this.#fs,
        root: this.root,
        randomHex: this.#lock.randomHex,
        assertOpen: () => this.#open(),
        fenced: async (lease) => {
          const held = this.#heldFor(lease)
          await assertFence(this.#leaseContext, held)
          const track = this.#seeks.get(heldKey(held.id, held.epoch)) ?? { plainEnd: 0, batches: [] }
          return { directory: held.directory, log: held.adapter.log.name, track, nextSeq: held.nextSeq }
        },
      }),
      ...maintenanceCapabilities({
        ...context,
        lock: this.#lock,
        registry: this.#older.registry,
        assertOpen: () => this.#open(),
      }),
      files: filesCapability({ ...this.#older, logger: processWarnings }, () => this.#open()),
      search: searchCapability({
        ...context,
        randomHex: this.#lock.randomHex,
        now: this.#now,
        assertOpen: () => this.#open(),
        read: (id, readOptions) => this.read(id, readOptions),
        readHeader: (id) => this.readHeader(id),
      }),
      delete: deleteCapability({
        fs: this.#fs,
        root: this.root,
        leaseContext: this.#leaseContext,
        now: this.#now,
        assertOpen: () => this.#open(),
        forget: (id) => {
          this.#heads.delete(id)
          this.#published.delete(id)
          this.#lastBatch.delete(id)
        },
      }),
    }
  }

  #open(): void {
    if (this.#closed) throw this.#closedError()
  }

  #closedError(sessionId?: string): SessionStoreError {
    return portError(SessionStoreErrorCode.BACKEND_CLOSED, {
      sessionId,
      message: `The JSONL backend over ${this.root} was closed: expected an open backend, found it closed.`,
    })
  }

  // ------------------------------------------------------------------ create

  async create(request: CreateRequest): Promise<void> {
    this.#open()
    await createSession(this.#createContext, checkedSessionId(request.id), request)
  }

  // ------------------------------------------------------------------ leases

  async acquire(id: string, options: AcquireOptions): Promise<AcquireResult> {
    this.#open()
    const checked = checkedSessionId(id)
    throwIfAborted(options.signal, `Acquiring session ${checked}`, checked)
    if (!Number.isSafeInteger(options.leaseMs) || options.leaseMs <= 0) {
      throw portError(SessionStoreErrorCode.INVALID_OPTION, {
        sessionId: checked,
        message: `Lease length must be a positive integer of milliseconds, found ${String(options.leaseMs)}.`,
        details: { option: 'leaseMs' },
      })
    }
    const directory = await sessionDirectory(this.#fs, this.root, checked)
    // Refusals that need no lock come before it: a refused open writes nothing (no lease, no lock).
    // A session whose only log is an older generation is migrated first (FORMAT.md 14.3), then
    // checked again: one listing of the directory on every other write open.
    const { migrated } = await checkGenerations(this.#older, checked, directory).catch(
      async (error: unknown) => {
        if (
          !SessionStoreError.is(error, SessionStoreErrorCode.UNSUPPORTED) ||
          error.details['capability'] !== 'migrate'
        )
          throw error
        await this.capabilities.migrate.migrate(checked, { signal: options.signal })
        return checkGenerations(this.#older, checked, directory)
      },
    )
    if (migrated) {
      // I7 in full (sizes and sha256 of the source) before the lock; sizes again under it.
      const probe = await openLog({ ...this.#older, forkCheck: 'sha256' }, checked, 'read')
      await probe.handle.close().catch(() => undefined)
    }
    const before = await readLease(this.#fs, directory, checked)
    const now = this.#now()
    const lock = await takeLock(this.#leaseContext, checked, { directory, before, now, options })
    let opened: Awaited<ReturnType<typeof openLog>> | undefined
    let recovered: Held | undefined
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
      await writeLease(this.#fs, { directory, id: checked, randomHex: this.#lock.randomHex }, record)
      await removeStaleTemps(this.#fs, directory)
      opened = await openLog(this.#older, checked, 'write')
      const published = this.#published.get(checked)
      this.#published.delete(checked)
      const held = await recoverLog(this.#leaseContext, checked, {
        opened,
        lock,
        record,
        published: prior === null ? published : undefined,
      })
      recovered = held.held
      this.#held.set(heldKey(checked, record.epoch), held.held)
      this.#seeks.set(heldKey(checked, record.epoch), seekTrack(held.held))
      this.#lastBatch.delete(checked)
      this.#heads.delete(checked)
      const lease: WriterLease = {
        sessionId: checked,
        owner: options.owner,
        epoch: record.epoch,
        expiresAt: new Date(record.expiresAt).toISOString(),
        token: lock.nonce,
      }
      const head = await this.#headOf(held.held, null)
      return { lease, head, repaired: held.repaired, headScan: held.headScan }
    } catch (error) {
      await opened?.handle.close().catch(() => undefined)
      await recovered?.leaseFile?.handle.close().catch(() => undefined)
      await lock.release().catch(() => undefined)
      throw toPortError(error, { sessionId: checked, action: `acquire session ${checked}` })
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
    const lines: readonly unknown[] = batch.lines
    const bytes =
      Array.isArray(lines) && lines.length > 0 && lines.every((line) => typeof line === 'string')
        ? batchBytes(lines, batch.bytes)
        : null
    if (bytes === null || countNewlines(bytes) !== lines.length) {
      throw portError(SessionStoreErrorCode.INVALID_OPTION, {
        sessionId: id,
        message: `Cannot append to session ${id}: expected at least one line and no line containing a newline, found ${Array.isArray(batch.lines) ? `${batch.lines.length} lines` : 'no array'}.`,
        details: { option: 'lines' },
      })
    }
    checkedSessionId(id)
    const held = this.#heldFor(lease)
    const offset = held.offset
    try {
      await appendToHeld(this.#leaseContext, held, { batch, bytes })
    } finally {
      this.#heads.delete(id)
    }
    trackBatch(this.#seeks.get(heldKey(id, lease.epoch)), { held, offset, batch })
    this.#lastBatch.set(id, { batchId: batch.batchId, nextSeq: held.nextSeq, epoch: held.epoch })
  }

  async renew(lease: WriterLease, options: SignalOptions = {}): Promise<WriterLease> {
    this.#open()
    throwIfAborted(options.signal, `Renewing the lease on session ${lease.sessionId}`, lease.sessionId)
    const held = this.#heldFor(lease)
    await assertFence(this.#leaseContext, held)
    const record = { ...held.record, expiresAt: this.#now() + held.record.leaseMs }
    await writeLease(
      this.#fs,
      { directory: held.directory, id: held.id, randomHex: this.#lock.randomHex },
      record,
    )
    held.record = record
    // The renewed record is a new file: hold it open for the fast fence check instead.
    const previous = held.leaseFile
    held.leaseFile = await openOwnLease(this.#fs, { directory: held.directory, id: held.id }, record)
    await previous?.handle.close().catch(() => undefined)
    return { ...lease, expiresAt: new Date(record.expiresAt).toISOString() }
  }

  async release(lease: WriterLease): Promise<void> {
    const key = heldKey(lease.sessionId, lease.epoch)
    const held = this.#held.get(key)
    if (held === undefined) return
    this.#held.delete(key)
    this.#seeks.delete(key)
    await held.handle.close().catch(() => undefined)
    await held.leaseFile?.handle.close().catch(() => undefined)
    // The lock's own release claims its token first (a new file); when no file can be made at
    // all, fall back to removing writer.lock while it still carries our nonce: a release needs no space.
    const released = await held.lock.release().then(
      () => true,
      () => false,
    )
    if (released) return
    if ((await lockNonce(this.#fs, held.directory)) === held.lock.nonce) {
      await this.#fs.unlink(join(held.directory, WRITER_LOCK_FILE_NAME)).catch(() => undefined)
    }
    // The lease is no longer in #held, so nothing retries the lock's release: close its file.
    await held.lock.forget()
  }

  // ------------------------------------------------------------------ reads

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
      lease !== null &&
      lease.expiresAt > this.#now() &&
      (await lockNonce(this.#fs, directory)) === lease.nonce
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

  async head(id: string, options: SignalOptions = {}): Promise<SessionHead> {
    this.#open()
    const checked = checkedSessionId(id)
    throwIfAborted(options.signal, `Reading the head of session ${checked}`, checked)
    const opened = await this.#openForRead(checked)
    if (opened === null) {
      // An older generation: its migrated head (read only, nothing written).
      const directory = await sessionDirectory(this.#fs, this.root, checked)
      const head = await olderHead(this.#older, checked)
      const mtimeMs = (await this.#fs.lstat(directory)).mtimeMs
      return await this.#headOf(null, { id: checked, directory, mtimeMs, ...head })
    }
    try {
      const stats = await opened.handle.stat()
      const key = `${stats.ino}:${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}`
      let cached = this.#heads.get(checked)
      if (cached?.key !== key) {
        cached = { key, ...(await scanHead(opened.adapter, opened.handle)) }
        this.#heads.set(checked, cached)
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
    const checked = checkedSessionId(id)
    throwIfAborted(options.signal, `Reading the header of session ${checked}`, checked)
    const opened = await this.#openForRead(checked)
    if (opened === null) return await readOlderHeader(this.#older, checked)
    try {
      const { line, location } = await readHeaderLine(opened.adapter, opened.handle, checked)
      return { line, location }
    } catch (error) {
      throw toPortError(error, { sessionId: checked, action: `read the header of session ${checked}` })
    } finally {
      await opened.handle.close().catch(() => undefined)
    }
  }

  async *read(id: string, options: ReadOptions): AsyncGenerator<StoredLine, void, undefined> {
    this.#open()
    const checked = checkedSessionId(id)
    const fromSeq = seqOption(options.fromSeq, 'fromSeq')
    const toSeq = options.toSeq === undefined ? undefined : seqOption(options.toSeq, 'toSeq')
    const opened = await this.#openForRead(checked)
    if (opened === null) {
      yield* readOlderLines(this.#older, checked, { ...options, fromSeq, toSeq })
      return
    }
    try {
      yield* readLines(opened.adapter, opened.handle, {
        sessionId: checked,
        fromSeq,
        toSeq,
        signal: options.signal,
        onTornTail: options.onTornTail,
        // A read that does not start at 0 starts at the checkpoint's batch when it can.
        seek: fromSeq === 0 ? null : (await readSeekPoint(this.#fs, opened.directory, opened.log.name)).seek,
        maxDepth: this.#limits.maxDepth,
      })
    } finally {
      await opened.handle.close().catch(() => undefined)
    }
  }

  /**
   * The current v4 log opened for reading, or null when the session has only an older
   * generation (read through migration in memory).
   */
  async #openForRead(id: string): Promise<Awaited<ReturnType<typeof openLog>> | null> {
    try {
      return await openLog(this.#older, id)
    } catch (error) {
      if (isOlderGeneration(error)) return null
      throw error
    }
  }

  list(query: ListQuery): Promise<ListPage> {
    this.#open()
    return listSessions(this.#older, query)
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    // Leases are not released (the port's rule): their locks stay until released, expired or
    // their process is gone. Every descriptor is closed and the heartbeat stops, so no append can follow.
    for (const held of this.#held.values()) {
      held.failed = this.#closedError(held.id)
      await held.handle.close().catch(() => undefined)
      await held.leaseFile?.handle.close().catch(() => undefined)
      await held.lock.forget()
    }
  }
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

/**
 * The JSONL backend under a store, or null when the store is over another backend: how a tool
 * reaches the file views (`files`) of a session it opened with `createJsonlStore`.
 *
 * @param backend - A store's `backend`.
 * @returns The JSONL backend, or null.
 */
export function asJsonlBackend(backend: SessionBackend): JsonlBackend | null {
  return backend instanceof JsonlBackendImpl ? backend : null
}
