/**
 * The core rethrows a backend's typed errors as they are and wraps only untyped ones as
 * `BACKEND_FAILED` with `cause` (issue 23 item 4).
 */
import { AgentLedgerError } from '@agent-ledger/session-events'
import { describe, expect, it } from 'vitest'

import {
  createMemoryBackend,
  createMemoryStorage,
  createSessionStore,
  SessionStoreError,
} from '../src/index.ts'
import type { SessionBackend } from '../src/index.ts'

class VendorError extends AgentLedgerError<'VENDOR_REFUSED'> {}

/** The memory backend with `readHeader` replaced by `fail` (methods keep the backend as `this`). */
function failingBackend(fail: () => Promise<never>): { backend: SessionBackend; inner: SessionBackend } {
  const inner = createMemoryBackend({ storage: createMemoryStorage(), now: () => 0 })
  const backend: SessionBackend = {
    name: 'hostile',
    capabilities: {},
    create: (request) => inner.create(request),
    acquire: (id, options) => inner.acquire(id, options),
    append: (lease, batch) => inner.append(lease, batch),
    renew: (lease) => inner.renew(lease),
    release: (lease) => inner.release(lease),
    head: (id, options) => inner.head(id, options),
    readHeader: fail,
    read: (id, options) => inner.read(id, options),
    list: (query) => inner.list(query),
    close: () => inner.close(),
  }
  return { backend, inner }
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

const clock = () => '2026-01-01T00:00:00.000Z'

describe('errors leaving a backend', () => {
  it('an untyped error (an errno) is BACKEND_FAILED naming the backend and the call, with details.cause and the original as cause', async () => {
    const raw = new Error('EIO: i/o error, read')
    Object.defineProperty(raw, 'code', { value: 'EIO', enumerable: true })
    const { backend } = failingBackend(() => Promise.reject(raw))
    const store = createSessionStore({ backend, clock })
    await (await store.create({ id: 's1' })).close()
    const error = await rejection(() => store.openReader('s1'))
    expect(error.code).toBe('BACKEND_FAILED')
    expect(error.details).toMatchObject({ cause: 'EIO', method: 'readHeader' })
    expect(error.cause).toBe(raw)
    expect(error.message).toMatch(/hostile backend's readHeader\(\) failed/)
  })

  it('a synchronous throw of a non-async method is a rejection with the same wrapping', async () => {
    const { backend } = failingBackend(() => {
      throw new TypeError('not a function')
    })
    const store = createSessionStore({ backend, clock })
    await (await store.create({ id: 's2' })).close()
    const error = await rejection(() => store.openReader('s2'))
    expect(error.code).toBe('BACKEND_FAILED')
    expect(error.details['cause']).toBe('unknown')
  })

  it("a backend's own typed error keeps its code, message and details (the original is the cause)", async () => {
    const vendor = new VendorError({
      code: 'VENDOR_REFUSED',
      message: 'Session s3 is on hold: expected an active account, found a suspended one.',
      details: { account: 'a-1' },
    })
    const { backend } = failingBackend(() => Promise.reject(vendor))
    const store = createSessionStore({ backend, clock })
    await (await store.create({ id: 's3' })).close()
    const error = await rejection(() => store.openReader('s3'))
    expect(error.code).toBe('VENDOR_REFUSED')
    expect(error.message).toBe(vendor.message)
    expect(error.details).toEqual({ account: 'a-1' })
    expect(error.cause).toBe(vendor)
  })

  it('a SessionStoreError from the backend is rethrown as the same object', async () => {
    const own = new SessionStoreError({
      code: 'DISK_FULL',
      message: 'Cannot read: the test says the disk is full.',
    })
    const { backend } = failingBackend(() => Promise.reject(own))
    const store = createSessionStore({ backend, clock })
    await (await store.create({ id: 's4' })).close()
    expect(await rejection(() => store.openReader('s4'))).toBe(own)
  })
})
