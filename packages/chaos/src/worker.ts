/**
 * A chaos worker: ONE child process that runs the tool-heavy sessions it is given, one after
 * the other, through an agent-ledger adapter (or a framework's own storage, for the baselines),
 * with the scripted model of `plan.ts`. A session it finds unfinished it resumes; a lease whose
 * holder process is gone it takes over. At its fault (if any) it prints `FAULT` and waits there
 * for the driver's signal.
 *
 * Run by the driver (`driver.ts`) as `node --import tsx worker.ts <json WorkerConfig>`. It
 * speaks one line per fact on stdout: `OPENED id`, `ACK id seq`, `RESUME id ms events`,
 * `FAULT point id`, `FENCED id`, `FINISHED id`, `ERROR id text`, then `EXIT`.
 */
import {
  appendFileSync,
  closeSync,
  existsSync,
  fsyncSync,
  openSync,
  readFileSync,
  writeFileSync,
} from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'

import type { SessionStore } from '@agent-ledger/session-store'
import type { FsOps } from '@agent-ledger/session-store-jsonl'
import type { AgentInputItem, Model, ModelRequest, ModelResponse, Session } from '@openai/agents-core'
import type { ModelMessage, ToolSet } from 'ai'
import type { MockLanguageModelV3 } from 'ai/test'

import { openJournal } from './journal.ts'
import { DONE_TEXT, nextStep, sessionPlan } from './plan.ts'
import type { Fault, FaultPoint, Subject, ToolName } from './plan.ts'

/** What the driver tells a worker. */
export interface WorkerConfig {
  readonly subject: Subject
  /** A JSONL root, a `postgres://` URL, or the baseline's directory. */
  readonly target: string
  readonly journalDir: string
  readonly effectsDir: string
  /** The worker's name: its journal file's. */
  readonly name: string
  readonly seed: number
  readonly sessions: readonly string[]
  /** Sessions an earlier worker opened: their open here is a resume (latency measured). */
  readonly touched: readonly string[]
  readonly leaseMs: number
  readonly fault: Fault | null
  /** Take live leases over at once (the driver's takeover fault). */
  readonly takeover: boolean
  /** The file whose existence ends a stopped fault's wait. */
  readonly releaseFile: string
}

const config = JSON.parse(process.argv[2]!) as WorkerConfig
const owner = `chaos:${hostname()}:${process.pid}`
const say = (line: string): void => void process.stdout.write(`${line}\n`)
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
const journal = openJournal(config.journalDir, config.name)

// Each subject loads only its framework and store: a worker's start is most of its cost.
const usesAiSdk =
  config.subject.kind === 'ledger'
    ? config.subject.adapter === 'ai-sdk'
    : config.subject.baseline === 'ai-sdk-recipe'
const aiSdk = usesAiSdk
  ? { ai: await import('ai'), aiTest: await import('ai/test'), adapter: await import('@agent-ledger/ai-sdk') }
  : null
const agents = usesAiSdk
  ? null
  : { core: await import('@openai/agents-core'), adapter: await import('@agent-ledger/openai-agents') }
agents?.core.setTracingDisabled(true)
const { SessionStoreError } = await import('@agent-ledger/session-store')
const { z } = await import('zod')

let fired = false
/** The fault armed for the next JSONL log write (the `flush` point). */
let flushArmed = false

/** Whether this worker's fault is here; marks it fired. */
function faultHere(point: FaultPoint, session: string, step: number): boolean {
  const fault = config.fault
  if (fired || fault === null || fault.point !== point || fault.session !== session || fault.step !== step)
    return false
  fired = true
  return true
}

/** Announces the fault and waits: for ever (the driver kills), or until released (a stop). */
async function atFault(point: FaultPoint, session: string): Promise<void> {
  say(`FAULT ${point} ${session}`)
  if (config.fault!.kind === 'kill') await new Promise(() => setInterval(() => undefined, 1000))
  while (!existsSync(config.releaseFile)) await sleep(10)
}

