/**
 * The options of {@link createJsonlBackend} and their checks (before anything is opened).
 */
import { SessionStoreErrorCode } from '@agent-ledger/session-store'
import type { EventRegistry } from '@agent-ledger/session-events'

import type { FsOps } from '../fs-ops.ts'
import type { StoreLimits } from '../limits.ts'
import type { LockOptions } from '../writer-lock.ts'
import type { LogEncoding } from '../zstd-log-writer.ts'
import { portError } from './port-errors.ts'

const ENCODINGS = ['plain', 'zstd'] as const
const WRITE_OPEN_CHECKS = ['checkpoint', 'full'] as const

/**
 * How much of the log a write open checks before a writer appends: `checkpoint` (default)
 * from the stored checkpoint's seek point when the line there is the one the checkpoint names
 * (its seq and checksum), else every line; `full`: every line, always (a bit flip before the
 * checkpoint refuses the write open, at the cost of reading the whole log). Either way every
 * line from the start on is checked and a torn tail repaired (RELIABILITY I9).
 */
export type WriteOpenCheck = (typeof WRITE_OPEN_CHECKS)[number]

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
  /** What a write open checks before a writer appends: `checkpoint` (default) or `full` (see {@link WriteOpenCheck}). */
  readonly writeOpenCheck?: WriteOpenCheck | undefined
}

function invalid(option: string, expected: string, found: string): Error {
  return portError(SessionStoreErrorCode.INVALID_OPTION, {
    message: `JSONL backend option ${option} must be ${expected}, found ${found}.`,
    details: { option },
  })
}

function choice<TWord extends string>(option: string, value: unknown, allowed: readonly TWord[]): TWord {
  if (allowed.includes(value as TWord)) return value as TWord
  const expected = allowed.map((word) => `'${word}'`).join(' or ')
  throw invalid(option, expected, JSON.stringify(value) ?? String(value))
}

/**
 * The options a backend is built from, checked.
 *
 * @param options - As given.
 * @returns The encoding, write-open check and follow poll, defaults applied.
 * @throws {@link SessionStoreError} `INVALID_OPTION` (a relative root, an unknown word, a bad poll).
 */
export function checkedOptions(options: JsonlBackendOptions): {
  readonly encoding: LogEncoding
  readonly writeOpenCheck: WriteOpenCheck
  readonly followPollMs: number
} {
  if (typeof options.root !== 'string' || !options.root.startsWith('/'))
    throw invalid('root', 'an absolute path', JSON.stringify(options.root) ?? String(options.root))
  const encoding = choice('encoding', options.encoding ?? 'plain', ENCODINGS)
  const writeOpenCheck = choice('writeOpenCheck', options.writeOpenCheck ?? 'checkpoint', WRITE_OPEN_CHECKS)
  const followPollMs = options.followPollMs ?? 1000
  if (!Number.isSafeInteger(followPollMs) || followPollMs <= 0)
    throw invalid('followPollMs', 'a positive integer', String(followPollMs))
  return { encoding, writeOpenCheck, followPollMs }
}
