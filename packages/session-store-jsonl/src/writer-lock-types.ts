/*
 * The writer lock's types and constants (see writer-lock.ts for the protocol).
 */
import type { Stats } from 'node:fs'

import type { FileHandleOps, FsOps } from './fs-ops.ts'

/** Name of the lock file inside a session directory. */
export const WRITER_LOCK_FILE_NAME = 'writer.lock'

/** Prefix of the claim files used while breaking a stale lock (`writer.lock.break-<token>`). */
export const CLAIM_PREFIX = `${WRITER_LOCK_FILE_NAME}.break-`

/** Content of a lock file longer than this is not a lock record (and is read only this far). */
export const MAX_LOCK_BYTES = 4096
/** Nested stale claims broken before giving up (each level needs a crash in the level below). */
export const MAX_CLAIM_DEPTH = 3
/** Consecutive "the lock changed under us, look again" rounds before reporting the lock as held. */
export const MAX_QUICK_RETRIES = 64
/** Margin on the boot time computed from uptime (seconds, sampled), for the "written before boot" rule. */
export const BOOT_TIME_SLACK_MS = 5_000
/** Temp names tried before giving up (each collision means someone pre-created a random name). */
export const MAX_TEMP_ATTEMPTS = 16

/** How {@link acquireWriterLock} waits and judges staleness. */
export interface LockOptions {
  /** How long to wait for a held lock before failing with SESSION_LOCKED; 0 (default) fails at once. */
  timeoutMs: number
  /** Heartbeat age after which a lock held on ANOTHER host is stale; default 30000. */
  staleMs: number
  /** Interval of the heartbeat that rewrites `heartbeatAt`; default 5000; 0 disables it. */
  heartbeatMs: number
  /**
   * Source of random hex strings (`byteCount` bytes each) for nonces and temp names.
   * Defaults to `crypto.randomBytes`; a test seam for predictable-name attacks (S7).
   */
  randomHex: (byteCount: number) => string
}

/**
 * What {@link acquireWriterLock} takes: the lock settings, plus (for the backend port's
 * leases) a judge of live holders.
 */
export interface AcquireLockOptions extends Partial<LockOptions> {
  /**
   * Called for a lock whose holder looks alive: returns why it may be broken anyway (an
   * operator's takeover, a lease that expired, the same owner restarting), or null to leave
   * it. `token` is the holder's nonce (or a hash of an unreadable file). The break itself
   * follows the claim protocol, and the old holder's next `assertHeld()` fails with `LOCK_LOST`.
   */
  readonly breakLive?:
    | ((holder: { readonly token: string; readonly record: LockRecord | undefined }) => string | null)
    | undefined
}

/** The JSON record stored in `writer.lock` (and in break claims). */
export interface LockRecord {
  readonly pid: number
  readonly host: string
  /** Linux: field 22 (starttime, clock ticks after boot) of /proc/<pid>/stat; null where unavailable. */
  readonly processStart: number | null
  /** Linux: /proc/sys/kernel/random/boot_id; null where unavailable. */
  readonly bootId: string | null
  /** 16 random bytes, 32 lowercase hex digits: the identity of this lock. */
  readonly nonce: string
  readonly acquiredAt: string
  readonly heartbeatAt: string
}

/** A stale lock that {@link acquireWriterLock} broke before taking the lock. */
export interface BrokenLock {
  /** The previous holder's pid, or null when the file held no valid record. */
  readonly holderPid: number | null
  readonly holderHost: string | null
  /** Why it was judged stale. */
  readonly reason: string
}

/** A held writer lock. */
export interface WriterLock {
  /** This holder's nonce (also written in the lock file). */
  readonly nonce: string
  /** Absolute path of the lock file. */
  readonly file: string
  /** Stale locks broken while acquiring this one (empty when the name was free). */
  readonly brokenStaleLocks: readonly BrokenLock[]
  /**
   * Re-reads the lock file and checks that it still carries this holder's nonce.
   *
   * @throws {@link JsonlStoreError} with code `LOCK_LOST` when the file is gone, replaced or released.
   */
  assertHeld(): Promise<void>
  /**
   * Stops the heartbeat and removes the lock file if it is still ours. Idempotent, and
   * retryable: a failed release leaves the lock held and the next call tries again. Needs no
   * free space (on ENOSPC/EDQUOT the release claim is an empty file).
   */
  release(): Promise<void>
  /**
   * Stops the heartbeat and closes the lock's descriptor without touching any file: for a
   * holder that removed the session directory itself (a delete), whose lock file went with it.
   * Afterwards the lock counts as released.
   */
  forget(): Promise<void>
}

export type Entry =
  | { readonly kind: 'missing' }
  | {
      readonly kind: 'present'
      readonly stats: Stats
      readonly symlink: boolean
      readonly regular: boolean
      readonly record: LockRecord | undefined
      /** The nonce, or `x` + a hash of inode and bytes: what "the same lock file" means. */
      readonly token: string
    }

export interface Self {
  readonly pid: number
  readonly host: string
  readonly processStart: number | null
  readonly bootId: string | null
}

export type Verdict = { readonly stale: boolean; readonly reason: string }

export interface Context {
  readonly fs: FsOps
  readonly directory: string
  readonly lockPath: string
  /** The lock file relative to the store root (`<id>/writer.lock`), for `JsonlStoreError.file`. */
  readonly displayFile: string
  readonly self: Self
  readonly options: LockOptions
  readonly breakLive?: AcquireLockOptions['breakLive']
}

export type Published =
  { readonly kind: 'created'; readonly handle: FileHandleOps } | { readonly kind: 'exists' }
