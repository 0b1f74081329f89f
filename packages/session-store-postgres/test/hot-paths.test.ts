/**
 * The hot paths' performance mechanics keep their guarantees: the append and read-page
 * statements are prepared once per connection (reused across sessions and leases), and a
 * read requests its next page before handing out the current one (prefetch).
 */
import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type { StoredLine } from '@agent-ledger/session-store'
import { expect, it } from 'vitest'

import { openPostgresBackend } from '../src/index.ts'
import type { PostgresBackend } from '../src/index.ts'
import {
  crcOf,
  createRequest,
  describeOnServer,
  eventLines,
  sessionId,
  storedRows,
  useDatabase,
} from './support/pg.ts'
import { ReplyDroppingProxy } from './support/proxy.ts'

async function sleep(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms))
}

describeOnServer('PostgreSQL hot paths', () => {
  let url: string
  /** One connection: every statement of these tests shares it (and its prepared statements). */
  let backend: PostgresBackend

  useDatabase((database) => ({ url, backend } = database), { poolSize: 1, readPageSize: 5 })

  it('interleaved appends of two sessions on one connection (one prepared append) stay dense; a fenced lease on it writes nothing', async () => {
    const a = sessionId('prep-a')
    const b = sessionId('prep-b')
    await backend.create(createRequest(a))
    await backend.create(createRequest(b))
    const leaseA = (await backend.acquire(a, { owner: 'one', leaseMs: 60_000 })).lease
    const leaseB = (await backend.acquire(b, { owner: 'one', leaseMs: 60_000 })).lease
    const linesA = eventLines(0, 6, 'a ')
    const linesB = eventLines(0, 6, 'b ')
    for (let index = 0; index < 6; index += 2) {
      for (const [lease, lines] of [
        [leaseA, linesA],
        [leaseB, linesB],
      ] as const) {
        const batch = lines.slice(index, index + 2)
        await backend.append(lease, {
          expectedSeq: index,
          lines: batch,
          lastCrc: crcOf(batch[1] as string),
          batchId: `${lease.sessionId}:${index}`,
        })
      }
    }
    const taken = (await backend.acquire(a, { owner: 'two', leaseMs: 60_000, takeover: true })).lease
    const late = eventLines(6, 1, 'late ')
    const refusal = await backend
      .append(leaseA, { expectedSeq: 6, lines: late, lastCrc: crcOf(late[0] as string), batchId: 'late' })
      .then(
        () => 'resolved',
        (error: unknown) => (SessionStoreError.is(error) ? error.code : 'other'),
      )
    expect(refusal).toBe(SessionStoreErrorCode.FENCED)
    const next = eventLines(6, 1, 'next ')
    await backend.append(taken, {
      expectedSeq: 6,
      lines: next,
      lastCrc: crcOf(next[0] as string),
      batchId: 'next',
    })
    expect((await storedRows(url, a)).map((row) => row.line)).toEqual([...linesA, ...next])
    expect((await storedRows(url, b)).map((row) => row.line)).toEqual(linesB)
  })

  it('a read stopped early gives the prefetched page its connection back: the one-connection backend answers the next call', async () => {
    const id = sessionId('early')
    const lines = eventLines(0, 23)
    await backend.create({ ...createRequest(id), lines, lastCrc: crcOf(lines[22] as string) })
    const seen: StoredLine[] = []
    for await (const stored of backend.read(id, { fromSeq: 2 })) {
      seen.push(stored)
      if (seen.length === 3) break
    }
    expect(seen.map((stored) => stored.seq)).toEqual([2, 3, 4])
    expect((await backend.head(id)).nextSeq).toBe(23)
    // A full read over page boundaries (5 per page, prefetched) still returns every line once, in order.
    const all: string[] = []
    for await (const stored of backend.read(id, { fromSeq: 0 })) all.push(stored.line)
    expect(all).toEqual(lines)
  })

  it('a prefetched page whose connection drops while the consumer holds the previous page: the lines before it, then BACKEND_FAILED/CONNECTION_LOST (no unhandled rejection)', async () => {
    const id = sessionId('drop')
    const lines = eventLines(0, 20)
    await backend.create({ ...createRequest(id), lines, lastCrc: crcOf(lines[19] as string) })
    const server = new URL(url)
    const proxy = new ReplyDroppingProxy(Number(server.port))
    await proxy.start()
    const viaProxy = new URL(url)
    viaProxy.port = String(proxy.port)
    const proxied = await openPostgresBackend({
      connectionString: viaProxy.toString(),
      migrate: false,
      poolSize: 1,
      readPageSize: 5,
    })
    const seen: number[] = []
    let failure: unknown
    try {
      for await (const stored of proxied.read(id, { fromSeq: 0 })) {
        seen.push(stored.seq)
        if (seen.length === 1) {
          // The next page request sent from now on loses its reply and its connection
          // (page 2, or page 3 when page 2 had already been sent); the consumer is busy
          // meanwhile, so that rejection happens while nobody awaits it.
          proxy.arm('agent-ledger-read-page')
          await sleep(300)
        }
      }
    } catch (error) {
      failure = error
    } finally {
      await proxied.close()
      await proxy.stop()
    }
    expect(proxy.dropped).toBe(1)
    expect(SessionStoreError.is(failure, SessionStoreErrorCode.BACKEND_FAILED)).toBe(true)
    expect((failure as SessionStoreError).details).toMatchObject({ reason: 'CONNECTION_LOST' })
    // Whole pages before the lost one, dense from 0.
    expect([5, 10]).toContain(seen.length)
    expect(seen).toEqual(Array.from({ length: seen.length }, (_, index) => index))
  })
})
