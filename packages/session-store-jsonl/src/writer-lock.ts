/*
 * The cross-process writer lock: one writer per session directory (RELIABILITY W3/W4, S5/S7).
 *
 * Node has no flock, so the lock is a file, `writer.lock`, whose presence means "held".
 *
 * Creating it. The content (pid, host, process start, boot id, nonce, times) is written to a
 * fresh temp file `.tmp-lock-<16 hex>` (O_CREAT|O_EXCL|O_NOFOLLOW, 0600) and published with
 * `link(temp, "writer.lock")`, which fails with EEXIST when the name exists and never
 * follows or replaces a symlink there. The temp name is then unlinked. Compared with
 * creating `writer.lock` itself with O_EXCL and then writing, nobody can ever read a lock
 * file that exists but is still empty. The lock is not fsynced: it is never meant to
 * survive a power loss (every holder dies with the machine, and the boot id changes).
 *
 * Judging a lock we found. Same host: stale when the holder's boot id differs, when
 * kill(pid, 0) says ESRCH (or /proc says zombie), or when the pid is alive but
 * /proc/<pid>/stat gives another start time (the pid was reused). Another host: stale only
 * when the heartbeat (the later of `heartbeatAt` and the file's mtime) is older than
 * `staleMs`. Unreadable content (garbage, a file pre-created by someone else, or the empty
 * or garbled lock a power loss leaves, since the lock is never fsynced): stale when the
 * file's mtime is older than `staleMs`, or older than this machine's boot (no process
 * alive now wrote it), so a reboot after a power loss does not block the session for
 * `staleMs`. A symlink at `writer.lock` is refused
 * (SYMLINK_REFUSED), never read through, written or removed.
 *
 * Breaking a stale lock without a race. Renaming or unlinking works on names, not on
 * inodes, so a careless breaker can remove a lock that a faster breaker has just created.
 * The protocol that prevents it:
 *
 *   INVARIANT: a file whose token is T (its nonce, or a hash of its inode and bytes when it
 *   has no valid nonce) is removed from a lock name only by the process that holds the claim
 *   `writer.lock.break-<T>`, and only after re-reading the name under that claim and
 *   finding token T there.
 *
 * The claim is itself published exclusively (temp + link), so at most one process holds
 * it. Because every nonce is 16 random bytes and a lock file is created only once, once the
 * file with token T has left `writer.lock` it never comes back: a late breaker that gets
 * the claim afterwards re-reads, finds another token and backs off. The only writers of
 * new locks use link(), which cannot replace anything. Hence two breakers of the same stale
 * lock: exactly one removes it, and the subsequent link() race has exactly one winner; the
 * loser finds the winner's live lock and gets SESSION_LOCKED. The holder's own `release()`
 * follows the same invariant (it claims its own token first), so a release can never
 * remove a lock that a breaker has just put in place. The removal itself renames the file
 * to `.tmp-lockbreak-<hex>`, re-checks the moved token and unlinks it; if the check ever
 * failed (someone outside the protocol touched the directory) the file is linked back.
 *
 * A claim whose owner crashed is judged like a lock (its content is a lock record) and is
 * broken with the same protocol one level up (`writer.lock.break-<claim nonce>`), bounded
 * in depth. Leftover claims for tokens that are no longer at `writer.lock` carry no right
 * at all, so the next holder deletes them.
 *
 * Limits (documented in the README): staleness on another host relies on the clocks of
 * both hosts agreeing to within `staleMs`; a holder paused for longer than `staleMs` on
 * another host can lose its lock, which `assertHeld()` (called before every ack) detects;
 * two containers with the same hostname but separate pid namespaces and no /proc boot id
 * difference are indistinguishable from one host.
 */
import { constants } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createHash, randomBytes } from 'node:crypto'
import { hostname, uptime } from 'node:os'
import { basename, join } from 'node:path'
import type { Stats } from 'node:fs'

import { notRegularFile } from './fs-errors.ts'
import { fileKind } from './fs-ops.ts'
import type { FileHandleOps, FsOps } from './fs-ops.ts'
import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'

/** Name of the lock file inside a session directory. */
export const WRITER_LOCK_FILE_NAME = 'writer.lock'

/** Prefix of the claim files used while breaking a stale lock (`writer.lock.break-<token>`). */
const CLAIM_PREFIX = `${WRITER_LOCK_FILE_NAME}.break-`