/** A tool's real side effect: an fsynced append of the call id to the session's effects file. */
function sideEffect(session: string, callId: string, tool: ToolName): void {
  const fd = openSync(join(config.effectsDir, `${session}.log`), 'a')
  try {
    appendFileSync(fd, `${tool} ${callId}\n`)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/** The body every tool runs: journal `started`, the side effect, journal `finished`, with the fault points. */
async function runTool(session: string, callId: string, tool: ToolName): Promise<string> {
  const step = nextStep(session, [callId]) - 1
  if (faultHere('before-tool', session, step)) await atFault('before-tool', session)
  journal.record({ callId, phase: 'started', worker: config.name })
  if (faultHere('in-tool', session, step)) await atFault('in-tool', session)
  sideEffect(session, callId, tool)
  journal.record({ callId, phase: 'finished', worker: config.name })
  if (faultHere('after-tool', session, step)) await atFault('after-tool', session)
  if (faultHere('flush', session, step)) await flushFault(session)
  return `${tool} done for ${callId}`
}

/** The `flush` point: on JSONL the next log write stops halfway; elsewhere the save that follows races a kill. */
async function flushFault(session: string): Promise<void> {
  if (config.subject.kind === 'ledger' && config.subject.store === 'jsonl') flushArmed = true
  else if (config.subject.kind === 'ledger')
    say(`FAULT flush ${session}`) // PostgreSQL: the kill races the append
  else await atFault('flush', session) // baselines: the save after this step is held (the process dies before it)
}

/** The real file system, with the `flush` fault inside the write of a session log. */
const faultyFs = (nodeFsOps: FsOps): FsOps => ({
  ...nodeFsOps,
  open: async (path, flags, mode) => {
    const handle = await nodeFsOps.open(path, flags, mode)
    if (!path.endsWith('.jsonl')) return handle
    // nodeFsOps' handles are plain objects of closures: spreading one keeps every operation.
    return {
      ...handle,
      write: async (buffer, position) => {
        if (!flushArmed || buffer.length < 2) return handle.write(buffer, position)
        flushArmed = false
        if (config.fault!.kind !== 'kill') {
          // A stop lands between the store's checks and its one write() (a write() is not split).
          await atFault('flush', path)
          return handle.write(buffer, position)
        }
        // A kill lands halfway: the bytes of a torn tail, never fsynced.
        const half = Math.floor(buffer.length / 2)
        await handle.write(buffer.subarray(0, half), position)
        return atFault('flush', path)
      },
    }
  },
})

/** The call ids of the plan step a model asks for next, or the final answer. */
function respond(session: string, callIds: Iterable<string>): { id: string; tool: ToolName }[] | null {
  const plan = sessionPlan(config.seed, session)
  const step = nextStep(session, callIds)
  return step < plan.length ? [...plan[step]!.calls] : null
}

/** The first `code` on an error or its causes, or `-`. */
function codeOf(error: unknown): string {
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 8; depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string') return code
    current = (current as { cause?: unknown }).cause
  }
  return '-'
}

/** Whether the process named by a lease owner (`chaos:<host>:<pid>`) is gone from this host. */
function holderGone(holder: unknown): boolean {
  const match = /^chaos:(.*):(\d+)$/.exec(String(holder))
  if (match === null || match[1] !== hostname()) return false
  try {
    process.kill(Number(match[2]), 0)
    return false
  } catch {
    return true
  }
}

/**
 * Opens a session through an adapter: a lease whose holder is gone is taken over, a live one
 * is waited out until it expires (a stopped worker's), unless the driver said take over.
 * Returns when the successful attempt started (`performance.now()`: a wait for a lease is not
 * part of a resume).
 */
async function openLeased<T>(
  open: (takeover: boolean) => Promise<T>,
): Promise<{ opened: T; started: number }> {
  const timed = async (takeover: boolean): Promise<{ opened: T; started: number }> => {
    const started = performance.now()
    return { opened: await open(takeover), started }
  }
  for (let attempt = 0; ; attempt++) {
    try {
      return await timed(config.takeover)
    } catch (error) {
      if (!SessionStoreError.is(error, 'SESSION_LOCKED') || attempt > 100) throw error
      const { holder, expiresAt } = error.details as { holder: unknown; expiresAt: string }
      if (holderGone(holder)) return await timed(true)
      await sleep(Math.min(2000, Math.max(10, Date.parse(expiresAt) - Date.now() + 10)))
    }
  }
}

/** A resume being timed: from its open (the successful attempt) to its first model request. */
let resuming: { readonly session: string; readonly started: number; readonly events: number } | null = null

/** Starts timing a resume of `session` (one an earlier worker had opened) at `started`. */
function beginResume(session: string, started: number, events: number): void {
  resuming = config.touched.includes(session) ? { session, started, events } : null
}

/** The model was asked: a pending resume's time, open to first request ready, is reported. */
function modelRequestReady(session: string): void {
  if (resuming?.session !== session) return
  say(`RESUME ${session} ${(performance.now() - resuming.started).toFixed(3)} ${resuming.events}`)
  resuming = null
}

/** Opens a session and reports it; a resume starts being timed. */
async function timedOpen<T extends { writer: { durableSeq: number } }>(
  session: string,
  open: (takeover: boolean) => Promise<T>,
): Promise<T> {
  const { opened, started } = await openLeased(open)
  say(`OPENED ${session}`)
  beginResume(session, started, opened.writer.durableSeq + 1)
  return opened
}

function lastIsDone(messages: readonly { role: string; content?: unknown }[]): boolean {
  const last = messages.at(-1)
  return last?.role === 'assistant' && last.content === DONE_TEXT
}

/** The AI SDK's scripted model: step k's calls, or the final answer, from the prompt's call ids. */
function aiSdkModel(session: string, onCall: () => void): MockLanguageModelV3 {
  let calls = 0
  return new aiSdk!.aiTest.MockLanguageModelV3({
    doGenerate: async (options) => {
      modelRequestReady(session)
      onCall()
      const ids: string[] = []
      for (const message of options.prompt)
        if (message.role === 'assistant')
          for (const part of message.content) if (part.type === 'tool-call') ids.push(part.toolCallId)
      const step = nextStep(session, ids)
      if (faultHere('model', session, step)) await atFault('model', session)
      calls += 1
      const usage = {
        inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: 5, text: 5, reasoning: undefined },
      }
      const next = respond(session, ids)
      if (next === null || calls > 12)
        return {
          content: [{ type: 'text', text: DONE_TEXT }],
          finishReason: { unified: 'stop', raw: 'stop' },
          usage,
          warnings: [],
        }
      return {
        content: next.map((call) => ({
          type: 'tool-call' as const,
          toolCallId: call.id,
          toolName: call.tool,
          input: JSON.stringify({ ref: call.id }),
        })),
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage,
        warnings: [],
      }
    },
  })
}

