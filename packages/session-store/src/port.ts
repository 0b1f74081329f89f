/**
 * The backend port: the small interface the session core drives. A backend only stores
 * and fences; every rule (validation, seq checks, repair, fork planning, salvage) lives in
 * the core, once.
 *
 * **Lines are exact text.** Every stored item is one v4 line as a string without its
 * `\n`, checksum suffix included (`...,"crc":"xxxxxxxx"}`). A backend stores and returns
 * that text byte for byte (no re-serialization, no `jsonb`, no key reordering, `\u0000`
 * escapes kept as written), so a session moved between backends keeps identical bytes.
 * The core encodes and checks lines; a backend never needs to parse one (it may, e.g. to
 * find a torn tail).
 *
 * **Errors.** A backend throws only {@link SessionStoreError}: with one of the codes marked
 * *backend* in {@link SessionStoreErrorCode} where the port has a word for the failure
 * (`SESSION_EXISTS`, `SESSION_NOT_FOUND`, `SESSION_LOCKED`, `FENCED`, `CONFLICT`,
 * `UNKNOWN_OUTCOME`, `DISK_FULL`, `CORRUPT_LINE`, `LINE_TOO_LARGE`, `ABORTED`,
 * `BACKEND_CLOSED`, `UNSUPPORTED`, `INVALID_OPTION`, `INVALID_SESSION_ID`), else with its own
 * code ({@link BackendErrorCodeMap}: `SYMLINK_REFUSED`, `ACCESS_DENIED`...), else
 * `BACKEND_FAILED`. The core acts on the port codes and rethrows every backend error as it
 * is; anything else a backend lets escape is wrapped as `BACKEND_FAILED` with `cause`.
 * Messages name the session, what was expected and what was found.
 *
 * **Session ids.** A backend refuses an id that breaks `SESSION_ID_PATTERN` (the one rule,
 * Windows device names included) with `INVALID_SESSION_ID`, like the core.
 *
 * **Seqs.** Event seqs are dense from 0. The header is not an event and has no seq. A
 * session's *head* is the seq the next event gets (`nextSeq`, 0 for a session holding
 * only its header).
 *
 * **Conformance.** `@agent-ledger/session-store/conformance` runs the contract below
 * against a backend factory; a backend is done when it passes.
 *
 * @packageDocumentation
 */
import type { SessionHeader } from '@agent-ledger/session-events'

import type { Crc32c } from './crc32c.ts'
import type { LineLocation } from './session-store-error.ts'

export type { LineLocation } from './session-store-error.ts'

/**
 * The part of an `AbortSignal` the port uses (a real `AbortSignal` fits; declared here so
 * the pure core needs no DOM or Node typings).
 */
export interface AbortSignalLike {
  readonly aborted: boolean
  readonly reason?: unknown
  addEventListener(type: 'abort', listener: () => void, options?: { readonly once?: boolean }): void
  removeEventListener(type: 'abort', listener: () => void): void
}

/** Options every long backend operation takes. */
export interface SignalOptions {
  /**
   * Stops the operation: the backend throws `ABORTED` (its `cause` the signal's reason) and
   * publishes nothing of a create, fork or append that had not committed when it noticed.
   */
  readonly signal?: AbortSignalLike | undefined
}

/**
 * A seed's lines: an array held in memory, or a stream of line batches (an import, a copy,
 * a long fork) that the backend writes where no reader sees it and publishes at its end.
 * Batches come in seq order; an empty batch is allowed and skipped.
 */
export type SeedLines = readonly string[] | AsyncIterable<readonly string[]>

/** What {@link SessionBackend.create} publishes, atomically. */
export interface CreateRequest extends SignalOptions {
  /** The session id (already checked against `SESSION_ID_PATTERN` by the core). */
  readonly id: string
  /** The exact header line (v4, checksummed, no `\n`). */
  readonly headerLine: string
  /**
   * The header as parsed from `headerLine`, for the backend's own index columns
   * (`cwd`, `parentSession`, `createdAt`, `metadata`); the line stays the source of truth.
   */
  readonly header: SessionHeader
  /**
   * Seed event lines with seqs 0..n-1, in order (empty for a fresh session): an array, or a
   * stream of batches ({@link SeedLines}). A streamed seed is consumed once, batch by batch;
   * the signal is checked between batches; an error the stream throws passes through
   * unchanged and nothing is published.
   */
  readonly lines: SeedLines
  /**
   * Checksum (8 hex digits) of the last seed line, or null when there is none: the head's
   * `lastCrc`. Required with an array seed. With a streamed seed it is not known before the
   * end: leave it undefined and the backend takes the checksum of the last line it received
   * (`lineCrc`); a value given is checked against that line.
   */
  readonly lastCrc?: string | null | undefined
}

