/*
 * The long crash loops of migration (RELIABILITY 7.5, V4), run by `pnpm test:crash`:
 *   - K model: SIGKILL at every named publish point, and before every mutating or syncing
 *     file-system call of the migration (op index 1, 2, ... until a run completes);
 *   - K model for M7: SIGKILL before every such call of the write open that repairs a
 *     migrated session (quarantine, truncate, synthetic results);
 *   - P model: power loss at every op index with every damage kind and three seeds;
 *   - V4: 50 rounds of two racing processes, with and without the lock;
 *   - bounded memory: a 100,000-event migration in a child process.
 */
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { migrateSession } from '../src/migration/migrate-session.ts'
import { PUBLISH_POINTS } from '../src/publish-checks.ts'
import { runChild } from '../bench/migrate.bench.ts'
import { spawnTsChild } from './support/children.ts'
import type { Child } from './support/children.ts'
import {
  checkSingleRepair,
  forgetLocks,
  killAtPublishPoint,
  makeV0Session,
  powerLossOverMigration,
  powerLossOverRecovery,
  reopenAndCheck,
} from './fixtures/v0/migration-harness.ts'
import type { ChildLine } from './fixtures/v0/migration-harness.ts'
import { writeLargeV0Session } from './fixtures/v0/generate-v0-session.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-migration-crash-suite-'))
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

async function runChildCommand(
  command: Record<string, unknown>,
): Promise<{ killed: boolean; lines: ChildLine[] }> {
  const child = spawnTsChild('migrate-child.ts')
  children.push(child)
  child.send(JSON.stringify(command))
  child.send(JSON.stringify({ cmd: 'exit' }))
  const exit = await child.exited
  return {
    killed: exit.signal === 'SIGKILL',
    lines: child.lines.map((line) => JSON.parse(line) as ChildLine),
  }
}

describe('migration crash suite, K model', () => {
  it.each(PUBLISH_POINTS.map((point) => [point]))('M1-M4: SIGKILL at publish point %s', async (point) => {
    const session = makeV0Session(freshRoot(), 'crashy', { fixture: 'crash-dangling-tool-call.jsonl' })
    checkSingleRepair(await killAtPublishPoint(session, point, (child) => children.push(child)), point)
  })

  it(
    'M1-M4: SIGKILL before every mutating or syncing file-system call of the migration',
    async () => {
      let completed = false
      let killedRuns = 0
      for (let op = 1; op <= 64 && !completed; op += 1) {
        const session = makeV0Session(freshRoot(), 'killop', { fixture: 'compaction.jsonl' })
        const { killed, lines } = await runChildCommand({
          cmd: 'migrate',
          dir: session.directory,
          killAtOp: op,
        })
        if (!killed) {
          expect(lines.find((line) => line.event === 'migrated')?.outcome).toBe('published')
          completed = true
        } else {
          killedRuns += 1
        }
        const linked = lines.some((line) => line.point === 'linked')
        const report = await reopenAndCheck(session)
        if (linked) expect(report.current).toBe('session.v4.jsonl')
      }
      expect(completed).toBe(true)
      expect(killedRuns).toBeGreaterThan(5)
    },
    testTime(900_000),
  )

  it(
    'M7: SIGKILL before every mutating or syncing call of the write open that repairs a migrated session',
    async () => {
      let completed = false
      for (let op = 1; op <= 64 && !completed; op += 1) {
        const root = freshRoot()
        const session = makeV0Session(root, 'recover', { fixture: 'crash-dangling-tool-call.jsonl' })
        await migrateSession({ mode: 'write', directory: session.directory })
        appendFileSync(
          join(session.directory, 'session.v4.jsonl'),
          '{"seq":10,"time":"2025-04-20T21:41:00.000Z","type":"tur',
        )
        const { killed, lines } = await runChildCommand({ cmd: 'open', root, id: session.id, killAtOp: op })
        if (!killed) {
          expect(lines.find((line) => line.event === 'opened')).toBeDefined()
          completed = true
        }
        forgetLocks(session.directory)
        checkSingleRepair(await reopenAndCheck(session, { current: 'session.v4.jsonl' }), `kill at op ${op}`)
      }
      expect(completed).toBe(true)
    },
    testTime(900_000),
  )
})

