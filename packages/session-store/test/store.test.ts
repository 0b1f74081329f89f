import { describe, expect, it } from 'vitest'

import { createMemoryBackend, createSessionStore, SessionStoreError } from '../src/index.ts'
import type { LoggedEvent } from '@agent-ledger/session-events'

import type { AbortSignalLike, MemoryBackend, SessionStore } from '../src/index.ts'

declare const AbortController: new () => { readonly signal: AbortSignalLike; abort(reason?: unknown): void }

function clock(): () => string {
  let tick = 0
  return () => new Date(Date.UTC(2026, 0, 1) + ++tick * 1000).toISOString()
}

function setup(options: { owner?: string; leaseMs?: number; backend?: MemoryBackend } = {}): {
  backend: MemoryBackend
  store: SessionStore
} {
  const backend = options.backend ?? createMemoryBackend()
  const store = createSessionStore({
    backend,
    clock: clock(),
    ...(options.owner === undefined ? {} : { owner: options.owner }),
    ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
  })
  return { backend, store }
}

const user = (content: string) =>
  ({ type: 'user/message', data: { message: { role: 'user', content } } }) as const

async function collect(iterable: AsyncIterable<LoggedEvent>): Promise<LoggedEvent[]> {
  const found: LoggedEvent[] = []
  for await (const event of iterable) found.push(event)
  return found
}

async function storedLines(backend: MemoryBackend, id: string): Promise<string[]> {
  const found: string[] = []
  for await (const stored of backend.read(id, { fromSeq: 0 })) found.push(stored.line)
  return found
}

describe('writer: unknown outcomes are settled by the batch id', () => {
  it('a batch that landed before the reply was lost is acknowledged once, not written twice', async () => {
    const { backend, store } = setup()
    const writer = await store.create({ id: 's1' })
    writer.append(user('one'))
    backend.testHooks.failNextAppend({ landed: true })
    await expect(writer.flush()).resolves.toEqual({ durableSeq: 0 })
    expect(writer.bufferedEvents).toBe(0)
    writer.append(user('two'))
    await writer.flush()
    expect((await storedLines(backend, 's1')).length).toBe(2)
    expect((await backend.head('s1')).lastBatchId).toBe('agent-ledger:1:2')
  })

  it('a batch that did not land stays buffered with the same seqs and a retry writes it once', async () => {
    const { backend, store } = setup()
    const writer = await store.create({ id: 's2' })
    const event = writer.append(user('one'))
    backend.testHooks.failNextAppend({ landed: false })
    const error = await writer.flush().catch((caught: unknown) => caught)
    expect(error).toMatchObject({ code: 'UNKNOWN_OUTCOME', details: { landed: false } })
    expect(writer.bufferedEvents).toBe(1)
    expect(writer.state).toBe('open')
    await writer.flush()
    const events = await collect(store.readEvents('s2'))
    expect(events).toEqual([event])
  })
})

