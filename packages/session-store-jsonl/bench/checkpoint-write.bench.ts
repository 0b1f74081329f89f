/**
 * Checkpoint write cost of a never-compacted session (issues 16 and 23), written the way an
 * agent writes one, through the one store API with its defaults (`createJsonlStore({ root })`:
 * the session core over the JSONL backend, whose `checkpoints` capability keeps the core's
 * checkpoint in `<id>/core.checkpoint`): per turn `turn/start`, a user message, an
 * assistant message with one tool call, `tool/call`, flush, a 40 KB tool result, `turn/end`,
 * flush. Each run is a fresh child process (so `/proc/self/io` and the peak RSS are its own);
 * the same workload with checkpoints off runs in another child beside it.
 *
 * Figures (each beside its floor from the same run):
 * - write amplification: bytes the process wrote (`write_bytes` of /proc/self/io: what reached
 *   the block layer, page-rounded) / log bytes; target <= 1.3 with defaults. The same figure
 *   with checkpoints off is printed beside it;
 * - checkpoint file (`core.checkpoint`) size / log size; target <= 0.05 (the old
 *   line-reference checkpoint's; the core's body holds the projection snapshot itself);
 * - writer peak RSS above its start, minus the projection (heap the writer retains after a
 *   full GC); target < 64 MiB;
 * - durable append throughput with defaults / the same with checkpoints off (median of the
 *   per-round ratios of alternating rounds); target >= 0.8;
 * - cold open of the session just written (its checkpoint as the writer left it) against
 *   the least a reader of the same files does: read `core.checkpoint` and `JSON.parse` its
 *   envelope line, body header and payload, then read the log from the checkpoint's seek
 *   point to the end and `JSON.parse` each line; target <= 1.5.
 *
 * 100 MB by default (about 2,400 turns), 3 rounds; `AL_BENCH_CHECKPOINT_MB` and
 * `AL_BENCH_CHECKPOINT_ROUNDS` set others. The first round's children give the other figures.
 * Run alone with `pnpm bench --only checkpoint-write`.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import type { SessionStoreWarning } from '@agent-ledger/session-store'

import { benchText, createRandom } from '../../../tooling/bench/agent-session.ts'
import { benchChild, median as middle } from '../../../tooling/bench/support.ts'
import type { BenchResult } from '../../../tooling/bench/types.ts'
import { LOG_FILE_NAME } from '../src/format.ts'
import { createJsonlStore } from '../src/index.ts'
import { collectGarbage, resetPeakRss, sampleRss } from './support/child.ts'
import { checkpointFloor } from './support/floors.ts'
import { interleave } from './support/measure.ts'

const CHILD_ENV = 'AL_BENCH_CHECKPOINT_WRITE_CHILD'
/** The JSONL backend's file of the core's checkpoint (src/backend/checkpoints.ts). */
const CHECKPOINT_FILE = 'core.checkpoint'
const MiB = 1024 * 1024
const TOOL_RESULT_BYTES = 40_000
const RSS_TARGET_MIB = 64
/** Rounds of the throughput comparison (each writes the session twice: defaults, checkpoints off). */
const ROUNDS = Number(process.env['AL_BENCH_CHECKPOINT_ROUNDS'] ?? '3')

/** What a child reports. */
interface WriteReport {
  readonly turns: number
  readonly logBytes: number
  /** `write_bytes` of /proc/self/io during the workload (block layer, page-rounded). */
  readonly writeBytes: number
  /** `wchar` of /proc/self/io during the workload (bytes handed to write calls). */
  readonly wchar: number
  readonly seconds: number
  readonly baselineRss: number
  readonly peakRss: number
  readonly peakReset: boolean
  /** Heap the writer's projection retains after a full GC. */
  readonly projectionHeap: number
  readonly checkpointBytes: number
  readonly warnings: number
}

function ioCounters(): { readonly writeBytes: number; readonly wchar: number } {
  const text = readFileSync('/proc/self/io', 'utf8')
  const field = (name: string): number => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(text)?.[1] ?? NaN)
  return { writeBytes: field('write_bytes'), wchar: field('wchar') }
}

const WORDS = ['const', 'return', 'await', 'function', 'import', 'session', 'event', 'buffer', 'flush']

function text(random: () => number, bytes: number): string {
  return benchText(random, bytes, { words: WORDS, newlines: 0.1 })
}

