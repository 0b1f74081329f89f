/**
 * The read path of the session core over the JSONL backend (issue 23 item 3), every figure
 * measured through `createSessionStore({ backend: createJsonlBackend(...) })`:
 *
 * 1. Full replay (`openReader`, checkpoints off) of the 20 MB agent-session dataset
 *    (`support/dataset.ts`; 200 MB with `--large`) beside the bare streaming loop over the
 *    same file (1 MiB reads, line split, `JSON.parse`): throughput ratio, target >= 0.6.
 * 2. Cold open (a new backend and store, `openReader`) of a session whose checkpoint is
 *    about 100 events behind its end, beside the full replay of the same session in the same
 *    run: time ratio, target <= 0.01. 100,000 events by default, 1,000,000 with `--large`;
 *    plain and `.zstd`. The session is written through the core's writers: turns of seven
 *    events with a compaction every 50 turns; the checkpoint is the core's own (a writer with
 *    checkpoints on appends one batch of ~100 events and closes), then a writer with
 *    checkpoints off appends ~100 more.
 * 3. Peak RSS of a full `openReader` of the 20 MB dataset (200 MB, the "213 MB session",
 *    with `--large`) in a child process: VmHWM above the pre-open RSS beside the heap the
 *    result keeps after a full GC (the projection). Target: peak - projection < 64 MiB.
 *    Beside it, the same peak of the bare streaming split+parse of the file (the replay's
 *    floor, which keeps nothing): what decoding these lines costs before the store adds any.
 *
 * Run alone: `pnpm bench --only core-read` (add `--large` for the big sizes).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getHeapSpaceStatistics } from 'node:v8'

import { createSessionStore } from '@agent-ledger/session-store'
import type { CheckpointOptions, SessionStore, SessionWriter } from '@agent-ledger/session-store'
import { planCompaction } from '@agent-ledger/session-projection'

import { createJsonlBackend } from '../src/index.ts'
import { benchChild } from '../../../tooling/bench/support.ts'
import { collectGarbage, resetPeakRss, sampleRss } from './support/child.ts'
import { ensureDataset } from './support/dataset.ts'
import type { Dataset } from './support/dataset.ts'
import { bareOpen } from './support/floors.ts'
import { interleave, progress, throughputFigure } from './support/measure.ts'
import type { BenchResult, RunOptions } from './support/measure.ts'

const REPLAY_TARGET = 0.6
const COLD_TARGET = 0.01
const RSS_TARGET_MIB = 64
const MiB = 1024 * 1024
const CHILD_ENV = 'AGENT_LEDGER_CORE_READ_BENCH_CHILD'
const SIZES = {
  default: { datasetMb: 20, events: 100_000 },
  large: { datasetMb: 200, events: 1_000_000 },
} as const
const EAGER: CheckpointOptions = { everyEvents: 1, minIntervalMs: 0, minLogBytes: 0, minGrowthRatio: 0 }
const log = progress('core-read')

function coreStore(
  root: string,
  options: { encoding?: 'plain' | 'zstd'; checkpoint?: CheckpointOptions | { enabled: false } } = {},
): SessionStore {
  let tick = 0
  return createSessionStore({
    backend: createJsonlBackend({ root, encoding: options.encoding ?? 'plain', lock: { heartbeatMs: 0 } }),
    clock: () => new Date(Date.UTC(2026, 0, 5) + 250 * tick++).toISOString(),
    ...(options.checkpoint === undefined ? {} : { checkpoint: options.checkpoint }),
  })
}

async function timed(action: () => Promise<unknown>): Promise<number> {
  const started = performance.now()
  await action()
  return (performance.now() - started) / 1000
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((left, right) => left - right)
  return sorted[Math.floor(sorted.length / 2)]!
}

// ------------------------------------------------------------------ 1. full replay

async function replayFigure(dataset: Dataset, megabytes: number): Promise<BenchResult> {
  const store = coreStore(dataset.root, { checkpoint: { enabled: false } })
  const samples = await interleave(megabytes >= 100 ? 3 : 5, {
    ours: () =>
      timed(async () => {
        const read = await store.openReader(dataset.id)
        if (read.lastSeq !== dataset.events - 1) throw new Error(`replayed to ${read.lastSeq}`)
      }),
    floor: () => timed(() => bareOpen(dataset.file)),
    warmupSeconds: megabytes >= 100 ? 0 : 3,
  })
  return throughputFigure({
    name: `core full replay over JSONL plain, ${megabytes} MB dataset (${dataset.events} events), openReader`,
    unit: 'MB/s',
    work: dataset.bytes / 1e6,
    samples,
    floorName: 'bare 1 MiB read + line split + JSON.parse',
    target: REPLAY_TARGET,
  })
}

// ------------------------------------------------------------------ 2. cold open from a checkpoint

/** Appends one turn of seven events (and, every 50 turns, a compaction of all but the system prompt). */
function appendTurn(writer: SessionWriter, turn: number): void {
  const pad = 'lorem ipsum dolor sit amet consectetur '.repeat(1 + (turn % 5))
  const callId = `c${turn}`
  writer.append({ type: 'turn/start', data: { turn } })
  writer.append({
    type: 'user/message',
    data: { message: { role: 'user', content: `question ${turn}: ${pad}` } },
  })
  writer.append({
    type: 'assistant/message',
    data: {
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: callId, type: 'function', function: { name: 'read', arguments: `{"n":${turn}}` } },
        ],
      },
    },
  })
  writer.append({ type: 'tool/call', data: { callId, name: 'read', arguments: `{"n":${turn}}` } })
  writer.append({
    type: 'tool/result',
    data: { message: { role: 'tool', tool_call_id: callId, content: `result ${turn} ${pad}${pad}` } },
  })
  writer.append({
    type: 'assistant/message',
    data: { message: { role: 'assistant', content: `answer ${turn}` } },
  })
  writer.append({ type: 'turn/end', data: { turn, reason: 'completed' } })
  if (turn % 50 !== 0) return
  const surface = writer.projection.surface()
  if (surface.length < 3) return
  for (const step of planCompaction(writer.projection, {
    compactionId: `compaction-${turn}`,
    startSeq: surface[1]!.seq,
    endSeq: surface.at(-1)!.seq,
    summary: `summary up to turn ${turn}: ${pad}`,
    reason: 'context-window',
  })) {
    writer.append(step)
  }
}

