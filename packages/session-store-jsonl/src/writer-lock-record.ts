/*
 * The writer lock's record and files (see writer-lock.ts for the protocol): its types and
 * constants; the record of who holds a lock (pid, host, process start, boot id, nonce), read
 * without following a symlink, and the judge of whether that holder is gone; publishing a
 * lock or claim file exclusively (temp + link, never through a symlink), the typed errors of
 * that step, and the removal of leftover claims and temps.
 */
import { constants } from 'node:fs'
import type { Stats } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createHash } from 'node:crypto'
import { uptime } from 'node:os'
import { basename, join } from 'node:path'

import { errnoOf, hasStoreCode, toStoreError } from './fs-errors.ts'
import { readFully } from './fs-ops.ts'
import type { FileHandleOps, FsOps } from './fs-ops.ts'
import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'
import { LOCK_TEMP_PREFIX } from './layout.ts'
import { createTempFile } from './temp-file.ts'

/** Name of the lock file inside a session directory. */
export const WRITER_LOCK_FILE_NAME = 'writer.lock'

/** Prefix of the claim files used while breaking a stale lock (`writer.lock.break-<token>`). */
export const CLAIM_PREFIX = `${WRITER_LOCK_FILE_NAME}.break-`

/** Content of a lock file longer than this is not a lock record (and is read only this far). */
const MAX_LOCK_BYTES = 4096
/** Nested stale claims broken before giving up (each level needs a crash in the level below). */
export const MAX_CLAIM_DEPTH = 3
/** Consecutive "the lock changed under us, look again" rounds before reporting the lock as held. */
export const MAX_QUICK_RETRIES = 64
/** Margin on the boot time computed from uptime (seconds, sampled), for the "written before boot" rule. */
const BOOT_TIME_SLACK_MS = 5_000
/** Temp names tried before giving up (each collision means someone pre-created a random name). */
const MAX_TEMP_ATTEMPTS = 16

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
   * holder that removed the session directory itself (a delete), whose lock file went with it,
   * and for a closed backend, whose leases stay held. A later `release` still removes the
   * lock file if it is ours (it goes by the nonce, not the descriptor).
   */
  forget(): Promise<void>
}

export type Entry =
  | { readonly kind: 'missing' }
  | {
      readonly kind: 'present'
      readonly stats: Stats
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

/** Fields 3.. of /proc/<pid>/stat (after the parenthesised command name, which may hold spaces). */
async function procStatFields(pid: number | 'self'): Promise<string[] | undefined> {
  try {
    const text = await readFile(`/proc/${pid}/stat`, 'latin1')
    const close = text.lastIndexOf(')')
    if (close < 0) return undefined
    return text
      .slice(close + 2)
      .trim()
      .split(' ')
  } catch {
    return undefined
  }
}

/** starttime (field 22) of a process, or null when /proc cannot tell. */
async function processStartOf(pid: number | 'self'): Promise<number | null> {
  const fields = await procStatFields(pid)
  const value = fields?.[19]
  if (value === undefined || !/^[0-9]+$/.test(value)) return null
  const start = Number(value)
  return Number.isSafeInteger(start) ? start : null
}

let bootIdPromise: Promise<string | null> | undefined
export function currentBootId(): Promise<string | null> {
  bootIdPromise ??= readFile('/proc/sys/kernel/random/boot_id', 'utf8').then(
    (text) => {
      const id = text.trim()
      return /^[0-9a-f-]{8,64}$/.test(id) ? id : null
    },
    () => null,
  )
  return bootIdPromise
}

let selfStartPromise: Promise<number | null> | undefined
export function selfProcessStart(): Promise<number | null> {
  selfStartPromise ??= processStartOf('self')
  return selfStartPromise
}

/** Alive per kill(pid, 0), and not a zombie per /proc. EPERM means alive (another user's process). */
async function isProcessAlive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0)
  } catch (error) {
    if (errnoOf(error) === 'ESRCH') return false
  }
  const fields = await procStatFields(pid)
  return fields?.[0] !== 'Z'
}

function parseRecord(bytes: Buffer): LockRecord | undefined {
  let value: unknown
  try {
    value = JSON.parse(bytes.toString('utf8'))
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
  const record = value as Record<string, unknown>
  const { pid, host, processStart, bootId, nonce, acquiredAt, heartbeatAt } = record
  // pid must be a positive integer: kill(0 or negative, 0) would address process groups.
  if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0) return undefined
  if (typeof host !== 'string' || host.length > 255) return undefined
  if (processStart !== null && (typeof processStart !== 'number' || !Number.isSafeInteger(processStart))) {
    return undefined
  }
  if (bootId !== undefined && bootId !== null && typeof bootId !== 'string') return undefined
  // The nonce becomes part of a file name: accept exactly 32 lowercase hex digits.
  if (typeof nonce !== 'string' || !/^[0-9a-f]{32}$/.test(nonce)) return undefined
  if (typeof acquiredAt !== 'string' || typeof heartbeatAt !== 'string') return undefined
  return { pid, host, processStart, bootId: bootId ?? null, nonce, acquiredAt, heartbeatAt }
}

