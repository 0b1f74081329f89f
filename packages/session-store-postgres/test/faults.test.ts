/**
 * Faults injected for real on the shared throwaway server (each in its own database):
 * a backend terminated between its INSERT and COMMIT, a reply lost after COMMIT (a TCP
 * proxy drops it), eight writers racing for one session, a lease expiring during a long
 * pause. Server kills and failover are in crash-restart.test.ts and failover.test.ts.
 */
import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type { WriterLease } from '@agent-ledger/session-store'
import { expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { openPostgresBackend } from '../src/index.ts'
import type { PostgresBackend } from '../src/index.ts'
import {
  crcOf,
  createRequest,
  describeOnServer,
  eventLines,
  sessionId,
  sqlOnce,
  storedRows,
  useDatabase,
} from './support/pg.ts'
import { ReplyDroppingProxy } from './support/proxy.ts'

async function sleep(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms))
}

describeOnServer('PostgreSQL faults', () => {
  let url: string
  let backend: PostgresBackend

  useDatabase((database) => ({ url, backend } = database))

  it('a backend terminated after its INSERT and before COMMIT leaves no row; the append resolves by last_batch and lands exactly once', async () => {
    const id = sessionId('term')
    await backend.create(createRequest(id))
    // Test-only trigger: the first append statement (per a non-transactional sequence)
    // sleeps AFTER inserting its rows, i.e. before its commit.
    await sqlOnce(url, 'CREATE SEQUENCE IF NOT EXISTS fault_once')
    await sqlOnce(
      url,
      `CREATE OR REPLACE FUNCTION fault_sleep() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN IF nextval('fault_once') = 1 THEN PERFORM pg_sleep(60); END IF; RETURN NULL; END $$`,
    )
    await sqlOnce(
      url,
      'CREATE TRIGGER fault_sleep AFTER INSERT ON ledger_events FOR EACH STATEMENT EXECUTE FUNCTION fault_sleep()',
    )
    try {
      const { lease } = await backend.acquire(id, { owner: 'term', leaseMs: 60_000 })
      const lines = eventLines(0, 4)
      const append = backend.append(lease, {
        expectedSeq: 0,
        lines,
        lastCrc: crcOf(lines[3] as string),
        batchId: 'term:1:1',
      })
      append.catch(() => undefined)
      let pid: number | undefined
      while (pid === undefined) {
        const rows = await sqlOnce<{ pid: number }>(
          url,
          "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep'",
        )
        pid = rows[0]?.pid
        if (pid === undefined) await sleep(20)
      }
      // The rows are inserted but not committed: nobody else sees them.
      expect(await storedRows(url, id)).toEqual([])
      const terminated = await sqlOnce<{ ok: boolean }>(url, 'SELECT pg_terminate_backend($1, 10000) AS ok', [
        pid,
      ])
      expect(terminated[0]?.ok).toBe(true)
      await append
      const rows = await storedRows(url, id)
      expect(rows.map((row) => row.line)).toEqual(lines)
      expect(rows.map((row) => row.seq)).toEqual([0, 1, 2, 3])
      expect(await backend.head(id)).toMatchObject({ nextSeq: 4, lastBatchId: 'term:1:1' })
      // The terminated attempt really ran: the trigger fired twice (the kill, then the retry).
      const calls = await sqlOnce<{ last_value: string }>(url, 'SELECT last_value FROM fault_once')
      expect(Number(calls[0]?.last_value)).toBe(2)
    } finally {
      await sqlOnce(url, 'DROP TRIGGER IF EXISTS fault_sleep ON ledger_events')
    }
  })

  it('a reply lost after COMMIT (a TCP proxy drops it) is resolved from last_batch: acknowledged once, never duplicated', async () => {
    const server = new URL(url)
    const proxy = new ReplyDroppingProxy(Number(server.port))
    await proxy.start()
    const viaProxy = new URL(url)
    viaProxy.port = String(proxy.port)
    const proxied = await openPostgresBackend({ connectionString: viaProxy.toString(), migrate: false })
    try {
      const id = sessionId('lost')
      await proxied.create(createRequest(id))
      const { lease } = await proxied.acquire(id, { owner: 'lost', leaseMs: 60_000 })
      const first = eventLines(0, 3)
      await proxied.append(lease, {
        expectedSeq: 0,
        lines: first,
        lastCrc: crcOf(first[2] as string),
        batchId: 'lost:1:1',
      })
      proxy.arm('agent-ledger-append') // the prepared append's name (in its Parse and every Bind)
      const second = eventLines(3, 3)
      await proxied.append(lease, {
        expectedSeq: 3,
        lines: second,
        lastCrc: crcOf(second[2] as string),
        batchId: 'lost:1:2',
      })
      expect(proxy.dropped).toBe(1)
      const rows = await storedRows(url, id)
      expect(rows.map((row) => row.seq)).toEqual([0, 1, 2, 3, 4, 5])
      expect(rows.map((row) => row.line)).toEqual([...first, ...second])
      expect(await proxied.head(id)).toMatchObject({ nextSeq: 6, lastBatchId: 'lost:1:2' })
      // The writer goes on at the right seq.
      const third = eventLines(6, 1)
      await proxied.append(lease, {
        expectedSeq: 6,
        lines: third,
        lastCrc: crcOf(third[0] as string),
        batchId: 'lost:1:3',
      })
      expect((await storedRows(url, id)).length).toBe(7)
    } finally {
      await proxied.close()
      await proxy.stop()
    }
  })

  it('8 writers on 8 connection pools racing for one session (takeover on refusal): dense seq, no duplicate, every acknowledged flush present, no refused one', async () => {
    const id = sessionId('race')
    await backend.create(createRequest(id))
    const writers = await Promise.all(
      Array.from({ length: 8 }, () =>
        openPostgresBackend({ connectionString: url, poolSize: 2, migrate: false }),
      ),
    )
    const acknowledged = new Map<string, { seq: number; lines: string[] }>()
    const refused: string[] = []
    try {
      await Promise.all(
        writers.map(async (writer, index) => {
          const owner = `w${index}`
          let lease: WriterLease | undefined
          let nextSeq = 0
          for (let flush = 0; flush < 25; flush++) {
            if (lease === undefined) {
              const acquired = await writer.acquire(id, { owner, leaseMs: 60_000, takeover: true })
              lease = acquired.lease
              nextSeq = acquired.head.nextSeq
            }
            const batchId = `${owner}:${lease.epoch}:${flush}`
            const lines = eventLines(nextSeq, 3, `${batchId} `)
            try {
              await writer.append(lease, {
                expectedSeq: nextSeq,
                lines,
                lastCrc: crcOf(lines[2] as string),
                batchId,
              })
              acknowledged.set(batchId, { seq: nextSeq, lines })
              nextSeq += 3
            } catch (error) {
              if (!SessionStoreError.is(error, SessionStoreErrorCode.FENCED, SessionStoreErrorCode.CONFLICT))
                throw error
              refused.push(batchId)
              lease = undefined
            }
          }
        }),
      )
    } finally {
      await Promise.all(writers.map((writer) => writer.close()))
    }
    const rows = await storedRows(url, id)
    expect(rows.map((row) => row.seq)).toEqual(rows.map((_, index) => index))
    const ackedLines = [...acknowledged.values()].reduce((count, batch) => count + batch.lines.length, 0)
    expect(rows.length).toBe(ackedLines)
    for (const [, batch] of acknowledged) {
      expect(rows.slice(batch.seq, batch.seq + 3).map((row) => row.line)).toEqual(batch.lines)
    }
    for (const batchId of refused) expect(rows.some((row) => row.line.includes(`${batchId} `))).toBe(false)
    // Epochs never go backwards along the log: a fenced writer never wrote after its successor.
    for (let index = 1; index < rows.length; index++) {
      expect((rows[index] as { epoch: number }).epoch).toBeGreaterThanOrEqual(
        (rows[index - 1] as { epoch: number }).epoch,
      )
    }
    expect(acknowledged.size + refused.length).toBe(200)
    expect(refused.length).toBeGreaterThan(0)
  })

  it('a lease that expires during a long pause: another owner acquires without takeover, the paused writer is FENCED on renew and on append, zero rows from it', async () => {
    const id = sessionId('pause')
    await backend.create(createRequest(id))
    // Long enough that the eager acquire below meets a live lease on a busy machine too.
    const paused = await backend.acquire(id, { owner: 'slow-tool-call', leaseMs: testTime(1_000) })
    const early = await backend
      .acquire(id, { owner: 'eager', leaseMs: 60_000 })
      .catch((error: unknown) => error)
    expect(SessionStoreError.is(early, SessionStoreErrorCode.SESSION_LOCKED)).toBe(true)
    // The pause: wait until the server says the lease expired (its clock decides, not ours).
    for (;;) {
      const rows = await sqlOnce<{ expired: boolean }>(
        url,
        'SELECT lease_until <= clock_timestamp() AS expired FROM ledger_sessions WHERE session_id = $1',
        [id],
      )
      if (rows[0]?.expired === true) break
      await sleep(50)
    }
    const next = await backend.acquire(id, { owner: 'next-worker', leaseMs: 60_000 })
    expect(next.lease.epoch).toBe(paused.lease.epoch + 1)
    expect(
      SessionStoreError.is(
        await backend.renew(paused.lease).catch((e: unknown) => e),
        SessionStoreErrorCode.FENCED,
      ),
    ).toBe(true)
    const lines = eventLines(0, 2, 'stale ')
    const late = await backend
      .append(paused.lease, {
        expectedSeq: 0,
        lines,
        lastCrc: crcOf(lines[1] as string),
        batchId: 'slow:1:1',
      })
      .catch((error: unknown) => error)
    expect(SessionStoreError.is(late, SessionStoreErrorCode.FENCED)).toBe(true)
    expect(await storedRows(url, id)).toEqual([])
  })

  it('an expired lease nobody took over is renewed (the port contract) and the writer goes on', async () => {
    const id = sessionId('renew')
    await backend.create(createRequest(id))
    const { lease } = await backend.acquire(id, { owner: 'napper', leaseMs: 100 })
    for (;;) {
      const rows = await sqlOnce<{ expired: boolean }>(
        url,
        'SELECT lease_until <= clock_timestamp() AS expired FROM ledger_sessions WHERE session_id = $1',
        [id],
      )
      if (rows[0]?.expired === true) break
      await sleep(25)
    }
    expect((await backend.head(id)).owner).toBeNull()
    const renewed = await backend.renew(lease)
    expect((await backend.head(id)).owner).toBe('napper')
    const lines = eventLines(0, 1)
    await backend.append(renewed, {
      expectedSeq: 0,
      lines,
      lastCrc: crcOf(lines[0] as string),
      batchId: 'n:1:1',
    })
    expect((await storedRows(url, id)).length).toBe(1)
  })
})