function aiSdkTools(session: string): ToolSet {
  const make = (name: ToolName) =>
    aiSdk!.ai.tool({
      description: `Does ${name}`,
      inputSchema: z.object({ ref: z.string() }),
      execute: ({ ref }) => runTool(session, ref, name),
    })
  return { write_record: make('write_record'), send_notice: make('send_notice') }
}

/** The OpenAI Agents scripted model: the same plan, read from the request's items. */
function agentsModel(session: string, onCall: () => void): Model {
  const answer = async (request: ModelRequest): Promise<ModelResponse> => {
    modelRequestReady(session)
    onCall()
    const items = typeof request.input === 'string' ? [] : request.input
    const ids = items.flatMap((item) =>
      item.type === 'function_call' ? [(item as { callId: string }).callId] : [],
    )
    const step = nextStep(session, ids)
    if (faultHere('model', session, step)) await atFault('model', session)
    const next = respond(session, ids)
    const usage = new agents!.core.Usage({ requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 })
    if (next === null)
      return {
        usage,
        output: [
          {
            type: 'message',
            role: 'assistant',
            status: 'completed',
            content: [{ type: 'output_text', text: DONE_TEXT }],
          },
        ],
      }
    return {
      usage,
      output: next.map((call) => ({
        type: 'function_call' as const,
        callId: call.id,
        name: call.tool,
        arguments: JSON.stringify({ ref: call.id }),
        status: 'completed' as const,
      })),
    }
  }
  return {
    getResponse: answer,
    getStreamedResponse: () => {
      throw new Error('the chaos worker does not stream')
    },
  }
}

