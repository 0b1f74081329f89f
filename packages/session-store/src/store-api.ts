/**
 * The store's public types: options, requests, reports and the {@link SessionStore} interface.
 */
import type {
  EventRegistry,
  LoggedEvent,
  SessionHeader,
  SessionHeaderInput,
} from '@agent-ledger/session-events'
import type { PendingToolCall } from '@agent-ledger/loop-repair'
import type { Projection } from '@agent-ledger/session-projection'

import type { CheckpointOptions, CheckpointUse, SessionStoreWarning } from './checkpoint-options.ts'
import type { SessionEncryption } from './encryption.ts'
import type { StoreLimits } from './event-codec.ts'
import type {
  AbortSignalLike,
  BackendProgress,
  DeleteOptions,
  DeleteResult,
  ListFilter,
  SessionBackend,
  SignalOptions,
  TornTailInfo,
} from './port.ts'
import type { RedactionPolicy } from './redaction.ts'
import type { SessionStoreError } from './session-store-error.ts'
import type { SessionWriter } from './writer.ts'

/** Options of {@link createSessionStore}. */
export interface SessionStoreOptions {
  /** Where sessions live. The store owns it from now on: `store.close()` closes it. */
  readonly backend: SessionBackend
  /**
   * The clock: the current time as an ISO-8601 string (`() => new Date().toISOString()`
   * in an application; a fixed sequence in tests). Event times, header `createdAt` and
   * lease renewal use it. Required: the core reads no clock of its own.
   */
  readonly clock: () => string
  /** The known event types. Default: the core types only. */
  readonly registry?: EventRegistry | undefined
  /**
   * Who this store writes as (a host/process name, unique among concurrent writers):
   * the lease owner and the prefix of batch ids. Default `agent-ledger`. A lease held by
   * the same owner is taken over on open (a restarted process).
   */
  readonly owner?: string | undefined
  /** Lease length in milliseconds; the writer renews on flush when half has passed. Default 30,000. */
  readonly leaseMs?: number | undefined
  /**
   * Secret redaction applied to every string of appended and seed event data before it is
   * checked and written (RELIABILITY S8), recorded in new headers as `redaction`. Default
   * `DEFAULT_REDACTION_POLICY` (the JSONL store's); `null` turns it off.
   */
  readonly redaction?: RedactionPolicy | null | undefined
  /** Resource limits; see {@link StoreLimits} for the defaults. */
  readonly limits?: Partial<StoreLimits> | undefined
  /**
   * Encryption at rest (FORMAT.md section 17): every session this store creates (create,
   * fork, salvage, import, copy) gets its own data key and its event data is sealed with
   * AES-256-GCM; encrypted sessions are read with it (`KEY_UNAVAILABLE` without their key).
   * Plain sessions stay plain and readable. `@agent-ledger/encryption` makes one. Default none.
   */
  readonly encryption?: SessionEncryption | undefined
  /**
   * Waits `ms` milliseconds (rejecting or resolving early when `signal` aborts): `follow`
   * polls with it when the backend has no `follow` capability. Default: none (then such a
   * follow is `UNSUPPORTED`).
   */
  readonly sleep?: ((ms: number, signal?: AbortSignalLike) => Promise<void>) | undefined
  /**
   * Projection checkpoints, when the backend offers the `checkpoints` capability: opens
   * start from the newest one that checks out and replay only the later events; writers
   * store new ones under the JSONL store's amortisation rules. See {@link CheckpointOptions}.
   */
  readonly checkpoint?: CheckpointOptions | undefined
  /**
   * Receives what the store handled on its own: a checkpoint ignored (the open replayed every
   * event) or not stored. Default: none (the open results report the checkpoint too). A
   * throwing handler is ignored.
   */
  readonly onWarning?: ((warning: SessionStoreWarning) => void) | undefined
}

