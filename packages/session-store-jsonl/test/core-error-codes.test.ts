/**
 * The JSONL store's own error codes reach the callers of `createSessionStore` (the core over
 * `createJsonlBackend`) unchanged (issue 23 item 4), each from a real fault: a log replaced
 * by a symbolic link (`SYMLINK_REFUSED`, was `BACKEND_FAILED ... ELOOP`), a really full disk
 * on a small tmpfs (`DISK_FULL`; root only, skipped with a printed reason where `mount` is
 * refused) and a line whose bytes were changed (`CORRUPT_LINE`).
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { mkdtemp, rename, rm, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { AgentLedgerError } from '@agent-ledger/session-events'
import { createSessionStore, SessionStoreError } from '@agent-ledger/session-store'
import type { SessionStore } from '@agent-ledger/session-store'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

import { createJsonlBackend, JsonlStoreError } from '../src/index.ts'

const roots: string[] = []

afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true })
})

function coreStore(root: string): SessionStore {
  let tick = 0
  return createSessionStore({
    backend: createJsonlBackend({ root }),
    clock: () => new Date(Date.UTC(2026, 0, 1) + (tick += 1)).toISOString(),
  })
}

async function freshRoot(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'al-core-codes-'))
  roots.push(root)
  return root
}

/** The log file name of session `id` (the one `session.v<N>.jsonl[.zstd]` in its directory). */
function logName(root: string, id: string): string {
  const name = readdirSync(join(root, id)).find((entry) => /^session\.v\d+\.jsonl(\.zstd)?$/.test(entry))
  if (name === undefined) throw new Error(`no log under ${join(root, id)}`)
  return name
}

async function writeSession(store: SessionStore, id: string, count: number): Promise<void> {
  const writer = await store.create({ id })
  for (let index = 0; index < count; index += 1) {
    writer.append({ type: 'user/message', data: { message: { role: 'user', content: `message ${index}` } } })
  }
  await writer.close()
}

async function rejection(run: () => Promise<unknown>): Promise<SessionStoreError> {
  try {
    await run()
  } catch (error) {
    if (SessionStoreError.is(error)) return error
    throw error
  }
  throw new Error('expected a SessionStoreError, found success')
}

describe('JSONL codes through createSessionStore', () => {
  it('a log replaced by a symbolic link is SYMLINK_REFUSED from openWriter, openReader, readEvents and verify', async () => {
    const root = await freshRoot()
    const store = coreStore(root)
    await writeSession(store, 'linked', 3)
    const log = logName(root, 'linked')
    await rename(join(root, 'linked', log), join(root, 'elsewhere.jsonl'))
    await symlink(join(root, 'elsewhere.jsonl'), join(root, 'linked', log))
    const attempts: Record<string, () => Promise<unknown>> = {
      openWriter: () => store.openWriter('linked'),
      openReader: () => store.openReader('linked'),
      readEvents: async () => {
        for await (const event of store.readEvents('linked')) void event
      },
      verify: () => store.verify('linked'),
    }
    for (const [name, run] of Object.entries(attempts)) {
      const error = await rejection(run)
      expect({ name, code: error.code }).toEqual({ name, code: 'SYMLINK_REFUSED' })
      expect(AgentLedgerError.is(error, 'SYMLINK_REFUSED')).toBe(true)
      expect(error.details['jsonlCode']).toBe('SYMLINK_REFUSED')
      expect(error.sessionId).toBe('linked')
      expect(JsonlStoreError.is(error.cause)).toBe(true)
      expect(error.message).toMatch(/symbolic link/)
    }
    await store.close()
  })

  it('a line whose bytes changed is CORRUPT_LINE with its location and lastGoodSeq: verify reports it, openReader refuses it', async () => {
    const root = await freshRoot()
    const store = coreStore(root)
    await writeSession(store, 'bent', 4)
    const path = join(root, 'bent', logName(root, 'bent'))
    const lines = readFileSync(path, 'utf8').split('\n')
    // Line 3 holds seq 1: same length, same JSON shape, a checksum that no longer matches.
    lines[2] = lines[2]!.replace('message 1', 'massage 1')
    writeFileSync(path, lines.join('\n'))
    const report = await store.verify('bent')
    expect(report.status).toBe('damaged')
    expect(report.damage?.code).toBe('CORRUPT_LINE')
    expect(report.damage?.lastGoodSeq).toBe(0)
    expect(report.damage?.location).toMatchObject({ line: 3 })
    const error = await rejection(() => store.openReader('bent'))
    expect(error.code).toBe('CORRUPT_LINE')
    await store.close()
  })
})

const mountPoint = mkdtempSync(join(tmpdir(), 'al-core-codes-tmpfs-'))
let mounted = false

beforeAll(() => {
  const result = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tmpfs', mountPoint])
  mounted = result.status === 0
  if (!mounted) {
    console.log(
      `core DISK_FULL: skipped: mount -t tmpfs refused (${result.stderr.toString().trim() || `status ${result.status}`})`,
    )
  }
})

afterAll(() => {
  if (mounted) spawnSync('umount', ['-l', mountPoint])
  rmSync(mountPoint, { recursive: true, force: true })
})

describe('a really full disk through createSessionStore (tmpfs)', () => {
  it('flush on a full disk is DISK_FULL naming the log (details.cause ENOSPC), retryable: after space is freed the same flush lands', async () => {
    if (!mounted) return
    const root = join(mountPoint, 'root')
    const fill = join(mountPoint, 'fill')
    mkdirSync(fill, { mode: 0o700 })
    const store = coreStore(root)
    const writer = await store.create({ id: 'full' })
    writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'before' } } })
    await writer.flush()
    // Fill the file system with 4 KiB files until the kernel says ENOSPC (1 MiB: at most 256).
    const page = Buffer.alloc(4096, 0x61)
    let files = 0
    for (; files < 1024; files += 1) {
      try {
        writeFileSync(join(fill, String(files)), page)
      } catch (error) {
        if ((error as { code?: unknown }).code === 'ENOSPC') break
        throw error
      }
    }
    expect(files).toBeLessThan(1024)
    // Larger than a page: it cannot hide in the slack of the log's last page.
    writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'z'.repeat(9000) } } })
    const error = await rejection(() => writer.flush())
    expect(error.code).toBe('DISK_FULL')
    expect(error.details['cause']).toBe('ENOSPC')
    expect(error.location?.file).toBe(`full/${logName(root, 'full')}`)
    for (let index = 0; index < files; index += 1) unlinkSync(join(fill, String(index)))
    await writer.flush()
    await writer.close()
    const read = await store.openReader('full')
    expect(read.lastSeq).toBe(1)
    await store.close()
  })
})