/** The workload, in this (child) process. */
async function writeChild(job: {
  readonly mode: 'defaults' | 'off'
  readonly root: string
  readonly megabytes: number
}): Promise<WriteReport> {
  let warnings = 0
  const store = createJsonlStore({
    root: job.root,
    onWarning: () => {
      warnings += 1
    },
    ...(job.mode === 'off' ? { checkpoint: { enabled: false } } : {}),
  })
  const random = createRandom(16)
  const target = job.megabytes * 1e6
  collectGarbage()
  const heapBefore = process.memoryUsage().heapUsed
  const peakReset = resetPeakRss()
  const baseline = sampleRss()
  const ioBefore = ioCounters()
  const started = performance.now()
  const writer = await store.create({ id: 'agent' })
  const logPath = join(job.root, 'agent', LOG_FILE_NAME)
  let turns = 0
  let logBytes = 0
  for (let turn = 1; logBytes < target; turn += 1) {
    const callId = `call_${turn}`
    const args = JSON.stringify({ path: `src/module-${turn % 97}.ts` })
    writer.append({ type: 'turn/start', data: { turn } })
    writer.append({
      type: 'user/message',
      data: { message: { role: 'user', content: text(random, 100 + random() * 300) } },
    })
    writer.append({
      type: 'assistant/message',
      data: {
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: callId, type: 'function', function: { name: 'read_file', arguments: args } }],
        },
      },
    })
    writer.append({ type: 'tool/call', data: { callId, name: 'read_file', arguments: args } })
    await writer.flush()
    writer.append({
      type: 'tool/result',
      data: { message: { role: 'tool', tool_call_id: callId, content: text(random, TOOL_RESULT_BYTES) } },
    })
    writer.append({ type: 'turn/end', data: { turn, reason: 'completed' } })
    await writer.flush()
    turns = turn
    logBytes = statSync(logPath).size
  }
  await writer.close()
  await store.close()
  const seconds = (performance.now() - started) / 1000
  const ioAfter = ioCounters()
  const peak = sampleRss().peak
  collectGarbage()
  const projectionHeap = process.memoryUsage().heapUsed - heapBefore
  // Kept alive until the heap is measured.
  if (writer.projection.nextSeq === 0) throw new Error('unreachable')
  const directory = join(job.root, 'agent')
  const checkpointPath = join(directory, CHECKPOINT_FILE)
  const checkpointBytes = existsSync(checkpointPath) ? statSync(checkpointPath).size : 0
  return {
    turns,
    logBytes: statSync(join(directory, LOG_FILE_NAME)).size,
    writeBytes: ioAfter.writeBytes - ioBefore.writeBytes,
    wchar: ioAfter.wchar - ioBefore.wchar,
    seconds,
    baselineRss: baseline.rss,
    peakRss: peak,
    peakReset,
    projectionHeap,
    checkpointBytes,
    warnings,
  }
}

async function medianOf(runs: number, action: () => Promise<number>): Promise<number> {
  const times: number[] = []
  for (let run = 0; run < runs; run += 1) times.push(await action())
  return middle(times)
}

async function coldOpen(root: string): Promise<BenchResult[]> {
  const directory = join(root, 'agent')
  const path = join(directory, LOG_FILE_NAME)
  const checkpointPath = join(directory, CHECKPOINT_FILE)
  const warned: SessionStoreWarning[] = []
  const onWarning = (warning: SessionStoreWarning): void => {
    warned.push(warning)
  }
  const store = createJsonlStore({ root, onWarning })
  const full = createJsonlStore({ root, onWarning, checkpoint: { enabled: false } })
  let replayed = 0
  // Alternated rounds (ABAB) on this shared machine; the claim is the median per-round ratio.
  const samples = await interleave(7, {
    ours: async () => {
      const started = performance.now()
      const read = await store.openReader('agent')
      replayed = read.checkpoint.used ? read.checkpoint.replayedEvents : -1
      return performance.now() - started
    },
    floor: () => checkpointFloor(checkpointPath, path),
    warmupSeconds: 1,
  })
  if (warned.length > 0) throw new Error(`unexpected warning: ${warned[0]!.message}`)
  if (replayed < 0) throw new Error('the cold open did not use the checkpoint')
  const oursMs = middle(samples.ours)
  const floorMs = middle(samples.floor)
  const ratio = middle(samples.ours.map((ms, round) => ms / samples.floor[round]!))
  const fullMs = await medianOf(3, async () => {
    const started = performance.now()
    await full.openReader('agent')
    return performance.now() - started
  })
  await store.close()
  await full.close()
  const checkpointMb = statSync(checkpointPath).size / 1e6
  return [
    {
      name: `cold open of that session (core.checkpoint as the writer left it, ${checkpointMb.toFixed(0)} MB, ${replayed} events behind; openReader)`,
      value: oursMs,
      unit: 'ms',
      floor: {
        name: 'read core.checkpoint + JSON.parse its lines, read the log from its seek point + JSON.parse each line, results kept',
        value: floorMs,
      },
      ratio,
      target: '<= 1.5',
      met: ratio <= 1.5,
    },
    {
      name: 'cold open of that session, against a full replay (context)',
      value: oursMs,
      unit: 'ms',
      floor: { name: 'full replay (checkpoints off)', value: fullMs },
      ratio: oursMs / fullMs,
    },
  ]
}