/**
 * Who a writer writes as, per call: the writer-opening calls ({@link SessionStore.create},
 * {@link SessionStore.openWriter}, {@link SessionStore.fork}) take these to override the
 * store's `owner` and `leaseMs` for the writer they return (a server opening writers on
 * behalf of several workers). Checked like the store options (`INVALID_OPTION`).
 */
export interface WriterLeaseOptions {
  /** The lease owner and batch-id prefix of this writer (1-200 characters). Default the store's `owner`. */
  readonly owner?: string | undefined
  /** This writer's lease length in milliseconds (a positive integer). Default the store's `leaseMs`. */
  readonly leaseMs?: number | undefined
}

/** What {@link SessionStore.create} publishes. */
export interface CreateSessionRequest extends SignalOptions, WriterLeaseOptions {
  readonly id: string
  /** Header fields (`cwd`, `metadata`, `parentSession`, `seeded`...); `format`, `version`, `integrity` are the store's. */
  readonly header?: Partial<SessionHeaderInput> | undefined
  /**
   * Seed events with seqs 0..n-1 (a fork's prefix, a salvaged prefix, an import). A
   * `seeded: true` header needs a seed holding one `session/end-seed`.
   *
   * An array, or an async iterable of event batches: a streamed seed is checked, encoded and
   * folded batch by batch (seqs dense across batches) and written where no reader sees it;
   * the session is published once, after the last batch, in the same one step as an array
   * seed. An error the iterable throws, an abort or a crash midway publishes nothing (the
   * iterable's error is rethrown unchanged), and a retry with the same id then succeeds.
   * Memory holds one batch and the projection, not the seed.
   */
  readonly seed?: readonly LoggedEvent[] | AsyncIterable<readonly LoggedEvent[]> | undefined
}

/** Options of {@link SessionStore.openWriter}. */
export interface OpenWriterOptions extends SignalOptions, WriterLeaseOptions {
  /** Take the lease even if another owner holds a live one (it is fenced). */
  readonly takeover?: boolean | undefined
}

/** A session read without writing (no lease, no repair). */
export interface SessionReadResult {
  readonly header: SessionHeader
  /** The projection of the good prefix. */
  readonly projection: Projection
  /** Seq of the last good event (-1 when none). */
  readonly lastSeq: number
  /** Unacknowledged bytes at the end (a file backend), reported, never repaired. */
  readonly tornTail: TornTailInfo | null
  /** Damage (only with `allowDamaged`): the projection holds the good prefix before it. */
  readonly error: SessionStoreError | null
  /** Assistant tool calls with no result yet (what a write open would repair). */
  readonly pendingToolCalls: readonly PendingToolCall[]
  /** Whether the open started from a projection checkpoint, or why not. */
  readonly checkpoint: CheckpointUse
}

/** Options of {@link SessionStore.readEvents}. */
export interface ReadEventsOptions extends SignalOptions {
  /** First seq to yield (a non-negative integer); default 0. */
  readonly fromSeq?: number | undefined
  /** Last seq to yield, inclusive (an integer >= `fromSeq`); default the durable head. */
  readonly toSeq?: number | undefined
}

/** Options of {@link SessionStore.follow}. */
export interface FollowOptions extends SignalOptions {
  /** First seq to yield; default 0 (the whole session, then new events). */
  readonly fromSeq?: number | undefined
  /** Poll interval in milliseconds when the backend cannot notify. Default 250. */
  readonly pollMs?: number | undefined
}

/** Options of {@link SessionStore.fork}. */
export interface ForkOptions extends SignalOptions, WriterLeaseOptions {
  /** The new session's id. */
  readonly to: string
  /** Seq of the last inherited event. */
  readonly atSeq: number
  /** A cut inside an open turn: `close` (default: the same closers as a crash) or `refuse`. */
  readonly openTurn?: 'close' | 'refuse' | undefined
}

