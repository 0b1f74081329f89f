import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import { validateProviderMessages } from '@agent-ledger/loop-repair'
import type { AssistantMessage, LoggedEvent, WireMessage } from '@agent-ledger/session-events'
import { createSessionLog } from '@agent-ledger/session-projection'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { runTurn } from '../src/agent.ts'
import type { AgentLog } from '../src/agent.ts'
import type { ModelRequest, ModelResponse, Provider } from '../src/providers/provider.ts'
import { createScriptedProvider } from '../src/providers/scripted.ts'
import { createWorkspaceTools } from '../src/tools.ts'
import type { WorkspaceTools } from '../src/tools.ts'

let workspace: string
let tools: WorkspaceTools

beforeEach(async () => {
  workspace = await mkdtemp(path.join(os.tmpdir(), 'mini-agent-agent-'))
  await writeFile(path.join(workspace, 'notes.md'), '# Notes\nship it\n')
  tools = await createWorkspaceTools({ workspace })
})

afterEach(async () => {
  await rm(workspace, { recursive: true, force: true })
})

/** An in-memory log that records which seqs were durable (flushed) at each moment. */
function memoryLog() {
  let tick = 0
  const log = createSessionLog({
    clock: { now: () => new Date(Date.UTC(2025, 0, 1, 0, 0, tick++)).toISOString() },
  })
  const trace: string[] = []
  let durableSeq = -1
  const agentLog: AgentLog = {
    append: (input) => {
      const event = log.append(input)
      trace.push(`append ${event.seq} ${event.type}`)
      return event
    },
    flush: () => {
      durableSeq = log.events.length - 1
      trace.push(`flush ${durableSeq}`)
      return Promise.resolve()
    },
    deriveMessages: () => log.deriveMessages(),
  }
  return { log, agentLog, trace, durable: () => durableSeq }
}

function call(id: string, name: string, args: object) {
  return { id, type: 'function' as const, function: { name, arguments: JSON.stringify(args) } }
}

/** A provider that answers from a list and records every request it got. */
function listProvider(answers: (ModelResponse | Error)[]) {
  const requests: (readonly WireMessage[])[] = []
  const provider: Provider = {
    name: 'fake',
    model: 'fake-1',
    complete(request: ModelRequest) {
      requests.push(request.messages)
      const next = answers.shift()
      if (next === undefined) return Promise.reject(new Error('no more answers'))
      return next instanceof Error ? Promise.reject(next) : Promise.resolve(next)
    },
  }
  return { provider, requests }
}

const final = (content: string): ModelResponse => ({
  message: { role: 'assistant', content },
  usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
  finishReason: 'stop',
})
const withCalls = (...calls: ReturnType<typeof call>[]): ModelResponse => ({
  message: { role: 'assistant', content: null, tool_calls: calls } satisfies AssistantMessage,
  finishReason: 'tool_calls',
})

function projectionOf(events: readonly LoggedEvent[]): readonly WireMessage[] {
  return createSessionLog({ clock: { now: () => '' }, events }).deriveMessages()
}

