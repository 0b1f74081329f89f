/**
 * Projection checkpoint benchmark (issues 7 and 23), through the one store API:
 * `createJsonlStore({ root })` (the session core over the JSONL backend, whose `checkpoints`
 * capability keeps the core's checkpoint in `<id>/core.checkpoint`). Every session is written
 * through the core's writers.
 *
 * (a) Cold opens of a long session whose checkpoint is ~100 events behind the tail, beside a
 *     full replay of the same log in the same run (`openReader` with checkpoints off), for
 *     three shapes of session: a compaction every 20 turns (a small surface), every 1,000
 *     turns (thousands of surface nodes), never (the surface is the log, so the checkpoint
 *     holds it all). 100,000 events at default scale, 1,000,000 with `--large`.
 *     - read (`openReader` on a new store): ratio checkpointed / full, target <= 0.05; never
 *       compacted, against reading `core.checkpoint` and the tail once + `JSON.parse`
 *       (target <= 1.5);
 *     - write (`openWriter` + `close` on a new store, nothing appended): against the same full
 *       replay, target <= 0.05 where the surface is small (the acquire's head scan starts at
 *       the checkpoint's seek point: ADR 2026-12-03-write-open-trusts-the-checkpoint); context
 *       rows give the backend's acquire alone, and the write open with `writeOpenCheck: 'full'`
 *       (every line checked, RELIABILITY I9).
 *     The compaction-every-20-turns shape runs again on a `.zstd` log (the seek point is a
 *     frame boundary).
 *     The headline cold open at 100,000 / 1,000,000 events, plain and `.zstd`, is
 *     `core-read.bench.ts`'s.
 * (b) Checkpoint write cost at `turn/end` for a projection of 10,000 surface messages: one
 *     turn appended, then `flush` + `close` of a writer whose checkpoint is due (snapshot,
 *     encode, `core.checkpoint` temp file, write, fsync, rename, directory fsync), beside the
 *     same `flush` + `close` with checkpoints off plus a bare `JSON.stringify` of the same
 *     snapshot + write + fsync of a plain file. A context row gives the `flush` alone (the
 *     snapshot and encode run on it, the file write after it in the background).
 *
 * Sessions are written into os.tmpdir() and removed afterwards. Run alone with
 * `pnpm bench --only checkpoint.bench`.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import type { EventInput } from '@agent-ledger/session-events'
import { planCompaction } from '@agent-ledger/session-projection'
import type { CheckpointOptions, SessionStoreWarning, SessionWriter } from '@agent-ledger/session-store'

import { agentSessionInputs } from '../../../tooling/bench/agent-session.ts'
import type { AgentSessionSizes } from '../../../tooling/bench/agent-session.ts'
import { median } from '../../../tooling/bench/support.ts'
import type { BenchResult } from '../../../tooling/bench/types.ts'
import { LOG_FILE_NAME } from '../src/format.ts'
import { createJsonlStore } from '../src/index.ts'
import type { JsonlStore, LogEncoding, WriteOpenCheck } from '../src/index.ts'
import { checkpointFloor } from './support/floors.ts'
import { interleave, progress } from './support/measure.ts'

/** Three shapes: frequent compactions (a small surface), rare ones (thousands of nodes), none (the surface is the log). */
const COMPACT_EVERY_TURNS = [20, 1000, 0] as const
const TAIL_EVENTS = 100
const CHECKPOINT_FILE = 'core.checkpoint'
const START = Date.UTC(2026, 0, 5, 9, 0, 0)
/** A checkpoint at every flush: the schedule's amortisation rules off. */
const EAGER: CheckpointOptions = { everyEvents: 1, minIntervalMs: 0, minLogBytes: 0, minGrowthRatio: 0 }
const log = progress('checkpoint')

/** The texts of the session (characters): tool results from 60 bytes to 6 KB. */
const SIZES: AgentSessionSizes = {
  system: 1500,
  user: [40, 300],
  toolResultSmall: [60, 1200],
  toolResultLarge: [1200, 5000],
  answer: [80, 400],
  summary: 600,
}

function strictWarning(warning: SessionStoreWarning): void {
  throw new Error(`unexpected warning in the checkpoint benchmark: ${warning.message}`)
}