interface ColdSession {
  readonly root: string
  readonly id: string
  readonly events: number
}

/** Writes the session: ~N-210 events with checkpoints off, one ~105-event batch with a checkpoint, ~105 more without. */
async function writeColdSession(encoding: 'plain' | 'zstd', total: number): Promise<ColdSession> {
  const root = mkdtempSync(join(tmpdir(), `core-read-${encoding}-`))
  const id = 'cold'
  const plainStore = coreStore(root, { encoding, checkpoint: { enabled: false } })
  const first = await plainStore.create({ id, header: { cwd: '/bench/core-read' } })
  first.append({
    type: 'system/message',
    data: { message: { role: 'system', content: 'You are a bench agent.' } },
  })
  let turn = 1
  let sinceFlush = 0
  while (first.projection.nextSeq < total - 220) {
    appendTurn(first, turn++)
    if ((sinceFlush += 7) >= 2000) {
      await first.flush()
      sinceFlush = 0
    }
  }
  await first.close()
  // The core's own checkpoint: one batch of ~105 events, then close.
  const eager = coreStore(root, { encoding, checkpoint: EAGER })
  const second = await eager.openWriter(id)
  for (let index = 0; index < 15; index++) appendTurn(second, turn++)
  await second.flush()
  await second.close()
  const third = await plainStore.openWriter(id)
  for (let index = 0; index < 15; index++) appendTurn(third, turn++)
  const events = third.projection.nextSeq
  await third.close()
  return { root, id, events }
}

