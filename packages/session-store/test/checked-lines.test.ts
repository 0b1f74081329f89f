/**
 * `StoredLine.checked`: a backend that decoded a line hands the core its object, and the
 * core does not decode that line again; a line checked against a larger depth than the
 * core's own limit, or longer than the core's limit, is decoded (and refused) by the core.
 */
import { describe, expect, it } from 'vitest'

import { createMemoryBackend, createSessionStore } from '../src/index.ts'
import type { ReadOptions, SessionBackend, StoredLine } from '../src/index.ts'

let tick = 0
const clock = (): string => new Date(Date.UTC(2026, 0, 1) + tick++).toISOString()

/** The memory backend, its reads handing `checked` built by `check` for every line. */
function checking(
  inner: SessionBackend,
  check: (stored: StoredLine) => StoredLine['checked'],
): SessionBackend {
  return {
    name: inner.name,
    capabilities: {},
    create: (request) => inner.create(request),
    acquire: (id, options) => inner.acquire(id, options),
    append: (lease, batch) => inner.append(lease, batch),
    renew: (lease, options) => inner.renew(lease, options),
    release: (lease) => inner.release(lease),
    head: (id, options) => inner.head(id, options),
    readHeader: (id, options) => inner.readHeader(id, options),
    async *read(id: string, options: ReadOptions) {
      for await (const stored of inner.read(id, options)) yield { ...stored, checked: check(stored) }
    },
    list: (query) => inner.list(query),
    close: () => inner.close(),
  }
}

async function sessionWith(backend: SessionBackend, content: string): Promise<void> {
  const writer = await createSessionStore({ backend, clock }).create({ id: 's' })
  writer.append({ type: 'user/message', data: { message: { role: 'user', content } } })
  await writer.close()
}

/** The object the backend claims, with the user message's text replaced (to see which one the core used). */
function claimed(stored: StoredLine, content: string): Record<string, unknown> {
  const value = JSON.parse(stored.line) as Record<string, unknown>
  delete value['crc']
  return { ...value, data: { message: { role: 'user', content } } }
}

describe('StoredLine.checked', () => {
  it('is used instead of decoding the line when it was checked within the core depth limit', async () => {
    const inner = createMemoryBackend()
    await sessionWith(inner, 'as stored')
    const backend = checking(inner, (stored) => ({ value: claimed(stored, 'as checked'), maxDepth: 16 }))
    const read = await createSessionStore({ backend, clock }).openReader('s')
    expect(read.projection.lastEvent?.data).toEqual({ message: { role: 'user', content: 'as checked' } })
  })

  it('is ignored when it was checked against a larger depth than the core limit: the core decodes the line', async () => {
    const inner = createMemoryBackend()
    await sessionWith(inner, 'as stored')
    const backend = checking(inner, (stored) => ({ value: claimed(stored, 'as checked'), maxDepth: 100_000 }))
    const read = await createSessionStore({ backend, clock }).openReader('s')
    expect(read.projection.lastEvent?.data).toEqual({ message: { role: 'user', content: 'as stored' } })
  })

  it('does not bypass the core line-length limit: a longer line is LINE_TOO_LARGE', async () => {
    const inner = createMemoryBackend()
    await sessionWith(inner, 'x'.repeat(5000))
    const backend = checking(inner, (stored) => ({ value: claimed(stored, 'short'), maxDepth: 16 }))
    const store = createSessionStore({ backend, clock, limits: { maxLineLength: 1000 } })
    const read = await store.openReader('s', { allowDamaged: true })
    expect(read.error?.code).toBe('LINE_TOO_LARGE')
    expect(read.lastSeq).toBe(-1)
  })
})
