/**
 * The server dies mid-stream: the postmaster SIGKILLed by the pid in its postmaster.pid,
 * or stopped with `immediate` (SIGQUIT, no checkpoint: crash recovery on restart). After a
 * restart every acknowledged flush is present and the in-flight one is either present and
 * named by `head().lastBatchId` or absent. Own cluster (the kills would hit other suites).
 */
import { SessionStoreErrorCode } from '@agent-ledger/session-store'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { startCluster } from '../../../tooling/pg/cluster.ts'
import type { PgCluster, StopMode } from '../../../tooling/pg/cluster.ts'
import { openPostgresBackend } from '../src/index.ts'
import { createRequest, ownClusterSkipReason, sessionId } from './support/pg.ts'
import { checkAfterCrash, FlushStream, stopCode } from './support/stream.ts'

const reason = ownClusterSkipReason()

describe.skipIf(reason !== null)(
  `PostgreSQL server killed mid-stream${reason === null ? '' : ` (skipped: ${reason})`}`,
  () => {
    let cluster: PgCluster

    beforeAll(async () => {
      cluster = await startCluster()
    }, testTime(60_000))
    afterAll(async () => {
      await cluster?.destroy()
    })

    it(
      'SIGKILL of the postmaster and immediate stops, restarted: zero acknowledged events lost, the in-flight flush resolvable',
      async () => {
        const setup = await openPostgresBackend({ connectionString: cluster.url() })
        const id = sessionId('crash')
        await setup.create(createRequest(id))
        await setup.close()
        const modes: StopMode[] = ['kill', 'immediate', 'kill']
        const figures = {
          crashPoints: 0,
          acknowledgedFlushes: 0,
          acknowledgedEventsLost: 0,
          inFlightLanded: 0,
          inFlightAbsent: 0,
        }
        for (const mode of modes) {
          const backend = await openPostgresBackend({
            connectionString: cluster.url(),
            connectTimeoutMs: testTime(2_000),
            commitTimeoutMs: testTime(5_000),
          })
          const { lease, head } = await backend.acquire(id, { owner: 'crash-writer', leaseMs: 60_000 })
          const stream = new FlushStream(backend, lease, { nextSeq: head.nextSeq, linesPerFlush: 5 })
          await stream.acknowledgedAtLeast(20)
          await cluster.stop(mode)
          figures.crashPoints++
          const stoppedBy = await stream.stopped
          expect([SessionStoreErrorCode.UNKNOWN_OUTCOME, SessionStoreErrorCode.BACKEND_FAILED]).toContain(
            stopCode(stoppedBy),
          )
          await backend.close()
          await cluster.start()
          const checker = await openPostgresBackend({ connectionString: cluster.url(), migrate: false })
          const check = await checkAfterCrash(checker, id, {
            acknowledged: stream.acknowledged,
            inFlight: stream.inFlight,
            baseSeq: head.nextSeq,
          })
          await checker.close()
          figures.acknowledgedFlushes += stream.acknowledged.length
          figures.acknowledgedEventsLost += check.acknowledgedLost
          if (check.inFlight === 'landed') figures.inFlightLanded++
          if (check.inFlight === 'absent') figures.inFlightAbsent++
        }
        console.log(`postgres crash-restart: ${JSON.stringify(figures)}`)
        expect(figures.acknowledgedEventsLost).toBe(0)
        expect(figures.crashPoints).toBe(3)
      },
      testTime(180_000),
    )
  },
)