describe('writer: full disk, close and states', () => {
  it('DISK_FULL keeps the events buffered; the retry after space returns writes them with the same seqs', async () => {
    const { backend, store } = setup()
    const writer = await store.create({ id: 'full' })
    const first = writer.append(user('a'))
    backend.testHooks.full = true
    await expect(writer.flush()).rejects.toMatchObject({ code: 'DISK_FULL' })
    const second = writer.append(user('b'))
    expect(second.seq).toBe(1)
    await expect(writer.close()).rejects.toMatchObject({ code: 'DISK_FULL' })
    expect(() => writer.append(user('c'))).toThrow(expect.objectContaining({ code: 'WRITER_CLOSED' }))
    backend.testHooks.full = false
    await writer.close()
    expect(writer.state).toBe('closed')
    expect(await collect(store.readEvents('full'))).toEqual([first, second])
    await writer.close()
  })

  it('refuses an append over maxBufferedBytes with BUFFER_FULL, naming the limit, and keeps the buffer', async () => {
    const backend = createMemoryBackend()
    const store = createSessionStore({ backend, clock: clock(), limits: { maxBufferedBytes: 500 } })
    const writer = await store.create({ id: 'buf' })
    writer.append(user('x'.repeat(100)))
    writer.append(user('y'.repeat(50)))
    expect(() => writer.append(user('z'.repeat(100)))).toThrow(
      expect.objectContaining({
        code: 'BUFFER_FULL',
        details: expect.objectContaining({ limit: 500 }) as unknown,
      }),
    )
    expect(writer.bufferedEvents).toBe(2)
    expect(writer.projection.nextSeq).toBe(2)
    await writer.close()
  })

  it('refuses an event that breaks a history rule with INVALID_EVENT, nothing buffered, the projection unchanged', async () => {
    const { store } = setup()
    const writer = await store.create({ id: 'history' })
    writer.append(user('first'))
    const before = writer.projection.snapshot()
    // A replace of a range that is not on the surface: only the projection's plan can refuse it.
    expect(() =>
      writer.append({
        ...user('replacement'),
        surfaceOp: { op: 'replace', startSeq: 5, endSeq: 6 },
        sourceEventSeqs: [0],
      } as never),
    ).toThrow(
      expect.objectContaining({
        code: 'INVALID_EVENT',
        seq: 1,
        details: expect.objectContaining({ projectionCode: expect.any(String) as unknown }) as unknown,
      }),
    )
    expect(writer.bufferedEvents).toBe(1)
    expect(writer.projection.nextSeq).toBe(1)
    expect(writer.projection.snapshot()).toEqual(before)
    expect(writer.append(user('second')).seq).toBe(1)
    await writer.close()
  })

  it('refuses a backend whose crc32c is not a function with INVALID_OPTION naming backend.crc32c', () => {
    const backend = createMemoryBackend()
    Object.defineProperty(backend, 'crc32c', { value: 'fast' })
    expect(() => createSessionStore({ backend, clock: clock() })).toThrow(
      expect.objectContaining({
        code: 'INVALID_OPTION',
        details: expect.objectContaining({ option: 'backend.crc32c' }) as unknown,
      }),
    )
  })

  it('refuses invalid events synchronously with nothing buffered', async () => {
    const { store } = setup()
    const writer = await store.create({ id: 'bad' })
    expect(() => writer.append({ type: 'nope/unknown', data: {} } as never)).toThrow(
      expect.objectContaining({ code: 'UNKNOWN_EVENT_TYPE' }),
    )
    const cyclic: Record<string, unknown> = {}
    cyclic['self'] = cyclic
    expect(() => writer.append({ type: 'turn/start', data: cyclic } as never)).toThrow(
      expect.objectContaining({ code: 'UNSERIALIZABLE_EVENT' }),
    )
    expect(() => writer.append({ type: 'turn/start', data: { turn: Number.NaN } } as never)).toThrow(
      SessionStoreError,
    )
    expect(writer.bufferedEvents).toBe(0)
    expect(writer.projection.nextSeq).toBe(0)
    await writer.close()
  })

  it('renews the lease on flush once half of it has passed, so a slow but live writer is not fenced', async () => {
    let now = 0
    const backend = createMemoryBackend({ now: () => now })
    let tick = 0
    const store = createSessionStore({
      backend,
      leaseMs: 10_000,
      clock: () => new Date(Date.UTC(2026, 0, 1) + tick).toISOString(),
    })
    const writer = await store.create({ id: 'renew' })
    for (let round = 0; round < 5; round += 1) {
      now += 6000
      tick += 6000
      writer.append(user(`round ${round}`))
      await writer.flush()
    }
    const other = createSessionStore({ backend, clock: clock(), owner: 'other' })
    await expect(other.openWriter('renew')).rejects.toMatchObject({ code: 'SESSION_LOCKED' })
    await writer.close()
  })

  it('store.close() closes (and flushes) every writer it opened, then refuses new calls', async () => {
    const { backend, store } = setup()
    const a = await store.create({ id: 'ca' })
    const b = await store.create({ id: 'cb' })
    a.append(user('a'))
    b.append(user('b'))
    await store.close()
    expect([a.state, b.state]).toEqual(['closed', 'closed'])
    const reader = setup({ backend: createMemoryBackend({ storage: backend.storage }) }).store
    expect((await collect(reader.readEvents('ca'))).length).toBe(1)
    expect((await collect(reader.readEvents('cb'))).length).toBe(1)
    await expect(store.create({ id: 'cc' })).rejects.toMatchObject({ code: 'STORE_CLOSED' })
    await store.close()
  })
})

