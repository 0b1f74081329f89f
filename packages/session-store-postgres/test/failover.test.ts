/**
 * A primary with a synchronous standby (`synchronous_standby_names`, `application_name`
 * in the standby's `primary_conninfo`). Two faults: the standby down (a commit cannot be
 * acknowledged: the append must end UNKNOWN_OUTCOME, never success) and the primary
 * SIGKILLed then the standby promoted (every acknowledged flush present on the new
 * primary; the old epoch refused after a takeover there). Own pair of clusters.
 */
import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { startCluster } from '../../../tooling/pg/cluster.ts'
import type { PgCluster } from '../../../tooling/pg/cluster.ts'
import { openPostgresBackend, PostgresFailureReason } from '../src/index.ts'
import {
  createRequest,
  crcOf,
  eventLines,
  ownClusterSkipReason,
  sessionId,
  sqlOnce,
  storedRows,
} from './support/pg.ts'
import { checkAfterCrash, FlushStream, stopCode } from './support/stream.ts'

const reason = ownClusterSkipReason()

async function waitForSyncStandby(primary: PgCluster): Promise<void> {
  for (;;) {
    const rows = await sqlOnce<{ sync_state: string }>(
      primary.url(),
      "SELECT sync_state FROM pg_stat_replication WHERE application_name = 's1'",
    )
    if (rows[0]?.sync_state === 'sync') return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe.skipIf(reason !== null)(
  `PostgreSQL synchronous standby${reason === null ? '' : ` (skipped: ${reason})`}`,
  () => {
    let primary: PgCluster
    let standby: PgCluster

    beforeAll(async () => {
      primary = await startCluster()
      standby = await primary.createStandby('s1')
      await sqlOnce(primary.url(), "ALTER SYSTEM SET synchronous_standby_names = 's1'")
      await sqlOnce(primary.url(), 'SELECT pg_reload_conf()')
      await waitForSyncStandby(primary)
    }, testTime(120_000))
    afterAll(async () => {
      await standby?.destroy()
      await primary?.destroy()
    })

    it(
      'standby down: the append ends UNKNOWN_OUTCOME after commitTimeoutMs (never success), head() refuses to answer before the orphaned commit is final; once the standby is back, head() and acquire name it by its batch id',
      async () => {
        const backend = await openPostgresBackend({ connectionString: primary.url(), commitTimeoutMs: 1_500 })
        try {
          const id = sessionId('sync')
          await backend.create(createRequest(id))
          const { lease } = await backend.acquire(id, { owner: 'sync-writer', leaseMs: 600_000 })
          const first = eventLines(0, 2)
          await backend.append(lease, {
            expectedSeq: 0,
            lines: first,
            lastCrc: crcOf(first[1] as string),
            batchId: 'sync:1:0',
          })
          await standby.stop('fast')
          const second = eventLines(2, 2)
          const outcome = await backend
            .append(lease, {
              expectedSeq: 2,
              lines: second,
              lastCrc: crcOf(second[1] as string),
              batchId: 'sync:1:1',
            })
            .then(
              () => 'acknowledged',
              (error: unknown) => error,
            )
          expect(SessionStoreError.is(outcome, SessionStoreErrorCode.UNKNOWN_OUTCOME)).toBe(true)
          expect((outcome as SessionStoreError).details).toMatchObject({
            reason: PostgresFailureReason.TIMEOUT,
            batchId: 'sync:1:1',
            resolved: false,
          })
          // Committed locally but not visible: the orphan waits for the standby.
          expect((await storedRows(primary.url(), id)).length).toBe(2)
          // head() of this backend does not answer from before the orphan's commit (the core
          // settles an unknown outcome with head()): it says the head is not final yet.
          const early = await backend.head(id).catch((error: unknown) => error)
          expect(SessionStoreError.is(early, SessionStoreErrorCode.BACKEND_FAILED)).toBe(true)
          expect((early as SessionStoreError).details).toMatchObject({
            reason: PostgresFailureReason.TIMEOUT,
          })
          await standby.start()
          await waitForSyncStandby(primary)
          expect(await backend.head(id)).toMatchObject({ nextSeq: 4, lastBatchId: 'sync:1:1' })
          const again = await backend.acquire(id, { owner: 'sync-writer', leaseMs: 600_000 })
          expect(again.head).toMatchObject({ nextSeq: 4, lastBatchId: 'sync:1:1' })
          expect((await storedRows(primary.url(), id)).map((row) => row.line)).toEqual([...first, ...second])
        } finally {
          await backend.close()
        }
      },
      testTime(120_000),
    )

    it(
      'primary SIGKILLed mid-stream, standby promoted: zero acknowledged events lost, in-flight resolvable or absent, the old epoch fenced after a takeover',
      async () => {
        const backend = await openPostgresBackend({
          connectionString: primary.url(),
          connectTimeoutMs: testTime(2_000),
          commitTimeoutMs: testTime(5_000),
        })
        const id = sessionId('failover')
        await backend.create(createRequest(id))
        const { lease, head } = await backend.acquire(id, { owner: 'primary-writer', leaseMs: 600_000 })
        const stream = new FlushStream(backend, lease, { nextSeq: head.nextSeq, linesPerFlush: 3 })
        await stream.acknowledgedAtLeast(50)
        await primary.stop('kill')
        const stoppedBy = await stream.stopped
        expect([SessionStoreErrorCode.UNKNOWN_OUTCOME, SessionStoreErrorCode.BACKEND_FAILED]).toContain(
          stopCode(stoppedBy),
        )
        await backend.close()
        await standby.promote()
        const promoted = await openPostgresBackend({ connectionString: standby.url() })
        try {
          const check = await checkAfterCrash(promoted, id, {
            acknowledged: stream.acknowledged,
            inFlight: stream.inFlight,
            baseSeq: 0,
          })
          console.log(
            `postgres failover: ${JSON.stringify({ acknowledgedFlushes: stream.acknowledged.length, acknowledgedEventsLost: check.acknowledgedLost, inFlight: check.inFlight })}`,
          )
          expect(check.acknowledgedLost).toBe(0)
          const next = await promoted.acquire(id, {
            owner: 'standby-writer',
            leaseMs: 60_000,
            takeover: true,
          })
          expect(next.lease.epoch).toBe(lease.epoch + 1)
          const stale = eventLines(check.nextSeq, 1)
          const refused = await promoted
            .append(lease, {
              expectedSeq: check.nextSeq,
              lines: stale,
              lastCrc: crcOf(stale[0] as string),
              batchId: 'stale',
            })
            .catch((error: unknown) => error)
          expect(SessionStoreError.is(refused, SessionStoreErrorCode.FENCED)).toBe(true)
          expect((await promoted.head(id)).nextSeq).toBe(check.nextSeq)
        } finally {
          await promoted.close()
        }
      },
      testTime(120_000),
    )
  },
)
