import { constants } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'

import type { EventRegistry, LoggedEvent } from '@agent-ledger/session-events'
import { createProjection } from '@agent-ledger/session-projection'
import type { Projection } from '@agent-ledger/session-projection'

import { errnoOf, toStoreError } from './fs-errors.ts'
import type { FileHandleOps, FsOps } from './fs-ops.ts'
import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'
import type { StoreLimits } from './limits.ts'
import { V4_FORMAT } from './log-format.ts'
import type { ScanResume } from './log-scanner.ts'
import { readFileChunks, refineRepeatedSeq, scanLogChunks } from './read-log.ts'
import type { GenerationEncoding } from './generations.ts'

/** Options of {@link SessionStore.follow}. */
export interface FollowOptions {
  /** First seq to yield (default 0: every event, then the new ones). */
  readonly fromSeq?: number
  /** Stops following: the iteration ends normally (no error) at the next poll or sleep. */
  readonly signal?: AbortSignal
  /** How often the log is looked at for new bytes, in milliseconds (10..60000, default 250). */
  readonly intervalMs?: number
}

/** The log a follower reads right now (internal: given by the store). */
export interface FollowedLog {
  /** Absolute path. */
  readonly path: string
  /** Relative to the root, as errors name it. */
  readonly file: string
  readonly encoding: GenerationEncoding
  readonly version: number
}

/** What {@link followSession} needs from the store (internal). */
export interface FollowContext {
  readonly fs: FsOps
  readonly limits: StoreLimits
  readonly registry: EventRegistry
  /** The session's current log; throws `SESSION_NOT_FOUND` when the session has none. */
  locate(): Promise<FollowedLog>
  /** The store's own `readEvents` from a seq (any encoding or generation). */
  readEvents(fromSeq: number): AsyncIterable<LoggedEvent>
}

/** Incremental state over one plain v4 log file: where the next read resumes. */
interface PlainState {
  readonly file: string
  readonly ino: number
  readonly projection: Projection
  /** After the last good line; null until a header was read. */
  resume: ScanResume | null
}

const DEFAULT_INTERVAL_MS = 250

function invalidOption(message: string, details: Record<string, unknown>): JsonlStoreError {
  return new JsonlStoreError({ code: JsonlErrorCode.INVALID_OPTION, message, file: '', details })
}

/**
 * Checks {@link FollowOptions} before anything is read.
 *
 * @param options - The caller's options.
 * @returns The first seq and the interval.
 * @throws {@link JsonlStoreError} `INVALID_OPTION` for a `fromSeq` that is not a non-negative
 *   safe integer, or an interval outside 10..60000 ms.
 */
export function checkFollowOptions(options: FollowOptions): { fromSeq: number; intervalMs: number } {
  const fromSeq = options.fromSeq ?? 0
  if (!Number.isSafeInteger(fromSeq) || fromSeq < 0) {
    throw invalidOption(`follow: expected fromSeq to be a non-negative integer, found ${String(fromSeq)}.`, {
      option: 'fromSeq',
      value: String(fromSeq),
    })
  }
  const intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS
  if (!Number.isInteger(intervalMs) || intervalMs < 10 || intervalMs > 60_000) {
    throw invalidOption(
      `follow: expected intervalMs to be an integer between 10 and 60000, found ${String(intervalMs)}.`,
      { option: 'intervalMs', value: String(intervalMs) },
    )
  }
  return { fromSeq, intervalMs }
}

/**
 * Follows a session read-only: yields its events from `fromSeq`, then every event appended
 * later, until `signal` aborts. Never locks, repairs or writes.
 *
 * A plain v4 log is read incrementally: each poll reads only the bytes after the last good
 * line (so a torn tail is read again until a writer completes or repairs it). Any other log
 * (`.zstd`, an older generation) is re-read through `readEvents` from the next seq whenever
 * its size, inode or modification time changes. When the current log changes file (compress,
 * migrate, a replaced file), reading continues in the new one from the next seq.
 *
 * @param context - The store's file system, limits, registry and readers.
 * @param options - `fromSeq`, `signal`, `intervalMs` (checked beforehand).
 * @returns The events, in seq order, each once.
 * @throws {@link JsonlStoreError} damage codes once a damaging line lands (after the events
 *   before it), `SESSION_NOT_FOUND` when the session's log is removed, read errors.
 */
