/**
 * Full-open benchmark through the one store API (issues 4, 7 and 23): `openReader` of
 * `createJsonlStore({ root })` (the session core over the JSONL backend) on a realistic agent
 * session (see `support/dataset.ts`: written through the core, with multi-MB tool results and
 * compactions), replaying the whole log (checkpoints off), beside its floor measured in the
 * same run on the same file:
 *
 * 1. Plain logs of ~1 and ~200 MB: MB/s of `openReader` over MB/s of a bare loop that reads
 *    the file in 1 MiB chunks, splits lines and `JSON.parse`s each (target ratio >= 0.6).
 *    Rounds alternate floor and ours (ABAB); medians. The ~20 MB replay, the cold open from a
 *    checkpoint and the peak RSS of a full open are `core-read.bench.ts`'s figures.
 * 2. `.zstd` logs (written by the backend's `compress` capability): the same against a
 *    `zstd -d -c | split | JSON.parse` pipeline.
 *
 * `ratio` = ours / floor for throughputs, the median of the per-round ratios. Run alone with
 * `pnpm bench --only open.bench`.
 */
import { chmodSync, copyFileSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'

import type { SessionStore } from '@agent-ledger/session-store'

import { createJsonlStore } from '../src/index.ts'
import type { JsonlStore } from '../src/index.ts'
import { LOG_FILE_NAME } from '../src/format.ts'
import { cached, ensureDataset, removeCheckpoints } from './support/dataset.ts'
import type { Dataset } from './support/dataset.ts'
import { bareOpen, bareZstdPipeline } from './support/floors.ts'
import { interleave, progress, seconds, throughputFigure } from './support/measure.ts'
import type { BenchResult, RunOptions } from './support/measure.ts'

/** Dataset sizes (MB) per scale. */
const SIZES = { default: [1, 200], large: [1, 200] } as const
/** zstd open figure sizes (MB) per scale. */
const ZSTD_SIZES = { default: [20], large: [20, 200] } as const
/** Timed ABAB rounds per size. */
const ROUNDS: Record<number, number> = { 1: 15, 20: 5, 200: 3 }
/** Opens per timed sample (a 1 MB open takes milliseconds: one GC or scheduler hiccup would swing a single one). */
const OPENS_PER_SAMPLE: Record<number, number> = { 1: 10 }
/** Untimed warm-up per size (seconds): small logs need many runs before the JIT has compiled the open path. */
const WARMUP_SECONDS: Record<number, number> = { 1: 3 }
const OPEN_TARGET = 0.6
const log = progress('open')

/** The store a user opens the dataset's root with, checkpoints off (every open a full replay). */
function replayStore(root: string): JsonlStore {
  return createJsonlStore({ root, checkpoint: { enabled: false } })
}

/** Times one full open (`openReader`, checkpoints off) and checks the events read. */
async function timedOpen(store: SessionStore, dataset: Dataset): Promise<number> {
  const started = performance.now()
  const result = await store.openReader(dataset.id)
  const elapsed = (performance.now() - started) / 1000
  if (result.lastSeq + 1 !== dataset.events)
    throw new Error(`open read ${result.lastSeq + 1} events, expected ${dataset.events}`)
  if (result.checkpoint.used) throw new Error('open used a checkpoint: expected a full replay')
  return elapsed
}

async function plainFigure(dataset: Dataset, megabytes: number): Promise<BenchResult> {
  const rounds = ROUNDS[megabytes] ?? 3
  const opens = OPENS_PER_SAMPLE[megabytes] ?? 1
  const store = replayStore(dataset.root)
  try {
    const samples = await interleave(rounds, {
      warmupSeconds: WARMUP_SECONDS[megabytes] ?? 0,
      ours: async () => {
        let total = 0
        for (let open = 0; open < opens; open += 1) total += await timedOpen(store, dataset)
        return total
      },
      floor: () =>
        seconds(async () => {
          for (let open = 0; open < opens; open += 1) {
            const lines = await bareOpen(dataset.file)
            if (lines !== dataset.events + 1)
              throw new Error(`floor read ${lines} lines, expected ${dataset.events + 1}`)
          }
        }),
    })
    return throughputFigure({
      name: `open ${megabytes} MB plain log (${dataset.events} events, openReader, full replay${opens > 1 ? `; ${opens} opens per sample` : ''})`,
      unit: 'MB/s',
      work: (dataset.bytes * opens) / 1e6,
      samples,
      floorName: 'bare 1 MiB read + line split + JSON.parse',
      target: OPEN_TARGET,
    })
  } finally {
    await store.close()
  }
}

/**
 * A `.zstd` copy of a dataset, alone in its session directory, written by the backend's
 * `compress` capability (`store.backend.capabilities.compress.compress(id)`). Cached.
 */
async function zstdDataset(plain: Dataset, megabytes: number): Promise<Dataset> {
  // The same id as the plain session (in a root of its own): a header names its directory.
  const id = plain.id
  const { directory, info } = await cached(
    { kind: 'zstd-of', plain: plain.file, bytes: plain.bytes, via: 'core compress capability', sameId: true },
    async (building) => {
      const root = join(building, 'root')
      const sessionDirectory = join(root, id)
      mkdirSync(sessionDirectory, { recursive: true, mode: 0o700 })
      const plainCopy = join(sessionDirectory, LOG_FILE_NAME)
      copyFileSync(plain.file, plainCopy)
      chmodSync(plainCopy, 0o600)
      const store = createJsonlStore({ root })
      try {
        await store.backend.capabilities.compress.compress(id)
      } finally {
        await store.close()
      }
      // Only the compressed log may remain: an open must not find the plain one.
      rmSync(plainCopy, { force: true })
      removeCheckpoints(sessionDirectory)
      const name = readdirSync(sessionDirectory).find((entry) => entry.endsWith('.zstd'))
      if (name === undefined) throw new Error(`no .zstd log in ${sessionDirectory} after compressing`)
      const bytes = statSync(join(sessionDirectory, name)).size
      log(`built ${megabytes} MB zstd dataset (${bytes} bytes)`)
      return { bytes, name }
    },
  )
  return {
    root: join(directory, 'root'),
    id,
    file: join(directory, 'root', id, info.name),
    bytes: info.bytes,
    events: plain.events,
  }
}

async function zstdFigures(scale: 'default' | 'large'): Promise<BenchResult[]> {
  const results: BenchResult[] = []
  for (const megabytes of ZSTD_SIZES[scale]) {
    const plain = await ensureDataset(megabytes, log)
    const compressed = await zstdDataset(plain, megabytes)
    const store = replayStore(compressed.root)
    try {
      const samples = await interleave(ROUNDS[megabytes] ?? 3, {
        ours: () => timedOpen(store, compressed),
        floor: () => seconds(() => bareZstdPipeline(compressed.file)),
      })
      results.push(
        throughputFigure({
          name: `open ${megabytes} MB zstd log (plain MB/s; ${compressed.bytes} bytes by the compress capability; openReader, full replay)`,
          unit: 'MB/s',
          work: plain.bytes / 1e6,
          samples,
          floorName: 'zstd -d -c | line split + JSON.parse',
          target: OPEN_TARGET,
        }),
      )
    } finally {
      await store.close()
    }
  }
  return results
}

/**
 * Runs the open figures.
 *
 * @param options - `scale`: `default` or `large` (adds the 200 MB zstd figure).
 * @returns The figures.
 */
export async function run(options: RunOptions = {}): Promise<BenchResult[]> {
  const scale = options.scale ?? 'default'
  const results: BenchResult[] = []
  for (const megabytes of SIZES[scale]) {
    const dataset = await ensureDataset(megabytes, log)
    log(`plain ${megabytes} MB (${dataset.bytes} bytes, ${dataset.events} events)`)
    results.push(await plainFigure(dataset, megabytes))
  }
  results.push(...(await zstdFigures(scale)))
  return results
}
