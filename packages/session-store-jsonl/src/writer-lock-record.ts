/*
 * The lock record and the staleness judge: who holds a lock (pid, host, process start, boot
 * id, nonce), read without following a symlink, and whether that holder is gone.
 */
import { constants } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createHash } from 'node:crypto'
import { uptime } from 'node:os'
import type { Stats } from 'node:fs'

import { errnoOf } from './fs-errors.ts'
import { readFully } from './fs-ops.ts'
import type { FileHandleOps, FsOps } from './fs-ops.ts'
import type { LockRecord, Entry, Self, Verdict, Context } from './writer-lock-types.ts'
import { MAX_LOCK_BYTES, BOOT_TIME_SLACK_MS } from './writer-lock-types.ts'

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
    symlink: stats.isSymbolicLink(),
    regular: stats.isFile(),
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
