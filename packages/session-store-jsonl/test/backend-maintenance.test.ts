/**
 * The JSONL backend's `compress`, `migrate` and `files` capabilities, through the one store
 * API (`createJsonlStore`): what they write, what they report, and the writer lock they take
 * (a live lease makes `compress` and `migrate` `SESSION_LOCKED`).
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'

import { afterEach, describe, expect, it } from 'vitest'

import type { BackendProgress } from '@agent-ledger/session-store'

import { nodeFsOps } from '../src/fs-ops.ts'
import { LOG_FILE_NAME } from '../src/layout.ts'
import { acquireWriterLock, WRITER_LOCK_FILE_NAME } from '../src/writer-lock.ts'
import { coreTestStore, makeTempDir, turnInputs, writeCoreSession } from './support/sessions.ts'

const V0_FIXTURE = new URL('./fixtures/v0/normal-tool-calls.jsonl', import.meta.url)

const cleanups: (() => void)[] = []
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup()
})

function newRoot(): string {
  const temp = makeTempDir('al-maintenance-')
  cleanups.push(temp.cleanup)
  return temp.path
}

async function eventsOf(store: ReturnType<typeof coreTestStore>['store'], id: string): Promise<unknown[]> {
  const events: unknown[] = []
  for await (const event of store.readEvents(id)) events.push(event)
  return events
}

function plantV0(root: string, id: string): string {
  const directory = join(root, id)
  mkdirSync(directory, { recursive: true, mode: 0o700 })
  copyFileSync(V0_FIXTURE, join(directory, 'session.jsonl'))
  return directory
}

describe('the compress capability', () => {
  it('compresses a plain log into session.v4.jsonl.zstd with the same events, reporting every phase; a second run is up-to-date', async () => {
    const root = newRoot()
    const { store } = coreTestStore(root)
    await writeCoreSession(store, 'c1', [...turnInputs(1), ...turnInputs(2)])
    const before = await eventsOf(store, 'c1')
    const phases = new Set<string>()
    const progress: BackendProgress[] = []
    const result = await store.backend.capabilities.compress.compress('c1', {
      onProgress: (step) => {
        phases.add(step.phase)
        progress.push(step)
      },
    })
    expect(result.changed).toBe(true)
    expect(result.details).toMatchObject({
      id: 'c1',
      outcome: 'compressed',
      file: 'c1/session.v4.jsonl.zstd',
      removedFile: `c1/${LOG_FILE_NAME}`,
      events: before.length,
      lastSeq: before.length - 1,
    })
    expect([...phases].sort()).toEqual(['compress', 'publish', 'scan', 'verify'])
    expect(progress.every((step) => step.total === undefined || step.done <= step.total)).toBe(true)
    expect(readdirSync(join(root, 'c1'))).not.toContain(LOG_FILE_NAME)
    expect(await eventsOf(store, 'c1')).toEqual(before)
    const again = await store.backend.capabilities.compress.compress('c1')
    expect(again).toMatchObject({ changed: false, details: { outcome: 'up-to-date' } })
    await store.close()
  })

  it('is SESSION_LOCKED while a writer holds the lease, and the log is left as it was; it runs once the writer closed', async () => {
    const root = newRoot()
    const { store } = coreTestStore(root)
    const writer = await store.create({ id: 'c2' })
    for (const input of turnInputs(1)) writer.append(input)
    await writer.flush()
    const log = readFileSync(join(root, 'c2', LOG_FILE_NAME))
    await expect(store.backend.capabilities.compress.compress('c2')).rejects.toMatchObject({
      code: 'SESSION_LOCKED',
      sessionId: 'c2',
    })
    expect(readFileSync(join(root, 'c2', LOG_FILE_NAME))).toEqual(log)
    expect(existsSync(join(root, 'c2', 'session.v4.jsonl.zstd'))).toBe(false)
    await writer.close()
    await expect(store.backend.capabilities.compress.compress('c2')).resolves.toMatchObject({ changed: true })
    await store.close()
  })

  it('keeps the JSONL codes: a missing session is SESSION_NOT_FOUND, a symlinked session directory SYMLINK_REFUSED', async () => {
    const root = newRoot()
    const { store } = coreTestStore(root)
    await writeCoreSession(store, 'real', turnInputs(1))
    symlinkSync(join(root, 'real'), join(root, 'linked'))
    await expect(store.backend.capabilities.compress.compress('nope')).rejects.toMatchObject({
      code: 'SESSION_NOT_FOUND',
    })
    await expect(store.backend.capabilities.compress.compress('linked')).rejects.toMatchObject({
      code: 'SYMLINK_REFUSED',
    })
    await expect(store.backend.capabilities.files.sessionFiles('linked')).rejects.toMatchObject({
      code: 'SYMLINK_REFUSED',
    })
    expect(existsSync(join(root, 'real', LOG_FILE_NAME))).toBe(true)
    await store.close()
  })

  it('a v0 session is UNSUPPORTED until it is migrated ("migrate it first"), nothing written; once migrated, the older generation beside it keeps it plain (MIXED_ENCODINGS)', async () => {
    const root = newRoot()
    const { store } = coreTestStore(root)
    const directory = plantV0(root, 'old')
    const source = readFileSync(join(directory, 'session.jsonl'))
    const error = await store.backend.capabilities.compress.compress('old').catch((caught: unknown) => caught)
    expect(error).toMatchObject({ code: 'UNSUPPORTED', details: { capability: 'migrate' } })
    expect((error as Error).message).toMatch(/session\.jsonl.*migrate it first/)
    expect(readdirSync(directory)).toEqual(['session.jsonl'])
    expect(readFileSync(join(directory, 'session.jsonl')).equals(source)).toBe(true)
    await store.backend.capabilities.migrate.migrate('old')
    await expect(store.backend.capabilities.compress.compress('old')).rejects.toMatchObject({
      code: 'MIXED_ENCODINGS',
      details: { reason: 'older-generations' },
    })
    await store.close()
  })
})

describe('the migrate capability', () => {
  it('migrates a v0 session: a dry run writes nothing, the migration publishes session.v4.jsonl beside the untouched source, then up-to-date', async () => {
    const root = newRoot()
    const directory = plantV0(root, 'v0')
    const source = readFileSync(join(directory, 'session.jsonl'))
    const { store } = coreTestStore(root)
    const { migrate } = store.backend.capabilities
    const files = store.backend.capabilities.files
    expect(await migrate.needsMigration('v0')).toBe(true)
    expect(await files.readHeader('v0')).toMatchObject({ id: 'v0', file: 'v0/session.jsonl', version: 0 })
    // The header its migration would write, as reads see it: migratedFrom names the source.
    expect((await files.readHeader('v0')).header?.migratedFrom).toMatchObject({
      file: 'session.jsonl',
      version: 0,
    })
    // Compress needs a v4 log: a session with only an older generation is migrated first.
    await expect(store.backend.capabilities.compress.compress('v0')).rejects.toMatchObject({
      code: 'UNSUPPORTED',
      details: { capability: 'migrate' },
    })

    const dry = await migrate.migrate('v0', { dryRun: true })
    expect(dry).toMatchObject({
      changed: false,
      details: {
        outcome: 'dry-run',
        dryRun: true,
        from: 'v0/session.jsonl',
        fromVersion: 0,
        bytesWritten: 0,
      },
    })
    expect(readdirSync(directory)).toEqual(['session.jsonl'])

    const phases = new Set<string>()
    const done = await migrate.migrate('v0', { onProgress: (step) => phases.add(step.phase) })
    expect(done.changed).toBe(true)
    expect(done.details).toMatchObject({
      outcome: 'migrated',
      from: 'v0/session.jsonl',
      to: `v0/${LOG_FILE_NAME}`,
      toVersion: 4,
      events: (dry.details as { events: number }).events,
    })
    expect(phases.size).toBeGreaterThan(0)
    expect(readFileSync(join(directory, 'session.jsonl'))).toEqual(source)
    expect(existsSync(join(directory, LOG_FILE_NAME))).toBe(true)
    expect(await migrate.needsMigration('v0')).toBe(false)
    expect((await files.sessionFiles('v0')).current).toBe(`v0/${LOG_FILE_NAME}`)
    expect(await migrate.migrate('v0')).toMatchObject({ changed: false, details: { outcome: 'up-to-date' } })
    await store.close()
  })

  it('is SESSION_LOCKED while another holder has the writer lock; nothing is published', async () => {
    const root = newRoot()
    const directory = plantV0(root, 'v0b')
    const { store } = coreTestStore(root)
    const { store: other } = coreTestStore(root)
    // The core refuses a write open of a v0 session (migrate first): hold its writer lock directly.
    const lock = await acquireWriterLock(nodeFsOps, directory, { heartbeatMs: 0 })
    await expect(store.backend.capabilities.migrate.migrate('v0b')).rejects.toMatchObject({
      code: 'SESSION_LOCKED',
    })
    expect(readdirSync(directory).sort()).toEqual(['session.jsonl', WRITER_LOCK_FILE_NAME])
    await lock.release()
    await expect(other.backend.capabilities.migrate.migrate('v0b')).resolves.toMatchObject({ changed: true })
    await store.close()
    await other.close()
  })
})
