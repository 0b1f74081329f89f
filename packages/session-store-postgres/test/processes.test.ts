/**
 * Real worker processes: one SIGSTOPped past its lease while another takes the session
 * over (zero rows written by it after the takeover), and two processes racing for one
 * session (exactly one writer per grant, dense seq). The 100-round race is in
 * processes.crash.test.ts.
 */
import { expect, it } from 'vitest'

import type { PostgresBackend } from '../src/index.ts'
import { startWorker } from './support/children.ts'
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
import { raceRounds } from './support/race.ts'

describeOnServer('PostgreSQL worker processes', () => {
  let url: string
  let backend: PostgresBackend

  useDatabase((database) => ({ url, backend } = database))

  it('a writer process SIGSTOPped past its lease, resumed after a takeover: FENCED at its next flush, zero rows written by it after the takeover', async () => {
    const id = sessionId('stop')
    await backend.create(createRequest(id))
    const worker = startWorker([url, id, 'paused-worker', 'stream', '500'])
    const acquired = await worker.waitForLine((line) => line.startsWith('acquired '))
    const workerEpoch = Number(acquired.split(' ')[1])
    await worker.waitForLine((line) => line === 'acked 3')
    process.kill(worker.pid, 'SIGSTOP')
    try {
      for (;;) {
        const rows = await sqlOnce<{ expired: boolean }>(
          url,
          'SELECT lease_until <= clock_timestamp() AS expired FROM ledger_sessions WHERE session_id = $1',
          [id],
        )
        if (rows[0]?.expired === true) break
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      const next = await backend.acquire(id, { owner: 'successor', leaseMs: 60_000 })
      expect(next.lease.epoch).toBe(workerEpoch + 1)
      const lines = eventLines(next.head.nextSeq, 2, 'successor ')
      await backend.append(next.lease, {
        expectedSeq: next.head.nextSeq,
        lines,
        lastCrc: crcOf(lines[1] as string),
        batchId: 'successor:1',
      })
      process.kill(worker.pid, 'SIGCONT')
      const exit = await worker.exited
      expect(exit.code).toBe(0)
      expect(worker.lines.at(-1)).toBe('refused FENCED')
      const rows = await storedRows(url, id)
      expect(rows.map((row) => row.seq)).toEqual(rows.map((_, index) => index))
      const afterTakeover = rows.filter((row) => row.seq >= next.head.nextSeq)
      expect(afterTakeover.map((row) => row.epoch)).toEqual([next.lease.epoch, next.lease.epoch])
      // Everything the worker was told is acknowledged is stored.
      const acked = worker.lines
        .filter((line) => line.startsWith('acked '))
        .map((line) => Number(line.split(' ')[1]))
      for (const seq of acked) expect(rows[seq]?.line).toContain('paused-worker ')
    } finally {
      if (worker.process.exitCode === null) process.kill(worker.pid, 'SIGCONT')
    }
  })

  it('two worker processes racing for one session, 10 rounds each: one writer per grant, dense seq', async () => {
    const result = await raceRounds(backend, url, 10)
    expect(result.wins + result.locked).toBe(20)
    expect(result.wins).toBeGreaterThan(0)
  })
})
