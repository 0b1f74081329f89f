/**
 * A chaos worker: ONE child process that runs the tool-heavy sessions it is given, one after
 * the other, through an agent-ledger adapter (or a framework's own storage, for the baselines),
 * with the scripted model of `plan.ts`. A session it finds unfinished it resumes; a lease whose
 * holder process is gone it takes over. At its fault (if any) it prints `FAULT` and waits there
 * for the driver's signal.
 *
 * Run by the driver (`driver.ts`) through tooling/launch.mjs with one argument, its JSON
 * `WorkerConfig` (`worker-kit.ts`, which also holds the tool body and the fault points). It
 * speaks one line per fact on stdout: `OPENED id`, `ACK id seq`, `RESUME id ms events`,
 * `FAULT point id`, `FENCED id`, `FINISHED id`, `ERROR id text`, then `EXIT`.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import type { SessionStore } from '@agent-ledger/session-store'
import type { AgentInputItem, Model, ModelRequest, ModelResponse, Session } from '@openai/agents-core'
import type { ModelMessage, ToolSet } from 'ai'
import type { MockLanguageModelV3 } from 'ai/test'

import { DONE_TEXT, nextStep } from './plan.ts'
import type { ToolName } from './plan.ts'
import {
  atFault,
  beginResume,
  config,
  faultHere,
  modelRequestReady,
  openStore,
  owner,
  respond,
  runSessions,
  runTool,
  say,
  timedOpen,
} from './worker-kit.ts'

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
const { z } = await import('zod')

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

const store = config.subject.kind === 'ledger' ? await openStore() : null
await runSessions(store, async (id) => {
  const { subject } = config
  if (subject.kind === 'ledger' && subject.adapter === 'ai-sdk') await ledgerAiSdk(store!, id)
  else if (subject.kind === 'ledger') await ledgerAgents(store!, id)
  else if (subject.baseline === 'ai-sdk-recipe') await recipeAiSdk(id)
  else if (subject.baseline === 'agents-file') await baselineAgents(id, new FileSession(config.target, id))
  else await baselineAgents(id, new agents!.core.MemorySession())
})