/** Every store of a session shares its clock (the event times keep increasing across writers). */
function storeFactory(
  root: string,
  encoding: LogEncoding = 'plain',
): (checkpoint?: CheckpointOptions, writeOpenCheck?: WriteOpenCheck) => JsonlStore {
  let tick = 0
  const clock = (): string => new Date(START + 250 * tick++).toISOString()
  return (checkpoint, writeOpenCheck) =>
    createJsonlStore({
      root,
      encoding,
      clock,
      onWarning: strictWarning,
      jsonl: { lock: { heartbeatMs: 0 }, ...(writeOpenCheck === undefined ? {} : { writeOpenCheck }) },
      ...(checkpoint === undefined ? {} : { checkpoint }),
    })
}

/** One agent session written through several writers in turn (`current`): the generator plans its compactions on the current writer's projection. */
class SessionFeed {
  current: SessionWriter | null = null
  readonly #inputs: Generator<EventInput>

  constructor(compactEvery: number) {
    const projection = (): SessionWriter['projection'] => {
      if (this.current === null) throw new Error('no writer')
      return this.current.projection
    }
    this.#inputs = agentSessionInputs<EventInput>({
      surface: () => projection().surface(),
      compact: (request) => planCompaction(projection(), request),
      seed: 11,
      compactEvery,
      sizes: SIZES,
      text: { newlines: 0.1 },
    })
  }

  /** Appends one turn (up to and including its `turn/end`, or a compaction's events before it), not flushed. */
  appendTurn(writer: SessionWriter): void {
    this.current = writer
    for (;;) {
      const input = this.#inputs.next().value as EventInput
      writer.append(input)
      if (input.type === 'turn/end') return
    }
  }

  /** Appends whole turns until `done` holds at a `turn/end`, flushing every 2,000 events and at the end. */
  async appendUntil(writer: SessionWriter, done: () => boolean): Promise<void> {
    this.current = writer
    for (;;) {
      const input = this.#inputs.next().value as EventInput
      writer.append(input)
      if (input.type === 'turn/end' && done()) break
      if (writer.bufferedEvents >= 2000) await writer.flush()
    }
    await writer.flush()
  }
}

async function timedMs(action: () => Promise<unknown>): Promise<number> {
  const started = performance.now()
  await action()
  return performance.now() - started
}

// ------------------------------------------------------------------ (a) cold opens

/** Writes the session: the bulk with checkpoints off, one turn with an eager checkpoint, ~TAIL_EVENTS more without. */
async function writeColdSession(
  root: string,
  id: string,
  shape: { readonly total: number; readonly compactEvery: number; readonly encoding: LogEncoding },
): Promise<number> {
  const { total, compactEvery } = shape
  const stores = storeFactory(root, shape.encoding)
  const feed = new SessionFeed(compactEvery)
  const off = stores({ enabled: false })
  const bulk = await off.create({ id, header: { cwd: '/bench/checkpoint' } })
  await feed.appendUntil(bulk, () => bulk.projection.nextSeq >= total - TAIL_EVENTS - 10)
  await bulk.close()
  const eager = stores(EAGER)
  const checkpointed = await eager.openWriter(id)
  await feed.appendUntil(checkpointed, () => true)
  await checkpointed.close()
  const tail = await off.openWriter(id)
  const from = tail.projection.nextSeq
  await feed.appendUntil(tail, () => tail.projection.nextSeq - from >= TAIL_EVENTS)
  const events = tail.projection.nextSeq
  await tail.close()
  await off.close()
  await eager.close()
  return events
}

