/**
 * W12: a really full disk (issue 10, item 3). The store root sits on a small tmpfs mounted
 * for the test (root only; skipped with a printed reason where `mount` is refused), filled
 * with 4 KiB files until the kernel says ENOSPC. Checked: `close()` releases the lock
 * without free space and is retryable; every ENOSPC surfaces as `DISK_FULL` naming the file
 * (create, lock, quarantine copy, flush, checkpoint, publish); the automatic flush backs off
 * and reports through the logger, leaving no partial line behind.
 */
import { spawnSync } from 'node:child_process'
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { JsonlStoreError } from '../src/index.ts'
import { LOG_FILE_NAME } from '../src/format.ts'
import type { SessionStore } from '../src/index.ts'
import { closedSessionInputs, testStore, turnInputs } from './support/sessions.ts'

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

async function caught(promise: Promise<unknown>): Promise<JsonlStoreError> {
  try {
    await promise
  } catch (error) {
    if (JsonlStoreError.is(error)) return error
    throw error
  }
  throw new Error('expected a JsonlStoreError, found success')
}

/** Larger than a page: it cannot hide in the slack of the log's last tmpfs page. */
const note = {
  type: 'user/message',
  data: { message: { role: 'user', content: `on a full disk ${'z'.repeat(9000)}` } },
} as const

function stores(): {
  store: SessionStore
  warnings: { message: string; details?: Record<string, unknown> }[]
} {
  return testStore(root, { checkpoint: { minLogBytes: 0, minGrowthRatio: 0 } })
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
    expect(error).toMatchObject({ code: 'DISK_FULL', file: `full/${LOG_FILE_NAME}` })
    expect(error.details['cause']).toBe('ENOSPC')
    expect(error.message).not.toMatch(/^ENOSPC/)
    // Rolled back: no partial line, the event still buffered, the lock still ours.
    expect(readFileSync(join(root, 'full', LOG_FILE_NAME)).at(-1)).toBe(0x0a)
    expect(writer.bufferedEvents).toBe(1)
    expect(existsSync(join(root, 'full', 'writer.lock'))).toBe(true)
    expect(() => writer.append(note)).toThrow(/closed/)
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
    for (const input of turnInputs(1)) writer.append(input)
    await writer.flush()
    fillDisk()
    await writer.close()
    expect(existsSync(join(root, 'release', 'writer.lock'))).toBe(false)
    const checkpointWarning = warnings.find((warning) => warning.message.includes('checkpoint'))
    expect(checkpointWarning?.details).toMatchObject({
      code: 'DISK_FULL',
      file: 'release/projection.checkpoint.msgpack',
    })
    fillDisk() // the released lock freed its page
    const error = await caught(store.openWriter('release'))
    expect(error.code).toBe('DISK_FULL')
    expect(error.file).toMatch(/^release\/(writer\.lock|\.tmp-lock)/)
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
    expect(error.file.startsWith('second/')).toBe(true)
    expect(existsSync(join(root, 'second', LOG_FILE_NAME))).toBe(false)
    expect(existsSync(join(root, 'second', 'writer.lock'))).toBe(false)
  })

  it('W12: the quarantine copy on a full disk is DISK_FULL; the log keeps its torn tail and the lock is released', async () => {
    if (!mounted) return
    const { store } = stores()
    const writer = await store.create({ id: 'torn' })
    for (const input of closedSessionInputs(3)) writer.append(input)
    await writer.close()
    const path = join(root, 'torn', LOG_FILE_NAME)
    appendFileSync(path, '{"seq":3,"time":"2026-01-01T00:00:')
    const before = readFileSync(path)
    fillDisk()
    // One page for the lock file; none left for the quarantine copy.
    freeDisk(1)
    const error = await caught(store.openWriter('torn'))
    expect(error.code).toBe('DISK_FULL')
    expect(error.file).toMatch(/^torn\/session\.v4\.jsonl\.torn-\d+$/)
    expect(readFileSync(path).equals(before)).toBe(true)
    expect(existsSync(join(root, 'torn', 'writer.lock'))).toBe(false)
    freeDisk()
    const repaired = await store.openWriter('torn')
    expect(repaired.recovery.tornTail).not.toBeNull()
    await repaired.close()
  })

  it(
    'W12: an automatic flush on a full disk backs off, reports DISK_FULL through the logger, leaves no partial line, and succeeds by itself once space is freed',
    async () => {
      if (!mounted) return
      const { store, warnings } = testStore(root, { flush: { maxBufferedEvents: 1, maxDelayMs: 0 } })
      const writer = await store.create({ id: 'auto' })
      const path = join(root, 'auto', LOG_FILE_NAME)
      const durable = statSync(path).size
      fillDisk()
      writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'x'.repeat(9000) } } })
      // Wait (bounded) for the first failure report.
      for (let spin = 0; spin < 500 && warnings.length < 2; spin += 1)
        await new Promise((resolve) => setTimeout(resolve, 20))
      const failures = warnings.filter((warning) => warning.message.includes('Automatic flush'))
      expect(failures.length).toBeGreaterThanOrEqual(2)
      expect(failures[0]!.details).toMatchObject({
        code: 'DISK_FULL',
        file: `auto/${LOG_FILE_NAME}`,
        attempt: 1,
        retryInMs: 100,
      })
      expect(failures[1]!.details).toMatchObject({ attempt: 2, retryInMs: 200 })
      expect(failures[0]!.details?.['error']).toBeInstanceOf(JsonlStoreError)
      // Between attempts the log is back at its durable size: no partial line for a reader.
      expect(statSync(path).size).toBe(durable)
      expect(writer.durableSeq).toBe(-1)
      freeDisk()
      for (let spin = 0; spin < 500 && writer.durableSeq < 0; spin += 1)
        await new Promise((resolve) => setTimeout(resolve, 20))
      expect(writer.durableSeq).toBe(0)
      await writer.close()
      expect((await store.verify('auto')).lastSeq).toBe(0)
    },
    testTime(30_000),
  )

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
    const error = await caught(store.migrate('old'))
    expect(error.code).toBe('DISK_FULL')
    expect(error.details).toMatchObject({ published: false })
    expect(typeof error.details['step']).toBe('string')
    expect(readFileSync(join(directory, 'session.jsonl')).equals(source)).toBe(true)
    expect(existsSync(join(directory, LOG_FILE_NAME))).toBe(false)
    expect(existsSync(join(directory, 'writer.lock'))).toBe(false)
  })
})