/** What is at a lock or claim name right now. */
export async function readEntry(fs: FsOps, path: string): Promise<Entry> {
  let stats: Stats
  try {
    stats = await fs.lstat(path)
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') return { kind: 'missing' }
    throw error
  }
  let bytes: Buffer | undefined
  if (stats.isFile()) {
    let handle: FileHandleOps | undefined
    try {
      handle = await fs.open(path, constants.O_RDONLY | constants.O_NOFOLLOW)
    } catch (error) {
      const code = errnoOf(error)
      if (code === 'ENOENT') return { kind: 'missing' }
      // ELOOP: replaced by a symlink since the lstat; EACCES: unreadable. Judged without content.
      if (code !== 'ELOOP' && code !== 'EACCES' && code !== 'EPERM') throw error
    }
    if (handle !== undefined) {
      try {
        const opened = await handle.stat()
        // Replaced between lstat and open: look again at what is there now.
        if (opened.ino !== stats.ino) return await readEntry(fs, path)
        const buffer = Buffer.alloc(MAX_LOCK_BYTES + 1)
        bytes = buffer.subarray(0, await readFully(handle, buffer))
      } finally {
        await handle.close()
      }
    }
  }
  const record = bytes !== undefined && bytes.length <= MAX_LOCK_BYTES ? parseRecord(bytes) : undefined
  const token =
    record?.nonce ??
    `x${createHash('sha256')
      .update(`${stats.ino}:${stats.isSymbolicLink() ? 'symlink' : 'file'}:`)
      .update(bytes ?? Buffer.alloc(0))
      .digest('hex')
      .slice(0, 31)}`
  return {
    kind: 'present',
    stats,
    record,
    token,
  }
}

export async function judge(
  entry: Extract<Entry, { kind: 'present' }>,
  self: Self,
  staleMs: number,
): Promise<Verdict> {
  const now = Date.now()
  const record = entry.record
  if (record === undefined) {
    const age = now - entry.stats.mtimeMs
    if (entry.stats.mtimeMs < now - uptime() * 1000 - BOOT_TIME_SLACK_MS) {
      return { stale: true, reason: 'unreadable lock content, written before the last boot' }
    }
    return age > staleMs
      ? { stale: true, reason: `unreadable lock content, unchanged for ${Math.round(age)} ms` }
      : { stale: false, reason: 'unreadable lock content, recently modified' }
  }
  if (record.host !== self.host) {
    const beat = Math.max(Date.parse(record.heartbeatAt) || 0, entry.stats.mtimeMs)
    const age = now - beat
    return age > staleMs
      ? {
          stale: true,
          reason: `no heartbeat from host ${JSON.stringify(record.host)} for ${Math.round(age)} ms`,
        }
      : {
          stale: false,
          reason: `held on host ${JSON.stringify(record.host)}, heartbeat ${Math.round(age)} ms ago`,
        }
  }
  if (record.bootId !== null && self.bootId !== null && record.bootId !== self.bootId) {
    return { stale: true, reason: 'holder ran before the last reboot' }
  }
  if (!(await isProcessAlive(record.pid))) return { stale: true, reason: `holder pid ${record.pid} is dead` }
  if (record.processStart !== null) {
    const start = record.pid === self.pid ? self.processStart : await processStartOf(record.pid)
    if (start !== null && start !== record.processStart) {
      return { stale: true, reason: `pid ${record.pid} was reused by a process started later` }
    }
  }
  return { stale: false, reason: `holder pid ${record.pid} is alive` }
}

/** {@link judge}, then the caller's `breakLive` for a lock whose holder looks alive. */
export async function judgeLock(
  context: Context,
  entry: Extract<Entry, { kind: 'present' }>,
): Promise<Verdict> {
  const verdict = await judge(entry, context.self, context.options.staleMs)
  if (verdict.stale || context.breakLive === undefined) return verdict
  const reason = context.breakLive({ token: entry.token, record: entry.record })
  return reason === null ? verdict : { stale: true, reason }
}

export function recordBytes(record: LockRecord): Buffer {
  return Buffer.from(`${JSON.stringify(record)}\n`, 'utf8')
}

