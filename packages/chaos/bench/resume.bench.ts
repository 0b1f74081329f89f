/**
 * Resume of a 1 GB session (issue 28's target: resume p99 <= 50 ms for a 1 GB session, with
 * checkpoints), through the API a user calls, on `createJsonlStore`, for each adapter
 * (`resumeOnce`): `openAiSdkSession(store, id)` then `beginTurn('Continue.')` and `prompt()`
 * (`@agent-ledger/ai-sdk`); `openAgentsSession(store, id)` then the SDK's `run(agent,
 * 'Continue.', { session })` with the model wrapped by `session.wrapModel` (`@agent-ledger/
 * openai-agents`). Each is the time from the open of the unfinished session to its first model
 * request being ready, as the chaos worker measures it (RESUME: for OpenAI Agents, until the
 * runner calls the model). Beside them, in the same run, the floor: `core.checkpoint` read and
 * `JSON.parse`d plus the log's tail after its seek point (the JSONL bench's `checkpointFloor`). A
 * further row puts the AI SDK resume beside `store.openReader(id)` on a new store (the core's
 * read open from the checkpoint): what the adapter and the write open add to the core's own
 * resume. Context rows split the OpenAI Agents p50 into its three steps: the open (beside the AI
 * SDK's whole resume, the same write open), the SDK's runner up to the wrapped model (beside the
 * SDK's own run) and the wrapper's durable log of the turn's input.
 *
 * The session (~1 GB plain JSONL, the JSONL benches' agent session: tool results, compactions
 * every ~400,000 model-visible characters) is built once and cached in os.tmpdir(), with a
 * checkpoint written by a writer with checkpoints at every flush. Each sample appends each
 * turn's user message (the cache grows by a few events a sample; the OpenAI Agents run also
 * logs its request and the answer). `--large` is the same session. The Claude Agent SDK
 * store's resume is `resume-claude.bench.ts`. Run alone with `pnpm bench --only resume.bench`.
 */
import { cpSync, existsSync, mkdirSync } from 'node:fs'
import { basename, join } from 'node:path'

import { openAiSdkSession } from '@agent-ledger/ai-sdk'
import { openAgentsSession } from '@agent-ledger/openai-agents'
import { SNAPSHOT_VERSION } from '@agent-ledger/session-projection'
import type { SessionStore } from '@agent-ledger/session-store'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { Agent, MemorySession, run as runAgent, setTracingDisabled, Usage } from '@openai/agents-core'
import type { AgentInputItem, Model } from '@openai/agents-core'

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

/** The adapters a resume row is measured through (`resumeOnce`). */
export const ADAPTERS = ['ai-sdk', 'openai-agents'] as const
export type Adapter = (typeof ADAPTERS)[number]

setTracingDisabled(true) // the scripted model runs offline

/** A resume's time to the first model request, and whether the writer started from the checkpoint. */
export interface Resumed {
  readonly ms: number
  readonly checkpointUsed: boolean
  /** OpenAI Agents only: the SDK's own runner over a `MemorySession` holding the same history, to its first model call. */
  readonly sdkMs?: number
  /** OpenAI Agents only: where `ms` went (they add up to it). */
  readonly phases?: AgentsPhases
}

/** An OpenAI Agents resume in three steps, in ms. */
export interface AgentsPhases {
  /** `openAgentsSession`: the core's write open from the checkpoint, and the adapter's maps. */
  readonly open: number
  /** The SDK's runner, from `run()` to its call of the wrapped model (its `getItems` included). */
  readonly runner: number
  /** The wrapper, from that call to the inner model's: the turn's input logged and flushed. */
  readonly logged: number
}

/** `openAiSdkSession`, `beginTurn`, `prompt()`: the chaos worker's `ledgerAiSdk` up to its first model call. */
async function aiSdkResume(store: SessionStore, id: string): Promise<Resumed> {
  const started = performance.now()
  const session = await openAiSdkSession(store, id, { create: false })
  session.beginTurn('Continue.')
  const request = session.prompt()
  const ms = performance.now() - started
  if (request.messages.length === 0) throw new Error('an empty first request')
  const checkpointUsed = session.writer.recovery.checkpoint.used
  await session.close()
  return { ms, checkpointUsed }
}