/** A create request whose seed is an array (what {@link ForkCapability.fork} takes for the child). */
export interface ArrayCreateRequest extends CreateRequest {
  readonly lines: readonly string[]
  readonly lastCrc: string | null
}

/**
 * A writer's lease: proof that `owner` may append to `sessionId` while `epoch` is the
 * session's current epoch. Plain data; the core keeps it and passes it back.
 */
export interface WriterLease {
  readonly sessionId: string
  /** Who holds it (a process or host name chosen by the caller); shown in `SESSION_LOCKED`. */
  readonly owner: string
  /**
   * The fencing token: strictly greater than every epoch handed out before for this session
   * (including leases that were released). Every `append`, `renew` and checkpoint write
   * checks it; a lower one is `FENCED`.
   */
  readonly epoch: number
  /** When the lease expires unless renewed (ISO-8601), by the backend's clock. */
  readonly expiresAt: string
  /** Backend-private proof of the lease (a lock-file nonce...), or undefined. The core never reads it. */
  readonly token?: string | undefined
}

/** The durable head of a session: what a resolved append, create or fork left behind. */
export interface SessionHead {
  /** The seq the next appended event gets (the number of durable events). */
  readonly nextSeq: number
  /** Checksum (8 lowercase hex digits) of event `nextSeq - 1`, or null when there is none. */
  readonly lastCrc: string | null
  /** The `batchId` of the last committed append, or null when none (create and fork set null). */
  readonly lastBatchId: string | null
  /** The session's current epoch (0 before the first acquire). */
  readonly epoch: number
  /** The live lease's owner, or null when no live lease is held. */
  readonly owner: string | null
  /** When the session last changed (ISO-8601), by the backend's clock. */
  readonly updatedAt: string
}

/** Options of {@link SessionBackend.acquire}. */
export interface AcquireOptions extends SignalOptions {
  /** Who asks; a lease held by the same owner is taken over (a restarted process). */
  readonly owner: string
  /** How long the lease lives without a renew, in milliseconds (a positive integer). */
  readonly leaseMs: number
  /**
   * Take the lease even when another owner's lease is live (the operator's "I know it is
   * dead"). The old holder is fenced: its next append fails with `FENCED`.
   */
  readonly takeover?: boolean | undefined
}

/** Something the backend repaired while acquiring (e.g. a file backend's torn tail). */
export interface AcquireRepair {
  /** What was repaired: `torn-tail` (unacknowledged bytes dropped), or a backend-specific kind. */
  readonly kind: 'torn-tail' | (string & {})
  /** A sentence for humans: what was found and what was done. */
  readonly description: string
  /** Where the dropped bytes started. */
  readonly location?: LineLocation | undefined
  /** How many bytes were dropped from the log. */
  readonly droppedBytes?: number | undefined
  /** Where the dropped bytes were kept (a quarantine file name), when they were. */
  readonly quarantinedTo?: string | undefined
}

/**
 * Where a backend that reads its log back on the write open (a file backend finding its
 * durable head and torn tail) started checking lines. Every line from `fromSeq` on was read
 * and checked; the lines before it were trusted (a stored checkpoint's binding matched).
 */
export interface HeadScan {
  /**
   * `start`: from the log's first line (every line checked); `checkpoint`: from the line the
   * stored checkpoint's seek point names, after its seq and checksum matched; `published`:
   * nothing read (the head this backend instance published on create, the log unchanged since).
   */
  readonly from: 'start' | 'checkpoint' | 'published'
  /** Seq of the first event line checked (0 from the start; the head's `nextSeq` when nothing was read). */
  readonly fromSeq: number
  /**
   * Why a scan from the start, when a checkpoint could have been used: `checkpoint-absent`
   * (no checkpoint file), `checkpoint-unreadable` (a file that is not one readable checkpoint),
   * `no-seek-point` (a checkpoint without a seek point into this log), `binding-mismatch` (the
   * line at the seek point is not the one the checkpoint names: the log was cut or rewritten
   * below it). Absent when the scan was asked to check every line, or did not start there.
   */
  readonly fallback?:
    'checkpoint-absent' | 'checkpoint-unreadable' | 'no-seek-point' | 'binding-mismatch' | undefined
}