export async function* followSession(
  context: FollowContext,
  options: { readonly fromSeq: number; readonly intervalMs: number; readonly signal?: AbortSignal },
): AsyncGenerator<LoggedEvent, void, undefined> {
  const { signal } = options
  let next = options.fromSeq
  let plain: PlainState | null = null
  let seen: string | null = null
  while (signal?.aborted !== true) {
    const log = await context.locate()
    if (log.encoding === 'plain' && log.version === V4_FORMAT.version) {
      seen = null
      const step = await pollPlain(context, log, { previous: plain, next })
      plain = step.state
      for (const event of step.events) {
        yield event
        next = event.seq + 1
      }
      if (step.damage !== null) throw step.damage
    } else {
      plain = null
      const identity = await identityOf(context.fs, log)
      if (identity !== null && identity !== seen) {
        try {
          for await (const event of context.readEvents(next)) {
            yield event
            next = event.seq + 1
          }
          // Changed while it was read: what was read may stop short of it; read again next poll.
          seen = (await identityOf(context.fs, log)) === identity ? identity : null
        } catch (error) {
          // The file changed while it was read (a writer adding a frame, a reseal renaming a
          // new file in): what failed may be a frame caught half-written. Read it again at the
          // next poll; damage that stays once the file is still is thrown then.
          if ((await identityOf(context.fs, log)) === identity) throw error
          seen = null
        }
      }
    }
    try {
      await sleep(options.intervalMs, undefined, signal === undefined ? {} : { signal })
    } catch {
      return
    }
  }
}

async function identityOf(fs: FsOps, log: FollowedLog): Promise<string | null> {
  try {
    const stats = await fs.stat(log.path)
    return `${log.file}:${stats.ino}:${stats.size}:${stats.mtimeMs}`
  } catch (error) {
    // Replaced between the listing and the stat (a compress finishing): look again next poll.
    if (errnoOf(error) === 'ENOENT') return null
    throw toStoreError(error, { op: 'stat', file: log.file, fallback: JsonlErrorCode.READ_FAILED })
  }
}

/** One poll of a plain v4 log: the new events (seq >= next), and damage if a damaging line landed. */
async function pollPlain(
  context: FollowContext,
  log: FollowedLog,
  position: { readonly previous: PlainState | null; readonly next: number },
): Promise<{ state: PlainState | null; events: LoggedEvent[]; damage: JsonlStoreError | null }> {
  const { previous, next } = position
  let handle: FileHandleOps
  try {
    handle = await context.fs.open(log.path, constants.O_RDONLY | constants.O_NOFOLLOW)
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') return { state: previous, events: [], damage: null }
    throw toStoreError(error, {
      op: 'open',
      file: log.file,
      which: 'log',
      fallback: JsonlErrorCode.READ_FAILED,
    })
  }
  try {
    const stats = await handle.stat()
    let state = previous
    // A new file (compress undone, migration, replaced by hand) or one cut below what was
    // read: start again from byte 0, yielding only seqs not yielded yet.
    if (
      state === null ||
      state.file !== log.file ||
      state.ino !== stats.ino ||
      (state.resume !== null && stats.size < state.resume.offset)
    ) {
      state = {
        file: log.file,
        ino: stats.ino,
        projection: createProjection({ registry: context.registry }),
        resume: null,
      }
    }
    const start = state.resume?.offset ?? 0
    if (state.resume !== null && stats.size === start) return { state, events: [], damage: null }
    const events: LoggedEvent[] = []
    const projection = state.projection
    const chunkBytes = context.limits.readChunkBytes
    const chunks = scanLogChunks(readFileChunks(handle, { chunkBytes, start }), {
      format: V4_FORMAT,
      limits: context.limits,
      registry: context.registry,
      file: log.file,
      onEvent: (event) => {
        projection.apply(event)
        if (event.seq >= next) events.push(event)
      },
      ...(state.resume === null ? {} : { resume: state.resume }),
    })
    let outcome
    try {
      for (;;) {
        const step = await chunks.next()
        if (step.done === true) {
          outcome = step.value
          break
        }
      }
      if (outcome.damage !== null) {
        outcome = await refineRepeatedSeq(
          outcome,
          () => readFileChunks(handle, { chunkBytes }),
          context.limits.maxLineBytes,
        )
      }
    } catch (error) {
      throw toStoreError(error, { op: 'read', file: log.file, fallback: JsonlErrorCode.READ_FAILED })
    }
    if (outcome.damage !== null) return { state, events, damage: outcome.damage }
    if (outcome.header !== null) {
      state.resume = {
        header: outcome.header,
        headerEndOffset: outcome.headerEndOffset,
        lastSeq: outcome.lastSeq,
        offset: Math.max(outcome.goodEndOffset, outcome.headerEndOffset),
        stats: outcome.stats,
      }
    } else {
      // No header yet: nothing was acknowledged; read from byte 0 again next time.
      state = null
    }
    return { state, events, damage: null }
  } finally {
    await handle.close().catch(() => undefined)
  }
}