/** Content of a lock file longer than this is not a lock record (and is read only this far). */
const MAX_LOCK_BYTES = 4096
/** Nested stale claims broken before giving up (each level needs a crash in the level below). */
const MAX_CLAIM_DEPTH = 3
/** Consecutive "the lock changed under us, look again" rounds before reporting the lock as held. */
const MAX_QUICK_RETRIES = 64
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
interface LockRecord {
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
interface BrokenLock {
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
}

const DEFAULT_OPTIONS: Omit<LockOptions, 'randomHex'> = { timeoutMs: 0, staleMs: 30_000, heartbeatMs: 5_000 }

function defaultRandomHex(byteCount: number): string {
  return randomBytes(byteCount).toString('hex')
}

function errnoOf(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = error.code
    return typeof code === 'string' ? code : undefined
  }
  return undefined
}

function sleep(milliseconds: number): Promise<void> {
  return new Promise((resolve) => {
    setTimeout(resolve, milliseconds)
  })
}

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
function currentBootId(): Promise<string | null> {
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
function selfProcessStart(): Promise<number | null> {
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
type Entry =
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

async function readEntry(fs: FsOps, path: string): Promise<Entry> {
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
        let length = 0
        while (length < buffer.length) {
          const count = await handle.read(buffer, length, buffer.length - length, length)
          if (count === 0) break
          length += count
        }
        bytes = buffer.subarray(0, length)
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
    symlink: stats.isSymbolicLink(),
    regular: stats.isFile(),
    record,
    token,
  }
}

interface Self {
  readonly pid: number
  readonly host: string
  readonly processStart: number | null
  readonly bootId: string | null
}

type Verdict = { readonly stale: boolean; readonly reason: string }

async function judge(
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

interface Context {
  readonly fs: FsOps
  readonly directory: string
  readonly lockPath: string
  /** The lock file relative to the store root (`<id>/writer.lock`), for `JsonlStoreError.file`. */
  readonly displayFile: string
  readonly self: Self
  readonly options: LockOptions
  readonly breakLive?: AcquireLockOptions['breakLive']
}

/** {@link judge}, then the caller's `breakLive` for a lock whose holder looks alive. */
async function judgeLock(context: Context, entry: Extract<Entry, { kind: 'present' }>): Promise<Verdict> {
  const verdict = await judge(entry, context.self, context.options.staleMs)
  if (verdict.stale || context.breakLive === undefined) return verdict
  const reason = context.breakLive({ token: entry.token, record: entry.record })
  return reason === null ? verdict : { stale: true, reason }
}

function recordBytes(record: LockRecord): Buffer {
  return Buffer.from(`${JSON.stringify(record)}\n`, 'utf8')
}

function mapCreateError(context: Context, error: unknown, path: string): unknown {
  const code = errnoOf(error)
  const relative = `${basename(context.directory)}/${basename(path)}`
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
    return new JsonlStoreError({
      code: JsonlErrorCode.ACCESS_DENIED,
      message: `Cannot create the writer lock in ${basename(context.directory)}: expected a writable session directory, found ${code}.`,
      file: relative,
      details: { op: 'create-lock', path: relative, cause: code },
      cause: error,
    })
  }
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new JsonlStoreError({
      code: JsonlErrorCode.DISK_FULL,
      message: `Cannot create the writer lock in ${basename(context.directory)}: the disk is full (${code}).`,
      file: relative,
      details: { op: 'create-lock', cause: code },
      cause: error,
    })
  }
  if (code === 'ENOENT') {
    return new JsonlStoreError({
      code: JsonlErrorCode.SESSION_NOT_FOUND,
      message: `Cannot create the writer lock: the session directory ${basename(context.directory)} does not exist.`,
      file: basename(context.directory),
      details: { op: 'create-lock', cause: code },
      cause: error,
    })
  }
  return error
}

type Published = { readonly kind: 'created'; readonly handle: FileHandleOps } | { readonly kind: 'exists' }

/**
 * Publishes `bytes` at `target` only if nothing is there: temp file (O_EXCL|O_NOFOLLOW,
 * 0600) then link(). Keeps the temp's handle open (it is the published inode).
 */