describe('damage, verify and salvage', () => {
  async function damaged(): Promise<{ backend: MemoryBackend; store: SessionStore }> {
    const context = setup()
    const writer = await context.store.create({ id: 'hurt' })
    for (const text of ['a', 'b', 'c', 'd']) writer.append(user(text))
    await writer.close()
    const lines = await storedLines(context.backend, 'hurt')
    context.backend.testHooks.corruptLine('hurt', 2, lines[2]!.replace('"c"', '"C"'))
    return context
  }

  it('verify reports the damage with its seq and the last good seq instead of throwing', async () => {
    const { store } = await damaged()
    const report = await store.verify('hurt')
    expect(report.status).toBe('damaged')
    expect(report.damage).toMatchObject({ code: 'CORRUPT_LINE', seq: 2, lastGoodSeq: 1 })
    expect(report.damage?.message).toContain('memory:hurt')
  })

  it('open for write is refused and releases its lease; a read gives the good prefix after the error', async () => {
    const { backend, store } = await damaged()
    await expect(store.openWriter('hurt')).rejects.toMatchObject({ code: 'CORRUPT_LINE' })
    expect((await backend.head('hurt')).owner).toBeNull()
    const seen: number[] = []
    await expect(
      (async () => {
        for await (const event of store.readEvents('hurt')) seen.push(event.seq)
      })(),
    ).rejects.toMatchObject({ code: 'CORRUPT_LINE' })
    expect(seen).toEqual([0, 1])
    const read = await store.openReader('hurt', { allowDamaged: true })
    expect(read.lastSeq).toBe(1)
    expect(read.error?.code).toBe('CORRUPT_LINE')
  })

  it('salvage copies the good prefix line for line plus a session/salvage event, leaving the source untouched', async () => {
    const { backend, store } = await damaged()
    const source = await storedLines(backend, 'hurt')
    const report = await store.salvage('hurt', { to: 'healed' })
    expect(report).toMatchObject({ copiedEvents: 2, lastGoodSeq: 1, salvageSeq: 2, reason: 'CORRUPT_LINE' })
    const copied = await storedLines(backend, 'healed')
    expect(copied.slice(0, 2)).toEqual(source.slice(0, 2))
    const events = await collect(store.readEvents('healed'))
    expect(events[2]).toMatchObject({
      type: 'session/salvage',
      data: { sourceSession: 'hurt', lastGoodSeq: 1, reason: 'CORRUPT_LINE', sourceFile: 'memory:hurt' },
    })
    expect(await storedLines(backend, 'hurt')).toEqual(source)
    expect((await store.verify('healed')).status).toBe('ok')
  })

  it('a head that disagrees with the stored lines refuses the write open', async () => {
    const { backend, store } = setup()
    const writer = await store.create({ id: 'lost' })
    writer.append(user('a'))
    writer.append(user('b'))
    await writer.close()
    backend.testHooks.dropLinesFrom('lost', 1)
    const lines = await storedLines(backend, 'lost')
    await expect(store.openWriter('lost')).rejects.toMatchObject({
      code: 'CORRUPT_LINE',
      details: expect.objectContaining({
        expected: 1,
        found: 1,
        foundCrc: lines[0]!.slice(-10, -2),
      }) as unknown,
    })
  })

  it('list reports a session with a damaged header as a problem and lists the rest', async () => {
    const { backend, store } = setup()
    await (await store.create({ id: 'good' })).close()
    await (await store.create({ id: 'broken' })).close()
    const { line } = await backend.readHeader('broken')
    backend.testHooks.corruptLine('broken', -1, line.replace('"broken"', '"brokex"'))
    const page = await store.list()
    expect(page.sessions.map((session) => session.id)).toEqual(['good'])
    expect(page.problems).toEqual([
      { id: 'broken', error: expect.objectContaining({ code: 'INVALID_HEADER' }) as unknown },
    ])
    await expect(store.list({ cursor: 'not-a-cursor' })).rejects.toMatchObject({ code: 'INVALID_OPTION' })
    await expect(store.list({ limit: 0 })).rejects.toMatchObject({ code: 'INVALID_OPTION' })
  })
})