function agentsTools(session: string) {
  const make = (name: ToolName) =>
    agents!.core.tool({
      name,
      description: `Does ${name}`,
      parameters: z.object({ ref: z.string() }),
      execute: ({ ref }) => runTool(session, ref, name),
    })
  return [make('write_record'), make('send_notice')]
}

/** One session through `@agent-ledger/ai-sdk`. */
async function ledgerAiSdk(store: SessionStore, id: string): Promise<void> {
  const session = await timedOpen(id, (takeover) =>
    aiSdk!.adapter.openAiSdkSession(store, id, {
      owner,
      leaseMs: config.leaseMs,
      takeover,
      system: 'You run a plan.',
    }),
  )
  try {
    if (lastIsDone(session.writer.deriveMessages())) return
    const fresh = !session.writer.deriveMessages().some((message) => message.role === 'user')
    session.beginTurn(fresh ? `Run the plan of ${id}.` : 'Continue.')
    await aiSdk!.ai.generateText({
      model: session.wrapModel(aiSdkModel(id, () => say(`ACK ${id} ${session.writer.durableSeq}`))),
      ...session.prompt(),
      tools: session.wrapTools(aiSdkTools(id)),
      stopWhen: aiSdk!.ai.stepCountIs(14),
    })
    await session.endTurn()
    say(`ACK ${id} ${session.writer.durableSeq}`)
  } finally {
    await session.close().catch(() => undefined)
  }
}

/** One session through `@agent-ledger/openai-agents`. */
async function ledgerAgents(store: SessionStore, id: string): Promise<void> {
  const session = await timedOpen(id, (takeover) =>
    agents!.adapter.openAgentsSession(store, id, { owner, leaseMs: config.leaseMs, takeover }),
  )
  try {
    if (lastIsDone(session.writer.deriveMessages())) return
    const fresh = !session.writer.deriveMessages().some((message) => message.role === 'user')
    const agent = new agents!.core.Agent({
      name: 'planner',
      instructions: 'You run a plan.',
      model: session.wrapModel(agentsModel(id, () => say(`ACK ${id} ${session.writer.durableSeq}`))),
      tools: session.wrapTools(agentsTools(id)),
    })
    await agents!.core.run(agent, fresh ? `Run the plan of ${id}.` : 'Continue.', { session, maxTurns: 14 })
    await session.writer.flush()
    say(`ACK ${id} ${session.writer.durableSeq}`)
  } finally {
    await session.close().catch(() => undefined)
  }
}

/** The AI SDK persistence recipe: load the chat's messages, run, save the array at the end of the response. */
async function recipeAiSdk(id: string): Promise<void> {
  const file = join(config.target, `${id}.json`)
  const started = performance.now()
  const messages = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as ModelMessage[]) : []
  say(`OPENED ${id}`)
  beginResume(id, started, messages.length)
  const last = messages.at(-1)
  if (
    last?.role === 'assistant' &&
    Array.isArray(last.content) &&
    last.content.some((part) => part.type === 'text' && part.text === DONE_TEXT)
  )
    return
  messages.push({ role: 'user', content: messages.length === 0 ? `Run the plan of ${id}.` : 'Continue.' })
  const result = await aiSdk!.ai.generateText({
    model: aiSdkModel(id, () => undefined),
    messages,
    tools: aiSdkTools(id),
    stopWhen: aiSdk!.ai.stepCountIs(14),
  })
  const saved = [...messages, ...result.response.messages]
  writeFileSync(file, JSON.stringify(saved))
  say(`ACK ${id} ${saved.length - 1}`)
}

