/**
 * W12: a really full disk (issue 10, item 3), through the one store API (the core over the
 * JSONL backend). The store root sits on a small tmpfs mounted for the test (root only;
 * skipped with a printed reason where `mount` is refused), filled with 4 KiB files until the
 * kernel says ENOSPC. Checked: `close()` releases the lock without free space and is
 * retryable; every ENOSPC surfaces as `DISK_FULL` naming the file (create, lock, quarantine
 * copy, flush, checkpoint, publish).
 */
import { spawnSync } from 'node:child_process'
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'

import { SessionStoreError } from '@agent-ledger/session-store'
import type { SessionStoreWarning } from '@agent-ledger/session-store'

import { LOG_FILE_NAME } from '../src/format.ts'
import type { JsonlStore } from '../src/index.ts'
import { closedSessionInputs, coreTestStore } from './support/sessions.ts'

const mountPoint = mkdtempSync(join(tmpdir(), 'al-w12-tmpfs-'))
let mounted = false
let skipReason = ''

beforeAll(() => {
  const result = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=2m,mode=0700', 'tmpfs', mountPoint])
  mounted = result.status === 0
  if (!mounted) {
    skipReason = `mount -t tmpfs refused (${result.stderr.toString().trim() || `status ${result.status}`})`
    console.log(`W12: skipped: ${skipReason}`)
  }
})

afterAll(() => {
  // Lazy: a handle a failed test left open must not keep the mount (or fail the cleanup).
  if (mounted) spawnSync('umount', ['-l', mountPoint])
  rmSync(mountPoint, { recursive: true, force: true })
})

let root = ''
let fillCount = 0

beforeEach(() => {
  if (!mounted) return
  // Each test starts from an empty file system.
  spawnSync('sh', ['-c', `rm -rf "${mountPoint}"/*`])
  root = join(mountPoint, 'root')
  mkdirSync(join(mountPoint, 'fill'), { mode: 0o700 })
  fillCount = 0
})

/** Fills the tmpfs with 4 KiB files until ENOSPC. */
function fillDisk(): void {
  const page = Buffer.alloc(4096, 0x61)
  for (;;) {
    try {
      writeFileSync(join(mountPoint, 'fill', String(fillCount)), page)
      fillCount += 1
    } catch (error) {
      if ((error as { code?: string }).code === 'ENOSPC') return
      throw error
    }
  }
}

/** Frees `pages` of the filler (all of it by default). */
function freeDisk(pages = Infinity): void {
  for (let freed = 0; freed < pages && fillCount > 0; freed += 1) {
    fillCount -= 1
    unlinkSync(join(mountPoint, 'fill', String(fillCount)))
  }
}

async function caught(promise: Promise<unknown>): Promise<SessionStoreError> {
  try {
    await promise
  } catch (error) {
    if (SessionStoreError.is(error)) return error
    throw error
  }
  throw new Error('expected a SessionStoreError, found success')
}

/** Larger than a page: it cannot hide in the slack of the log's last tmpfs page. */
const note = {
  type: 'user/message',
  data: { message: { role: 'user', content: `on a full disk ${'z'.repeat(9000)}` } },
} as const

function stores(): { store: JsonlStore; warnings: SessionStoreWarning[] } {
  return coreTestStore(root, { checkpoint: { minLogBytes: 0, minGrowthRatio: 0 } })
}