/** The outcome of {@link SessionStore.verify}. */
export interface VerifyReport {
  readonly id: string
  /** `ok`; `torn-tail`: good lines then an unacknowledged tail; `damaged`: a bad line or a broken rule. */
  readonly status: 'ok' | 'torn-tail' | 'damaged'
  readonly header: SessionHeader | null
  readonly events: number
  readonly lastSeq: number
  readonly tornTail: TornTailInfo | null
  /** The damage (code, location, seq, lastGoodSeq), or null. A header refusal is reported here too. */
  readonly damage: SessionStoreError | null
  /**
   * Set when the session is encrypted and its key was not available (verify needs no key):
   * the header, every line's checksum, the encrypted form and dense seqs were checked; event
   * data and the history rules were not. Names the key that would open it.
   */
  readonly sealed?: { readonly keyId: string; readonly dataKeyId: string } | undefined
}

/** The outcome of {@link SessionStore.salvage}. */
export interface SalvageReport {
  readonly from: string
  readonly to: string
  /** Events copied line for line (seqs 0..lastGoodSeq). */
  readonly copiedEvents: number
  readonly lastGoodSeq: number
  /** Seq of the `session/salvage` event appended after the copy. */
  readonly salvageSeq: number
  /** Why lines were dropped: the damage code, `torn-tail`, or `none`. */
  readonly reason: string
  readonly sourceError: SessionStoreError | null
}

/** One session of a listing. */
export interface SessionSummary {
  readonly id: string
  readonly header: SessionHeader
  /** Durable event count, when the backend reports it. */
  readonly events: number | undefined
  readonly updatedAt: string | undefined
}

/** Options of {@link SessionStore.list}. */
export interface ListOptions extends SignalOptions {
  /** The previous page's `cursor`. */
  readonly cursor?: string | undefined
  /** Page size, 1-1000; default 100. */
  readonly limit?: number | undefined
  readonly filter?: ListFilter | undefined
}

/** A page of {@link SessionStore.list}. */
export interface ListResult {
  readonly sessions: readonly SessionSummary[]
  /** Sessions that could not be summarized; a broken session never fails a listing. */
  readonly problems: readonly { readonly id: string; readonly error: SessionStoreError }[]
  /** Pass to the next call; null after the last page. */
  readonly cursor: string | null
}

/** What {@link SessionStore.prune} retires: at least one of `olderThanMs` and `keep`. */
export interface PrunePolicy extends SignalOptions {
  /** Retire sessions last updated more than this many milliseconds before now (the store's clock). */
  readonly olderThanMs?: number | undefined
  /** Keep the newest N sessions (by last update) whatever their age; retire the rest (with `olderThanMs`: only the old ones among the rest). */
  readonly keep?: number | undefined
  /**
   * Compress the sessions the policy keeps that were last updated more than this many
   * milliseconds before now, through the backend's `compress` capability (`UNSUPPORTED`
   * without one), instead of leaving them as they are. Deleting comes first.
   */
  readonly compressIdleMs?: number | undefined
  /** Measure only: report what would be deleted (and compressed) and the bytes it would free; change nothing. */
  readonly dryRun?: boolean | undefined
  /**
   * Called once with every session the policy retires, newest first, before the first delete
   * (awaited); `plan.compress`: the kept idle sessions it will compress (with `compressIdleMs`).
   */
  readonly onPlan?:
    | ((
        sessions: readonly { readonly id: string; readonly updatedAt: string | undefined }[],
        plan: {
          readonly compress: readonly { readonly id: string; readonly updatedAt: string | undefined }[]
        },
      ) => void | Promise<void>)
    | undefined
  /** Progress: `list` (sessions listed so far), then `delete` or `measure` (`done` of `total`). */
  readonly onProgress?: ((progress: BackendProgress) => void) | undefined
}

/** A session {@link SessionStore.prune} deleted (or, with `dryRun`, would delete). */
export interface PrunedSession {
  readonly id: string
  readonly updatedAt: string | undefined
  readonly bytes: number
}

/** A kept idle session {@link SessionStore.prune} compressed (with `dryRun`: would compress). */
export interface CompressedSession {
  readonly id: string
  readonly updatedAt: string | undefined
  /** False when the backend found nothing to do (already compressed); true with `dryRun`. */
  readonly changed: boolean
}

