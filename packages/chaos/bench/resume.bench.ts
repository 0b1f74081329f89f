/**
 * Resume of a 1 GB session (issue 28's target: resume p99 <= 50 ms for a 1 GB session, with
 * checkpoints), through the API a user calls: `openAiSdkSession(store, id)` on
 * `createJsonlStore`, then `beginTurn('Continue.')` and `prompt()`: the time from the open of
 * the unfinished session to its first model request being ready, as the chaos worker measures it
 * (RESUME). Beside it, in the same run, the floor: `core.checkpoint` read and `JSON.parse`d plus
 * the log's tail after its seek point (the JSONL bench's `checkpointFloor`). A second row puts the
 * same resume beside `store.openReader(id)` on a new store (the core's read open from the
 * checkpoint): what the adapter and the write open add to the core's own resume.
 *
 * The session (~1 GB plain JSONL, the JSONL benches' agent session: tool results, compactions
 * every ~400,000 model-visible characters) is built once and cached in os.tmpdir(), with a
 * checkpoint written by a writer with checkpoints at every flush. Each sample appends the turn's
 * user message (the cache grows by two events a sample). `--large` is the same session.
 * Run alone with `pnpm bench --only resume.bench`.
 */
import { cpSync, existsSync, mkdirSync } from 'node:fs'
import { basename, join } from 'node:path'

import { openAiSdkSession } from '@agent-ledger/ai-sdk'
import { SNAPSHOT_VERSION } from '@agent-ledger/session-projection'
import type { SessionStore } from '@agent-ledger/session-store'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'

import { cached, ensureDataset } from '../../session-store-jsonl/bench/support/dataset.ts'
import { checkpointFloor } from '../../session-store-jsonl/bench/support/floors.ts'
import { median } from '../../../tooling/bench/support.ts'
import type { BenchResult } from '../../../tooling/bench/types.ts'

const MEGABYTES = 1024
const SAMPLES = 20
export const TARGET_MS = 50
const EAGER = { everyEvents: 1, minIntervalMs: 0, minLogBytes: 0, minGrowthRatio: 0 }
const log = (message: string): void => void process.stderr.write(`resume bench: ${message}\n`)

/** The p-th percentile (nearest rank) of `values`. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

/** The cached 1 GB session with a checkpoint near its head: a copy of the JSONL benches' dataset. */
async function resumeDataset(): Promise<{ root: string; id: string; log: string }> {
  const source = await ensureDataset(MEGABYTES, log)
  const { directory } = await cached(
    // The snapshot version in the key: a checkpoint cached by a build of another layout is
    // ignored by this one (a full replay), so each layout gets its own copy.
    { kind: 'chaos-resume', megabytes: MEGABYTES, bytes: source.bytes, snapshotVersion: SNAPSHOT_VERSION },
    async (building) => {
      const root = join(building, 'root')
      // A copy of the session (the shared dataset stays as it is), then one writer open and
      // close under checkpoints at every flush: the checkpoint covers the whole log.
      mkdirSync(root, { mode: 0o700 })
      cpSync(join(source.root, source.id), join(root, source.id), { recursive: true })
      const store = createJsonlStore({ root, checkpoint: EAGER })
      const opened = await store.openWriter(source.id)
      opened.append({
        type: 'user/message',
        data: { message: { role: 'user', content: 'Checkpoint here.' } },
      })
      await opened.close()
      await store.close()
      return {}
    },
  )
  const root = join(directory, 'root')
  if (!existsSync(join(root, source.id, 'core.checkpoint')))
    throw new Error('the resume dataset has no checkpoint')
  return { root, id: source.id, log: basename(source.file) }
}

/**
 * One resume as the chaos worker measures it: `openAiSdkSession` on `store`, `beginTurn`,
 * `prompt()`; then the session and the store are closed (not timed).
 *
 * @returns The time to the first model request and whether the writer started from the checkpoint.
 */
export async function resumeOnce(store: SessionStore, id: string): Promise<{ ms: number; checkpointUsed: boolean }> {
  const started = performance.now()
  const session = await openAiSdkSession(store, id, { create: false })
  session.beginTurn('Continue.')
  const request = session.prompt()
  const ms = performance.now() - started
  if (request.messages.length === 0) throw new Error('an empty first request')
  const checkpointUsed = session.writer.recovery.checkpoint.used
  await session.close()
  await store.close()
  return { ms, checkpointUsed }
}

export async function run(): Promise<BenchResult[]> {
  const { root, id, log: logName } = await resumeDataset()
  const times: number[] = []
  const floors: number[] = []
  const readerTimes: number[] = []
  let checkpointUsed = true
  for (let sample = 0; sample < SAMPLES; sample++) {
    floors.push(await checkpointFloor(join(root, id, 'core.checkpoint'), join(root, id, logName)))
    const reading = createJsonlStore({ root })
    const readStarted = performance.now()
    const read = await reading.openReader(id)
    readerTimes.push(performance.now() - readStarted)
    checkpointUsed &&= read.checkpoint.used
    await reading.close()
    const resumed = await resumeOnce(createJsonlStore({ root }), id)
    times.push(resumed.ms)
    checkpointUsed &&= resumed.checkpointUsed
  }
  if (!checkpointUsed) throw new Error('a resume did not start from the checkpoint')
  const p99 = percentile(times, 99)
  const floor = median(floors)
  const readerP99 = percentile(readerTimes, 99)
  log(
    `p50 ${percentile(times, 50).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, floor median ${floor.toFixed(1)} ms, openReader p99 ${readerP99.toFixed(1)} ms`,
  )
  return [
    {
      name: `resume p99: open to first model request, ${MEGABYTES} MB session, checkpoint (JSONL plain, ai-sdk)`,
      value: p99,
      unit: 'ms',
      floor: { name: 'read + JSON.parse core.checkpoint and the tail', value: floor },
      ratio: p99 / floor,
      target: `p99 <= ${TARGET_MS} ms`,
      met: p99 <= TARGET_MS,
    },
    {
      name: `resume p99 through openAiSdkSession beside openReader p99, ${MEGABYTES} MB session, checkpoint (JSONL plain)`,
      value: p99,
      unit: 'ms',
      floor: { name: 'store.openReader(id) p99 on a new store (from the checkpoint)', value: readerP99 },
      ratio: p99 / readerP99,
      target: `p99 <= ${TARGET_MS} ms`,
      met: p99 <= TARGET_MS,
    },
  ]
}