/** The JSON-file session of the OpenAI Agents examples: the history as one JSON array per session. */
class FileSession implements Session {
  readonly #file: string
  readonly #id: string

  constructor(dir: string, id: string) {
    this.#file = join(dir, `${id}.json`)
    this.#id = id
  }

  getSessionId(): Promise<string> {
    return Promise.resolve(this.#id)
  }

  getItems(limit?: number): Promise<AgentInputItem[]> {
    const items = existsSync(this.#file)
      ? (JSON.parse(readFileSync(this.#file, 'utf8')) as AgentInputItem[])
      : []
    return Promise.resolve(limit === undefined ? items : items.slice(-limit))
  }

  async addItems(items: AgentInputItem[]): Promise<void> {
    const all = [...(await this.getItems()), ...items]
    writeFileSync(this.#file, JSON.stringify(all))
    say(`ACK ${this.#id} ${all.length - 1}`)
  }

  async popItem(): Promise<AgentInputItem | undefined> {
    const items = await this.getItems()
    const popped = items.pop()
    writeFileSync(this.#file, JSON.stringify(items))
    return popped
  }

  clearSession(): Promise<void> {
    writeFileSync(this.#file, '[]')
    return Promise.resolve()
  }
}

/** A baseline run through the OpenAI Agents runner, with its in-memory or JSON-file session. */
async function baselineAgents(id: string, session: Session): Promise<void> {
  const started = performance.now()
  const items = await session.getItems()
  say(`OPENED ${id}`)
  beginResume(id, started, items.length)
  const last = items.at(-1) as { type?: string; role?: string; content?: { text?: string }[] } | undefined
  if (last?.role === 'assistant' && last.content?.[0]?.text === DONE_TEXT) return
  const agent = new agents!.core.Agent({
    name: 'planner',
    instructions: 'You run a plan.',
    model: agentsModel(id, () => undefined),
    tools: agentsTools(id),
  })
  await agents!.core.run(agent, items.length === 0 ? `Run the plan of ${id}.` : 'Continue.', {
    session,
    maxTurns: 14,
  })
  // The in-memory session lives only in this process: what it held at the end is dumped for the checker.
  if (session instanceof agents!.core.MemorySession)
    writeFileSync(join(config.target, `${id}.json`), JSON.stringify(await session.getItems()))
}

async function openStore(): Promise<SessionStore & { close(): Promise<void> }> {
  if (config.subject.kind === 'ledger' && config.subject.store === 'postgres') {
    const { createSessionStore } = await import('@agent-ledger/session-store')
    const { openPostgresBackend } = await import('@agent-ledger/session-store-postgres')
    return createSessionStore({
      backend: await openPostgresBackend({ connectionString: config.target }),
      clock: () => new Date().toISOString(),
      owner,
      leaseMs: config.leaseMs,
    })
  }
  const { createJsonlStore, nodeFsOps } = await import('@agent-ledger/session-store-jsonl')
  return createJsonlStore({ root: config.target, owner, leaseMs: config.leaseMs, fs: faultyFs(nodeFsOps) })
}

const store = config.subject.kind === 'ledger' ? await openStore() : null
for (const id of config.sessions) {
  try {
    const { subject } = config
    if (subject.kind === 'ledger' && subject.adapter === 'ai-sdk') await ledgerAiSdk(store!, id)
    else if (subject.kind === 'ledger') await ledgerAgents(store!, id)
    else if (subject.baseline === 'ai-sdk-recipe') await recipeAiSdk(id)
    else if (subject.baseline === 'agents-file') await baselineAgents(id, new FileSession(config.target, id))
    else await baselineAgents(id, new agents!.core.MemorySession())
    say(`FINISHED ${id}`)
  } catch (error) {
    if (codeOf(error) === 'FENCED') say(`FENCED ${id}`)
    else say(`ERROR ${id} ${codeOf(error)} ${String(error).replaceAll('\n', ' ').slice(0, 300)}`)
  }
}
await store?.close().catch(() => undefined)
journal.close()
say('EXIT')
process.exit(0)
