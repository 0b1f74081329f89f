/**
 * `createJsonlStore`: the core over the JSONL backend with its defaults (wall clock, a lease
 * owner per process, the native CRC-32C), and the backend's `files` capability.
 */
import { readFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'

import { afterEach, describe, expect, it } from 'vitest'

import { createMemoryBackend, createSessionStore, SessionStoreError } from '@agent-ledger/session-store'

import { openFilesUnder } from '../../../tooling/open-files.ts'
import { asJsonlBackend, createJsonlBackend, createJsonlStore } from '../src/index.ts'
import { LOG_FILE_NAME } from '../src/layout.ts'
import { tempRoot } from './backend/jsonl-harness.ts'

const roots: string[] = []
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true })
})

async function newRoot(): Promise<string> {
  const root = await tempRoot()
  roots.push(root)
  return root
}

describe('createJsonlStore', () => {
  it('writes a session that a second store over the same root reads back, with the per-process owner', async () => {
    const root = await newRoot()
    const store = createJsonlStore({ root, jsonl: { lock: { heartbeatMs: 0 } } })
    const writer = await store.create({ id: 's1' })
    writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'hi' } } })
    await writer.flush()
    const head = await store.backend.head('s1')
    expect(head.owner).toBe(`agent-ledger@${(await import('node:os')).hostname()}:${process.pid}`)
    await writer.close()
    await store.close()

    const again = createJsonlStore({ root, clock: () => '2026-01-01T00:00:00.000Z' })
    const read = await again.openReader('s1')
    expect(read.lastSeq).toBe(0)
    expect(read.projection.deriveMessages()).toEqual([{ role: 'user', content: 'hi' }])
    await again.close()
    expect(readFileSync(join(root, 's1', LOG_FILE_NAME), 'utf8').split('\n')).toHaveLength(3)
  })

  it('creates zstd logs when asked, and passes the core options through (redaction off)', async () => {
    const root = await newRoot()
    const store = createJsonlStore({ root, encoding: 'zstd', redaction: null })
    const writer = await store.create({ id: 'z1' })
    const secret = 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789'
    writer.append({ type: 'user/message', data: { message: { role: 'user', content: secret } } })
    await writer.close()
    const files = await store.backend.capabilities.files.sessionFiles('z1')
    expect(files.current).toBe('z1/session.v4.jsonl.zstd')
    expect(files.encoding).toBe('zstd')
    const events = []
    for await (const event of store.readEvents('z1')) events.push(event)
    expect(events[0]?.data).toEqual({ message: { role: 'user', content: secret } })
    await store.close()
  })

  it.runIf(process.platform === 'linux')(
    'closing the backend while a writer holds its lease closes every descriptor under the root and keeps the lease',
    async () => {
      const root = await newRoot()
      const backend = createJsonlBackend({ root })
      const clock = (): string => new Date().toISOString()
      const writer = await createSessionStore({ backend, clock, owner: 'a' }).create({ id: 'held' })
      writer.append({ type: 'turn/start', data: { turn: 1 } })
      await writer.flush()
      // The log, the lease record and the writer lock are held open while the lease is.
      expect(openFilesUnder(root).length).toBeGreaterThanOrEqual(3)
      await backend.close()
      expect(openFilesUnder(root)).toEqual([])
      writer.append({ type: 'turn/start', data: { turn: 2 } })
      await expect(writer.flush()).rejects.toMatchObject({ code: 'BACKEND_CLOSED' })
      // Not released (the port's rule): this process still holds the session.
      const other = createJsonlStore({ root })
      await expect(other.openWriter('held')).rejects.toMatchObject({ code: 'SESSION_LOCKED' })
      // The writer's own close still releases the lease afterwards (the lock goes by its nonce).
      await writer.close({ discardUnflushed: true })
      await (await other.openWriter('held')).close()
      await other.close()
    },
  )

  it.runIf(process.platform === 'linux')(
    'a writer whose session was force-deleted closes every descriptor when it closes, though its lock cannot be released',
    async () => {
      const root = await newRoot()
      const clock = (): string => new Date().toISOString()
      const holder = createSessionStore({ backend: createJsonlBackend({ root }), clock, owner: 'a' })
      const writer = await holder.create({ id: 'gone' })
      writer.append({ type: 'turn/start', data: { turn: 1 } })
      await writer.flush()
      const deleter = createJsonlStore({ root })
      expect((await deleter.delete('gone', { force: true })).outcome).toBe('deleted')
      writer.append({ type: 'turn/start', data: { turn: 2 } })
      await expect(writer.flush()).rejects.toBeInstanceOf(SessionStoreError)
      await writer.close({ discardUnflushed: true }).catch(() => undefined)
      expect(openFilesUnder(root)).toEqual([])
      await deleter.close()
      await holder.close()
    },
  )

  it('refuses a relative root with INVALID_OPTION naming it', () => {
    expect(() => createJsonlStore({ root: 'relative/dir' })).toThrow(
      expect.objectContaining({ code: 'INVALID_OPTION', message: expect.stringContaining('"relative/dir"') }),
    )
  })
})

describe('the files capability', () => {
  it('lists the session directory, reads the header line, and reports a missing session as SESSION_NOT_FOUND', async () => {
    const root = await newRoot()
    const store = createJsonlStore({ root })
    await (await store.create({ id: 'f1', header: { cwd: '/work' } })).close()
    const files = store.backend.capabilities.files
    expect(files.sessionDirectory('f1')).toBe(join(root, 'f1'))
    const listed = await files.sessionFiles('f1')
    expect(listed.files.find((entry) => entry.current)).toMatchObject({ name: LOG_FILE_NAME, kind: 'log' })
    expect((await files.readHeader('f1')).header?.cwd).toBe('/work')
    const missing = await files.sessionFiles('nope').catch((error: unknown) => error)
    expect(SessionStoreError.is(missing) && missing.code).toBe('SESSION_NOT_FOUND')
    await store.close()
    await expect(files.sessionFiles('f1')).rejects.toMatchObject({ code: 'BACKEND_CLOSED' })
  })

  it('asJsonlBackend finds the JSONL backend under a store and null under another backend', async () => {
    const root = await newRoot()
    const store = createJsonlStore({ root })
    expect(asJsonlBackend(store.backend)?.root).toBe(root)
    const memory = createSessionStore({
      backend: createMemoryBackend(),
      clock: () => '2026-01-01T00:00:00.000Z',
    })
    expect(asJsonlBackend(memory.backend)).toBeNull()
    await store.close()
    await memory.close()
  })
})