/** What {@link SessionBackend.acquire} returns. */
export interface AcquireResult {
  readonly lease: WriterLease
  /** The durable head after any repair; the writer's first append goes at `head.nextSeq`. */
  readonly head: SessionHead
  /** What the backend repaired before granting the lease (empty when nothing). */
  readonly repaired: readonly AcquireRepair[]
  /** Where the backend's check of the log's lines started (absent: a backend that reads no lines back). */
  readonly headScan?: HeadScan | undefined
}

/** One flush: what {@link SessionBackend.append} writes. */
export interface AppendBatch extends SignalOptions {
  /** The seq of `lines[0]`; the session's head must equal it, or the append is `CONFLICT`. */
  readonly expectedSeq: number
  /** Event lines with seqs `expectedSeq`, `expectedSeq + 1`, ...; at least one. */
  readonly lines: readonly string[]
  /**
   * The UTF-8 bytes of `lines`, each followed by `\n`, exactly, when the caller has them (the
   * core's writer encodes each line once, for its checksum): a backend that stores bytes may
   * write these instead of encoding the lines again. Valid until the append settles: the
   * backend must not keep them. Absent: encode `lines`.
   */
  readonly bytes?: Uint8Array | undefined
  /** Checksum of the last line: the new head's `lastCrc`. */
  readonly lastCrc: string
  /**
   * Unique id of this flush (`<owner>:<epoch>:<counter>`): stored as the head's
   * `lastBatchId` in the same commit, so an `UNKNOWN_OUTCOME` can be resolved by `head()`.
   */
  readonly batchId: string
}

/** A stored line, as {@link SessionBackend.read} yields it. */
export interface StoredLine {
  /** The position the backend stored the line at (the core checks it against the line's own `seq`). */
  readonly seq: number
  /** The exact line text, without `\n`. */
  readonly line: string
  /** Where it is stored, when the backend knows (used in error messages). */
  readonly location?: LineLocation | undefined
  /**
   * The line already decoded and checked by the backend, when it did (a file backend has
   * to, to tell a torn tail from damage): the parsed JSON object with its `crc` member
   * removed, after the line's checksum passed and its nesting was found within `maxDepth`.
   * The core then makes only the checks the backend cannot (length against its own limit,
   * seq, type, payload) instead of parsing the line a second time; a backend that does not
   * parse lines leaves it undefined and the core runs every check. A `maxDepth` above the
   * core's own limit makes the core decode the line itself.
   */
  readonly checked?: CheckedLine | undefined
}

/** What a backend found when it decoded a line itself (see {@link StoredLine.checked}). */
export interface CheckedLine {
  /** The line's JSON object without its `crc` member (the core takes ownership). */
  readonly value: Record<string, unknown>
  /** The depth limit the backend checked the line against. */
  readonly maxDepth: number
}

/** The stored header line. */
export interface StoredHeader {
  readonly line: string
  readonly location?: LineLocation | undefined
}

/**
 * Bytes at the end of a log that were never acknowledged, seen by a read: a crash mid-write
 * (`unterminated`, `tailGarbage`), or a batch a fenced writer appended with a stale view of the
 * end (`fenced-writer`: its first line repeats an earlier seq; no later line was acknowledged).
 */
export interface TornTailInfo {
  readonly reason: 'unterminated' | 'tailGarbage' | 'fenced-writer' | (string & {})
  readonly bytes: number
  readonly location?: LineLocation | undefined
}

/** Options of {@link SessionBackend.read}. */
export interface ReadOptions extends SignalOptions {
  /** First seq to yield (a non-negative integer; the core validates it before calling). */
  readonly fromSeq: number
  /** Last seq to yield, inclusive; absent: up to the durable head. */
  readonly toSeq?: number | undefined
  /**
   * Called at most once, when the read ends at unacknowledged bytes (a file backend's torn
   * tail, or a live writer's line in progress). A read-only call: nothing is repaired.
   */
  readonly onTornTail?: ((tail: TornTailInfo) => void) | undefined
}

/** Filters of {@link SessionBackend.list}; every given one must match. */
export interface ListFilter {
  /** Only sessions whose header `cwd` equals this. */
  readonly cwd?: string | undefined
  /** Only sessions forked from this session id. */
  readonly parentSession?: string | undefined
  /** Only sessions updated at or after this time (ISO-8601). */
  readonly updatedSince?: string | undefined
}