/** A model that answers at once, reporting the size of each request's input. */
function scriptedModel(onRequest: (items: number) => void): Model {
  return {
    getResponse: (request) => {
      onRequest(typeof request.input === 'string' ? 1 : request.input.length)
      return Promise.resolve({
          usage: new Usage(),
          output: [
            {
              type: 'message',
              role: 'assistant',
              status: 'completed',
              content: [{ type: 'output_text', text: 'Resumed.' }],
            },
          ],
        })
      },
    getStreamedResponse: () => {
      throw new Error('the resume bench does not stream')
    },
  }
}

/** The SDK alone: `run` over a `MemorySession` holding `history`, to its first model call (ms). */
async function sdkOwnRun(history: readonly AgentInputItem[]): Promise<number> {
  const session = new MemorySession({ initialItems: [...history] })
  const started = performance.now()
  let ms: number | undefined
  const model = scriptedModel(() => (ms ??= performance.now() - started))
  await runAgent(new Agent({ name: 'resume', instructions: 'You run a plan.', model }), 'Continue.', {
    session,
    maxTurns: 1,
  })
  return ms!
}

/**
 * `openAgentsSession`, then the SDK's runner with `session.wrapModel` around a scripted model:
 * the chaos worker's `ledgerAgents` up to its first model call (the runner's `getItems`, the
 * wrapper's logged input). The model answers at once; the runner's end of turn is not timed.
 */
async function agentsResume(store: SessionStore, id: string): Promise<Resumed> {
  const started = performance.now()
  const session = await openAgentsSession(store, id, { create: false })
  const opened = performance.now()
  try {
    let ms: number | undefined
    let entered: number | undefined
    let items = 0
    const model = scriptedModel((count) => {
      ms ??= performance.now() - started
      items = count
    })
    const wrapped = session.wrapModel(model)
    const timed: Model = {
      getResponse: (request) => {
        entered ??= performance.now()
        return wrapped.getResponse(request)
      },
      getStreamedResponse: (request) => wrapped.getStreamedResponse(request),
    }
    const agent = new Agent({ name: 'resume', instructions: 'You run a plan.', model: timed })
    await runAgent(agent, 'Continue.', { session, maxTurns: 1 })
    if (ms === undefined || entered === undefined || items <= 1)
      throw new Error(`a first request of ${items} items: the history is missing`)
    const phases = { open: opened - started, runner: entered - opened, logged: ms - (entered - started) }
    const sdkMs = await sdkOwnRun(await session.getItems())
    return { ms, checkpointUsed: session.writer.recovery.checkpoint.used, sdkMs, phases }
  } finally {
    await session.close()
  }
}

/**
 * One resume as the chaos worker measures it, through `adapter`; then the session and the
 * store are closed (not timed).
 *
 * @returns The time to the first model request and whether the writer started from the checkpoint.
 */
export async function resumeOnce(store: SessionStore, id: string, adapter: Adapter): Promise<Resumed> {
  try {
    return adapter === 'ai-sdk' ? await aiSdkResume(store, id) : await agentsResume(store, id)
  } finally {
    await store.close()
  }
}

/** Each adapter's resume times (one resume per adapter per sample, interleaved with the floors). */
export type ResumeTimes = Record<Adapter, number[]> & {
  /** The SDK's own runner over a `MemorySession` with the same history (beside each OpenAI Agents resume). */
  readonly sdk: number[]
  /** The steps of each OpenAI Agents resume. */
  readonly phases: { readonly [K in keyof AgentsPhases]: number[] }
}

/** Empty times for every adapter. */
export function emptyTimes(): ResumeTimes {
  return { 'ai-sdk': [], 'openai-agents': [], sdk: [], phases: { open: [], runner: [], logged: [] } }
}

