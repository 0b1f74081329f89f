/**
 * `.zstd` sessions through the one store API (issues 5 and 23): `createJsonlStore({ root })`
 * (the session core over the JSONL backend), its `compress` capability
 * (`store.backend.capabilities.compress.compress(id)`) and its writers; a realistic agent session (`support/dataset.ts`,
 * 20 MB; 200 MB with --large) beside the stock `zstd` CLI on the same file in the same run.
 *
 * 1. `compress` (scan + frames of 4 MiB at level 6 + read-back verification + publish by
 *    link) in MB/s of plain log, beside `zstd -3 -c file > /dev/null` timed the same way
 *    (ratio = ours / CLI; the CLI is native and does none of the checks).
 * 2. Size: the compressed session's ratio (plain / compressed) over `zstd -3` of the whole
 *    plain file (target >= 0.8), for: compress; an 8 MB session written live through the store
 *    with a flush every 1 / 10 / 100 events (one frame per flush); the live 10-event session
 *    after a reseal (`compress` again).
 * 3. Live write: MB/s of appends + flush every 100 events to a `.zstd` session over the same to
 *    a plain session (the cost of compressing each flush; both fdatasync), both written by the
 *    core's writer (checkpoints off) into a store created with `encoding: 'zstd'` / `'plain'`.
 *
 * Run alone with `pnpm bench --only compress`.
 */
import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { createJsonlStore } from '../src/index.ts'
import type { CompressResult, JsonlStore } from '../src/index.ts'
import { LOG_FILE_NAME } from '../src/format.ts'
import { timeCommand } from '../../../tooling/bench/support.ts'
import { ensureDataset, generateAgentSession } from './support/dataset.ts'
import { generateSessionHeader } from './generate-session.ts'
import { progress } from './support/measure.ts'
import type { BenchResult, RunOptions } from './support/measure.ts'

const MB = 1_000_000
const ZSTD_NAME = `${LOG_FILE_NAME}.zstd`
const log = progress('compress')

/** `store.backend.capabilities.compress.compress(id)`: the JSONL backend reports its `CompressResult` as the details. */
async function compressSession(store: JsonlStore, id: string): Promise<CompressResult> {
  const result = await store.backend.capabilities.compress.compress(id)
  return result.details as unknown as CompressResult
}

/** `zstd -3 -c file`: median seconds of 3 runs after one untimed, and the compressed size. */
function cliCompress(file: string): { readonly seconds: number; readonly bytes: number } {
  const timed = timeCommand('zstd', ['-3', '-q', '-c', file], { rounds: 3 })
  return { seconds: timed.ms / 1000, bytes: timed.stdout.length }
}

/** Writes the dataset's session again through a store in `encoding`, flushing every `flushEvery` events. */
async function writeLive(
  root: string,
  request: {
    readonly id: string
    readonly encoding: 'plain' | 'zstd'
    readonly flushEvery: number
    readonly targetBytes: number
  },
): Promise<{ seconds: number; file: string }> {
  const base = generateSessionHeader({ seed: 7 })
  let now = base.createdAt
  // The core buffers until `flush`: one flush (one frame on `.zstd`) per `flushEvery` events.
  const store = createJsonlStore({ root, clock: () => now, encoding: request.encoding, checkpoint: { enabled: false } })
  const writer = await store.create({
    id: request.id,
    header: { createdAt: base.createdAt, cwd: base.cwd, metadata: base.metadata },
  })
  const started = performance.now()
  let since = 0
  for (const { input, time } of generateAgentSession(
    { seed: 7, targetBytes: request.targetBytes },
    writer.projection,
  )) {
    now = time
    writer.append(input)
    since += 1
    if (since >= request.flushEvery) {
      await writer.flush()
      since = 0
    }
  }
  await writer.close()
  await store.close()
  return {
    seconds: (performance.now() - started) / 1000,
    file: join(root, request.id, request.encoding === 'zstd' ? ZSTD_NAME : LOG_FILE_NAME),
  }
}

/**
 * Runs the benchmark.
 *
 * @param options - `scale`: `default` (20 MB session) or `large` (200 MB).
 * @returns The figures, each beside its CLI floor.
 */
