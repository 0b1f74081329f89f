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
import type { Stats } from 'node:fs'
import { hostname } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { basename, join } from 'node:path'

import { DISK_FULL_CODES, errnoOf, notRegularFile } from './fs-errors.ts'
import { fileKind, namesFile } from './fs-ops.ts'
import type { FileHandleOps, FsOps } from './fs-ops.ts'
import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'
import { createExclusiveFile, defaultRandomHex } from './temp-file.ts'
import {
  CLAIM_PREFIX,
  currentBootId,
  judge,
  judgeLock,
  MAX_CLAIM_DEPTH,
  MAX_QUICK_RETRIES,
  makeRecord,
  publishExclusive,
  readEntry,
  recordBytes,
  removeLeftovers,
  selfProcessStart,
  symlinkError,
  WRITER_LOCK_FILE_NAME,
} from './writer-lock-record.ts'
import type {
  AcquireLockOptions,
  BrokenLock,
  Context,
  Entry,
  LockOptions,
  LockRecord,
  Published,
  Self,
  WriterLock,
} from './writer-lock-record.ts'

export { WRITER_LOCK_FILE_NAME } from './writer-lock-record.ts'
export type { AcquireLockOptions, LockOptions, WriterLock } from './writer-lock-record.ts'

const DEFAULT_OPTIONS: Omit<LockOptions, 'randomHex'> = { timeoutMs: 0, staleMs: 30_000, heartbeatMs: 5_000 }

type BreakOutcome =
  | { readonly kind: 'broken'; readonly info: BrokenLock }
  | { readonly kind: 'retry' }
  | { readonly kind: 'busy'; readonly entry: Extract<Entry, { kind: 'present' }> }
  | { readonly kind: 'live'; readonly entry: Extract<Entry, { kind: 'present' }> }

/**
 * Renames `target` aside (`.tmp-lockbreak-<hex>`), re-reads the moved file and unlinks it when
 * it carries `token`; a file with another token (only possible if something outside the
 * protocol replaced it) is linked back.
 *
 * @returns Whether the file with `token` was removed.
 */
async function removeMovedAside(context: Context, target: string, token: string): Promise<boolean> {
  const { fs } = context
  const moved = join(context.directory, `.tmp-lockbreak-${context.options.randomHex(8)}`)
  await fs.rename(target, moved)
  const check = await readEntry(fs, moved)
  const replaced = check.kind === 'present' && check.token !== token
  if (replaced) await fs.link(moved, target).catch(() => undefined)
  await fs.unlink(moved).catch(() => undefined)
  return !replaced
}

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
    if (!(await removeMovedAside(context, target, judged.token))) return { kind: 'retry' }
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
    } else if (entry.stats.isSymbolicLink()) {
      throw symlinkError(context)
    } else if (!entry.stats.isFile()) {
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

function createHeldLock(
  context: Context,
  state: { record: LockRecord; handle: FileHandleOps; broken: readonly BrokenLock[] },
): WriterLock {
  const { fs, lockPath, options } = context
  let record = state.record
  let released = false
  let releasing: Promise<void> | undefined
  let beating: Promise<void> | undefined
  /** The `fstat` of the lock file we hold open (read once: its device and inode), or null when it failed. */
  let ownIdentity: Promise<Stats | null> | undefined
  /** Set by `forget`: the descriptor is closed, so its inode may be reused and no longer proves anything. */
  let forgotten = false

  const beat = async (): Promise<void> => {
    // Only heartbeatAt changes, and an ISO time keeps its length: the record is overwritten in place.
    record = { ...record, heartbeatAt: new Date().toISOString() }
    // Written through our own descriptor: if the lock was broken, this lands in the orphaned inode.
    await state.handle.write(recordBytes(record), 0)
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
      if (!forgotten) {
        ownIdentity ??= state.handle.stat().catch(() => null)
        const own = await ownIdentity
        if (own !== null && (await namesFile(fs, lockPath, own))) return
      }
      const entry = await readEntry(fs, lockPath)
      if (entry.kind === 'missing') throw lost('no lock file')
      if (entry.stats.isSymbolicLink()) throw lost('a symbolic link')
      if (entry.token !== record.nonce) {
        throw lost(entry.record === undefined ? 'unreadable content' : `nonce ${entry.record.nonce}`)
      }
    },
    async forget() {
      if (timer !== undefined) clearInterval(timer)
      forgotten = true
      await beating
      await state.handle.close().catch(() => undefined)
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
  return JsonlStoreError.is(error)
    ? error.code === JsonlErrorCode.DISK_FULL
    : DISK_FULL_CODES.has(errnoOf(error) ?? '')
}

/**
 * Claims our own token with an EMPTY claim file (created exclusively, no data written): what a
 * release falls back to on a full disk, where the usual claim (a record written to a temp
 * file) cannot be written. An empty claim is judged by its mtime, like any unreadable one.
 */
async function emptyClaim(context: Context, claimPath: string): Promise<Published> {
  const created = await createExclusiveFile(context.fs, {
    directory: context.directory,
    name: () => basename(claimPath),
    attempts: 1,
  })
  return created === null ? { kind: 'exists' } : { kind: 'created', handle: created.handle }
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
    await removeMovedAside(context, lockPath, nonce)
  } finally {
    if (claim !== null) await fs.unlink(claimPath).catch(() => undefined)
  }
}
