import { spawnSync } from 'node:child_process'
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs'
import { hostname, tmpdir, uptime } from 'node:os'
import { join } from 'node:path'

import { afterAll, afterEach, describe, expect, it } from 'vitest'

import { waitUntil } from '../../../tooling/test-time.ts'
import { nodeFsOps } from '../src/fs-ops.ts'
import type { FsOps } from '../src/fs-ops.ts'
import { JsonlStoreError } from '../src/jsonl-store-error.ts'
import { acquireWriterLock, WRITER_LOCK_FILE_NAME } from '../src/writer-lock.ts'
import type { WriterLock } from '../src/writer-lock.ts'
import { spawnBundledChild } from './support/children.ts'
import { createFaultFs } from './support/fault-fs.ts'
import type { Child } from './support/children.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-lock-'))
let counter = 0
const held: WriterLock[] = []
const children: Child[] = []

function sessionDirectory(): string {
  counter += 1
  const directory = join(scratch, `s${counter}`)
  mkdirSync(directory, { mode: 0o700 })
  return directory
}

async function take(
  directory: string,
  options: Parameters<typeof acquireWriterLock>[2] = {},
): Promise<WriterLock> {
  const lock = await acquireWriterLock(nodeFsOps, directory, { heartbeatMs: 0, ...options })
  held.push(lock)
  return lock
}

async function rejection(promise: Promise<unknown>): Promise<JsonlStoreError> {
  try {
    await promise
  } catch (error) {
    if (JsonlStoreError.is(error)) return error
    throw error
  }
  throw new Error('expected a rejection')
}

function lockContent(directory: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(directory, WRITER_LOCK_FILE_NAME), 'utf8')) as Record<string, unknown>
}

/** starttime of a live process, as the lock records it. */
function procStart(pid: number): number {
  const text = readFileSync(`/proc/${pid}/stat`, 'latin1')
  return Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[19])
}

/** A pid that belonged to a process which has exited and been reaped. */
function deadPid(): number {
  const result = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
    encoding: 'utf8',
  })
  return Number(result.stdout)
}

function fakeLock(directory: string, fields: Record<string, unknown>, mtimeAgeMs = 0): void {
  const now = new Date().toISOString()
  const record = {
    pid: 1,
    host: hostname(),
    processStart: null,
    bootId: null,
    nonce: 'ab'.repeat(16),
    acquiredAt: now,
    heartbeatAt: now,
    ...fields,
  }
  const path = join(directory, WRITER_LOCK_FILE_NAME)
  writeFileSync(path, `${JSON.stringify(record)}\n`, { mode: 0o600 })
  if (mtimeAgeMs > 0) {
    const then = (Date.now() - mtimeAgeMs) / 1000
    utimesSync(path, then, then)
  }
}

async function lockHolder(): Promise<Child> {
  const child = await spawnBundledChild('lock-holder.ts')
  children.push(child)
  await child.waitForLine((line) => line.includes('"ready"'))
  return child
}

async function command(child: Child, value: Record<string, unknown>): Promise<Record<string, unknown>> {
  const from = child.lines.length
  child.send(JSON.stringify(value))
  const line = await child.waitForLine(() => true, { from })
  return JSON.parse(line) as Record<string, unknown>
}

afterEach(async () => {
  for (const lock of held.splice(0)) await lock.release()
})

afterAll(async () => {
  for (const child of children) {
    child.process.kill('SIGKILL')
    await child.exited
  }
  rmSync(scratch, { recursive: true, force: true })
})

