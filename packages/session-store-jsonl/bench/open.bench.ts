/**
 * Full-open benchmark of the store (issues 4 and 7): `openReader` of a realistic agent session
 * (see `support/dataset.ts`: written through the store, with multi-MB tool results and
 * compactions) replaying the whole log, no checkpoint, beside its floor measured in the same
 * run on the same file:
 *
 * 1. Plain logs of ~1, ~20 and ~200 MB: MB/s of `openReader` over MB/s of a bare loop that reads
 *    the file in 1 MiB chunks, splits lines and `JSON.parse`s each (target ratio >= 0.6).
 *    Rounds alternate floor and ours (ABAB); medians.
 * 2. zstd logs: the same against a `zstd -d -c | split | JSON.parse` pipeline, when the store
 *    can open a `session.v4.jsonl.zstd` session (detected at run time); otherwise the figure
 *    is printed as not available.
 * 3. Peak RSS while opening the largest log, in a child process: VmHWM minus the child's RSS
 *    just before the open, beside the size of the derived projection (heap the open's result
 *    keeps after a full GC; the JSON size of `deriveMessages()` is printed in the name).
 *    Target: peak - projection < 64 MiB. The bare loop's peak is printed beside it.
 *
 * `ratio` = ours / floor for throughputs, the median of the per-round ratios. Run alone with
 * `pnpm bench --only open.bench`.
 */
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { createSessionStore, JsonlStoreError } from '../src/index.ts'
import { LOG_FILE_NAME } from '../src/format.ts'
import type { SessionStore } from '../src/index.ts'
import { encodeFrames } from '../src/zstd/encode-frames.ts'
import { loadZstdCodec } from '../src/zstd/zstd-codec.ts'
import { collectGarbage, resetPeakRss, runChild, sampleRss } from './support/child.ts'
import { cached, ensureDataset, removeCheckpoints } from './support/dataset.ts'
import type { Dataset } from './support/dataset.ts'
import { bareOpen, bareZstdPipeline } from './support/floors.ts'
import { interleave, progress, seconds, throughputFigure } from './support/measure.ts'
import type { BenchResult, RunOptions } from './support/measure.ts'

/** Dataset sizes (MB) per scale. */
const SIZES = { default: [1, 20, 200], large: [1, 20, 200] } as const
/** zstd open figure sizes (MB) per scale. */
const ZSTD_SIZES = { default: [20], large: [20, 200] } as const
/** Timed ABAB rounds per size. */
const ROUNDS: Record<number, number> = { 1: 15, 20: 5, 200: 3 }
/** Opens per timed sample (a 1 MB open takes milliseconds: one GC or scheduler hiccup would swing a single one). */
const OPENS_PER_SAMPLE: Record<number, number> = { 1: 10 }
/** Untimed warm-up per size (seconds): small logs need many runs before the JIT has compiled the open path. */
const WARMUP_SECONDS: Record<number, number> = { 1: 3 }
const OPEN_TARGET = 0.6
const RSS_TARGET_MIB = 64
const MiB = 1024 * 1024
const CHILD_ENV = 'AGENT_LEDGER_OPEN_BENCH_CHILD'
const log = progress('open')

/**
 * Times one full open: removes any checkpoint (untimed), then `openReader` with the store's
 * defaults (timed), and checks the events read.
 */
async function timedOpen(store: SessionStore, dataset: Dataset): Promise<number> {
  removeCheckpoints(join(dataset.root, dataset.id))
  const started = performance.now()
  const result = await store.openReader(dataset.id)
  const elapsed = (performance.now() - started) / 1000
  if (result.lastSeq + 1 !== dataset.events)
    throw new Error(`open read ${result.lastSeq + 1} events, expected ${dataset.events}`)
  if (result.checkpoint != null) throw new Error('open used a checkpoint: expected a full replay')
  return elapsed
}

async function plainFigure(dataset: Dataset, megabytes: number): Promise<BenchResult> {
  const rounds = ROUNDS[megabytes] ?? 3
  const opens = OPENS_PER_SAMPLE[megabytes] ?? 1
  const store = createSessionStore({ root: dataset.root })
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
}

/** The store's `compress(id)` (plain -> `.zstd`), when this build of the store has it. */
type Compress = (id: string) => Promise<unknown>