async function publishExclusive(context: Context, target: string, bytes: Buffer): Promise<Published> {
  const { fs, directory } = context
  for (let attempt = 0; attempt < MAX_TEMP_ATTEMPTS; attempt += 1) {
    const temp = join(directory, `.tmp-lock-${context.options.randomHex(8)}`)
    let handle: FileHandleOps
    try {
      handle = await fs.open(
        temp,
        constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
        0o600,
      )
    } catch (error) {
      // EEXIST: someone pre-created this random name (a file or a symlink); draw another (S7).
      if (errnoOf(error) === 'EEXIST') continue
      throw mapCreateError(context, error, target)
    }
    let published = false
    try {
      try {
        await handle.write(bytes, 0)
      } catch (error) {
        throw mapCreateError(context, error, target)
      }
      const stats = await handle.stat()
      if ((stats.mode & 0o777) !== 0o600) await handle.chmod(0o600)
      try {
        await fs.link(temp, target)
        published = true
      } catch (error) {
        const code = errnoOf(error)
        if (code === 'EEXIST') return { kind: 'exists' }
        // ENOENT: our temp vanished (a cleaner removed it); start again with a new one.
        if (code === 'ENOENT') continue
        throw mapCreateError(context, error, target)
      }
    } finally {
      if (!published) await handle.close().catch(() => undefined)
      await fs.unlink(temp).catch(() => undefined)
    }
    return { kind: 'created', handle }
  }
  throw new JsonlStoreError({
    code: JsonlErrorCode.ACCESS_DENIED,
    message: `Cannot create the writer lock in ${basename(directory)}: expected a free random temp name, found ${MAX_TEMP_ATTEMPTS} taken.`,
    file: context.displayFile,
    details: { op: 'create-lock', path: context.displayFile, cause: 'EEXIST' },
  })
}

