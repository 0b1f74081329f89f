/**
 * A backend failure that no retry can fix (`details.poisoned: true` on the port error: a
 * failed fdatasync, a failed rollback) fails the writer: it never hands the backend that batch
 * again, and every later call is `WRITER_FAILED` naming the first failure's code.
 */
import { describe, expect, it } from 'vitest'

import { createMemoryBackend, createSessionStore, SessionStoreError } from '../src/index.ts'
import type { SessionBackend } from '../src/index.ts'

const user = (content: string) =>
  ({ type: 'user/message', data: { message: { role: 'user', content } } }) as const

/** The memory backend, with `append` failing as a file backend does after a failed fdatasync. */
function poisoningBackend(): { backend: SessionBackend; appends: () => number; poison: () => void } {
  const inner = createMemoryBackend()
  let appends = 0
  let poisoned = false
  const append: SessionBackend['append'] = async (lease, batch) => {
    appends += 1
    if (!poisoned) return inner.append(lease, batch)
    throw new SessionStoreError({
      code: 'BACKEND_FAILED',
      sessionId: lease.sessionId,
      message: 'fdatasync failed (EIO): the batch is not durable and can never be acknowledged.',
      details: { cause: 'EIO', poisoned: true },
    })
  }
  const backend = new Proxy(inner, {
    get(target, property) {
      if (property === 'append') return append
      const value: unknown = Reflect.get(target, property, target)
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    },
  })
  return { backend, appends: () => appends, poison: () => (poisoned = true) }
}

describe('a poisoned backend append', () => {
  it('fails the writer: the next append and flush are WRITER_FAILED naming the cause, the backend is not asked again', async () => {
    const { backend, appends, poison } = poisoningBackend()
    const store = createSessionStore({ backend, clock: () => '2026-01-01T00:00:00.000Z' })
    const writer = await store.create({ id: 's' })
    writer.append(user('durable'))
    expect(await writer.flush()).toEqual({ durableSeq: 0 })
    poison()
    writer.append(user('never durable'))
    await expect(writer.flush()).rejects.toMatchObject({
      code: 'BACKEND_FAILED',
      details: { poisoned: true },
    })
    expect(writer.state).toBe('failed')
    const calls = appends()
    expect(() => writer.append(user('after'))).toThrow(
      expect.objectContaining({ code: 'WRITER_FAILED', details: { cause: 'BACKEND_FAILED' } }),
    )
    await expect(writer.flush()).rejects.toMatchObject({
      code: 'WRITER_FAILED',
      details: { cause: 'BACKEND_FAILED' },
    })
    expect(appends()).toBe(calls)
    expect(writer.durableSeq).toBe(0)
    await writer.close()
    await store.close()
  })
})
