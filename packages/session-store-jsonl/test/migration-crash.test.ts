/*
 * Crash during migration (RELIABILITY 7.5), the quick subset of the default run: one SIGKILL
 * at a publish point (K), the ack order and a SIGKILL during the first appends to v4 (M3/M5),
 * and a power loss at every op index with the 'drop' damage (P, M1-M5, M7). The full loops
 * (every publish point, every op index with SIGKILL, every damage and seed) are in
 * migration.crash.test.ts (`pnpm test:crash`).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { spawnTsChild } from './support/children.ts'
import type { Child } from './support/children.ts'
import {
  checkSingleRepair,
  killAtPublishPoint,
  makeV0Session,
  powerLossOverMigration,
  powerLossOverRecovery,
  reopenAndCheck,
} from './fixtures/v0/migration-harness.ts'
import type { ChildLine } from './fixtures/v0/migration-harness.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-migration-crash-'))
const children: Child[] = []
afterAll(async () => {
  for (const child of children) {
    child.process.kill('SIGKILL')
    await child.exited
  }
  rmSync(scratch, { recursive: true, force: true })
})
let counter = 0

function freshRoot(): string {
  counter += 1
  const root = join(scratch, `root${counter}`)
  mkdirSync(root, { mode: 0o700 })
  return root
}

describe('crash during migration, K model (SIGKILL)', () => {
  it('M3/M4 (K): SIGKILL right after the link leaves v4 complete and current, its temp twin removed by the next lock holder', async () => {
    const session = makeV0Session(freshRoot(), 'crashy', { fixture: 'crash-dangling-tool-call.jsonl' })
    const report = await killAtPublishPoint(session, 'linked', (child) => children.push(child))
    checkSingleRepair(report, 'after the link')
  })

  it('M3/M5: acks start only after the directory fsync; a SIGKILL during the first appends to v4 keeps every acked event and v0', async () => {
    const session = makeV0Session(freshRoot(), 'appender', { fixture: 'normal-tool-calls.jsonl' })
    const child = spawnTsChild('migrate-child.ts')
    children.push(child)
    child.send(JSON.stringify({ cmd: 'migrate', dir: session.directory, append: 500 }))
    await child.waitForLine(
      (line) => (JSON.parse(line) as ChildLine).event === 'ack' && (JSON.parse(line) as ChildLine).seq! >= 40,
    )
    child.process.kill('SIGKILL')
    await child.exited
    const lines = child.lines.map((line) => JSON.parse(line) as ChildLine)
    const firstAck = lines.findIndex((line) => line.event === 'ack')
    const dirSynced = lines.findIndex((line) => line.point === 'dir-synced')
    expect(dirSynced).toBeGreaterThan(-1)
    expect(firstAck).toBeGreaterThan(dirSynced)
    const acks = lines.filter((line) => line.event === 'ack')
    const acked = acks.map((line) => ({
      seq: line.seq!,
      content: `after migration ${line.seq! - acks[0]!.seq!}`,
    }))
    const report = await reopenAndCheck(session, { acked, current: 'session.v4.jsonl' })
    expect(report.events.length).toBeGreaterThanOrEqual(acks[0]!.seq! + acked.length)
  })
})

describe('crash during migration, P model (power loss at every op index, drop damage)', () => {
  it(
    'M1-M5 (P): v0 intact, one generation validates, v4 durable once published, the acked append survives',
    async () => {
      const session = makeV0Session(freshRoot(), 'powerloss', { fixture: 'compaction.jsonl' })
      const { images, v4Images } = await powerLossOverMigration(session, {
        scratch,
        damages: ['drop'],
        seeds: [1],
      })
      expect(images).toBeGreaterThan(15)
      expect(v4Images).toBeGreaterThan(0)
      expect(v4Images).toBeLessThan(images)
    },
    testTime(120_000),
  )

  it(
    'M7 (P): a power loss at any op of the write open (quarantine, truncate, synthetic results) reopens idempotently',
    async () => {
      const session = makeV0Session(freshRoot(), 'recovering', { fixture: 'crash-dangling-tool-call.jsonl' })
      expect(
        await powerLossOverRecovery(session, { scratch, damages: ['drop'], seeds: [1] }),
      ).toBeGreaterThan(10)
    },
    testTime(120_000),
  )
})
