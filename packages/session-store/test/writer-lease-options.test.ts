/**
 * Per-writer lease options (`owner`, `leaseMs` on create, openWriter and fork): the writer
 * holds its lease under the call's owner, and a bad value is refused before anything is
 * published.
 */
import { describe, expect, it } from 'vitest'

import { createMemoryBackend, createSessionStore } from '../src/index.ts'

function clock(): () => string {
  let tick = 0
  return () => new Date(Date.UTC(2026, 0, 1) + ++tick * 1000).toISOString()
}

const user = (content: string) =>
  ({ type: 'user/message', data: { message: { role: 'user', content } } }) as const

describe('writer lease options', () => {
  it('create, openWriter and fork hold the lease as the owner given, else as the store owner', async () => {
    const backend = createMemoryBackend()
    const store = createSessionStore({ backend, clock: clock(), owner: 'store-owner' })
    const created = await store.create({ id: 'a', owner: 'worker-1' })
    expect((await backend.head('a')).owner).toBe('worker-1')
    created.append(user('one'))
    await created.close()

    const reopened = await store.openWriter('a', { owner: 'worker-2', leaseMs: 5_000 })
    expect((await backend.head('a')).owner).toBe('worker-2')
    reopened.append(user('two'))
    await reopened.flush()
    expect((await backend.head('a')).lastBatchId).toMatch(/^worker-2:/)
    await reopened.close()

    const forked = await store.fork('a', { to: 'b', atSeq: 1, owner: 'worker-3' })
    expect((await backend.head('b')).owner).toBe('worker-3')
    await forked.close()

    const plain = await store.openWriter('a')
    expect((await backend.head('a')).owner).toBe('store-owner')
    await plain.close()
    await store.close()
  })

  it('a second owner finds the session locked by the first; takeover with an owner fences it', async () => {
    const backend = createMemoryBackend()
    const store = createSessionStore({ backend, clock: clock() })
    const first = await store.create({ id: 'l', owner: 'worker-1' })
    await expect(store.openWriter('l', { owner: 'worker-2' })).rejects.toMatchObject({
      code: 'SESSION_LOCKED',
    })
    const second = await store.openWriter('l', { owner: 'worker-2', takeover: true })
    expect((await backend.head('l')).owner).toBe('worker-2')
    expect(() => first.append(user('late'))).not.toThrow()
    await expect(first.flush()).rejects.toMatchObject({ code: 'FENCED' })
    await second.close()
    await store.close()
  })

  it('refuses an empty owner or a bad lease length with INVALID_OPTION, publishing nothing', async () => {
    const backend = createMemoryBackend()
    const store = createSessionStore({ backend, clock: clock() })
    await expect(store.create({ id: 'x', owner: '' })).rejects.toMatchObject({
      code: 'INVALID_OPTION',
      message: expect.stringContaining('owner'),
    })
    await expect(store.create({ id: 'x', leaseMs: 0 })).rejects.toMatchObject({
      code: 'INVALID_OPTION',
      message: expect.stringContaining('leaseMs'),
    })
    await expect(backend.head('x')).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' })
    await (await store.create({ id: 'p' })).close()
    await expect(store.fork('p', { to: 'q', atSeq: 0, owner: 'x'.repeat(201) })).rejects.toMatchObject({
      code: 'INVALID_OPTION',
      message: expect.stringContaining('owner'),
    })
    await expect(backend.head('q')).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' })
    await expect(store.openWriter('p', { leaseMs: 1.5 })).rejects.toMatchObject({ code: 'INVALID_OPTION' })
    await store.close()
  })
})