async function coldFigures(encoding: 'plain' | 'zstd', total: number): Promise<BenchResult[]> {
  log(`writing a ${total}-event ${encoding} session through the core`)
  const session = await writeColdSession(encoding, total)
  try {
    const full = coreStore(session.root, { encoding, checkpoint: { enabled: false } })
    const probe = await coreStore(session.root, { encoding }).openReader(session.id)
    if (!probe.checkpoint.used || probe.lastSeq !== session.events - 1) {
      throw new Error(`the checkpoint was not used: ${JSON.stringify(probe.checkpoint)}`)
    }
    const behind = probe.checkpoint.replayedEvents
    const fullSeconds: number[] = []
    const coldSeconds: number[] = []
    const rounds = total >= 500_000 ? 2 : 3
    for (let round = 0; round < rounds; round++) {
      fullSeconds.push(await timed(() => full.openReader(session.id)))
      for (let cold = 0; cold < 3; cold++) {
        // Cold: a new backend and store each time (no head cache, no open file).
        coldSeconds.push(await timed(() => coreStore(session.root, { encoding }).openReader(session.id)))
      }
    }
    const fullS = median(fullSeconds)
    const coldS = median(coldSeconds)
    const ratio = coldS / fullS
    return [
      {
        name: `core cold open over JSONL ${encoding}, ${session.events} events, checkpoint ${behind} events behind (openReader, new backend + store)`,
        value: coldS * 1000,
        unit: 'ms',
        floor: {
          name: 'full replay of the same session (openReader, checkpoints off), ms',
          value: fullS * 1000,
        },
        ratio,
        target: `<= ${COLD_TARGET}`,
        met: ratio <= COLD_TARGET,
      },
    ]
  } finally {
    rmSync(session.root, { recursive: true, force: true })
  }
}

// ------------------------------------------------------------------ 3. peak RSS

interface MemoryReport {
  readonly baselineRss: number
  readonly peakRss: number
  readonly peakReset: boolean
  readonly retainedHeap: number
  /** Largest physical size of each V8 heap space, and of array buffers, sampled while opening (bytes). */
  readonly spaces: Readonly<Record<string, number>>
}

/** How often the child samples the V8 heap spaces while it opens (ms; samples run when the read yields). */
const SPACE_SAMPLE_MS = 5
/** Child runs per figure: the peak moves with the time of each GC, so the figure is their median. */
const MEMORY_RUNS = 3

async function memoryChild(job: { root: string; id: string; bareFile?: string }): Promise<MemoryReport> {
  const store = coreStore(job.root, { checkpoint: { enabled: false } })
  // The floor: the bare streaming split+parse of the same file, measured the same way.
  const open = async (): Promise<{ readonly lastSeq: number }> =>
    job.bareFile === undefined ? store.openReader(job.id) : { lastSeq: (await bareOpen(job.bareFile)) - 2 }
  collectGarbage()
  const heapBefore = process.memoryUsage().heapUsed
  const baseline = sampleRss()
  const peakReset = resetPeakRss()
  const spaces: Record<string, number> = {}
  const sample = (): void => {
    for (const space of getHeapSpaceStatistics()) {
      spaces[space.space_name] = Math.max(spaces[space.space_name] ?? 0, space.physical_space_size)
    }
    spaces['array buffers'] = Math.max(spaces['array buffers'] ?? 0, process.memoryUsage().arrayBuffers)
  }
  const sampler = setInterval(sample, SPACE_SAMPLE_MS)
  const keep = await open().finally(() => clearInterval(sampler))
  sample()
  const peak = sampleRss().peak
  collectGarbage()
  const retainedHeap = process.memoryUsage().heapUsed - heapBefore
  if (keep.lastSeq < 0) throw new Error('empty session')
  return { baselineRss: baseline.rss, peakRss: peak, peakReset, retainedHeap, spaces }
}

