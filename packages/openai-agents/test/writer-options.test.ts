/**
 * The core's writer options reach `store.create` and `store.openWriter`: the lease owner and
 * length, takeover of a live lease (the old writer is fenced), and the abort signal.
 */
import { createMemoryBackend, createSessionStore } from '@agent-ledger/session-store'
import { describe, expect, it } from 'vitest'

import { openAgentsSession } from '../src/index.ts'

function newStore() {
  const backend = createMemoryBackend()
  const store = createSessionStore({ backend, clock: () => new Date().toISOString(), owner: 'store-owner' })
  return { backend, store }
}

describe('openAgentsSession writer options', () => {
  it('creates and reopens under the owner given; a second owner is refused, then takes over with takeover', async () => {
    const { backend, store } = newStore()
    const first = await openAgentsSession(store, 's', { owner: 'worker-1', leaseMs: 60_000 })
    expect((await backend.head('s')).owner).toBe('worker-1')
    await expect(openAgentsSession(store, 's', { owner: 'worker-2' })).rejects.toMatchObject({
      code: 'SESSION_LOCKED',
    })
    const second = await openAgentsSession(store, 's', { owner: 'worker-2', takeover: true })
    expect((await backend.head('s')).owner).toBe('worker-2')
    await expect(first.addItems([{ type: 'message', role: 'user', content: 'late' }])).rejects.toMatchObject({
      code: 'FENCED',
    })
    await second.close()
    await store.close()
  })

  it('an aborted signal stops the open with ABORTED and creates nothing', async () => {
    const { backend, store } = newStore()
    const controller = new AbortController()
    controller.abort(new Error('stop'))
    await expect(openAgentsSession(store, 'a', { signal: controller.signal })).rejects.toMatchObject({
      code: 'ABORTED',
    })
    await expect(backend.head('a')).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' })
    await store.close()
  })
})