async function coldOpen(
  root: string,
  shape: { readonly total: number; readonly compactEvery: number; readonly encoding: LogEncoding },
): Promise<BenchResult[]> {
  const { total, compactEvery, encoding } = shape
  const id = 'cold'
  log(
    `writing a ${total}-event ${encoding} session through the core (compaction every ${compactEvery} turns)`,
  )
  const events = await writeColdSession(root, id, shape)
  const directory = join(root, id)
  const path = join(directory, encoding === 'plain' ? LOG_FILE_NAME : `${LOG_FILE_NAME}.zstd`)
  const checkpointPath = join(directory, CHECKPOINT_FILE)
  const checkpointBytes = readFileSync(checkpointPath)
  const stores = storeFactory(root, encoding)
  const probe = await stores().openReader(id)
  if (!probe.checkpoint.used || probe.lastSeq !== events - 1) {
    throw new Error(`the checkpoint was not used: ${JSON.stringify(probe.checkpoint)}`)
  }
  const behind = probe.checkpoint.replayedEvents
  const surface = probe.projection.surface().length
  const full = stores({ enabled: false })
  const fullTimes: number[] = []
  for (let run = 0; run < 3; run += 1) fullTimes.push(await timedMs(() => full.openReader(id)))
  const fullMs = median(fullTimes)
  await full.close()
  const readTimes: number[] = []
  const writeTimes: number[] = []
  const fullCheckTimes: number[] = []
  const acquireTimes: number[] = []
  // A write open on a new store; its head scan must have started where `check` says.
  const timedWriteOpen = async (check: WriteOpenCheck): Promise<number> => {
    const store = stores(undefined, check)
    const ms = await timedMs(async () => {
      const writer = await store.openWriter(id)
      if (writer.recovery.headScan?.from !== (check === 'full' ? 'start' : 'checkpoint')) {
        throw new Error(`unexpected head scan: ${JSON.stringify(writer.recovery.headScan)}`)
      }
      await writer.close()
    })
    await store.close()
    // A write open may store a newer checkpoint on close: every round measures the same one.
    writeFileSync(checkpointPath, checkpointBytes, { mode: 0o600 })
    return ms
  }
  for (let run = 0; run < 5; run += 1) {
    // Cold: a new store (new backend, no open file) each time.
    const reader = stores()
    readTimes.push(await timedMs(() => reader.openReader(id)))
    await reader.close()
    writeTimes.push(await timedWriteOpen('checkpoint'))
    // The same with every line checked before the writer may append (RELIABILITY I9's option).
    fullCheckTimes.push(await timedWriteOpen('full'))
    // The backend's share of the write open: its acquire alone (lock, lease, and the head
    // scan from the checkpoint's seek point: the torn-tail check of the lines after it), with
    // no projection and no core.
    const bare = stores()
    acquireTimes.push(
      await timedMs(async () => {
        const { lease } = await bare.backend.acquire(id, { owner: 'bench', leaseMs: 60_000 })
        await bare.backend.release(lease)
      }),
    )
    await bare.close()
  }
  const readMs = median(readTimes)
  const writeMs = median(writeTimes)
  const size = statSync(path).size
  const compaction = compactEvery === 0 ? 'never compacted' : `compaction every ${compactEvery} turns`
  const where = `${events} events, ${encoding === 'plain' ? 'plain' : '.zstd'}, ${compaction} (${(size / 1e6).toFixed(0)} MB, ${surface} surface nodes, core.checkpoint ${(checkpointBytes.length / 1e3).toFixed(0)} kB, ${behind} events behind)`
  const floor = { name: 'full replay of the same log (openReader, checkpoints off), ms', value: fullMs }
  const results: BenchResult[] = []
  if (compactEvery === 0) {
    // Never compacted: the checkpoint holds most of the log; the claim is against reading it once.
    const reader = stores()
    const samples = await interleave(5, {
      ours: () => timedMs(() => reader.openReader(id)),
      floor: () => checkpointFloor(checkpointPath, path),
    })
    await reader.close()
    const ratio = median(samples.ours.map((ms, round) => ms / samples.floor[round]!))
    results.push(
      {
        name: `cold open (openReader), ${where}`,
        value: median(samples.ours),
        unit: 'ms',
        floor: {
          name: 'read core.checkpoint + JSON.parse its lines, read the log from its seek point + JSON.parse each line, results kept',
          value: median(samples.floor),
        },
        ratio,
        target: '<= 1.5',
        met: ratio <= 1.5,
      },
      {
        name: `cold open (openReader), ${where}, against a full replay (context)`,
        value: readMs,
        unit: 'ms',
        floor,
        ratio: readMs / fullMs,
      },
    )
  } else {
    results.push({
      name: `cold open (openReader, new store), ${where}`,
      value: readMs,
      unit: 'ms',
      floor,
      ratio: readMs / fullMs,
      target: '<= 0.05',
      met: readMs / fullMs <= 0.05,
    })
  }
  results.push(
    {
      name: `cold WRITE open (openWriter + close, new store), ${where}`,
      value: writeMs,
      unit: 'ms',
      floor,
      ratio: writeMs / fullMs,
      ...(compactEvery === 0 ? {} : { target: '<= 0.05', met: writeMs / fullMs <= 0.05 }),
    },
    {
      // The cause when the row above misses: its share spent in the backend's acquire.
      name: `of which: backend.acquire + release alone (lock, lease, the head scan from the checkpoint's seek point), ${where} (context)`,
      value: median(acquireTimes),
      unit: 'ms',
      floor: { name: 'the cold WRITE open above, ms', value: writeMs },
      ratio: median(acquireTimes) / writeMs,
    },
    {
      name: `cold WRITE open with writeOpenCheck 'full' (every line checked before a writer appends, I9), ${where} (context)`,
      value: median(fullCheckTimes),
      unit: 'ms',
      floor,
      ratio: median(fullCheckTimes) / fullMs,
    },
  )
  return results
}