/** A session the policy retired that {@link SessionStore.prune} did not delete (or a kept idle one it did not compress), and why. */
export interface PruneSkip {
  readonly id: string
  /**
   * `live-lease`: a writer holds it (never deleted by a prune); `changed`: written after it
   * was listed; `missing`: already gone; `unlistable`: its header could not be read, so its
   * age is unknown (kept; `verify` or `salvage` it); `compress-failed`: a kept idle session the
   * backend could not compress (the message names the error code; it is left as it was).
   */
  readonly reason: 'live-lease' | 'changed' | 'missing' | 'unlistable' | 'compress-failed'
  readonly message: string
  readonly holder?: string | null | undefined
  readonly expiresAt?: string | null | undefined
}

/** The outcome of {@link SessionStore.prune}. */
export interface PruneReport {
  readonly dryRun: boolean
  /** The store clock's time the policy was applied at. */
  readonly now: string
  /** Sessions last updated before this were old (null without `olderThanMs`). */
  readonly cutoff: string | null
  readonly keep: number
  /** Sessions listed. */
  readonly examined: number
  /** Deleted (with `dryRun`: would be), newest first. */
  readonly deleted: readonly PrunedSession[]
  readonly skipped: readonly PruneSkip[]
  /** The sum of `deleted[].bytes`. */
  readonly bytesFreed: number
  /** Kept idle sessions compressed (with `compressIdleMs`; empty without), newest first. */
  readonly compressed: readonly CompressedSession[]
}

/** Options of {@link SessionStore.search}. */
export interface SearchOptions extends SignalOptions {
  /** Hits per page, 1-1000; default 50. */
  readonly limit?: number | undefined
  /** The previous page's `nextCursor`; null or absent for the first page. */
  readonly cursor?: string | null | undefined
  /** Only these sessions (at most 1000 ids); absent: every session. */
  readonly sessionIds?: readonly string[] | undefined
}

/**
 * One match: a field of one event whose text holds every term and phrase of the query.
 * Hits come ordered by session id, then seq, then field (`text`, `tool`, `arguments`, `result`).
 */
export interface SearchHit {
  readonly sessionId: string
  readonly seq: number
  readonly eventType: string
  /** Message text (content, reasoning, a compaction summary), a tool name, tool-call arguments, a tool result. */
  readonly field: 'text' | 'tool' | 'arguments' | 'result'
  /** The text around the first match, verbatim (escaping is the renderer's job), `…` where cut. */
  readonly snippet: string
  /** The first match's place in `snippet`, [start, end) in UTF-16 code units. */
  readonly match: { readonly start: number; readonly end: number }
  /** The event's time. */
  readonly at?: string | undefined
}

/** A page of {@link SessionStore.search}. */
export interface SearchPage {
  readonly hits: readonly SearchHit[]
  /** Pass it back as `cursor` for the next page; null when no hits follow (a full page may be followed by an empty one). */
  readonly nextCursor: string | null
  /**
   * Encrypted sessions this page passed over unsearched because their data key could not be
   * had (no key provider, the key erased): present only when there were some.
   */
  readonly unsearched?: readonly SearchUnsearched[] | undefined
}

/** An encrypted session a search could not read (see {@link SearchPage.unsearched}). */
export interface SearchUnsearched {
  readonly sessionId: string
  readonly code: 'KEY_UNAVAILABLE'
  /** The wrapping key the session's header names. */
  readonly keyId: string
}