describe('W12: a full disk (tmpfs)', () => {
  it('W12: flush, fill the disk, append, close(): DISK_FULL naming the log, lock kept with the event buffered; after space is freed close() writes it and releases; close() again resolves', async () => {
    if (!mounted) return
    const { store } = stores()
    const writer = await store.create({ id: 'full' })
    for (const input of closedSessionInputs(5)) writer.append(input)
    await writer.flush()
    fillDisk()
    writer.append(note)
    const error = await caught(writer.close())
    expect(error).toMatchObject({ code: 'DISK_FULL', location: { file: `full/${LOG_FILE_NAME}` } })
    expect(error.details['cause']).toBe('ENOSPC')
    expect(error.message).not.toMatch(/^ENOSPC/)
    // Rolled back: no partial line, the event still buffered, the lock still ours.
    expect(readFileSync(join(root, 'full', LOG_FILE_NAME)).at(-1)).toBe(0x0a)
    expect(writer.bufferedEvents).toBe(1)
    expect(existsSync(join(root, 'full', 'writer.lock'))).toBe(true)
    // Closing until the retry: the core's WRITER_CLOSED says "found it closing".
    expect(() => writer.append(note)).toThrow(expect.objectContaining({ code: 'WRITER_CLOSED' }))
    freeDisk()
    await writer.close()
    expect(existsSync(join(root, 'full', 'writer.lock'))).toBe(false)
    await writer.close()
    const read = await store.openReader('full')
    expect(read.lastSeq).toBe(5)
    // The same process opens its own session again: no SESSION_LOCKED.
    const again = await store.openWriter('full')
    await again.close()
  })

  it('W12: close() after a durable flush releases the lock with no free space at all; the checkpoint failure is a DISK_FULL warning; a new open gets DISK_FULL naming the lock', async () => {
    if (!mounted) return
    const { store, warnings } = stores()
    const writer = await store.create({ id: 'release' })
    // No turn/end: no checkpoint at the flush, so the one close() stores meets the full disk.
    for (const input of closedSessionInputs(7)) writer.append(input)
    await writer.flush()
    fillDisk()
    await writer.close()
    expect(existsSync(join(root, 'release', 'writer.lock'))).toBe(false)
    // The core's warning (the JSONL store API logged one naming projection.checkpoint.msgpack).
    const checkpointWarning = warnings.find((warning) => warning.code === 'CHECKPOINT_WRITE_FAILED')
    expect(checkpointWarning).toMatchObject({ sessionId: 'release', details: { seq: 6, code: 'DISK_FULL' } })
    expect(checkpointWarning?.cause).toMatchObject({
      code: 'DISK_FULL',
      location: { file: 'release/core.checkpoint' },
    })
    expect(existsSync(join(root, 'release', 'core.checkpoint'))).toBe(false)
    fillDisk() // the released lock freed its page
    const error = await caught(store.openWriter('release'))
    expect(error.code).toBe('DISK_FULL')
    expect(error.location?.file).toMatch(/^release\/(writer\.lock|\.tmp-lock)/)
    expect(existsSync(join(root, 'release', 'writer.lock'))).toBe(false)
    freeDisk()
    const reopened = await store.openWriter('release')
    expect(reopened.durableSeq).toBe(6)
    await reopened.close()
  })

  it('W12: create on a full disk is DISK_FULL (typed), nothing published', async () => {
    if (!mounted) return
    const { store } = stores()
    await (await store.create({ id: 'first' })).close()
    fillDisk()
    const error = await caught(store.create({ id: 'second' }))
    expect(error.code).toBe('DISK_FULL')
    expect(error.location?.file).toMatch(/^second\//)
    expect(existsSync(join(root, 'second', LOG_FILE_NAME))).toBe(false)
    expect(existsSync(join(root, 'second', 'writer.lock'))).toBe(false)
    // Issue 25 item 7: no empty folder left behind (list would report it SESSION_NOT_FOUND).
    expect(existsSync(join(root, 'second'))).toBe(false)
    const listed = await store.list()
    expect(listed.sessions.map((session) => session.id)).toEqual(['first'])
    expect(listed.problems).toEqual([])
  })

  it('W12: a fork and a salvage on a full disk are DISK_FULL, leaving no folder that list reports (issue 25 item 7)', async () => {
    if (!mounted) return
    const { store } = stores()
    const writer = await store.create({ id: 'first' })
    for (let index = 0; index < 4; index += 1)
      writer.append({ type: 'user/message', data: { message: { role: 'user', content: `m${index}` } } })
    await writer.close()
    // A damaged tail for the salvage to cut (its good prefix is what it copies).
    appendFileSync(join(root, 'first', LOG_FILE_NAME), '{"seq":99,"damaged\n')
    fillDisk()
    const fork = await caught(store.fork('first', { to: 'forked', atSeq: 2 }))
    expect(fork.code).toBe('DISK_FULL')
    const salvage = await caught(store.salvage('first', { to: 'salvaged' }))
    expect(salvage.code).toBe('DISK_FULL')
    for (const id of ['forked', 'salvaged']) expect(existsSync(join(root, id)), id).toBe(false)
    const listed = await store.list()
    expect(listed.sessions.map((session) => session.id)).toEqual(['first'])
    expect(listed.problems).toEqual([])
  })

  // The core over JSONL writes the session's lease (writer.lease: temp, fsync, rename) between
  // the lock and the repair: one page frees the lock, the lease then meets the full disk.
  for (const stage of ['lease', 'quarantine'] as const) {
    it(`W12: a write open on a full disk is DISK_FULL naming the ${stage === 'lease' ? 'lease file' : 'quarantine copy'}; the log keeps its torn tail and the lock is released`, async () => {
      if (!mounted) return
      const { store } = stores()
      const writer = await store.create({ id: 'torn' })
      for (const input of closedSessionInputs(3)) writer.append(input)
      await writer.close()
      const path = join(root, 'torn', LOG_FILE_NAME)
      // Three pages of torn tail: more than the one page the replaced lease frees.
      appendFileSync(path, `{"seq":3,"time":"2026-01-01T00:00:00.000Z","data":"${'t'.repeat(9000)}`)
      const before = readFileSync(path)
      fillDisk()
      // One page for the lock file (and with 'quarantine', one for the new lease).
      freeDisk(stage === 'lease' ? 1 : 2)
      const error = await caught(store.openWriter('torn'))
      expect(error.code).toBe('DISK_FULL')
      expect(error.location?.file).toMatch(
        stage === 'lease' ? /^torn\/writer\.lease$/ : /^torn\/session\.v4\.jsonl\.torn-\d+$/,
      )
      expect(readFileSync(path).equals(before)).toBe(true)
      expect(existsSync(join(root, 'torn', 'writer.lock'))).toBe(false)
      freeDisk()
      const repaired = await store.openWriter('torn')
      expect(repaired.recovery.backendRepairs).toMatchObject([
        { kind: 'torn-tail', droppedBytes: before.length - readFileSync(path).length },
      ])
      await repaired.close()
    })
  }

  it('W12: a migration (publish) on a full disk is DISK_FULL with its step; the v0 source is untouched', async () => {
    if (!mounted) return
    const { store } = stores()
    const directory = join(root, 'old')
    mkdirSync(root, { recursive: true, mode: 0o700 })
    mkdirSync(directory, { mode: 0o700 })
    const lines = [
      '{"seq":0,"time":"2025-04-20T21:40:00.000Z","type":"session/header","data":{"version":0}}',
      ...Array.from(
        { length: 200 },
        (_, index) =>
          `{"seq":${index + 1},"time":"2025-04-20T21:40:01.000Z","type":"user/message","data":{"message":{"role":"user","content":"${'y'.repeat(200)}"}}}`,
      ),
      '',
    ]
    writeFileSync(join(directory, 'session.jsonl'), lines.join('\n'), { mode: 0o600 })
    const source = readFileSync(join(directory, 'session.jsonl'))
    fillDisk()
    freeDisk(1) // room for the lock, not for the new generation
    const error = await caught(store.backend.capabilities.migrate.migrate('old'))
    expect(error.code).toBe('DISK_FULL')
    expect(error.details).toMatchObject({ published: false })
    expect(typeof error.details['step']).toBe('string')
    expect(readFileSync(join(directory, 'session.jsonl')).equals(source)).toBe(true)
    expect(existsSync(join(directory, LOG_FILE_NAME))).toBe(false)
    expect(existsSync(join(directory, 'writer.lock'))).toBe(false)
  })
})
