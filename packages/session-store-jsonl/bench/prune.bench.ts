/**
 * Prune benchmark through the one store API (issue 27 item 3): `store.prune({ keep: 0 })` of
 * `createJsonlStore({ root })` over a root of N sessions (default 10,000; the count is
 * `AGENT_LEDGER_PRUNE_BENCH_SESSIONS`), created through the same store once and cached, copied
 * afresh before each round (the copy is not timed). The floor, on another copy in the same
 * round: `rm -rf` of every session folder (`fs.rmSync(dir, { recursive: true })`, one after
 * the other), the least a delete can do. A prune lists the store, then per session takes the
 * writer lock, checks nothing changed since the listing, renames the folder to its tombstone
 * and fsyncs the root (the commit point: whole or gone after a crash), then unlinks its files:
 * the fsync per session is what the floor does not pay. Figures: sessions per second beside
 * the floor's (target >= 0.1 of the floor: ours, not the issue's), and the bytes freed beside
 * the bytes the folders held (must be all of them: 1.0).
 *
 * Run alone with `pnpm bench --only prune.bench`.
 */
import { cpSync, lstatSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'

import { createJsonlStore } from '../src/index.ts'
import { smallSessionsRoot } from './support/dataset.ts'
import { progress, seconds } from './support/measure.ts'
import type { BenchResult, RunOptions } from './support/measure.ts'

const ROUNDS = 3
const log = progress('prune')

function sessionCount(): number {
  const fromEnv = Number(process.env['AGENT_LEDGER_PRUNE_BENCH_SESSIONS'])
  return Number.isSafeInteger(fromEnv) && fromEnv > 0 ? fromEnv : 10_000
}

async function ensureRoot(sessions: number): Promise<string> {
  const { root, builtSeconds } = await smallSessionsRoot('prune-root', sessions)
  if (builtSeconds !== null) log(`created ${sessions} sessions in ${builtSeconds.toFixed(1)} s`)
  return root
}

function treeBytes(directory: string): number {
  let total = 0
  for (const name of readdirSync(directory)) {
    const path = join(directory, name)
    const info = lstatSync(path)
    total += info.isDirectory() ? treeBytes(path) : info.size
  }
  return total
}

const median = (values: readonly number[]): number => [...values].sort((a, b) => a - b)[values.length >> 1]!

/**
 * Runs the prune figures.
 *
 * @param _options - `scale` (unused: the count is `AGENT_LEDGER_PRUNE_BENCH_SESSIONS`).
 * @returns The figures.
 */
export async function run(_options: RunOptions = {}): Promise<BenchResult[]> {
  const sessions = sessionCount()
  const source = await ensureRoot(sessions)
  const bytes = treeBytes(source)
  const ours: number[] = []
  const floor: number[] = []
  let freed = 0
  for (let round = 0; round < ROUNDS; round += 1) {
    const mine = `${source}-prune-${process.pid}`
    const bare = `${source}-rm-${process.pid}`
    try {
      cpSync(source, mine, { recursive: true })
      cpSync(source, bare, { recursive: true })
      const store = createJsonlStore({ root: mine })
      ours.push(
        await seconds(async () => {
          const report = await store.prune({ keep: 0 })
          if (report.deleted.length !== sessions || report.skipped.length !== 0)
            throw new Error(
              `prune deleted ${report.deleted.length} of ${sessions} (${report.skipped.length} skipped)`,
            )
          freed = report.bytesFreed
        }),
      )
      await store.close()
      if (readdirSync(mine).some((name) => name.startsWith('session-')))
        throw new Error('prune left a session')
      floor.push(
        await seconds(() => {
          for (const name of readdirSync(bare)) rmSync(join(bare, name), { recursive: true, force: true })
          return Promise.resolve()
        }),
      )
      log(`round ${round + 1}: prune ${ours.at(-1)!.toFixed(2)} s, rm -rf ${floor.at(-1)!.toFixed(2)} s`)
    } finally {
      rmSync(mine, { recursive: true, force: true })
      rmSync(bare, { recursive: true, force: true })
    }
  }
  const ratio = median(ours.map((time, round) => floor[round]! / time))
  return [
    {
      name: `prune({ keep: 0 }) of ${sessions} sessions (JSONL, 3 events each)`,
      value: sessions / median(ours),
      unit: 'sessions/s',
      floor: { name: 'rm -rf of each session folder (sessions/s)', value: sessions / median(floor) },
      ratio,
      target: '>= 0.1',
      met: ratio >= 0.1,
    },
    {
      name: `prune of ${sessions} sessions: seconds`,
      value: median(ours),
      unit: 's',
      floor: { name: 'rm -rf of each session folder (s)', value: median(floor) },
    },
    {
      name: `prune of ${sessions} sessions: bytes freed`,
      value: freed,
      unit: 'bytes',
      floor: { name: 'bytes the session folders held', value: bytes },
      ratio: freed / bytes,
      target: '= 1',
      met: freed === bytes,
    },
  ]
}