export function makeRecord(self: Self, nonce: string, acquiredAt: string): LockRecord {
  const now = new Date().toISOString()
  return {
    pid: self.pid,
    host: self.host,
    processStart: self.processStart,
    bootId: self.bootId,
    nonce,
    acquiredAt: acquiredAt === '' ? now : acquiredAt,
    heartbeatAt: now,
  }
}

/** An error of creating a lock or claim file at `path`, typed as `toStoreError` types it (op `create-lock`). */
function mapCreateError(context: Context, error: unknown, path: string): unknown {
  const code = errnoOf(error)
  if (code === 'ENOENT') {
    return new JsonlStoreError({
      code: JsonlErrorCode.SESSION_NOT_FOUND,
      message: `Cannot create the writer lock: the session directory ${basename(context.directory)} does not exist.`,
      file: basename(context.directory),
      details: { op: 'create-lock', cause: code },
      cause: error,
    })
  }
  if (code === undefined || !hasStoreCode(code)) return error
  const file = `${basename(context.directory)}/${basename(path)}`
  return toStoreError(error, { op: 'create-lock', file, fallback: JsonlErrorCode.ACCESS_DENIED })
}

/**
 * Publishes `bytes` at `target` only if nothing is there: temp file (O_EXCL|O_NOFOLLOW,
 * 0600) then link(). Keeps the temp's handle open (it is the published inode).
 */
export async function publishExclusive(context: Context, target: string, bytes: Buffer): Promise<Published> {
  const { fs, directory } = context
  for (let attempt = 0; attempt < MAX_TEMP_ATTEMPTS; attempt += 1) {
    let created: Awaited<ReturnType<typeof createTempFile>>
    try {
      // A pre-created random name (a file or a symlink) draws another (S7).
      created = await createTempFile(fs, {
        directory,
        prefix: `${LOCK_TEMP_PREFIX}-`,
        randomHex: context.options.randomHex,
        access: constants.O_RDWR,
      })
    } catch (error) {
      if (errnoOf(error) === 'EEXIST') break
      throw mapCreateError(context, error, target)
    }
    const { handle, path: temp } = created
    let failure: string | undefined
    try {
      await handle.write(bytes, 0)
      await fs.link(temp, target)
    } catch (error) {
      failure = errnoOf(error) ?? 'unknown'
      await handle.close().catch(() => undefined)
      // EEXIST from the link: the name is taken. ENOENT: our temp vanished (a cleaner removed it); start again with a new one.
      if (failure !== 'EEXIST' && failure !== 'ENOENT') throw mapCreateError(context, error, target)
    } finally {
      await fs.unlink(temp).catch(() => undefined)
    }
    if (failure === undefined) return { kind: 'created', handle }
    if (failure === 'EEXIST') return { kind: 'exists' }
  }
  throw new JsonlStoreError({
    code: JsonlErrorCode.ACCESS_DENIED,
    message: `Cannot create the writer lock in ${basename(directory)}: expected a free random temp name, found ${MAX_TEMP_ATTEMPTS} taken.`,
    file: context.displayFile,
    details: { op: 'create-lock', path: context.displayFile, cause: 'EEXIST' },
  })
}

export function symlinkError(context: Context): JsonlStoreError {
  return new JsonlStoreError({
    code: JsonlErrorCode.SYMLINK_REFUSED,
    message: `The writer lock of session ${basename(context.directory)} is a symbolic link; expected a regular file, and it is never followed.`,
    file: context.displayFile,
    details: { which: 'lock', lockFile: context.lockPath },
  })
}

/**
 * Deletes what crashed lockers left behind, once we hold the lock: claims for tokens that
 * are no longer at `writer.lock` (they grant no right, see the top of writer-lock.ts) and the
 * lock protocol's temp files (`.tmp-lock-*`, `.tmp-lockbreak-*`). Removing a contender's
 * in-flight temp is harmless: its link() then fails with ENOENT and it draws a new name,
 * and its link() could only have failed with EEXIST anyway while we hold the lock.
 */
export async function removeLeftovers(context: Context, ownNonce: string): Promise<void> {
  let names: string[]
  try {
    names = await context.fs.readdir(context.directory)
  } catch {
    return
  }
  for (const name of names) {
    const claim = name.startsWith(CLAIM_PREFIX) && name !== `${CLAIM_PREFIX}${ownNonce}`
    if (claim || name.startsWith(LOCK_TEMP_PREFIX)) {
      await context.fs.unlink(join(context.directory, name)).catch(() => undefined)
    }
  }
}