/** Records one resume in `times`. */
export function record(times: ResumeTimes, adapter: Adapter, resumed: Resumed): void {
  times[adapter].push(resumed.ms)
  if (resumed.sdkMs !== undefined) times.sdk.push(resumed.sdkMs)
  const phases = resumed.phases
  if (phases === undefined) return
  for (const step of Object.keys(phases) as (keyof AgentsPhases)[]) times.phases[step].push(phases[step])
}

/** One row per adapter: its resume p99 beside the floor median, against the 50 ms target. */
export function resumeRows(
  times: ResumeTimes,
  where: string,
  floor: { readonly name: string; readonly value: number },
): BenchResult[] {
  const rows = ADAPTERS.map((adapter): BenchResult => {
    const p99 = percentile(times[adapter], 99)
    log(
      `${where}, ${adapter}: p50 ${percentile(times[adapter], 50).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, floor median ${floor.value.toFixed(1)} ms`,
    )
    return {
      name: `resume p99: open to first model request, ${MEGABYTES} MB session, checkpoint (${where}, ${adapter})`,
      value: p99,
      unit: 'ms',
      floor,
      ratio: p99 / floor.value,
      target: `p99 <= ${TARGET_MS} ms`,
      met: p99 <= TARGET_MS,
    }
  })
  const agentsP99 = percentile(times['openai-agents'], 99)
  const sdkP99 = percentile(times.sdk, 99)
  log(`${where}, the OpenAI Agents SDK alone over a MemorySession: p50 ${percentile(times.sdk, 50).toFixed(1)} ms, p99 ${sdkP99.toFixed(1)} ms`)
  rows.push({
    name: `resume p99 through openai-agents beside the SDK's own run over a MemorySession of the same history, ${MEGABYTES} MB session (${where})`,
    value: agentsP99,
    unit: 'ms',
    floor: { name: "the SDK's run() to its first model call, MemorySession, p99", value: sdkP99 },
    ratio: agentsP99 / sdkP99,
    target: `p99 - SDK p99 <= ${TARGET_MS} ms`,
    met: agentsP99 - sdkP99 <= TARGET_MS,
  })
  // Where an OpenAI Agents resume goes (context rows, p50s): its open beside the AI SDK's whole
  // resume (the same write open), its runner beside the SDK's own run, and the wrapper's flush.
  const aiSdkP50 = percentile(times['ai-sdk'], 50)
  const sdkP50 = percentile(times.sdk, 50)
  const steps: readonly [keyof AgentsPhases, string, { name: string; value: number } | undefined][] = [
    ['open', 'openAgentsSession (the write open from the checkpoint)', { name: 'the AI SDK resume p50 (its open and first request)', value: aiSdkP50 }],
    ['runner', "the SDK's runner to the wrapped model (its getItems included)", { name: "the SDK's run() over a MemorySession, p50", value: sdkP50 }],
    ['logged', "the wrapper's log of the turn's input, flushed (one durable write)", undefined],
  ]
  for (const [step, what, floor] of steps) {
    const value = percentile(times.phases[step], 50)
    rows.push({
      name: `of which (openai-agents p50, ${where}): ${what}`,
      value,
      unit: 'ms',
      ...(floor === undefined ? {} : { floor, ratio: value / floor.value }),
      target: 'context',
    })
  }
  return rows
}

export async function run(): Promise<BenchResult[]> {
  const { root, id, log: logName } = await resumeDataset()
  const times = emptyTimes()
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
    for (const adapter of ADAPTERS) {
      const resumed = await resumeOnce(createJsonlStore({ root }), id, adapter)
      record(times, adapter, resumed)
      checkpointUsed &&= resumed.checkpointUsed
    }
  }
  if (!checkpointUsed) throw new Error('a resume did not start from the checkpoint')
  const rows = resumeRows(times, 'JSONL plain', {
    name: 'read + JSON.parse core.checkpoint and the tail',
    value: median(floors),
  })
  const p99 = percentile(times['ai-sdk'], 99)
  const readerP99 = percentile(readerTimes, 99)
  log(`openReader p99 ${readerP99.toFixed(1)} ms`)
  return [
    ...rows,
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