export async function run(options: RunOptions = {}): Promise<BenchResult[]> {
  const megabytes = options.scale === 'large' ? 200 : 20
  const dataset = await ensureDataset(megabytes, log)
  const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-compress-bench-'))
  const results: BenchResult[] = []
  try {
    const plainFile = dataset.file
    const plainBytes = statSync(plainFile).size
    const cli = cliCompress(plainFile)
    const wholeSize = cli.bytes
    const wholeRatio = plainBytes / wholeSize
    const sizeFloor = {
      name: `zstd -3 of the whole plain file (${(wholeSize / MB).toFixed(2)} MB)`,
      value: wholeRatio,
    }
    const sizeFigure = (name: string, compressed: number): BenchResult => {
      const value = plainBytes / compressed
      return {
        name: `zstd size: ${name}`,
        value,
        unit: 'x (plain/compressed)',
        floor: sizeFloor,
        ratio: value / wholeRatio,
        target: '>= 0.8',
        met: value / wholeRatio >= 0.8,
      }
    }

    // 1. compress, best of 2, beside the CLI file to file
    let compressSeconds = Number.POSITIVE_INFINITY
    let compressedSize = 0
    for (let round = 0; round < 2; round += 1) {
      const root = join(scratch, `c${round}`)
      mkdirSync(join(root, dataset.id), { recursive: true, mode: 0o700 })
      copyFileSync(plainFile, join(root, dataset.id, LOG_FILE_NAME))
      const store = createJsonlStore({ root, checkpoint: { enabled: false } })
      const started = performance.now()
      const result = await compressSession(store, dataset.id)
      compressSeconds = Math.min(compressSeconds, (performance.now() - started) / 1000)
      compressedSize = result.compressedBytes
      log(`compress round ${round}: ${result.frames} frames, ${result.ratio.toFixed(2)}x`)
      await store.close()
      rmSync(root, { recursive: true, force: true })
    }
    results.push({
      name: `compress capability ${(plainBytes / MB).toFixed(0)} MB session (scan + 4 MiB frames level 6 + verify + publish)`,
      value: plainBytes / MB / compressSeconds,
      unit: 'MB/s',
      floor: { name: 'zstd -3 -c file (CLI, native, no checks; median of 3)', value: plainBytes / MB / cli.seconds },
      ratio: cli.seconds / compressSeconds,
    })
    results.push(sizeFigure('compress capability (4 MiB frames, level 6)', compressedSize))

    // 2 and 3. live sessions (8 MB): one frame per flush; then a reseal. Each against zstd -3 of its own plain content.
    const liveFigure = (name: string, livePlain: Buffer, compressed: number): BenchResult => {
      const whole = spawnSync('zstd', ['-3', '-q', '-c'], { input: livePlain, maxBuffer: 4 * 1024 * MB })
        .stdout.length
      const value = livePlain.length / compressed
      const floorValue = livePlain.length / whole
      return {
        name: `zstd size: ${name}`,
        value,
        unit: 'x (plain/compressed)',
        floor: {
          name: `zstd -3 of the same plain file (${(livePlain.length / MB).toFixed(2)} MB)`,
          value: floorValue,
        },
        ratio: value / floorValue,
        target: '>= 0.8',
        met: value / floorValue >= 0.8,
      }
    }
    const targetBytes = 8 * MB
    let zstdLive100 = 0
    for (const flushEvery of [1, 10, 100]) {
      const root = join(scratch, `live${flushEvery}`)
      const live = await writeLive(root, { id: 'live', encoding: 'zstd', flushEvery, targetBytes })
      if (flushEvery === 100) zstdLive100 = live.seconds
      const livePlain = spawnSync('zstd', ['-d', '-q', '-c', live.file], { maxBuffer: 4 * 1024 * MB }).stdout
      results.push(
        liveFigure(
          `live .zstd session, one frame per flush of ${flushEvery} event${flushEvery === 1 ? '' : 's'} (level 3)`,
          livePlain,
          statSync(live.file).size,
        ),
      )
      if (flushEvery === 10) {
        const store = createJsonlStore({ root, checkpoint: { enabled: false } })
        const resealed = await compressSession(store, 'live')
        await store.close()
        results.push(
          liveFigure(
            'the same (flush every 10) after a reseal (compress again)',
            livePlain,
            resealed.compressedBytes,
          ),
        )
      }
      rmSync(root, { recursive: true, force: true })
    }
    const plainLive = await writeLive(join(scratch, 'plain100'), {
      id: 'live',
      encoding: 'plain',
      flushEvery: 100,
      targetBytes,
    })
    const livePlainBytes = readFileSync(plainLive.file).length
    results.push({
      name: `live appends to a .zstd session, ${(livePlainBytes / MB).toFixed(0)} MB, flush every 100 events (append + compress + write + fdatasync)`,
      value: livePlainBytes / MB / zstdLive100,
      unit: 'MB/s',
      floor: { name: 'the same appends to a plain session', value: livePlainBytes / MB / plainLive.seconds },
      ratio: plainLive.seconds / zstdLive100,
    })
    return results
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}