function makeRecord(self: Self, nonce: string, acquiredAt: string): LockRecord {
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

type BreakOutcome =
  | { readonly kind: 'broken'; readonly info: BrokenLock }
  | { readonly kind: 'retry' }
  | { readonly kind: 'busy'; readonly entry: Extract<Entry, { kind: 'present' }> }
  | { readonly kind: 'live'; readonly entry: Extract<Entry, { kind: 'present' }> }

/** Removes the stale file with token `judged.token` at `target`, following the claim protocol (see the top of this file). */
async function breakStale(
  context: Context,
  stale: {
    readonly target: string
    readonly judged: Extract<Entry, { kind: 'present' }>
    readonly depth: number
  },
): Promise<BreakOutcome> {
  const { fs, directory, self, options } = context
  const { target, judged, depth } = stale
  const claimPath = join(directory, `${CLAIM_PREFIX}${judged.token}`)
  const claimRecord = makeRecord(self, options.randomHex(16), '')
  const claim = await publishExclusive(context, claimPath, recordBytes(claimRecord))
  if (claim.kind === 'exists') {
    const existing = await readEntry(fs, claimPath)
    if (existing.kind === 'missing') return { kind: 'retry' }
    const verdict = await judge(existing, self, options.staleMs)
    if (!verdict.stale || depth >= MAX_CLAIM_DEPTH) return { kind: 'busy', entry: existing }
    const outcome = await breakStale(context, { target: claimPath, judged: existing, depth: depth + 1 })
    return outcome.kind === 'broken' ? { kind: 'retry' } : outcome
  }
  await claim.handle.close()
  try {
    // Under the claim: is the same file still there, and still stale?
    const fresh = await readEntry(fs, target)
    if (fresh.kind === 'missing' || fresh.token !== judged.token) return { kind: 'retry' }
    const verdict = depth === 0 ? await judgeLock(context, fresh) : await judge(fresh, self, options.staleMs)
    if (!verdict.stale) return { kind: 'live', entry: fresh }
    const moved = join(directory, `.tmp-lockbreak-${options.randomHex(8)}`)
    await fs.rename(target, moved)
    const check = await readEntry(fs, moved)
    if (check.kind === 'present' && check.token !== judged.token) {
      // Only possible if something outside this protocol replaced the file: put it back.
      await fs.link(moved, target).catch(() => undefined)
      await fs.unlink(moved).catch(() => undefined)
      return { kind: 'retry' }
    }
    await fs.unlink(moved).catch(() => undefined)
    return {
      kind: 'broken',
      info: {
        holderPid: fresh.record?.pid ?? null,
        holderHost: fresh.record?.host ?? null,
        reason: verdict.reason,
      },
    }
  } finally {
    await fs.unlink(claimPath).catch(() => undefined)
  }
}

function lockedError(
  context: Context,
  entry: Extract<Entry, { kind: 'present' }> | undefined,
  reason: string,
) {
  const record = entry?.record
  const holder =
    record === undefined
      ? 'an unknown holder'
      : `pid ${record.pid} on ${JSON.stringify(record.host)} since ${record.acquiredAt}`
  return new JsonlStoreError({
    code: JsonlErrorCode.SESSION_LOCKED,
    message: `Session ${basename(context.directory)} is locked for writing: expected a free ${WRITER_LOCK_FILE_NAME}, found one held by ${holder}.`,
    file: context.displayFile,
    details: {
      holderPid: record?.pid ?? null,
      holderHost: record?.host ?? null,
      since: record?.acquiredAt ?? null,
      lockFile: context.lockPath,
      reason,
    },
  })
}

function symlinkError(context: Context): JsonlStoreError {
  return new JsonlStoreError({
    code: JsonlErrorCode.SYMLINK_REFUSED,
    message: `The writer lock of session ${basename(context.directory)} is a symbolic link; expected a regular file, and it is never followed.`,
    file: context.displayFile,
    details: { which: 'lock', lockFile: context.lockPath },
  })
}

/**
 * Deletes what crashed lockers left behind, once we hold the lock: claims for tokens that
 * are no longer at `writer.lock` (they grant no right, see the top of this file) and the
 * lock protocol's temp files (`.tmp-lock-*`, `.tmp-lockbreak-*`). Removing a contender's
 * in-flight temp is harmless: its link() then fails with ENOENT and it draws a new name,
 * and its link() could only have failed with EEXIST anyway while we hold the lock.
 */
async function removeLeftovers(context: Context, ownNonce: string): Promise<void> {
  let names: string[]
  try {
    names = await context.fs.readdir(context.directory)
  } catch {
    return
  }
  for (const name of names) {
    const claim = name.startsWith(CLAIM_PREFIX) && name !== `${CLAIM_PREFIX}${ownNonce}`
    if (claim || name.startsWith('.tmp-lock')) {
      await context.fs.unlink(join(context.directory, name)).catch(() => undefined)
    }
  }
}

function createHeldLock(
  context: Context,
  state: { record: LockRecord; handle: FileHandleOps; broken: readonly BrokenLock[] },
): WriterLock {
  const { fs, lockPath, options } = context
  let record = state.record
  let released = false
  let releasing: Promise<void> | undefined
  let beating: Promise<void> | undefined
  let writtenLength = recordBytes(record).length
  /** The device and inode of the lock file we hold open (read once), or null when fstat failed. */
  let ownIdentity: Promise<{ readonly dev: number; readonly ino: number } | null> | undefined

  const beat = async (): Promise<void> => {
    record = { ...record, heartbeatAt: new Date().toISOString() }
    const bytes = recordBytes(record)
    // Written through our own descriptor: if the lock was broken, this lands in the orphaned inode.
    await state.handle.write(bytes, 0)
    if (bytes.length < writtenLength) await state.handle.truncate(bytes.length)
    writtenLength = bytes.length
  }
  const timer =
    options.heartbeatMs > 0
      ? setInterval(() => {
          if (released || beating !== undefined) return
          // A failed heartbeat only makes the lock look stale to other hosts sooner.
          beating = beat()
            .catch(() => undefined)
            .finally(() => {
              beating = undefined
            })
        }, options.heartbeatMs)
      : undefined
  timer?.unref()

  const lost = (found: string): JsonlStoreError =>
    new JsonlStoreError({
      code: JsonlErrorCode.LOCK_LOST,
      message: `The writer lock of session ${basename(context.directory)} is no longer held: expected nonce ${record.nonce} in ${WRITER_LOCK_FILE_NAME}, found ${found}.`,
      file: context.displayFile,
      details: { lockFile: lockPath, nonce: record.nonce, found },
    })

  return {
    nonce: record.nonce,
    file: lockPath,
    brokenStaleLocks: state.broken,
    async assertHeld() {
      if (released) throw lost('it released')
      // Fast path, one lstat: the path still names the inode we created and hold open. An open
      // descriptor keeps its inode from being freed and reused, and a breaker never writes into
      // the holder's inode (it renames a new file over the name), so this inode still holds our
      // record. Anything else (another inode, a symlink, no file) gets the full read below,
      // which names what it found.
      ownIdentity ??= state.handle.stat().then(
        (stats) => ({ dev: stats.dev, ino: stats.ino }),
        () => null,
      )
      const [own, named] = await Promise.all([ownIdentity, fs.lstat(lockPath).catch(() => null)])
      if (
        own !== null &&
        named !== null &&
        named.isFile() &&
        named.ino === own.ino &&
        named.dev === own.dev
      ) {
        return
      }
      const entry = await readEntry(fs, lockPath)
      if (entry.kind === 'missing') throw lost('no lock file')
      if (entry.symlink) throw lost('a symbolic link')
      if (entry.token !== record.nonce) {
        throw lost(entry.record === undefined ? 'unreadable content' : `nonce ${entry.record.nonce}`)
      }
    },
    release() {
      if (released) return Promise.resolve()
      if (timer !== undefined) clearInterval(timer)
      // Retryable: a failed release leaves the lock held and the next call tries again.
      releasing ??= (async () => {
        await beating
        await releaseOwn(context, record.nonce)
        released = true
        await state.handle.close().catch(() => undefined)
      })().finally(() => {
        releasing = undefined
      })
      return releasing
    },
  }
}

function isDiskFull(error: unknown): boolean {
  if (JsonlStoreError.is(error)) return error.code === JsonlErrorCode.DISK_FULL
  const code = errnoOf(error)
  return code === 'ENOSPC' || code === 'EDQUOT' || code === 'EFBIG'
}

/**
 * Claims our own token with an EMPTY claim file (O_CREAT|O_EXCL, no data written): what a
 * release falls back to on a full disk, where the usual claim (a record written to a temp
 * file) cannot be written. An empty claim is judged by its mtime, like any unreadable one.
 */
async function emptyClaim(context: Context, claimPath: string): Promise<Published> {
  try {
    const handle = await context.fs.open(
      claimPath,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    )
    return { kind: 'created', handle }
  } catch (error) {
    if (errnoOf(error) === 'EEXIST') return { kind: 'exists' }
    throw error
  }
}

/**
 * Removes `writer.lock` if it still holds `nonce`, under the claim protocol (see the top of
 * this file). Needs no free space: on a full disk (ENOSPC, EDQUOT) the claim is an empty
 * file, and if even that cannot be created, the lock is moved aside and checked without a
 * claim (safe for a live holder: a breaker only claims a lock it judged stale, and a live
 * holder on this host never is).
 */
async function releaseOwn(context: Context, nonce: string): Promise<void> {
  const { fs, lockPath, options } = context
  // Same invariant as breaking: claim our own token before removing the name.
  const claimPath = join(context.directory, `${CLAIM_PREFIX}${nonce}`)
  let claim: Published | null
  try {
    claim = await publishExclusive(
      context,
      claimPath,
      recordBytes(makeRecord(context.self, options.randomHex(16), '')),
    )
  } catch (error) {
    if (!isDiskFull(error)) throw error
    try {
      claim = await emptyClaim(context, claimPath)
    } catch (again) {
      if (!isDiskFull(again)) throw again
      claim = null
    }
  }
  // EEXIST: someone judged us stale and is breaking the lock; it is theirs to remove.
  if (claim?.kind === 'exists') return
  await claim?.handle.close().catch(() => undefined)
  try {
    const entry = await readEntry(fs, lockPath)
    if (entry.kind !== 'present' || entry.token !== nonce) return
    if (claim !== null) {
      await fs.unlink(lockPath)
      return
    }
    const moved = join(context.directory, `.tmp-lockbreak-${options.randomHex(8)}`)
    await fs.rename(lockPath, moved)
    const check = await readEntry(fs, moved)
    if (check.kind === 'present' && check.token !== nonce)
      await fs.link(moved, lockPath).catch(() => undefined)
    await fs.unlink(moved)
  } finally {
    if (claim !== null) await fs.unlink(claimPath).catch(() => undefined)
  }
}

/**
 * Takes the cross-process writer lock of a session directory.
 *
 * **Details**: creates `writer.lock` exclusively (temp + link, 0600, never through a
 * symlink) holding pid, host, process start time, boot id, a fresh nonce and times; a
 * heartbeat (unref'd timer) refreshes `heartbeatAt`. A lock whose holder is dead on this
 * host, or whose pid now belongs to a process with another start time, or one from another
 * host without a heartbeat for `staleMs`, is broken automatically; concurrent breakers
 * cannot both win (see the protocol at the top of the source file).
 *
 * **Gotchas**: the same process asking twice gets SESSION_LOCKED, like another process.
 * Call `assertHeld()` before acknowledging writes and `release()` when done.
 *
 * @param fs - The file-system seam (every call goes through it).
 * @param sessionDirectory - The session's directory (must exist).
 * @param options - Waiting and staleness settings; see {@link LockOptions}.
 * @returns The held lock.
 * @throws {@link JsonlStoreError} with code `SESSION_LOCKED` (details holderPid, holderHost, since,
 *   lockFile) when a live holder keeps it past `timeoutMs`; `SYMLINK_REFUSED` when `writer.lock`
 *   is a symbolic link; `ACCESS_DENIED` (details op 'create-lock') when the directory is not
 *   writable; `SESSION_NOT_FOUND` when the directory does not exist.
 */
export async function acquireWriterLock(
  fs: FsOps,
  sessionDirectory: string,
  options: AcquireLockOptions = {},
): Promise<WriterLock> {
  const settings: LockOptions = {
    timeoutMs: options.timeoutMs ?? DEFAULT_OPTIONS.timeoutMs,
    staleMs: options.staleMs ?? DEFAULT_OPTIONS.staleMs,
    heartbeatMs: options.heartbeatMs ?? DEFAULT_OPTIONS.heartbeatMs,
    randomHex: options.randomHex ?? defaultRandomHex,
  }
  const [processStart, bootId] = await Promise.all([selfProcessStart(), currentBootId()])
  const self: Self = { pid: process.pid, host: hostname(), processStart, bootId }
  const lockPath = join(sessionDirectory, WRITER_LOCK_FILE_NAME)
  const context: Context = {
    fs,
    directory: sessionDirectory,
    lockPath,
    displayFile: `${basename(sessionDirectory)}/${WRITER_LOCK_FILE_NAME}`,
    self,
    options: settings,
    breakLive: options.breakLive,
  }
  const nonce = settings.randomHex(16)
  const deadline = performance.now() + Math.max(0, settings.timeoutMs)
  const broken: BrokenLock[] = []
  let quickRetries = 0
  let acquiredAt = ''
  for (;;) {
    const record = makeRecord(self, nonce, acquiredAt)
    acquiredAt = record.acquiredAt
    const published = await publishExclusive(context, lockPath, recordBytes(record))
    if (published.kind === 'created') {
      await removeLeftovers(context, nonce)
      return createHeldLock(context, { record, handle: published.handle, broken })
    }
    const entry = await readEntry(fs, lockPath)
    let holder: Extract<Entry, { kind: 'present' }> | undefined
    let reason: string
    if (entry.kind === 'missing') {
      reason = 'released while we looked'
    } else if (entry.symlink) {
      throw symlinkError(context)
    } else if (!entry.regular) {
      // A FIFO, socket or device at the lock name: never opened (it could block), never removed.
      throw notRegularFile({
        file: context.displayFile,
        which: 'lock',
        kind: fileKind(entry.stats),
        op: 'take the writer lock',
      })
    } else {
      const verdict = await judgeLock(context, entry)
      holder = entry
      reason = verdict.reason
      if (verdict.stale) {
        const outcome = await breakStale(context, { target: lockPath, judged: entry, depth: 0 })
        if (outcome.kind === 'broken') broken.push(outcome.info)
        if (outcome.kind === 'busy') reason = 'another process is breaking a stale lock'
        if (outcome.kind === 'live') {
          holder = outcome.entry
          reason = 'the holder came back to life'
        }
        if (outcome.kind === 'broken' || outcome.kind === 'retry') holder = undefined
      }
    }
    if (holder === undefined && quickRetries < MAX_QUICK_RETRIES) {
      quickRetries += 1
      continue
    }
    const remaining = deadline - performance.now()
    if (remaining <= 0) throw lockedError(context, holder, reason)
    quickRetries = 0
    await sleep(Math.min(remaining, 20 + Math.random() * 30))
  }
}