/** Options of {@link SessionBackend.list}. */
export interface ListQuery extends SignalOptions {
  /** The `cursor` of the previous page; absent for the first page. Opaque. */
  readonly cursor?: string | undefined
  /** Most entries in the page (a positive integer); the backend may return fewer. */
  readonly limit: number
  readonly filter?: ListFilter | undefined
}

/**
 * One session in a listing. Either `headerLine` is set, or `problem` says why the session
 * could not be summarized (a damaged header, an unreadable directory): one bad session
 * never fails a listing.
 */
export interface ListEntry {
  readonly id: string
  readonly headerLine?: string | undefined
  /** Durable event count, when the backend knows it cheaply. */
  readonly nextSeq?: number | undefined
  readonly updatedAt?: string | undefined
  readonly location?: LineLocation | undefined
  readonly problem?: SessionStoreErrorLike | undefined
}

/** A structural view of a {@link SessionStoreError} (so the port file imports types only). */
export interface SessionStoreErrorLike {
  readonly code: string
  readonly message: string
}

/** A page of {@link SessionBackend.list}. */
export interface ListPage {
  /**
   * Sessions in a stable order: most recently updated first, then by id (keyset
   * pagination: a session updated between pages may appear twice or move; none is skipped
   * that was unchanged).
   */
  readonly entries: readonly ListEntry[]
  /** Pass it back for the next page; null when this was the last page. */
  readonly cursor: string | null
}

/** Live-tail support: wake a follower when a session's head moves. */
export interface FollowCapability {
  /**
   * Resolves once the session's head may have moved past `nextSeq` (spurious wake-ups are
   * allowed: the core reads `head` again), or when `signal` aborts (then rejects `ABORTED`).
   * PostgreSQL: `LISTEN`/`NOTIFY`; files: a watcher.
   */
  waitForAppend(id: string, options: { readonly nextSeq: number } & SignalOptions): Promise<void>
}

/** What {@link ForkCapability.fork} publishes, atomically. */
export interface ServerForkRequest extends SignalOptions {
  readonly parentId: string
  /** Copy parent lines `0..boundarySeq` verbatim, server-side. */
  readonly boundarySeq: number
  /** Checksum of the parent's line `boundarySeq` as the core read it; a different one is `CONFLICT`. */
  readonly boundaryCrc: string
  /** The child: its id, header, and the lines that follow the copied prefix (closers, `session/end-seed`), seqs from `boundarySeq + 1`. */
  readonly child: ArrayCreateRequest
}

/** Server-side fork: the prefix is copied without travelling through the core. */
export interface ForkCapability {
  /** Publishes the child atomically (`SESSION_EXISTS`, `SESSION_NOT_FOUND` for the parent, `CONFLICT`). */
  fork(request: ServerForkRequest): Promise<void>
}

/** A projection checkpoint, bound to the log by `(seq, eventCrc)` (FORMAT.md section 15.2). */
export interface CheckpointRecord {
  /** The last event the snapshot covers. */
  readonly seq: number
  /** Checksum of event `seq`'s line: a checkpoint whose event no longer matches is ignored. */
  readonly eventCrc: string
  /** Checksum of the header line. */
  readonly headerCrc: string
  /** Digest of the registry the projection was built with. */
  readonly registryDigest: string
  /** The encoded snapshot (the backend stores it as opaque bytes). */
  readonly body: Uint8Array
}

/**
 * What {@link CheckpointCapability.getCheckpoint} answers when something is stored under the
 * session's checkpoint that cannot be read as one (a file backend: a symbolic link, a special
 * file, a damaged envelope): the core replays every event and warns `CHECKPOINT_IGNORED`
 * with reason `unreadable` and this text, instead of taking it for no checkpoint at all.
 */
export interface UnreadableCheckpoint {
  /** What was found, in words, naming where (e.g. `s/core.checkpoint: a symbolic link (never followed)`). */
  readonly unreadable: string
}

/** Projection checkpoints: a cache (stale is fine, wrong is never). */
export interface CheckpointCapability {
  /**
   * The stored checkpoint, null when there is none, or {@link UnreadableCheckpoint} when what
   * is stored cannot be read as one. Never throws for a damaged one. A record whose body is
   * damaged is handed over as found: the body's own checksum lets the core tell.
   */
  getCheckpoint(id: string, options?: SignalOptions): Promise<CheckpointRecord | UnreadableCheckpoint | null>
  /** Stores a checkpoint under a live lease (`FENCED` otherwise). Replaces the previous one. */
  putCheckpoint(lease: WriterLease, record: CheckpointRecord, options?: SignalOptions): Promise<void>
}

