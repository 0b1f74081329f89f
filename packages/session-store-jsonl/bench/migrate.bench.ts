/**
 * Migration benchmark through the one store API (issues 5 and 23): a v0 session of 100,000
 * events (1,000,000 with --large) migrated to v4 by the JSONL backend's `migrate` capability
 * of `createJsonlStore({ root })` (`store.backend.capabilities.migrate.migrate(id)`: scan,
 * migrate, write, fsync, verify by reading back, link), beside its floor measured in the same run on
 * the same file: a bare loop that reads the file in 1 MiB chunks, splits lines,
 * `JSON.parse`s and `JSON.stringify`s each, writes the result and fsyncs once.
 *
 * Peak RSS is measured in child processes (`process.resourceUsage().maxRSS`), ours beside
 * the bare loop's. Run alone with `pnpm bench --only migrate`.
 *
 * Child mode (used by the benchmark itself and by the crash suite, through {@link runChild}):
 * `benchChild` of tooling/bench/support.ts runs one job, `migrate:<session dir>` or
 * `floor:<file>`, in a fresh process and reports its peak RSS, seconds and events.
 */
import { mkdirSync, mkdtempSync, rmSync, unlinkSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'

import { benchChild, median } from '../../../tooling/bench/support.ts'
import type { BenchResult } from '../../../tooling/bench/types.ts'
import { createJsonlStore } from '../src/index.ts'
import type { MigrationReport } from '../src/index.ts'
import { writeLargeV0Session } from '../test/fixtures/v0/generate-v0-session.ts'

const CHILD_ENV = 'AGENT_LEDGER_MIGRATE_BENCH_CHILD'

/** The bare floor: read in 1 MiB chunks, split on \n, JSON.parse + JSON.stringify each line, write, fsync once. */
export async function bareLoop(source: string, target: string): Promise<number> {
  const input = await open(source, 'r')
  const output = await open(target, 'w', 0o600)
  let events = 0
  try {
    const chunk = Buffer.allocUnsafe(1 << 20)
    let carry = ''
    let position = 0
    let outputPosition = 0
    for (;;) {
      const { bytesRead } = await input.read(chunk, 0, chunk.length, position)
      if (bytesRead === 0) break
      position += bytesRead
      const text = carry + chunk.toString('utf8', 0, bytesRead)
      const lines = text.split('\n')
      carry = lines.pop() ?? ''
      let out = ''
      for (const line of lines) {
        out += `${JSON.stringify(JSON.parse(line))}\n`
        events += 1
      }
      const bytes = Buffer.from(out)
      await output.write(bytes, 0, bytes.length, outputPosition)
      outputPosition += bytes.length
    }
    await output.sync()
  } finally {
    await input.close()
    await output.close()
  }
  return events
}

/**
 * Migrates the session in `directory` through the one store API: `createJsonlStore` on its
 * parent directory, the `migrate` capability on its name.
 *
 * @param directory - A session directory holding a v0 log.
 * @returns Events migrated.
 */
async function migrateThroughStore(directory: string): Promise<number> {
  const store = createJsonlStore({ root: dirname(directory) })
  try {
    const outcome = await store.backend.capabilities.migrate.migrate(basename(directory))
    const report = outcome.details as unknown as MigrationReport
    if (report.outcome !== 'migrated' || report.lastSeq === null) {
      throw new Error(`expected ${directory} migrated, found outcome ${report.outcome}`)
    }
    return report.lastSeq + 1
  } finally {
    await store.close()
  }
}

const migrateChild = benchChild(import.meta.url, {
  envName: CHILD_ENV,
  main: async (job: string): Promise<number> => {
    if (job.startsWith('migrate:')) return migrateThroughStore(job.slice('migrate:'.length))
    const file = job.slice('floor:'.length)
    return bareLoop(file, `${file}.floor-out`)
  },
})

/**
 * Runs one child job (see the module comment) and returns what it measured.
 *
 * @param job - `migrate:<session dir>` or `floor:<file>`.
 * @returns Peak RSS in bytes, seconds and events of the child.
 */
export async function runChild(job: string): Promise<{ maxRssBytes: number; seconds: number; events: number }> {
  const measure = await migrateChild(job)
  return { maxRssBytes: measure.maxRssBytes, seconds: measure.seconds, events: measure.result }
}

/**
 * The migration figures: events/s beside the bare loop, and peak RSS beside the bare loop's.
 *
 * @param options - `scale`: 'default' (100,000 events) or 'large' (1,000,000).
 * @returns The figures.
 */
export async function run(options: { scale?: 'default' | 'large' } = {}): Promise<BenchResult[]> {
  const eventsWanted = options.scale === 'large' ? 1_000_000 : 100_000
  const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-bench-migrate-'))
  try {
    const directory = join(scratch, 'bench-session')
    mkdirSync(directory, { mode: 0o700 })
    const v0 = join(directory, 'session.jsonl')
    const lines = await writeLargeV0Session(v0, { events: eventsWanted, seed: 7 })
    const events = lines - 1
    const ours: number[] = []
    const floor: number[] = []
    for (let round = 0; round < 3; round += 1) {
      const floorStart = performance.now()
      await bareLoop(v0, join(scratch, 'floor-out.jsonl'))
      floor.push((performance.now() - floorStart) / 1000)
      unlinkSync(join(scratch, 'floor-out.jsonl'))
      const start = performance.now()
      await migrateThroughStore(directory)
      ours.push((performance.now() - start) / 1000)
      unlinkSync(join(directory, 'session.v4.jsonl'))
    }
    const oursRate = events / median(ours)
    const floorRate = lines / median(floor)
    const oursChild = await runChild(`migrate:${directory}`)
    unlinkSync(join(directory, 'session.v4.jsonl'))
    const floorChild = await runChild(`floor:${v0}`)
    const mb = (bytes: number): number => bytes / (1024 * 1024)
    const rateRatio = oursRate / floorRate
    const rssRatio = oursChild.maxRssBytes / floorChild.maxRssBytes
    return [
      {
        name: `migrate v0->v4, ${events} events (write, verify, link)`,
        value: oursRate,
        unit: 'events/s',
        floor: { name: 'bare read+JSON.parse+JSON.stringify+write+fsync', value: floorRate },
        ratio: rateRatio,
        target: '>= 0.2',
        met: rateRatio >= 0.2,
      },
      {
        name: `migrate v0->v4, ${events} events: peak RSS of a child`,
        value: mb(oursChild.maxRssBytes),
        unit: 'MB',
        floor: { name: 'bare loop peak RSS (child)', value: mb(floorChild.maxRssBytes) },
        ratio: rssRatio,
        target: '<= 3',
        met: rssRatio <= 3,
      },
    ]
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}