function compressOf(store: SessionStore): Compress | undefined {
  const compress = (store as { compress?: unknown }).compress
  return typeof compress === 'function' ? (compress.bind(store) as Compress) : undefined
}

/**
 * A zstd copy of a dataset, alone in its session directory: written by the store's own
 * `compress(id)` when it exists, else by the zstd layer's encoder (whole lines in 4 MiB
 * frames, level 3). Cached.
 */
async function zstdDataset(plain: Dataset, megabytes: number): Promise<Dataset & { how: string }> {
  // The same id as the plain session (in a root of its own): a header names its directory.
  const id = plain.id
  const viaStore = compressOf(createSessionStore({ root: plain.root })) !== undefined
  const { directory, info } = await cached(
    { kind: 'zstd-of', plain: plain.file, bytes: plain.bytes, viaStore, sameId: true },
    async (building) => {
      const root = join(building, 'root')
      const sessionDirectory = join(root, id)
      mkdirSync(sessionDirectory, { recursive: true, mode: 0o700 })
      const plainCopy = join(sessionDirectory, LOG_FILE_NAME)
      copyFileSync(plain.file, plainCopy)
      chmodSync(plainCopy, 0o600)
      const compress = compressOf(createSessionStore({ root }))
      let how: string
      if (compress !== undefined) {
        await compress(id)
        how = 'store.compress'
      } else {
        const codec = await loadZstdCodec()
        const encoded = encodeFrames(readFileSync(plain.file), { codec, targetFrameBytes: 4 * MiB, level: 3 })
        writeFileSync(join(sessionDirectory, `${LOG_FILE_NAME}.zstd`), encoded.bytes, { mode: 0o600 })
        how = 'zstd layer encodeFrames, 4 MiB frames, level 3'
      }
      // Only the compressed log may remain: an open must not find the plain one.
      rmSync(plainCopy, { force: true })
      removeCheckpoints(sessionDirectory)
      const name = readdirSync(sessionDirectory).find((entry) => entry.endsWith('.zstd'))
      if (name === undefined) throw new Error(`no .zstd log in ${sessionDirectory} after compressing`)
      const bytes = statSync(join(sessionDirectory, name)).size
      log(`built ${megabytes} MB zstd dataset (${bytes} bytes, ${how})`)
      return { bytes, name, how }
    },
  )
  return {
    root: join(directory, 'root'),
    id,
    file: join(directory, 'root', id, info.name),
    bytes: info.bytes,
    events: plain.events,
    how: info.how,
  }
}

/** Why the store cannot open a zstd-only session, or null when it can. */
async function zstdUnsupported(plain: Dataset): Promise<string | null> {
  const compressed = await zstdDataset(plain, 1)
  try {
    await timedOpen(createSessionStore({ root: compressed.root }), compressed)
    return null
  } catch (error) {
    return JsonlStoreError.is(error) ? error.code : String(error)
  }
}

async function zstdFigures(scale: 'default' | 'large', small: Dataset): Promise<BenchResult[]> {
  const reason = await zstdUnsupported(small)
  if (reason !== null) {
    return [
      {
        name: `open zstd log: not available (openReader of a session.v4.jsonl.zstd-only session: ${reason})`,
        value: Number.NaN,
        unit: 'MB/s',
        target: `>= ${OPEN_TARGET} (not measured)`,
      },
    ]
  }
  const results: BenchResult[] = []
  for (const megabytes of ZSTD_SIZES[scale]) {
    const plain = await ensureDataset(megabytes, log)
    const compressed = await zstdDataset(plain, megabytes)
    const store = createSessionStore({ root: compressed.root })
    const samples = await interleave(ROUNDS[megabytes] ?? 3, {
      ours: () => timedOpen(store, compressed),
      floor: () => seconds(() => bareZstdPipeline(compressed.file)),
    })
    results.push(
      throughputFigure({
        name: `open ${megabytes} MB zstd log (plain MB/s; ${compressed.bytes} bytes compressed by ${compressed.how})`,
        unit: 'MB/s',
        work: plain.bytes / 1e6,
        samples,
        floorName: 'zstd -d -c | line split + JSON.parse',
        target: OPEN_TARGET,
      }),
    )
  }
  return results
}