describe('runTurn', () => {
  it('logs the turn in order, pairs each result with its tool/call, and ends completed', async () => {
    const { log, agentLog } = memoryLog()
    const { provider } = listProvider([
      withCalls(call('c1', 'read_file', { path: 'notes.md' })),
      final('done'),
    ])
    const result = await runTurn({ log: agentLog, provider, tools, prompt: 'read it', turn: 1 })
    expect(result).toEqual({ reason: 'completed', answer: 'done', steps: 2 })
    expect(log.events.map((event) => event.type)).toEqual([
      'turn/start',
      'user/message',
      'assistant/message',
      'tool/call',
      'tool/result',
      'assistant/message',
      'turn/end',
    ])
    const [, , , toolCall, toolResult, , turnEnd] = log.events
    expect(toolCall?.data).toEqual({ callId: 'c1', name: 'read_file', arguments: '{"path":"notes.md"}' })
    expect(toolResult?.sourceEventSeqs).toEqual([toolCall?.seq])
    expect(toolResult?.data).toEqual({
      message: { role: 'tool', tool_call_id: 'c1', content: '# Notes\nship it\n' },
    })
    expect(turnEnd?.data).toEqual({ turn: 1, reason: 'completed' })
    expect(log.events[5]?.data).toMatchObject({ usage: { total_tokens: 12 } })
  })

  it('model-visible <=> logged: every request is exactly the projection of the log at that moment', async () => {
    const { log, agentLog, trace } = memoryLog()
    const seen: { messages: readonly WireMessage[]; logLength: number }[] = []
    const inner = createScriptedProvider()
    const provider: Provider = {
      ...inner,
      complete(request) {
        seen.push({ messages: request.messages, logLength: log.events.length })
        return inner.complete(request)
      },
    }
    await runTurn({ log: agentLog, provider, tools, prompt: 'Summarize notes.md', turn: 1 })
    expect(seen).toHaveLength(4)
    for (const { messages, logLength } of seen) {
      expect(messages).toEqual(projectionOf(log.events.slice(0, logLength)))
    }
    expect(validateProviderMessages(log.deriveMessages())).toEqual([])
    expect(trace.at(-1)).toBe(`flush ${log.events.length - 1}`)
  })

  it('flushes the tool/call before the tool runs (durable before the side effect)', async () => {
    const { log, agentLog, durable } = memoryLog()
    const observed: { durable: number; toolCallSeq: number }[] = []
    const spyTools: WorkspaceTools = {
      ...tools,
      run(name, argumentsText, signal) {
        const toolCall = log.events.findLast((event) => event.type === 'tool/call')!
        observed.push({ durable: durable(), toolCallSeq: toolCall.seq })
        return tools.run(name, argumentsText, signal)
      },
    }
    const { provider } = listProvider([
      withCalls(call('a', 'list_dir', {}), call('b', 'read_file', { path: 'notes.md' })),
      final('ok'),
    ])
    await runTurn({ log: agentLog, provider, tools: spyTools, prompt: 'go', turn: 3 })
    expect(observed).toHaveLength(2)
    for (const { durable: durableSeq, toolCallSeq } of observed)
      expect(durableSeq).toBeGreaterThanOrEqual(toolCallSeq)
    expect(log.events[0]?.data).toEqual({ turn: 3 })
  })

  it('Ctrl+C during a tool: aborts it, logs "aborted by the user", answers the calls not started, ends aborted', async () => {
    const { log, agentLog } = memoryLog()
    const controller = new AbortController()
    const { provider, requests } = listProvider([
      withCalls(call('slow', 'run_command', { command: 'sleep 30' }), call('next', 'list_dir', {})),
      final('never asked'),
    ])
    setTimeout(() => controller.abort(), 150)
    const result = await runTurn({
      log: agentLog,
      provider,
      tools,
      prompt: 'go',
      turn: 1,
      signal: controller.signal,
    })
    expect(result.reason).toBe('aborted')
    expect(requests).toHaveLength(1)
    const types = log.events.map((event) => event.type)
    expect(types).toEqual([
      'turn/start',
      'user/message',
      'assistant/message',
      'tool/call',
      'tool/result',
      'tool/result',
      'turn/end',
    ])
    const aborted = log.events[4]!
    expect(aborted.data).toMatchObject({ isError: true, message: { tool_call_id: 'slow' } })
    expect(JSON.stringify(aborted.data)).toContain('aborted by the user')
    expect(log.events[5]?.data).toMatchObject({ isError: true, message: { tool_call_id: 'next' } })
    expect(log.events[5]?.sourceEventSeqs).toEqual([2])
    expect(log.events[6]?.data).toEqual({ turn: 1, reason: 'aborted' })
    expect(validateProviderMessages(log.deriveMessages())).toEqual([])
  })

  it('ends as error when the provider fails, keeping the prompt in the log', async () => {
    const { log, agentLog } = memoryLog()
    const failure = new Error('HTTP 500')
    const { provider } = listProvider([failure])
    const result = await runTurn({ log: agentLog, provider, tools, prompt: 'go', turn: 1 })
    expect(result).toEqual({ reason: 'error', answer: null, steps: 1, error: failure })
    expect(log.events.map((event) => event.type)).toEqual(['turn/start', 'user/message', 'turn/end'])
  })

  it('ends as max-tokens after maxSteps requests, and when a reply with tool calls was cut off', async () => {
    const looping = memoryLog()
    const { provider } = listProvider([
      withCalls(call('1', 'list_dir', {})),
      withCalls(call('2', 'list_dir', {})),
    ])
    const result = await runTurn({
      log: looping.agentLog,
      provider,
      tools,
      prompt: 'go',
      turn: 1,
      maxSteps: 2,
    })
    expect(result.reason).toBe('max-tokens')
    expect(validateProviderMessages(looping.log.deriveMessages())).toEqual([])

    const cut = memoryLog()
    const truncated: ModelResponse = {
      ...withCalls(call('x', 'write_file', { path: 'a' })),
      finishReason: 'length',
    }
    const second = listProvider([truncated])
    const cutResult = await runTurn({
      log: cut.agentLog,
      provider: second.provider,
      tools,
      prompt: 'go',
      turn: 1,
    })
    expect(cutResult.reason).toBe('max-tokens')
    expect(cut.log.events.map((event) => event.type)).not.toContain('tool/call')
    expect(validateProviderMessages(cut.log.deriveMessages())).toEqual([])
  })

  it('crash plan: dies after the tool/call is durable (after-tool-call) or after the assistant message (after-assistant)', async () => {
    for (const point of ['after-tool-call', 'after-assistant'] as const) {
      const { log, agentLog, durable } = memoryLog()
      const killed: string[] = []
      const { provider } = listProvider([withCalls(call('w', 'write_file', { path: 'x.txt', content: 'x' }))])
      await expect(
        runTurn({
          log: agentLog,
          provider,
          tools,
          prompt: 'go',
          turn: 1,
          crash: { point, tool: 'write_file', kill: () => killed.push(point) },
        }),
      ).rejects.toThrow(/Crash point/)
      expect(killed).toEqual([point])
      const last = log.events.at(-1)!
      expect(last.type).toBe(point === 'after-tool-call' ? 'tool/call' : 'assistant/message')
      expect(durable()).toBe(last.seq)
    }
  })

  it('crash plan naming another tool does not fire', async () => {
    const { agentLog } = memoryLog()
    const { provider } = listProvider([withCalls(call('l', 'list_dir', {})), final('ok')])
    const result = await runTurn({
      log: agentLog,
      provider,
      tools,
      prompt: 'go',
      turn: 1,
      crash: { point: 'after-tool-call', tool: 'write_file', kill: () => {} },
    })
    expect(result.reason).toBe('completed')
  })

  it('reports every appended event to onEvent', async () => {
    const { log, agentLog } = memoryLog()
    const seen: number[] = []
    const { provider } = listProvider([final('hi')])
    await runTurn({
      log: agentLog,
      provider,
      tools,
      prompt: 'go',
      turn: 1,
      onEvent: (event) => seen.push(event.seq),
    })
    expect(seen).toEqual(log.events.map((event) => event.seq))
  })
})
