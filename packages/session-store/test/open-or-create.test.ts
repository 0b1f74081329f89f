/**
 * openOrCreateWriter, the adapters' open-or-create: opens an existing session (its events
 * kept, the writer options passed), creates a missing one (header and lease, never
 * `takeover`), rethrows every other error unchanged, and opens the winner's session when a
 * concurrent create got there first.
 */
import { describe, expect, it } from 'vitest'

import {
  createMemoryBackend,
  createSessionStore,
  openOrCreateWriter,
  SessionStoreError,
} from '../src/index.ts'
import type { SessionStore } from '../src/index.ts'

function clock(): () => string {
  let tick = 0
  return () => new Date(Date.UTC(2026, 0, 1) + ++tick * 1000).toISOString()
}

/** The two calls openOrCreateWriter makes, wrapped to count or to race them. */
type OpenCreate = Pick<SessionStore, 'create' | 'openWriter'>

const user = (content: string) =>
  ({ type: 'user/message', data: { message: { role: 'user', content } } }) as const

describe('openOrCreateWriter', () => {
  it('creates a missing session with the header and lease given, then opens it on the next call', async () => {
    const backend = createMemoryBackend()
    const store = createSessionStore({ backend, clock: clock(), owner: 'store-owner' })
    const first = await openOrCreateWriter(store, 'a', {
      owner: 'worker-1',
      takeover: true,
      header: { metadata: { key: 'k1' } },
    })
    expect(first.created).toBe(true)
    expect(first.writer.header.metadata).toEqual({ key: 'k1' })
    expect((await backend.head('a')).owner).toBe('worker-1')
    first.writer.append(user('one'))
    await first.writer.close()

    const second = await openOrCreateWriter(store, 'a', {
      owner: 'worker-2',
      header: { metadata: { key: 'k2' } },
    })
    expect(second.created).toBe(false)
    // The existing session: its header and events, the header option ignored.
    expect(second.writer.header.metadata).toEqual({ key: 'k1' })
    expect(second.writer.projection.surface().map((entry) => entry.message.content)).toEqual(['one'])
    expect((await backend.head('a')).owner).toBe('worker-2')
    await second.writer.close()
    await store.close()
  })

  it('with create: false, a missing session is the store`s SESSION_NOT_FOUND, unchanged, and nothing is created', async () => {
    const backend = createMemoryBackend()
    const store = createSessionStore({ backend, clock: clock() })
    const failure = await openOrCreateWriter(store, 'missing', { create: false }).then(
      () => null,
      (error: unknown) => error,
    )
    expect(failure).toBeInstanceOf(SessionStoreError)
    expect(failure).toMatchObject({ code: 'SESSION_NOT_FOUND' })
    expect((await store.list()).sessions).toEqual([])
    await store.close()
  })

  it('a live lease of another owner is SESSION_LOCKED (no create tried); takeover passes through to openWriter', async () => {
    const backend = createMemoryBackend()
    const store = createSessionStore({ backend, clock: clock() })
    const holder = await store.create({ id: 'l', owner: 'worker-1' })
    let creates = 0
    const counting: OpenCreate = {
      openWriter: (id, options) => store.openWriter(id, options),
      create: (request) => {
        creates += 1
        return store.create(request)
      },
    }
    await expect(openOrCreateWriter(counting, 'l', { owner: 'worker-2' })).rejects.toMatchObject({
      code: 'SESSION_LOCKED',
    })
    expect(creates).toBe(0)
    const taken = await openOrCreateWriter(counting, 'l', { owner: 'worker-2', takeover: true })
    expect(taken.created).toBe(false)
    expect((await backend.head('l')).owner).toBe('worker-2')
    holder.append(user('late'))
    await expect(holder.flush()).rejects.toMatchObject({ code: 'FENCED' })
    await taken.writer.close()
    await store.close()
  })

  it('a session another process created between the open and the create is opened, not a SESSION_EXISTS', async () => {
    const backend = createMemoryBackend()
    const store = createSessionStore({ backend, clock: clock() })
    const other = createSessionStore({ backend, clock: clock(), owner: 'other-process' })
    // The other process creates the session (and closes its writer) just before our create.
    const racing: OpenCreate = {
      openWriter: (id, options) => store.openWriter(id, options),
      create: async (request) => {
        const winner = await other.create({ id: request.id, header: { metadata: { by: 'other' } } })
        winner.append(user('from the other process'))
        await winner.close()
        return store.create(request)
      },
    }
    const opened = await openOrCreateWriter(racing, 'r', { header: { metadata: { by: 'us' } } })
    expect(opened.created).toBe(false)
    expect(opened.writer.header.metadata).toEqual({ by: 'other' })
    expect(opened.writer.projection.surface().map((entry) => entry.message.content)).toEqual([
      'from the other process',
    ])
    await opened.writer.close()
    await store.close()
    await other.close()
  })
})
