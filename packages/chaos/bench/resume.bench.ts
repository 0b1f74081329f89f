/**
 * Resume of a 1 GB session (issue 28's target: resume p99 <= 50 ms for a 1 GB session, with
 * checkpoints), through the API a user calls: `openAiSdkSession(store, id)` on
 * `createJsonlStore`, then `beginTurn('Continue.')` and `prompt()`: the time from the open of
 * the unfinished session to its first model request being ready, as the chaos worker measures it
 * (RESUME). Beside it, in the same run, the floor: `core.checkpoint` read and `JSON.parse`d plus
 * the log's tail after its seek point (the JSONL bench's `checkpointFloor`).
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
    { kind: 'chaos-resume', megabytes: MEGABYTES, bytes: source.bytes },
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

export async function run(): Promise<BenchResult[]> {
  const { root, id, log: logName } = await resumeDataset()
  const times: number[] = []
  const floors: number[] = []
  let checkpointUsed = true
  for (let sample = 0; sample < SAMPLES; sample++) {
    floors.push(await checkpointFloor(join(root, id, 'core.checkpoint'), join(root, id, logName)))
    const store = createJsonlStore({ root })
    const started = performance.now()
    const session = await openAiSdkSession(store, id, { create: false })
    session.beginTurn('Continue.')
    const request = session.prompt()
    times.push(performance.now() - started)
    if (request.messages.length === 0) throw new Error('an empty first request')
    checkpointUsed &&= session.writer.recovery.checkpoint.used
    await session.close()
    await store.close()
  }
  if (!checkpointUsed) throw new Error('a resume did not start from the checkpoint')
  const p99 = percentile(times, 99)
  const floor = median(floors)
  log(
    `p50 ${percentile(times, 50).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, floor median ${floor.toFixed(1)} ms`,
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
  ]
}