/** What the memory child prints. */
interface MemoryReport {
  readonly baselineRss: number
  readonly peakRss: number
  readonly peakReset: boolean
  readonly retainedHeap: number
  readonly messagesJsonChars: number
  readonly messages: number
}

/** Child body: open (or run the bare loop) once and report the peak RSS above the RSS before. */
async function memoryChild(job: { mode: 'ours' | 'floor'; root: string; id: string }): Promise<MemoryReport> {
  const store = createSessionStore({ root: job.root })
  removeCheckpoints(join(job.root, job.id))
  collectGarbage()
  const heapBefore = process.memoryUsage().heapUsed
  const baseline = sampleRss()
  const peakReset = resetPeakRss()
  let keep: unknown
  let messagesJsonChars = 0
  let messages = 0
  if (job.mode === 'ours') {
    const result = await store.openReader(job.id)
    keep = result
    const derived = result.projection.deriveMessages()
    messages = derived.length
    for (const message of derived) messagesJsonChars += JSON.stringify(message).length
  } else {
    keep = await bareOpen(join(job.root, job.id, LOG_FILE_NAME))
  }
  const peak = sampleRss().peak
  collectGarbage()
  const retainedHeap = process.memoryUsage().heapUsed - heapBefore
  if (keep === undefined) throw new Error('unreachable')
  return {
    baselineRss: baseline.rss,
    peakRss: peak,
    peakReset,
    retainedHeap,
    messagesJsonChars,
    messages,
  }
}

async function memoryFigures(dataset: Dataset, megabytes: number): Promise<BenchResult[]> {
  const script = fileURLToPath(import.meta.url)
  const ours = await runChild<MemoryReport>(script, {
    envName: CHILD_ENV,
    value: { mode: 'ours', root: dataset.root, id: dataset.id },
  })
  const floor = await runChild<MemoryReport>(script, {
    envName: CHILD_ENV,
    value: { mode: 'floor', root: dataset.root, id: dataset.id },
  })
  const mib = (bytes: number): number => bytes / MiB
  const peakAbove = mib(ours.peakRss - ours.baselineRss)
  const projection = mib(Math.max(0, ours.retainedHeap))
  const excess = peakAbove - projection
  const how = ours.peakReset ? 'VmHWM reset before the open' : 'peak since process start'
  return [
    {
      name: `open ${megabytes} MB: child peak RSS above its pre-open RSS (${how}); excess over the projection ${excess.toFixed(1)} MiB; projection = ${ours.messages} messages, ${mib(ours.messagesJsonChars).toFixed(1)} MiB as JSON`,
      value: peakAbove,
      unit: 'MiB',
      floor: {
        name: 'derived projection (heap retained by the open result after full GC), MiB',
        value: projection,
      },
      target: `peak - projection < ${RSS_TARGET_MIB} MiB`,
      met: excess < RSS_TARGET_MIB,
    },
    {
      name: `open ${megabytes} MB: bare loop (1 MiB read + split + JSON.parse) child peak RSS above its pre-open RSS (context, no target)`,
      value: mib(floor.peakRss - floor.baselineRss),
      unit: 'MiB',
    },
  ]
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
  const datasets = new Map<number, Dataset>()
  for (const megabytes of SIZES[scale]) {
    const dataset = await ensureDataset(megabytes, log)
    datasets.set(megabytes, dataset)
    log(`plain ${megabytes} MB (${dataset.bytes} bytes, ${dataset.events} events)`)
    results.push(await plainFigure(dataset, megabytes))
  }
  results.push(...(await zstdFigures(scale, datasets.get(1)!)))
  const largest = Math.max(...datasets.keys())
  log(`peak RSS of opening ${largest} MB (child processes)`)
  results.push(...(await memoryFigures(datasets.get(largest)!, largest)))
  return results
}

const childJob = process.env[CHILD_ENV]
if (
  childJob !== undefined &&
  process.argv[1] !== undefined &&
  fileURLToPath(import.meta.url) === process.argv[1]
) {
  const report = await memoryChild(
    JSON.parse(childJob) as { mode: 'ours' | 'floor'; root: string; id: string },
  )
  process.stdout.write(`${JSON.stringify(report)}\n`)
}