/** Progress of a long backend-specific operation (compress, migrate). */
export interface BackendProgress {
  readonly phase: string
  readonly done: number
  readonly total?: number | undefined
}

/** Options of the maintenance capabilities. */
export interface MaintenanceOptions extends SignalOptions {
  readonly onProgress?: ((progress: BackendProgress) => void) | undefined
}

/** Compress a cold session's storage (a file backend: zstd frames; a database: sealed segments). */
export interface CompressCapability {
  /** Compresses in place under the writer lease rules (`SESSION_LOCKED` when a writer holds it); lines stay identical. */
  compress(
    id: string,
    options?: MaintenanceOptions,
  ): Promise<{ readonly changed: boolean; readonly details?: Readonly<Record<string, unknown>> }>
}

/** Bring older stored formats to the current one. */
export interface MigrateCapability {
  /** Whether the session is stored in an older format (a v0 `session.jsonl`). */
  needsMigration(id: string, options?: SignalOptions): Promise<boolean>
  /** Migrates, never modifying the old generation; with `dryRun`, writes nothing. */
  migrate(
    id: string,
    options?: MaintenanceOptions & { readonly dryRun?: boolean | undefined },
  ): Promise<{ readonly changed: boolean; readonly details?: Readonly<Record<string, unknown>> }>
}

/** A kept copy of dropped bytes (a torn tail). */
export interface QuarantineRecord {
  readonly name: string
  readonly bytes: number
  readonly createdAt?: string | undefined
}

/** List what repairs set aside. */
export interface QuarantineCapability {
  listQuarantine(id: string, options?: SignalOptions): Promise<readonly QuarantineRecord[]>
}

/** Options of {@link DeleteCapability.delete}. */
export interface DeleteOptions extends SignalOptions {
  /**
   * Delete even while a live writer holds the lease (the operator's "I know it is dead"):
   * that writer's next append or renew fails (`SESSION_NOT_FOUND` or `FENCED`), never lands.
   */
  readonly force?: boolean | undefined
  /**
   * Delete only when the session was last updated at or before this time (ISO-8601; the
   * `updatedAt` a listing showed): a session written since is kept (`outcome: 'kept'`).
   * Checked at the delete's commit point, so a prune never removes a session that came
   * back to life between its listing and its delete.
   */
  readonly unchangedSince?: string | undefined
  /** Check and measure only: report what the delete would do and free; remove nothing. */
  readonly dryRun?: boolean | undefined
}

/** What {@link DeleteCapability.delete} did. */
export interface DeleteResult {
  /**
   * `deleted`: the session was removed (or, with `dryRun`, would be); `missing`: there was
   * no such session (deleting it again is not an error); `kept`: `unchangedSince` was
   * given and the session changed after it (nothing was removed).
   */
  readonly outcome: 'deleted' | 'missing' | 'kept'
  /** Bytes of storage the delete freed (or would free): file sizes; a database's stored line, header and checkpoint bytes. */
  readonly bytes: number
}

/**
 * Removes one session completely: every line, its header, checkpoint, quarantined bytes,
 * lease and lock. Atomic for readers: a session is listed and opened whole or not at all,
 * also across a crash mid-delete (a file backend renames it out of sight first and finishes
 * the removal later). Forks are independent sessions and stay whole.
 */
export interface DeleteCapability {
  /**
   * @throws `SESSION_LOCKED` (`details.holder`, `details.expiresAt`) while a live lease is
   *   held and `force` is not set (nothing removed), `INVALID_SESSION_ID`, `INVALID_OPTION`,
   *   `ABORTED` (nothing removed), `BACKEND_FAILED`.
   */
  delete(id: string, options?: DeleteOptions): Promise<DeleteResult>
  /**
   * Finishes every delete a crash interrupted after its commit point (a session already gone
   * whose storage is not yet freed: a JSONL tombstone). `prune` runs it first (not in a dry
   * run), so a prune after a crash leaves nothing behind even when it deletes nothing.
   *
   * @returns How many interrupted deletes it finished.
   */
  sweep?(options?: SignalOptions): Promise<number>
}

