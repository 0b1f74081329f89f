/**
 * Issue 11: create, fork and salvage publish through the one publish-by-link protocol
 * (`publishFile`): the staged log is read back and verified before the link, and a failed
 * directory fsync after the link withdraws the new name and reports `poisoned`. Each failure
 * names its own operation (`CREATE_FAILED`, `FORK_FAILED`, `SALVAGE_FAILED`; compress:
 * `COMPRESS_FAILED`), never `MIGRATION_FAILED`. Faults are real `FsOps` failures (EIO from
 * the directory fsync, a byte flipped on its way to the disk).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import type { SessionStoreError } from '@agent-ledger/session-store'

import { nodeFsOps } from '../src/index.ts'
import type { FileHandleOps, FsOps, JsonlStore } from '../src/index.ts'
import { coreTestStore, makeTempDir, turnInputs } from './support/sessions.ts'

let temp: ReturnType<typeof makeTempDir>
beforeEach(() => {
  temp = makeTempDir('al-publish-new-')
})
afterEach(() => temp.cleanup())

/** An error shaped like node:fs's. */
class InjectedError extends Error {
  readonly code: string
  readonly syscall: string
  readonly path: string

  constructor(code: string, syscall: string, path: string) {
    super(`${code}: injected, ${syscall} '${path}'`)
    this.code = code
    this.syscall = syscall
    this.path = path
  }
}

function fsError(code: string, syscall: string, path: string): Error {
  return new InjectedError(code, syscall, path)
}

/**
 * The directory fsync that follows the link fails with EIO: the moment a directory holds
 * both the new log name and the publish's temp name (they share the inode until the temp is
 * unlinked).
 */
function failingDirFsyncAfterLink(): FsOps & { readonly fired: () => number } {
  let fired = 0
  return {
    ...nodeFsOps,
    fired: () => fired,
    async fsyncDirectory(path) {
      const names = readdirSync(path)
      const linked = names.some((name) => name.startsWith('session.v4.jsonl'))
      const temp = names.some((name) => name.startsWith('.tmp-') && !name.startsWith('.tmp-lock'))
      if (linked && temp) {
        fired += 1
        throw fsError('EIO', 'fsync', path)
      }
      return nodeFsOps.fsyncDirectory(path)
    },
  }
}

/** Writes to a publish temp file land with their last byte flipped (a software fault below the store). */
function corruptingTempWrites(): FsOps & { readonly fired: () => number } {
  let fired = 0
  return {
    ...nodeFsOps,
    fired: () => fired,
    async open(path, flags, mode) {
      const handle = await nodeFsOps.open(path, flags, mode)
      if (!path.includes('.tmp-') || path.includes('.tmp-lock')) return handle
      const wrapped: FileHandleOps = Object.create(handle) as FileHandleOps
      wrapped.write = async (bytes, position) => {
        fired += 1
        const copy = Buffer.from(bytes)
        copy[copy.length - 1] = copy[copy.length - 1]! ^ 0x01
        return handle.write(copy, position)
      }
      return wrapped
    },
  }
}

async function failure(promise: Promise<unknown>): Promise<SessionStoreError> {
  try {
    await promise
  } catch (error) {
    return error as SessionStoreError
  }
  throw new Error('expected a rejection')
}

/** What is left in a session directory: no log, no publish temp, no lock (an empty directory). */
function leftovers(root: string, id: string): string[] {
  const directory = join(root, id)
  return existsSync(directory) ? readdirSync(directory) : []
}

async function parentSession(store: JsonlStore, id: string): Promise<Buffer> {
  const writer = await store.create({ id })
  for (const input of turnInputs(1)) writer.append(input)
  await writer.close()
  return readFileSync(join(temp.path, id, 'session.v4.jsonl'))
}