describe('acquireWriterLock', () => {
  it('writes writer.lock 0600 with pid, host, process start, nonce and times, and removes it on release', async () => {
    const directory = sessionDirectory()
    const lock = await take(directory)
    const content = lockContent(directory)
    expect(content).toMatchObject({ pid: process.pid, host: hostname(), nonce: lock.nonce })
    expect(content['processStart']).toBe(procStart(process.pid))
    expect(lock.nonce).toMatch(/^[0-9a-f]{32}$/)
    expect(typeof content['acquiredAt']).toBe('string')
    expect(statSync(lock.file).mode & 0o777).toBe(0o600)
    expect(readdirSync(directory)).toEqual([WRITER_LOCK_FILE_NAME])
    await lock.release()
    await lock.release()
    expect(readdirSync(directory)).toEqual([])
  })

  it('W3: the same process asking twice gets SESSION_LOCKED naming itself, and the first holder is unaffected', async () => {
    const directory = sessionDirectory()
    const first = await take(directory)
    const error = await rejection(take(directory))
    expect(error.code).toBe('SESSION_LOCKED')
    expect(error.details).toMatchObject({
      holderPid: process.pid,
      holderHost: hostname(),
      since: lockContent(directory)['acquiredAt'],
      lockFile: join(directory, WRITER_LOCK_FILE_NAME),
    })
    expect(error.file).toBe(`${directory.split('/').pop()}/writer.lock`)
    await expect(first.assertHeld()).resolves.toBeUndefined()
    expect(lockContent(directory)['nonce']).toBe(first.nonce)
  })

  it('W3: a second process gets SESSION_LOCKED naming the holder; after release it acquires', async () => {
    const directory = sessionDirectory()
    const [holder, waiter] = await Promise.all([lockHolder(), lockHolder()])
    const acquired = await command(holder, { cmd: 'acquire', dir: directory })
    expect(acquired['event']).toBe('acquired')
    const refused = await command(waiter, { cmd: 'acquire', dir: directory })
    expect(refused).toMatchObject({
      event: 'error',
      code: 'SESSION_LOCKED',
      details: {
        holderPid: holder.pid,
        holderHost: hostname(),
        lockFile: join(directory, WRITER_LOCK_FILE_NAME),
      },
    })
    expect(await command(holder, { cmd: 'assert' })).toEqual({ event: 'held' })
    // With a timeout, the waiter gets the lock once the holder lets go.
    const waiting = command(waiter, { cmd: 'acquire', dir: directory, timeoutMs: 20_000 })
    expect(await command(holder, { cmd: 'release' })).toEqual({ event: 'released' })
    expect(await waiting).toMatchObject({ event: 'acquired', broken: [] })
    expect(await command(holder, { cmd: 'acquire', dir: directory })).toMatchObject({
      code: 'SESSION_LOCKED',
      details: { holderPid: waiter.pid },
    })
    await command(waiter, { cmd: 'release' })
  })

  it('W4(a): a lock whose holder was SIGKILLed is taken over automatically', async () => {
    const directory = sessionDirectory()
    const holder = await lockHolder()
    expect(await command(holder, { cmd: 'acquire', dir: directory })).toMatchObject({ event: 'acquired' })
    holder.process.kill('SIGKILL')
    await holder.exited
    expect(lockContent(directory)['pid']).toBe(holder.pid)
    const lock = await take(directory)
    expect(lock.brokenStaleLocks).toEqual([
      { holderPid: holder.pid, holderHost: hostname(), reason: `holder pid ${holder.pid} is dead` },
    ])
    expect(lockContent(directory)['nonce']).toBe(lock.nonce)
    expect(readdirSync(directory).sort()).toEqual([WRITER_LOCK_FILE_NAME])
  })

  it('W4(b): a live pid with another start time is a reused pid, so its lock is stale', async () => {
    const directory = sessionDirectory()
    const child = await lockHolder()
    fakeLock(directory, { pid: child.pid, processStart: procStart(child.pid) - 1 })
    const lock = await take(directory)
    expect(lock.brokenStaleLocks[0]?.reason).toBe(`pid ${child.pid} was reused by a process started later`)
    await lock.release()
    // Same pid and the right start time: held.
    fakeLock(directory, { pid: child.pid, processStart: procStart(child.pid) })
    expect((await rejection(take(directory))).details).toMatchObject({ holderPid: child.pid })
    // Our own pid with another start time (a container restart reusing pids): stale.
    fakeLock(directory, { pid: process.pid, processStart: procStart(process.pid) + 7 })
    expect((await take(directory)).brokenStaleLocks).toHaveLength(1)
  })

  it('W4(b): a lock from an earlier boot is stale even if its pid is alive now', async () => {
    const directory = sessionDirectory()
    fakeLock(directory, { pid: process.pid, bootId: '00000000-0000-0000-0000-000000000000' })
    const lock = await take(directory)
    expect(lock.brokenStaleLocks[0]?.reason).toBe('holder ran before the last reboot')
  })

  it('W4(c): a lock naming another host is not broken on pid grounds, only after staleMs without heartbeat', async () => {
    const directory = sessionDirectory()
    fakeLock(directory, { pid: deadPid(), host: 'build-box-7' })
    const error = await rejection(take(directory, { staleMs: 60_000 }))
    expect(error.code).toBe('SESSION_LOCKED')
    expect(error.details).toMatchObject({ holderHost: 'build-box-7' })
    // The heartbeat is old but the file was just touched: still held (the later of the two counts).
    const old = new Date(Date.now() - 120_000).toISOString()
    fakeLock(directory, { host: 'build-box-7', heartbeatAt: old })
    expect((await rejection(take(directory, { staleMs: 60_000 }))).code).toBe('SESSION_LOCKED')
    // Both old: stale.
    fakeLock(directory, { host: 'build-box-7', heartbeatAt: old }, 120_000)
    const lock = await take(directory, { staleMs: 60_000 })
    expect(lock.brokenStaleLocks[0]).toMatchObject({ holderHost: 'build-box-7' })
  })

  it('W4(d): concurrent breakers of one stale lock in one process: exactly one acquires (100 rounds)', async () => {
    for (let round = 0; round < 100; round += 1) {
      const directory = sessionDirectory()
      fakeLock(directory, { pid: process.pid, processStart: -1 })
      const results = await Promise.allSettled([0, 1, 2, 3].map(() => take(directory)))
      const winners = results.filter((result) => result.status === 'fulfilled')
      expect(winners).toHaveLength(1)
      for (const result of results) {
        if (result.status === 'rejected')
          expect(JsonlStoreError.is(result.reason) && result.reason.code).toBe('SESSION_LOCKED')
      }
      const winner = (winners[0] as PromiseFulfilledResult<WriterLock>).value
      expect(lockContent(directory)['nonce']).toBe(winner.nonce)
      await winner.assertHeld()
      await winner.release()
      expect(readdirSync(directory)).toEqual([])
    }
  })

  it('W4(d): two processes breaking the same stale lock at once: exactly one acquires (10 rounds)', async () => {
    const contenders = await Promise.all([lockHolder(), lockHolder()])
    const dead = deadPid()
    for (let round = 0; round < 10; round += 1) {
      const directory = sessionDirectory()
      fakeLock(directory, { pid: dead })
      const results = await Promise.all(
        contenders.map((child) => command(child, { cmd: 'acquire', dir: directory })),
      )
      const winners = results.filter((result) => result['event'] === 'acquired')
      expect(winners).toHaveLength(1)
      expect(results.filter((result) => result['code'] === 'SESSION_LOCKED')).toHaveLength(1)
      expect(lockContent(directory)['nonce']).toBe(winners[0]!['nonce'])
      const winner = contenders[results.indexOf(winners[0]!)]!
      expect(await command(winner, { cmd: 'assert' })).toEqual({ event: 'held' })
      await command(winner, { cmd: 'release' })
    }
  })

  it('W4: a stale break claim left by a crashed breaker is broken in turn', async () => {
    const directory = sessionDirectory()
    const staleNonce = 'cd'.repeat(16)
    fakeLock(directory, { pid: deadPid(), nonce: staleNonce })
    const claim = {
      pid: deadPid(),
      host: hostname(),
      processStart: null,
      bootId: null,
      nonce: 'ef'.repeat(16),
      acquiredAt: '',
      heartbeatAt: '',
    }
    writeFileSync(join(directory, `writer.lock.break-${staleNonce}`), JSON.stringify(claim))
    const lock = await take(directory)
    expect(lock.brokenStaleLocks).toHaveLength(1)
    expect(readdirSync(directory)).toEqual([WRITER_LOCK_FILE_NAME])
  })

  it('W4: a live breaker claim makes others wait instead of breaking twice', async () => {
    const directory = sessionDirectory()
    const staleNonce = 'cd'.repeat(16)
    fakeLock(directory, { pid: deadPid(), nonce: staleNonce })
    const now = new Date().toISOString()
    const claim = {
      pid: process.pid,
      host: hostname(),
      processStart: null,
      bootId: null,
      nonce: 'ef'.repeat(16),
      acquiredAt: now,
      heartbeatAt: now,
    }
    writeFileSync(join(directory, `writer.lock.break-${staleNonce}`), JSON.stringify(claim))
    const error = await rejection(take(directory))
    expect(error.code).toBe('SESSION_LOCKED')
    expect(error.details['reason']).toBe('another process is breaking a stale lock')
    expect(lockContent(directory)['nonce']).toBe(staleNonce)
  })

  it('assertHeld rejects with LOCK_LOST once the lock file is removed or replaced', async () => {
    const directory = sessionDirectory()
    const lock = await take(directory)
    rmSync(lock.file)
    expect((await rejection(lock.assertHeld())).code).toBe('LOCK_LOST')
    fakeLock(directory, { pid: process.pid })
    const error = await rejection(lock.assertHeld())
    expect(error.code).toBe('LOCK_LOST')
    expect(error.details['found']).toBe(`nonce ${'ab'.repeat(16)}`)
    // release() never removes a lock that is not ours.
    await lock.release()
    expect(lockContent(directory)['nonce']).toBe('ab'.repeat(16))
    expect((await rejection(lock.assertHeld())).code).toBe('LOCK_LOST')
  })

  it('assertHeld is one lstat while the path names the inode the holder keeps open, and reads the file once it does not', async () => {
    const directory = sessionDirectory()
    const calls: string[] = []
    const counting: FsOps = {
      ...nodeFsOps,
      lstat: (path) => {
        calls.push(`lstat ${path.endsWith(WRITER_LOCK_FILE_NAME) ? 'lock' : path}`)
        return nodeFsOps.lstat(path)
      },
      open: (path, flags, mode) => {
        calls.push(`open ${path.endsWith(WRITER_LOCK_FILE_NAME) ? 'lock' : path}`)
        return nodeFsOps.open(path, flags, mode)
      },
    }
    const lock = await acquireWriterLock(counting, directory, { heartbeatMs: 0 })
    held.push(lock)
    await lock.assertHeld()
    calls.length = 0
    await lock.assertHeld()
    expect(calls).toEqual(['lstat lock'])
    // Another file renamed over the name (same nonce even): a new inode, so the record is read and judged.
    const content = readFileSync(lock.file)
    writeFileSync(`${lock.file}.other`, content)
    renameSync(`${lock.file}.other`, lock.file)
    calls.length = 0
    await lock.assertHeld()
    expect(calls).toContain('open lock')
    // A record with another nonce at a new inode is LOCK_LOST, naming it.
    fakeLock(directory, { pid: process.pid })
    const error = await rejection(lock.assertHeld())
    expect(error.code).toBe('LOCK_LOST')
    expect(error.details['found']).toBe(`nonce ${'ab'.repeat(16)}`)
  })

  it('refreshes heartbeatAt on its (unref) timer', async () => {
    const directory = sessionDirectory()
    const lock = await acquireWriterLock(nodeFsOps, directory, { heartbeatMs: 10 })
    held.push(lock)
    const first = lockContent(directory)['heartbeatAt']
    await waitUntil('a heartbeat', () => lockContent(directory)['heartbeatAt'] !== first)
    const content = lockContent(directory)
    expect(content['heartbeatAt']).not.toBe(first)
    expect(content['nonce']).toBe(lock.nonce)
    await lock.assertHeld()
  })

  it('S5: a symlink at writer.lock is refused, never followed, written or removed', async () => {
    const directory = sessionDirectory()
    const victim = join(scratch, `victim-${counter}`)
    writeFileSync(victim, 'precious')
    symlinkSync(victim, join(directory, WRITER_LOCK_FILE_NAME))
    const error = await rejection(take(directory))
    expect(error.code).toBe('SYMLINK_REFUSED')
    expect(error.details['which']).toBe('lock')
    expect(readFileSync(victim, 'utf8')).toBe('precious')
    expect(lstatSync(join(directory, WRITER_LOCK_FILE_NAME)).isSymbolicLink()).toBe(true)
    expect(readdirSync(directory)).toEqual([WRITER_LOCK_FILE_NAME])
    // A dangling symlink as well.
    const dangling = sessionDirectory()
    symlinkSync(join(scratch, 'nowhere'), join(dangling, WRITER_LOCK_FILE_NAME))
    expect((await rejection(take(dangling))).code).toBe('SYMLINK_REFUSED')
    expect(existsSync(join(scratch, 'nowhere'))).toBe(false)
  })

  it('S7: a pre-created file under the lock name is a lock: held while fresh, stale when old, never written', async () => {
    const directory = sessionDirectory()
    const path = join(directory, WRITER_LOCK_FILE_NAME)
    writeFileSync(path, 'not a lock record')
    const error = await rejection(take(directory))
    expect(error.code).toBe('SESSION_LOCKED')
    expect(error.details).toMatchObject({ holderPid: null, holderHost: null })
    expect(readFileSync(path, 'utf8')).toBe('not a lock record')
    const then = (Date.now() - 60_000) / 1000
    utimesSync(path, then, then)
    const lock = await take(directory)
    expect(lock.brokenStaleLocks).toEqual([
      { holderPid: null, holderHost: null, reason: expect.stringContaining('unreadable') },
    ])
  })

  it('W2: an unreadable lock written before the last boot (a power loss left it empty) is stale at once', async () => {
    const directory = sessionDirectory()
    const path = join(directory, WRITER_LOCK_FILE_NAME)
    writeFileSync(path, '')
    const beforeBoot = (Date.now() - uptime() * 1000 - 60_000) / 1000
    utimesSync(path, beforeBoot, beforeBoot)
    const lock = await take(directory, { staleMs: 3_600_000 })
    expect(lock.brokenStaleLocks[0]?.reason).toBe('unreadable lock content, written before the last boot')
  })

  it('S7: a hostile nonce is never used as a file name', async () => {
    const directory = sessionDirectory()
    fakeLock(directory, { pid: deadPid(), nonce: '../../../escape' }, 60_000)
    const lock = await take(directory)
    expect(lock.brokenStaleLocks).toHaveLength(1)
    expect(readdirSync(directory)).toEqual([WRITER_LOCK_FILE_NAME])
    expect(existsSync(join(scratch, '..', 'escape'))).toBe(false)
  })

  it('S7: pre-created predictable temp names (files and symlinks) are skipped with fresh randomness', async () => {
    const directory = sessionDirectory()
    const victim = join(scratch, `victim-temp-${counter}`)
    writeFileSync(victim, 'precious')
    const draws = ['11'.repeat(8), '22'.repeat(8), '33'.repeat(8)]
    writeFileSync(join(directory, `.tmp-lock-${draws[0]}`), 'planted')
    symlinkSync(victim, join(directory, `.tmp-lock-${draws[1]}`))
    let next = 0
    const randomHex = (bytes: number): string =>
      bytes === 8 ? (draws[next++] ?? 'ff'.repeat(8)) : 'ab'.repeat(bytes)
    const spy = createFaultFs()
    const lock = await acquireWriterLock(spy, directory, { randomHex, heartbeatMs: 0 })
    held.push(lock)
    expect(lock.nonce).toBe('ab'.repeat(16))
    // Both planted names were refused by O_EXCL|O_NOFOLLOW; the third draw was used.
    const opened = spy.calls.filter((call) => call.op === 'open').map((call) => call.path.split('/').pop())
    expect(opened.slice(0, 3)).toEqual(draws.map((draw) => `.tmp-lock-${draw}`))
    expect(readFileSync(victim, 'utf8')).toBe('precious')
    // Once the lock is held, the lock protocol's leftovers are removed (unlinking a symlink never touches its target).
    expect(readdirSync(directory)).toEqual([WRITER_LOCK_FILE_NAME])
  })

  it('removes leftover break claims and lock temp files of crashed lockers, and nothing else', async () => {
    const directory = sessionDirectory()
    writeFileSync(join(directory, `writer.lock.break-${'12'.repeat(16)}`), '{}')
    writeFileSync(join(directory, `.tmp-lock-${'34'.repeat(8)}`), '{}')
    writeFileSync(join(directory, `.tmp-lockbreak-${'56'.repeat(8)}`), '{}')
    writeFileSync(join(directory, `.tmp-create-${'78'.repeat(8)}`), 'not ours')
    await take(directory)
    rmSync(join(directory, `.tmp-create-${'78'.repeat(8)}`))
    expect(readdirSync(directory)).toEqual([WRITER_LOCK_FILE_NAME])
  })

  it('W8: an unwritable directory gives ACCESS_DENIED with op create-lock and creates nothing', async () => {
    const directory = sessionDirectory()
    const readOnly = (path: string): Error => {
      const error = new Error(`EROFS: read-only file system, open '${path}'`) as Error & { code: string }
      error.code = 'EROFS'
      return error
    }
    const denying: FsOps = {
      ...nodeFsOps,
      open: (path, flags, mode) =>
        path.startsWith(directory) && (flags & 0o100) !== 0
          ? Promise.reject(readOnly(path))
          : nodeFsOps.open(path, flags, mode),
    }
    const error = await rejection(acquireWriterLock(denying, directory))
    expect(error.code).toBe('ACCESS_DENIED')
    expect(error.details).toMatchObject({ op: 'create-lock', cause: 'EROFS' })
    expect(readdirSync(directory)).toEqual([])
  })

  it('creates the lock 0600 whatever the umask', async () => {
    for (const umask of [0o000, 0o022, 0o277]) {
      const previous = process.umask(umask)
      try {
        const directory = sessionDirectory()
        const lock = await take(directory)
        expect(statSync(lock.file).mode & 0o777).toBe(0o600)
        await lock.release()
      } finally {
        process.umask(previous)
      }
    }
  })
})