/** What {@link SearchCapability.candidates} is asked for. */
export interface SearchCandidateQuery extends SignalOptions {
  /**
   * Lowercase printable-ASCII fragments: a candidate line contains every one of them as
   * written in its text, compared ASCII case-insensitively (`ILIKE '%fragment%'`), where
   * U+212A KELVIN SIGN also counts as `k` and U+017F LONG S as `s` (the core's `/iu`
   * matcher folds them so). Empty: every event line is a candidate.
   */
  readonly fragments: readonly string[]
  /** The first (session id, seq) to return, inclusive; null: from the start. */
  readonly from: { readonly sessionId: string; readonly seq: number } | null
  /** Only these sessions (checked ids, sorted, unique); null: every session. */
  readonly sessionIds: readonly string[] | null
  /** Most candidates to return (a positive integer); fewer is fine. */
  readonly limit: number
}

/** An event line that may match a search. */
export interface SearchCandidate {
  readonly sessionId: string
  /** The stored line, exact, at its seq (the core decodes and checks it). */
  readonly stored: StoredLine
}

/**
 * Full-text search support: an index that narrows which event lines the core reads. The
 * core runs the one matcher over the candidates (so a query means the same on every
 * backend) and pages the hits; a backend without this capability is searched by the core's
 * streaming scan.
 */
export interface SearchCapability {
  /**
   * Durable event lines from `from` on, ordered by session id (code-unit order, as
   * PostgreSQL's `COLLATE "C"`) then seq, that contain every fragment: a superset of the
   * lines that match (a false positive is dropped by the core; a false negative is a bug).
   *
   * @returns Up to `limit` candidates; `done` when none follow the last one returned.
   * @throws `ABORTED`, `BACKEND_FAILED`.
   */
  candidates(
    query: SearchCandidateQuery,
  ): Promise<{ readonly candidates: readonly SearchCandidate[]; readonly done: boolean }>
}

/** Optional capabilities; the core checks for each and never assumes one. */
export interface BackendCapabilities {
  readonly follow?: FollowCapability | undefined
  readonly fork?: ForkCapability | undefined
  readonly checkpoints?: CheckpointCapability | undefined
  readonly compress?: CompressCapability | undefined
  readonly migrate?: MigrateCapability | undefined
  readonly quarantine?: QuarantineCapability | undefined
  readonly delete?: DeleteCapability | undefined
  readonly search?: SearchCapability | undefined
}

/**
 * A session storage: files, a database, memory. Implement this, pass the conformance
 * suite, and `createSessionStore({ backend })` gives the full store API over it.
 */
export interface SessionBackend {
  /** A short name for messages (`memory`, `jsonl`, `postgres`). */
  readonly name: string
  /** Optional capabilities, discovered by the core. */
  readonly capabilities: BackendCapabilities
  /**
   * Codes of this backend's own ({@link BackendErrorCodeMap}) that mean a stored line is
   * damaged, as `CORRUPT_LINE` does (a `.zstd` frame that will not decode): a scan records
   * them as the session's damage (verify, salvage, `allowDamaged`) instead of failing.
   */
  readonly damageCodes?: readonly string[] | undefined
  /**
   * A faster CRC-32C than the core's pure one, for every line the core encodes and checks
   * (a Node backend offers `@node-rs/crc32`'s native `crc32c`, `>>> 0`). It must return the
   * CRC-32C (Castagnoli) of `bytes` as an unsigned 32-bit integer and keep no reference to
   * `bytes` (the core reuses the buffer). Absent: the core's pure slicing-by-8 one. The pure
   * core does no I/O and loads no native code: the backend, which already runs on Node,
   * brings it.
   */
  readonly crc32c?: Crc32c | undefined

  /**
   * Publishes a new session, header and seed lines, atomically: afterwards `readHeader` and
   * `read` see all of it, or (on any failure, crash or abort) nothing. The head is
   * `{ nextSeq: lines.length, lastCrc, lastBatchId: null, epoch: 0, owner: null }`.
   *
   * A streamed seed ({@link SeedLines}) is written batch by batch where no reader sees it
   * (a file backend: its temp file; a database: its transaction) and published at the end,
   * in the same one step as an array seed. `SESSION_EXISTS` is checked before the first
   * batch is taken and again at the publish; `signal` between batches. On an error of the
   * stream, an abort or a crash midway, nothing is visible and a retry with the same id
   * succeeds.
   *
   * @throws `SESSION_EXISTS` (the existing session untouched), `DISK_FULL`, `ABORTED`, `BACKEND_FAILED`,
   *   `INVALID_OPTION` (a streamed batch that is not an array of strings, a `lastCrc` that
   *   does not match the last streamed line), or the stream's own error unchanged.
   */
  create(request: CreateRequest): Promise<void>