describe.each(['plain', 'zstd'] as const)('a %s log publishes by link like every other file', (encoding) => {
  it('create: a directory fsync EIO after the link withdraws the new log, poisons, and names CREATE_FAILED', async () => {
    const fs = failingDirFsyncAfterLink()
    const { store } = coreTestStore(temp.path, { fs, encoding })
    const error = await failure(store.create({ id: 'fresh' }))
    expect(error).toMatchObject({
      code: 'CREATE_FAILED',
      details: { step: 'fsync-dir', cause: 'EIO', poisoned: true, published: false },
    })
    expect(fs.fired()).toBe(1)
    // The name that appeared was withdrawn, the temp removed, the lock released.
    expect(leftovers(temp.path, 'fresh')).toEqual([])
    // Nothing half-published blocks the id: a create on a healthy disk succeeds.
    const { store: healthy } = coreTestStore(temp.path, { encoding })
    const writer = await healthy.create({ id: 'fresh' })
    await writer.close()
    expect(await healthy.verify('fresh')).toMatchObject({ status: 'ok', events: 0 })
  })

  // The core forks and salvages through the port's one create: the backend's failure is
  // CREATE_FAILED (the JSONL store API said FORK_FAILED / SALVAGE_FAILED), same details.
  it('fork: a directory fsync EIO after the link withdraws the child, poisons, names CREATE_FAILED, the parent untouched', async () => {
    const { store: setup } = coreTestStore(temp.path)
    const parentBytes = await parentSession(setup, 'parent')
    const fs = failingDirFsyncAfterLink()
    const { store } = coreTestStore(temp.path, { fs, encoding })
    const error = await failure(store.fork('parent', { to: 'child', atSeq: 1 }))
    expect(error).toMatchObject({
      code: 'CREATE_FAILED',
      details: { step: 'fsync-dir', cause: 'EIO', poisoned: true, published: false },
    })
    expect(leftovers(temp.path, 'child')).toEqual([])
    expect(readFileSync(join(temp.path, 'parent', 'session.v4.jsonl')).equals(parentBytes)).toBe(true)
    const writer = await coreTestStore(temp.path, { encoding }).store.fork('parent', {
      to: 'child',
      atSeq: 1,
    })
    await writer.close()
    expect((await setup.verify('child')).status).toBe('ok')
  })

  it('salvage: a directory fsync EIO after the link withdraws the copy, poisons, names CREATE_FAILED, the source untouched', async () => {
    const { store: setup } = coreTestStore(temp.path)
    await parentSession(setup, 'damaged')
    const path = join(temp.path, 'damaged', 'session.v4.jsonl')
    const events = (await setup.verify('damaged')).events
    writeFileSync(path, Buffer.concat([readFileSync(path), Buffer.from('{"torn')]))
    const sourceBytes = readFileSync(path)
    const fs = failingDirFsyncAfterLink()
    const { store } = coreTestStore(temp.path, { fs, encoding })
    const error = await failure(store.salvage('damaged', { to: 'rescued' }))
    expect(error).toMatchObject({
      code: 'CREATE_FAILED',
      details: { step: 'fsync-dir', cause: 'EIO', poisoned: true, published: false },
    })
    expect(leftovers(temp.path, 'rescued')).toEqual([])
    expect(readFileSync(path).equals(sourceBytes)).toBe(true)
    const report = await coreTestStore(temp.path, { encoding }).store.salvage('damaged', { to: 'rescued' })
    expect(report).toMatchObject({ reason: 'torn-tail', copiedEvents: events, salvageSeq: events })
  })

  it('create with a seed: bytes that do not read back as written are never linked (CREATE_FAILED at verify)', async () => {
    const { store: setup } = coreTestStore(temp.path)
    await parentSession(setup, 'parent')
    const seed = []
    for await (const event of setup.readEvents('parent')) seed.push(event)
    const fs = corruptingTempWrites()
    const { store } = coreTestStore(temp.path, { fs, encoding })
    const error = await failure(store.create({ id: 'copy', seed }))
    expect(error).toMatchObject({ code: 'CREATE_FAILED', details: { step: 'verify', published: false } })
    expect(fs.fired()).toBeGreaterThan(0)
    expect(leftovers(temp.path, 'copy')).toEqual([])
  })
})

describe('failure codes name the operation', () => {
  it('compress: a link EIO is COMPRESS_FAILED at step link, the plain log kept', async () => {
    const { store: setup } = coreTestStore(temp.path)
    const bytes = await parentSession(setup, 'cold')
    const fs: FsOps = {
      ...nodeFsOps,
      async link(existing, target) {
        if (target.endsWith('.zstd')) throw fsError('EIO', 'link', target)
        return nodeFsOps.link(existing, target)
      },
    }
    const error = await failure(
      coreTestStore(temp.path, { fs }).store.backend.capabilities.compress.compress('cold'),
    )
    expect(error).toMatchObject({
      code: 'COMPRESS_FAILED',
      details: { step: 'link', cause: 'EIO', published: false },
    })
    const names = readdirSync(join(temp.path, 'cold'))
    expect(names.filter((name) => name.endsWith('.zstd') || name.startsWith('.tmp-'))).toEqual([])
    expect(readFileSync(join(temp.path, 'cold', 'session.v4.jsonl')).equals(bytes)).toBe(true)
  })
})
