import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { createJsonlStore, nodeFsOps } from '../src/index.ts'
import type { FsOps, JsonlStore } from '../src/index.ts'
import { CRASH_STORE_OPTIONS, crashStore } from './support/crash-harness.ts'
import { collect } from './support/sessions.ts'
import { workload, WORKLOAD_HEADER } from './support/workload.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-w3-'))
let counter = 0
const events = workload(3, 8)

function freshRoot(): string {
  counter += 1
  const root = join(scratch, `r${counter}`)
  mkdirSync(root, { mode: 0o700 })
  return root
}

/** The one store API over `root` writing as `owner` (the lease owner). */
function ownerStore(root: string, owner: string, fs?: FsOps): JsonlStore {
  return createJsonlStore({ root, ...CRASH_STORE_OPTIONS, owner, ...(fs === undefined ? {} : { fs }) })
}

/**
 * A test-only FsOps that bypasses the writer lock (and with `lease`, the lease file too):
 * every instance sees its own private `writer.lock` (`writer.lease`) name, so two writers
 * both believe they hold the lock (and the newest epoch).
 */
function lockBypassingFs(tag: string, lease = false): FsOps {
  const names = lease ? ['writer.lock', 'writer.lease', '.tmp-lease-'] : ['writer.lock']
  const rename = (path: string): string =>
    names.some(
      (name) =>
        basename(path) === name ||
        basename(path).startsWith(`${name}.`) ||
        (name.endsWith('-') && basename(path).startsWith(name)),
    )
      ? join(dirname(path), `${basename(path)}.${tag}`)
      : path
  return {
    ...nodeFsOps,
    open: (path, flags, mode) => nodeFsOps.open(rename(path), flags, mode),
    lstat: (path) => nodeFsOps.lstat(rename(path)),
    stat: (path) => nodeFsOps.stat(rename(path)),
    link: (existingPath, newPath) => nodeFsOps.link(rename(existingPath), rename(newPath)),
    unlink: (path) => nodeFsOps.unlink(rename(path)),
    rename: (oldPath, newPath) => nodeFsOps.rename(rename(oldPath), rename(newPath)),
    readdir: async (path) =>
      (await nodeFsOps.readdir(path)).filter((name) => !names.some((prefix) => name.startsWith(prefix))),
  }
}

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true })
})

describe('W3: two writers on one session', () => {
  it('W3: a second openWriter in the same process gets SESSION_LOCKED naming the holder; the first keeps writing', async () => {
    const root = freshRoot()
    const first = ownerStore(root, 'first-writer')
    const writer = await first.create({ id: 'shared', header: WORKLOAD_HEADER })
    writer.append(events[0]!)
    await writer.flush()
    const second = ownerStore(root, 'second-writer')
    await expect(second.openWriter('shared')).rejects.toMatchObject({
      code: 'SESSION_LOCKED',
      details: {
        holder: 'first-writer',
        lock: {
          holderPid: process.pid,
          holderHost: hostname(),
          lockFile: join(root, 'shared', 'writer.lock'),
        },
      },
    })
    // The same store object, asked twice: the same answer.
    await expect(second.openWriter('shared')).rejects.toMatchObject({ code: 'SESSION_LOCKED' })
    writer.append(events[1]!)
    expect(await writer.flush()).toEqual({ durableSeq: 1 })
    await writer.close()
    const again = await second.openWriter('shared')
    expect(again.durableSeq).toBeGreaterThanOrEqual(1)
    await again.close()
    await Promise.all([first.close(), second.close()])
  })

  it('W3: the same owner opening again is a restart: it takes the lease over and the old writer is FENCED, nothing of its batch written', async () => {
    const root = freshRoot()
    const store = ownerStore(root, 'restarted-writer')
    const old = await store.create({ id: 'restart', header: WORKLOAD_HEADER })
    old.append(events[0]!)
    await old.flush()
    const restarted = await ownerStore(root, 'restarted-writer').openWriter('restart')
    old.append(events[1]!)
    await expect(old.flush()).rejects.toMatchObject({ code: 'FENCED' })
    expect(old.state).toBe('fenced')
    restarted.append(events[1]!)
    expect(await restarted.flush()).toEqual({ durableSeq: 1 })
    await restarted.close()
    await old.close()
    const reader = ownerStore(root, 'reader')
    expect((await reader.openReader('restart')).lastSeq).toBe(1)
    await reader.close()
  })

  it('W3: with the writer lock bypassed (test-only FsOps), the lease epoch fences the older writer: nothing of its batch is written and the log stays one history', async () => {
    const root = freshRoot()
    const setup = crashStore(root)
    const writer = await setup.create({ id: 'fenced', header: WORKLOAD_HEADER })
    writer.append(events[0]!)
    await writer.close()
    const one = await ownerStore(root, 'one', lockBypassingFs('one')).openWriter('fenced')
    const two = await ownerStore(root, 'two', lockBypassingFs('two')).openWriter('fenced')
    expect(two.epoch).toBeGreaterThan(one.epoch)
    one.append(events[1]!)
    await expect(one.flush()).rejects.toMatchObject({ code: 'FENCED' })
    const different = {
      type: 'user/message',
      data: { message: { role: 'user', content: 'a different event with the same seq' } },
    } as const
    two.append(different)
    expect(await two.flush()).toEqual({ durableSeq: 1 })
    await one.close().catch(() => undefined)
    await two.close()
    const reader = crashStore(root)
    const read = await collect(reader.readEvents('fenced'))
    expect(read.map((event) => event.seq)).toEqual([0, 1])
    expect(read[1]!.data).toEqual(different.data)
    expect(await reader.verify('fenced')).toMatchObject({ status: 'ok', lastSeq: 1 })
    await reader.close()
  })

  // The JSONL store API wrote at its own durable offset, so the second writer overwrote the
  // first one's line in place; the backend checks the log's size before each append instead.
  it('W3: with the writer lock and the lease both bypassed (test-only FsOps), the second writer is refused CONFLICT (the log grew outside its lease), nothing written; the log stays one history', async () => {
    const root = freshRoot()
    const setup = crashStore(root)
    const writer = await setup.create({ id: 'forked', header: WORKLOAD_HEADER })
    writer.append(events[0]!)
    await writer.close()
    const logPath = join(root, 'forked', 'session.v4.jsonl')
    const one = await ownerStore(root, 'one', lockBypassingFs('one', true)).openWriter('forked')
    const two = await ownerStore(root, 'two', lockBypassingFs('two', true)).openWriter('forked')
    expect(two.epoch).toBe(one.epoch)
    const before = statSync(logPath).size
    one.append(events[1]!)
    expect(await one.flush()).toEqual({ durableSeq: 1 })
    const afterOne = readFileSync(logPath)
    two.append({
      type: 'user/message',
      data: { message: { role: 'user', content: 'a different event with the same seq' } },
    })
    await expect(two.flush()).rejects.toMatchObject({
      code: 'CONFLICT',
      details: { expectedSize: before, foundSize: afterOne.length },
    })
    expect(readFileSync(logPath).equals(afterOne)).toBe(true)
    await one.close()
    await two.close({ discardUnflushed: true }).catch(() => undefined)
    const reader = crashStore(root)
    expect(await reader.verify('forked')).toMatchObject({ status: 'ok', lastSeq: 1 })
    expect((await collect(reader.readEvents('forked')))[1]).toMatchObject({ seq: 1, type: events[1]!.type })
    await reader.close()
  })
})