describe('migration crash suite, P model', () => {
  it.each(['normal-tool-calls.jsonl', 'compaction.jsonl', 'crash-dangling-tool-call.jsonl'])(
    'M1-M5: power loss at every op index, every damage, three seeds (%s)',
    async (fixture) => {
      const session = makeV0Session(freshRoot(), 'powerloss', { fixture })
      const { images, v4Images } = await powerLossOverMigration(session, {
        scratch,
        damages: ['drop', 'cut', 'garble', 'as-written'],
        seeds: [1, 2, 3],
      })
      expect(v4Images).toBeGreaterThan(0)
      expect(v4Images).toBeLessThan(images)
    },
    900_000,
  )

  it(
    'M7: power loss at every op index of the repairing write open, every damage, two seeds',
    async () => {
      const session = makeV0Session(freshRoot(), 'recovering', { fixture: 'crash-dangling-tool-call.jsonl' })
      expect(
        await powerLossOverRecovery(session, { scratch, damages: ['drop', 'cut', 'garble'], seeds: [1, 2] }),
      ).toBeGreaterThan(30)
    },
    testTime(900_000),
  )
})

describe('migration crash suite, V4', () => {
  async function race(options: { lock: boolean; rounds: number }): Promise<Map<string, number>> {
    const pair = [spawnTsChild('migrate-child.ts'), spawnTsChild('migrate-child.ts')]
    children.push(...pair)
    const outcomes = new Map<string, number>()
    for (let round = 0; round < options.rounds; round += 1) {
      const session = makeV0Session(freshRoot(), 'race', { fixture: 'normal-tool-calls.jsonl' })
      const barrier = join(session.root, 'barrier')
      const from = pair.map((child) => child.lines.length)
      for (const child of pair)
        child.send(JSON.stringify({ cmd: 'migrate', dir: session.directory, barrier, lock: options.lock }))
      await Promise.all(
        pair.map((child, index) =>
          child.waitForLine((line) => line.includes('"ready"'), { from: from[index]! }),
        ),
      )
      writeFileSync(barrier, '')
      const done = await Promise.all(
        pair.map((child, index) =>
          child.waitForLine((line) => line.includes('"done"'), { from: from[index]! }),
        ),
      )
      expect(done).toHaveLength(2)
      const results = pair.flatMap((child, index) =>
        child.lines
          .slice(from[index])
          .map((line) => JSON.parse(line) as ChildLine)
          .filter((line) => line.event === 'migrated' || line.event === 'error'),
      )
      for (const result of results) {
        if (result.event === 'error')
          expect(options.lock && result.code === 'SESSION_LOCKED', JSON.stringify(result)).toBe(true)
        const key = result.outcome ?? result.code!
        outcomes.set(key, (outcomes.get(key) ?? 0) + 1)
      }
      expect(results.filter((result) => result.outcome === 'published')).toHaveLength(1)
      const report = await reopenAndCheck(session, { current: 'session.v4.jsonl' })
      expect(report.removedTemps).toEqual([])
    }
    return outcomes
  }

  it(
    'V4: 50 rounds without the lock (free race: the loser finds the target or gets EEXIST on link)',
    async () => {
      const outcomes = await race({ lock: false, rounds: 50 })
      expect(outcomes.get('published')).toBe(50)
    },
    testTime(900_000),
  )

  it(
    'V4: 50 rounds with the writer lock',
    async () => {
      const outcomes = await race({ lock: true, rounds: 50 })
      expect(outcomes.get('published')).toBe(50)
      expect(outcomes.get('already-published')).toBeUndefined()
    },
    testTime(900_000),
  )
})

describe('migration crash suite, bounded memory', () => {
  it(
    'migrates 100,000 v0 events in a child whose peak RSS stays within 3x the bare parse loop and below 400 MB',
    async () => {
      const directory = join(freshRoot(), 'big')
      mkdirSync(directory, { mode: 0o700 })
      await writeLargeV0Session(join(directory, 'session.jsonl'), { events: 100_000, seed: 11 })
      const size = statSync(join(directory, 'session.jsonl')).size
      const ours = await runChild(`migrate:${directory}`)
      const floor = await runChild(`floor:${join(directory, 'session.jsonl')}`)
      expect(ours.events).toBeGreaterThanOrEqual(100_000)
      expect(ours.maxRssBytes).toBeLessThan(Math.max(3 * floor.maxRssBytes, size))
      expect(ours.maxRssBytes).toBeLessThan(400 * 1024 * 1024)
    },
    testTime(900_000),
  )
})