// ------------------------------------------------------------------ (b) checkpoint write cost

async function writeCost(root: string): Promise<BenchResult[]> {
  const id = 'write'
  const stores = storeFactory(root)
  const feed = new SessionFeed(0)
  const off = stores({ enabled: false })
  const eager = stores(EAGER)
  const first = await off.create({ id })
  log('writing a session of 10,000 surface messages through the core')
  await feed.appendUntil(first, () => first.projection.surface().length >= 10_000)
  await first.close()
  const messages = first.projection.surface().length
  let snapshotBytes = 0
  const floorPath = join(root, 'floor.json')
  const bare = async (): Promise<number> => {
    const started = performance.now()
    const bytes = Buffer.from(JSON.stringify(first.projection.snapshot()), 'utf8')
    snapshotBytes = bytes.length
    const file = await open(floorPath, 'w', 0o600)
    await file.write(bytes, 0, bytes.length, 0)
    await file.sync()
    await file.close()
    return performance.now() - started
  }
  const ours: number[] = []
  const offWhole: number[] = []
  const oursFlush: number[] = []
  const offFlush: number[] = []
  const floor: number[] = []
  for (let round = 0; round < 6; round += 1) {
    const one = await timedTurn(eager, feed, id)
    const two = await timedTurn(off, feed, id)
    const bareMs = await bare()
    if (round === 0) continue // warm-up
    ours.push(one.wholeMs)
    oursFlush.push(one.flushMs)
    offWhole.push(two.wholeMs)
    offFlush.push(two.flushMs)
    floor.push(two.wholeMs + bareMs)
  }
  await off.close()
  await eager.close()
  const ratio = median(ours.map((ms, round) => ms / floor[round]!))
  return [
    {
      name: `checkpoint write at turn/end, ${messages} surface messages (flush + close of a writer with a checkpoint due; snapshot ${(snapshotBytes / 1e6).toFixed(1)} MB as JSON)`,
      value: median(ours),
      unit: 'ms',
      floor: {
        name: 'the same flush + close with checkpoints off, plus a bare JSON.stringify of the snapshot + write + fsync',
        value: median(floor),
      },
      ratio,
    },
    {
      name: `flush of that turn with the checkpoint due (snapshot + encode on the flush path), ${messages} surface messages (context)`,
      value: median(oursFlush),
      unit: 'ms',
      floor: { name: 'the same flush with checkpoints off', value: median(offFlush) },
      ratio: median(oursFlush.map((ms, round) => ms / offFlush[round]!)),
    },
  ]
}

/** Opens a writer (untimed), appends one turn (untimed), then times `flush` and `flush` + `close`. */
async function timedTurn(
  store: JsonlStore,
  feed: SessionFeed,
  id: string,
): Promise<{ readonly flushMs: number; readonly wholeMs: number }> {
  const writer = await store.openWriter(id)
  feed.current = writer
  feed.appendTurn(writer)
  const started = performance.now()
  await writer.flush()
  const flushMs = performance.now() - started
  await writer.close()
  return { flushMs, wholeMs: performance.now() - started }
}

/**
 * Runs the checkpoint benchmark.
 *
 * @param options - `scale`: `default` (100,000-event cold opens) or `large` (1,000,000 events).
 * @returns The figures, each beside its floor.
 */
export async function run(
  options: { scale: 'default' | 'large' } = { scale: 'default' },
): Promise<BenchResult[]> {
  const root = mkdtempSync(join(tmpdir(), 'al-ckpt-bench-'))
  try {
    const total = options.scale === 'large' ? 1_000_000 : 100_000
    const results: BenchResult[] = []
    const shapes = [
      ...COMPACT_EVERY_TURNS.map((compactEvery) => ({ compactEvery, encoding: 'plain' as const })),
      { compactEvery: COMPACT_EVERY_TURNS[0], encoding: 'zstd' as const },
    ]
    for (const { compactEvery, encoding } of shapes) {
      const directory = join(root, `cold-${compactEvery}-${encoding}`)
      results.push(...(await coldOpen(directory, { total, compactEvery, encoding })))
      rmSync(directory, { recursive: true, force: true })
    }
    results.push(...(await writeCost(join(root, 'write'))))
    return results
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}