describe('follow', () => {
  it('yields the existing events, then new ones as they land, and ends quietly on abort (notify capability)', async () => {
    const { store } = setup()
    const writer = await store.create({ id: 'live' })
    writer.append(user('before'))
    await writer.flush()
    const controller = new AbortController()
    const seen: string[] = []
    const done = (async () => {
      for await (const event of store.follow('live', { signal: controller.signal })) {
        seen.push((event.data as { message: { content: string } }).message.content)
        if (seen.length === 3) controller.abort()
      }
    })()
    writer.append(user('during 1'))
    await writer.flush()
    writer.append(user('during 2'))
    await writer.flush()
    await done
    expect(seen).toEqual(['before', 'during 1', 'during 2'])
    await writer.close()
  })

  it('polls head with the injected sleep when the backend cannot notify, and refuses without one', async () => {
    const backend = createMemoryBackend({ offer: { follow: false } })
    const noSleep = createSessionStore({ backend, clock: clock() })
    const writer = await noSleep.create({ id: 'poll' })
    expect(() => noSleep.follow('poll')).toThrow(expect.objectContaining({ code: 'UNSUPPORTED' }))
    const sleeps: number[] = []
    const controller = new AbortController()
    const polling = createSessionStore({
      backend,
      clock: clock(),
      sleep: async (ms) => {
        sleeps.push(ms)
        if (sleeps.length === 1) {
          writer.append(user('late'))
          await writer.flush()
        } else controller.abort()
      },
    })
    const seen: number[] = []
    for await (const event of polling.follow('poll', { signal: controller.signal, pollMs: 40 }))
      seen.push(event.seq)
    expect(seen).toEqual([0])
    expect(sleeps).toEqual([40, 40])
    await writer.close()
  })
})

describe('create and fork rules', () => {
  it('refuses a seed whose seqs are not dense from 0', async () => {
    const { store } = setup()
    const seed = [
      { seq: 1, time: '2026-01-01T00:00:00.000Z', type: 'turn/start', data: { turn: 1 } },
    ] as LoggedEvent[]
    await expect(store.create({ id: 'gap', seed })).rejects.toMatchObject({
      code: 'INVALID_SEED',
      details: { expected: 0, found: 1 },
    })
  })

  it('refuses bad ids before touching the backend', async () => {
    const { store } = setup()
    await expect(store.create({ id: '../etc' })).rejects.toMatchObject({ code: 'INVALID_SESSION_ID' })
    await expect(store.openWriter('')).rejects.toMatchObject({ code: 'INVALID_SESSION_ID' })
    await (await store.create({ id: 'p' })).close()
    await expect(store.fork('p', { to: 'bad/id', atSeq: 0 })).rejects.toMatchObject({
      code: 'INVALID_SESSION_ID',
    })
  })

  it('fork with openTurn refuse inside an open turn is FORK_REFUSED and publishes nothing', async () => {
    const { backend, store } = setup()
    const writer = await store.create({ id: 'open' })
    writer.append({ type: 'turn/start', data: { turn: 1 } })
    writer.append(user('hi'))
    await writer.flush()
    await expect(store.fork('open', { to: 'child', atSeq: 1, openTurn: 'refuse' })).rejects.toMatchObject({
      code: 'FORK_REFUSED',
    })
    await expect(backend.head('child')).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' })
    await writer.close()
  })
})