  /**
   * Takes the writer lease: granted when no live lease is held, when the holder is `owner`,
   * when the holder's lease expired, or with `takeover`. Each grant increments the
   * session's epoch, which fences every earlier lease. A file backend repairs here (torn
   * tail quarantined and truncated, durably) and reports it in `repaired`. A session stored
   * only in an older format is first migrated (its `migrate` capability publishes the current
   * format, the older one left as it was); appends go to the current format.
   *
   * @throws `SESSION_NOT_FOUND`, `SESSION_LOCKED` (`details.holder`, `details.expiresAt`), `DISK_FULL`
   *   (a repair that cannot be made durable), `ABORTED`, `BACKEND_FAILED`.
   */
  acquire(id: string, options: AcquireOptions): Promise<AcquireResult>

  /**
   * Appends one batch, all or nothing, at `batch.expectedSeq`, only while `lease.epoch` is
   * the session's epoch; resolves only when the lines are durable (they survive a crash,
   * power loss and a new backend instance over the same storage). On success the head is
   * `{ nextSeq: expectedSeq + lines.length, lastCrc: batch.lastCrc, lastBatchId: batch.batchId }`.
   *
   * @throws `FENCED` (epoch moved; nothing written), `CONFLICT` (head is not `expectedSeq`;
   *   nothing written), `UNKNOWN_OUTCOME` (may or may not have landed), `DISK_FULL` (nothing
   *   written, retryable), `SESSION_NOT_FOUND`, `ABORTED` (nothing written), `BACKEND_FAILED`.
   *   An error (any code) with `details.poisoned: true` says this lease can never append again
   *   (a file replaced under it, a failed fdatasync or rollback): the core fails the writer
   *   (`WRITER_FAILED`); reopen.
   */
  append(lease: WriterLease, batch: AppendBatch): Promise<void>

  /**
   * Extends a live lease by its `leaseMs`; an expired one is extended too if nobody took over.
   *
   * @returns The lease with its new `expiresAt`.
   * @throws `FENCED` when another lease was granted since.
   */
  renew(lease: WriterLease, options?: SignalOptions): Promise<WriterLease>

  /**
   * Gives the lease up. Idempotent: a second call, or a call with a fenced lease, does
   * nothing and does not throw. Must need no free space (a full disk cannot block it).
   */
  release(lease: WriterLease): Promise<void>

  /**
   * The durable head.
   *
   * @throws `SESSION_NOT_FOUND`, `BACKEND_FAILED`.
   */
  head(id: string, options?: SignalOptions): Promise<SessionHead>

  /**
   * The stored header line (a file backend: line 1).
   *
   * @throws `SESSION_NOT_FOUND`, `CORRUPT_LINE` (the bytes are not a whole UTF-8 line), `BACKEND_FAILED`.
   */
  readHeader(id: string, options?: SignalOptions): Promise<StoredHeader>

  /**
   * Yields durable event lines `fromSeq..toSeq` in seq order, streaming (memory stays
   * bounded). Stops at the durable head as of some point during the call. Damage the
   * backend finds itself (bytes that are not a whole UTF-8 line, a frame that will not
   * decode) is thrown as `CORRUPT_LINE`/`LINE_TOO_LARGE` with `location` and `lastGoodSeq`
   * AFTER every good line before it was yielded. Unacknowledged bytes at the end are not
   * damage: the read ends and `onTornTail` is told.
   *
   * @throws `SESSION_NOT_FOUND`, `CORRUPT_LINE`, `LINE_TOO_LARGE`, `ABORTED`, `BACKEND_FAILED`.
   */
  read(id: string, options: ReadOptions): AsyncIterable<StoredLine>

  /**
   * One page of sessions. A session that cannot be summarized is an entry with `problem`.
   *
   * @throws `INVALID_OPTION` (a cursor this backend did not make), `ABORTED`, `BACKEND_FAILED`.
   */
  list(query: ListQuery): Promise<ListPage>

  /** Releases the backend's resources (connections, watchers). Idempotent. Leases are not released. */
  close(): Promise<void>
}