const runMemoryChild = benchChild(import.meta.url, { envName: CHILD_ENV, exposeGc: true, main: memoryChild })

function excessOf(report: MemoryReport): number {
  return (report.peakRss - report.baselineRss - Math.max(0, report.retainedHeap)) / MiB
}

async function memoryFigures(dataset: Dataset, megabytes: number): Promise<BenchResult[]> {
  const reports: MemoryReport[] = []
  const bare: number[] = []
  for (let run = 0; run < MEMORY_RUNS; run++) {
    reports.push((await runMemoryChild({ root: dataset.root, id: dataset.id })).result)
    const floor = (await runMemoryChild({ root: dataset.root, id: dataset.id, bareFile: dataset.file }))
      .result
    bare.push((floor.peakRss - floor.baselineRss) / MiB)
  }
  const excesses = reports.map(excessOf)
  // The run whose excess is the median: its peak, projection and heap spaces are the figure.
  const report = reports[excesses.indexOf(median(excesses))]!
  const peakAbove = (report.peakRss - report.baselineRss) / MiB
  const projection = Math.max(0, report.retainedHeap) / MiB
  const excess = excessOf(report)
  const largest = (names: readonly string[]): string =>
    names.map((name) => `${name} ${((report.spaces[name] ?? 0) / MiB).toFixed(1)}`).join(', ')
  return [
    {
      name: `core openReader over JSONL plain, ${megabytes} MB dataset (${(dataset.bytes / MiB).toFixed(0)} MiB): child peak RSS above its pre-open RSS (${report.peakReset ? 'VmHWM reset' : 'peak since start'}), median of ${MEMORY_RUNS} runs (excess ${excesses.map((value) => value.toFixed(1)).join(' / ')} MiB)`,
      value: peakAbove,
      unit: 'MiB',
      floor: { name: 'projection (heap retained by the result after full GC), MiB', value: projection },
      target: `peak - projection <= ${RSS_TARGET_MIB} MiB`,
      met: excess <= RSS_TARGET_MIB,
    },
    {
      // Where the excess sits at its peak: V8's spaces hold what the open allocated and a GC
      // has not yet freed (the projection retained after a full GC is the floor above).
      name: `of which (peak physical MiB, same run): ${largest(['new_space', 'old_space', 'new_large_object_space', 'large_object_space', 'array buffers'])}`,
      value: excess,
      unit: 'MiB excess',
      floor: { name: 'projection, MiB', value: projection },
      target: 'context',
    },
    {
      // The measured cause of an excess over 64 MiB: the floor itself (every line decoded and
      // parsed, nothing kept) peaks as high, V8 letting garbage of the multi-MB lines build up
      // in old and large-object space to a few times the live heap before a full GC.
      name: `bare streaming split+parse of the same file (the replay floor, nothing kept): child peak RSS above its pre-open RSS, median of ${MEMORY_RUNS} runs (${bare.map((value) => value.toFixed(1)).join(' / ')} MiB)`,
      value: median(bare),
      unit: 'MiB',
      floor: { name: 'core openReader peak above its pre-open RSS, MiB', value: peakAbove },
      target: 'context',
    },
  ]
}

/**
 * Runs the figures.
 *
 * @param options - `scale`: `large` for the 200 MB dataset and the 1M-event sessions.
 * @returns The figures.
 */
export async function run(options: RunOptions = {}): Promise<BenchResult[]> {
  const sizes = SIZES[options.scale ?? 'default']
  const dataset = await ensureDataset(sizes.datasetMb, log)
  const results: BenchResult[] = []
  log(`full replay of the ${sizes.datasetMb} MB dataset`)
  results.push(await replayFigure(dataset, sizes.datasetMb))
  for (const encoding of ['plain', 'zstd'] as const)
    results.push(...(await coldFigures(encoding, sizes.events)))
  log(`peak RSS of opening the ${sizes.datasetMb} MB dataset (child process)`)
  results.push(...(await memoryFigures(dataset, sizes.datasetMb)))
  return results
}