const runWriteChild = benchChild(import.meta.url, { envName: CHILD_ENV, exposeGc: true, main: writeChild })

/**
 * Runs the checkpoint write figures.
 *
 * @returns The figures, each beside its floor.
 */
export async function run(): Promise<BenchResult[]> {
  const megabytes = Number(process.env['AL_BENCH_CHECKPOINT_MB'] ?? '100')
  const root = mkdtempSync(join(tmpdir(), 'al-ckpt-write-bench-'))
  try {
    const child = async (mode: 'off' | 'defaults', round: number): Promise<WriteReport> => {
      const directory = join(root, `${mode}-${round}`)
      return (await runWriteChild({ mode, root: directory, megabytes })).result
    }
    // Rounds alternating the order (AB, BA, ...), so load that drifts on this shared machine hits
    // both modes alike; the throughput claim is the median of the per-round ratios.
    const rounds: { readonly off: WriteReport; readonly ours: WriteReport }[] = []
    for (let round = 0; round < ROUNDS; round += 1) {
      let offReport: WriteReport
      let oursReport: WriteReport
      if (round % 2 === 0) {
        offReport = await child('off', round)
        oursReport = await child('defaults', round)
      } else {
        oursReport = await child('defaults', round)
        offReport = await child('off', round)
      }
      rounds.push({ off: offReport, ours: oursReport })
      rmSync(join(root, `off-${round}`), { recursive: true, force: true })
      if (round > 0) rmSync(join(root, `defaults-${round}`), { recursive: true, force: true })
    }
    if (rounds.some((round) => round.off.warnings > 0 || round.ours.warnings > 0)) {
      throw new Error('the writer warned during the workload')
    }
    const { off, ours } = rounds[0]!
    const size = `${(ours.logBytes / 1e6).toFixed(0)} MB, ${ours.turns} turns`
    const amplification = ours.writeBytes / ours.logBytes
    const offAmplification = off.writeBytes / off.logBytes
    const mib = (bytes: number): number => bytes / MiB
    const peakAbove = mib(ours.peakRss - ours.baselineRss)
    const projection = mib(Math.max(0, ours.projectionHeap))
    const excess = peakAbove - projection
    const rate = (report: WriteReport): number => report.logBytes / 1e6 / report.seconds
    const throughput = middle(rounds.map((round) => rate(round.ours)))
    const offThroughput = middle(rounds.map((round) => rate(round.off)))
    const throughputRatio = middle(rounds.map((round) => rate(round.ours) / rate(round.off)))
    const results: BenchResult[] = [
      {
        name: `write amplification, never-compacted agent session, createJsonlStore defaults (${size}; write_bytes / log bytes; wchar ratio ${(ours.wchar / ours.logBytes).toFixed(3)})`,
        value: amplification,
        unit: 'x',
        floor: { name: 'the same with checkpoints off', value: offAmplification },
        ratio: amplification,
        target: '<= 1.3',
        met: amplification <= 1.3,
      },
      {
        name: `core.checkpoint / log size, same session (${(ours.checkpointBytes / 1e3).toFixed(0)} kB)`,
        value: ours.checkpointBytes / ours.logBytes,
        unit: 'of the log',
        ratio: ours.checkpointBytes / ours.logBytes,
        target: '<= 0.05',
        met: ours.checkpointBytes > 0 && ours.checkpointBytes / ours.logBytes <= 0.05,
      },
      {
        name: `writer peak RSS above its start, same session (${ours.peakReset ? 'VmHWM reset' : 'peak since start'}); excess over the projection ${excess.toFixed(1)} MiB; checkpoints off: ${mib(off.peakRss - off.baselineRss).toFixed(1)} MiB`,
        value: peakAbove,
        unit: 'MiB',
        floor: { name: 'projection (heap the writer retains after a full GC), MiB', value: projection },
        target: `peak - projection < ${RSS_TARGET_MIB} MiB`,
        met: excess < RSS_TARGET_MIB,
      },
      {
        name: `durable append throughput, same workload, createJsonlStore defaults (MB/s; medians of ${ROUNDS} alternating rounds; per-round ratios ${rounds.map((round) => (rate(round.ours) / rate(round.off)).toFixed(2)).join(', ')})`,
        value: throughput,
        unit: 'MB/s',
        floor: { name: 'the same with checkpoints off (MB/s)', value: offThroughput },
        ratio: throughputRatio,
        target: '>= 0.8',
        met: throughputRatio >= 0.8,
      },
    ]
    results.push(...(await coldOpen(join(root, 'defaults-0'))))
    return results
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}