/** Sessions over one backend. Create it with {@link createSessionStore}. */
export interface SessionStore {
  readonly backend: SessionBackend
  /**
   * Publishes a new session (header plus optional seed, atomically) and opens it for write.
   *
   * @throws {@link SessionStoreError} `INVALID_SESSION_ID`, `INVALID_HEADER`, `INVALID_SEED`, event codes for a
   *   bad seed event, `SESSION_EXISTS`, `DISK_FULL`, `ABORTED` (nothing published).
   */
  create(request: CreateSessionRequest): Promise<SessionWriter>
  /**
   * Opens a session for appending: takes the lease (the backend repairs a torn tail),
   * reads and checks every line, folds the projection, appends and flushes loop-repair's
   * closing events, then returns.
   *
   * @throws {@link SessionStoreError} `SESSION_NOT_FOUND`, `SESSION_LOCKED`, `VERSION_TOO_NEW`, `INVALID_HEADER`,
   *   `HEADER_ID_MISMATCH`, damage codes (`CORRUPT_LINE`, `SEQ_GAP`...: writes refused), `ABORTED`.
   */
  openWriter(id: string, options?: OpenWriterOptions): Promise<SessionWriter>
  /**
   * Reads a session without writing.
   *
   * @param options - `allowDamaged`: return the good prefix with the damage instead of throwing.
   */
  openReader(
    id: string,
    options?: SignalOptions & { readonly allowDamaged?: boolean },
  ): Promise<SessionReadResult>
  /**
   * Streams events `fromSeq..toSeq`, each checked (line, seq, type, payload). Damage throws
   * after the good events before it; a torn tail ends the stream quietly.
   *
   * @throws {@link SessionStoreError} `INVALID_OPTION` (negative, fractional or non-number seqs, `fromSeq > toSeq`).
   */
  readEvents(id: string, options?: ReadEventsOptions): AsyncIterable<LoggedEvent>
  /**
   * Yields the session's events from `fromSeq`, then each new durable event as it lands,
   * until `signal` aborts (the iteration then ends quietly) or the consumer stops.
   */
  follow(id: string, options?: FollowOptions): AsyncIterable<LoggedEvent>
  /** Forks at `atSeq` into a new session (prefix, closers, `session/end-seed`) and opens it for write. */
  fork(id: string, options: ForkOptions): Promise<SessionWriter>
  /** Copies the good prefix of a damaged session into a new one, plus a `session/salvage` event. */
  salvage(id: string, options: SignalOptions & { readonly to: string }): Promise<SalvageReport>
  /** One page of sessions, most recently updated first. */
  list(options?: ListOptions): Promise<ListResult>
  /** Reads a whole session and reports its state instead of throwing on damage. */
  verify(id: string, options?: SignalOptions): Promise<VerifyReport>
  /**
   * Removes one session completely through the backend's `delete` capability (atomically for
   * readers; forks stay whole). Deleting a missing session is not an error: it resolves
   * `{ outcome: 'missing', bytes: 0 }`.
   *
   * @throws {@link SessionStoreError} `SESSION_LOCKED` (`details.holder`, `details.expiresAt`) while a
   *   live writer holds the lease and `force` is not set; `UNSUPPORTED` (no delete capability),
   *   `INVALID_SESSION_ID`, `INVALID_OPTION`, `ABORTED`, backend codes.
   */
  delete(id: string, options?: DeleteOptions): Promise<DeleteResult>
  /**
   * Deletes the sessions `policy` retires (by age and count), never one with a live lease or
   * one written since it was listed; reports what it deleted, skipped and freed.
   *
   * @throws {@link SessionStoreError} `INVALID_OPTION`, `UNSUPPORTED`, `ABORTED`, backend codes.
   */
  prune(policy: PrunePolicy): Promise<PruneReport>
  /**
   * Full-text search over message text, tool names, tool-call arguments and tool results
   * of every session (or `sessionIds`): terms are case-insensitive substrings, all of them
   * must match one field of one event, `"quoted phrases"` match words in order. Through
   * the backend's `search` capability (an index) when it has one, else a streaming scan
   * (memory bounded by one line and one page). Damaged lines are skipped.
   *
   * @throws {@link SessionStoreError} `INVALID_OPTION` (empty or too long query, a cursor
   *   this store did not make, a bad limit or session id list), `ABORTED`, backend codes.
   */
  search(query: string, options?: SearchOptions): Promise<SearchPage>
  /** Closes every writer this store opened (flushing them), then the backend. Idempotent. */
  close(): Promise<void>
}
