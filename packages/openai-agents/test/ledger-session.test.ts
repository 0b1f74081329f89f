import { rmSync } from 'node:fs'
import { hostname } from 'node:os'

import type { SessionStore, SessionWriter } from '@agent-ledger/session-store'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { Agent, MemorySession, run, setTracingDisabled, tool } from '@openai/agents-core'
import type { AgentInputItem } from '@openai/agents-core'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { z } from 'zod'

import { ITEMS_EVENT_TYPE, openAgentsSession } from '../src/index.ts'
import { crossProcessStoreKinds, storeKinds } from './stores.ts'
import { spawnTsChild } from '../../../tooling/adapters/child.ts'
import { allEvents, tempRoot } from '../../../tooling/adapters/stores.ts'
import { call, say, ScriptedModel } from './support.ts'

const root = tempRoot('agents')
beforeAll(() => setTracingDisabled(true))
afterAll(() => rmSync(root, { recursive: true, force: true }))

function weather(log: string[]) {
  return tool({
    name: 'weather',
    description: 'Weather in a city',
    parameters: z.object({ city: z.string() }),
    execute: ({ city }) => {
      log.push(city)
      return Promise.resolve(`${city}: sunny`)
    },
  })
}

const script = () => [
  [say('Checking Paris.'), call('c1', 'weather', { city: 'Paris' })],
  [call('c2', 'weather', { city: 'Oslo' })],
  [say('Both are sunny.')],
]

describe.each(storeKinds)('a multi-step run over the %s store', (_name, kind) => {
  it.skipIf(kind.skip !== null)(
    `holds exactly the items the SDK MemorySession holds after a multi-step tool run, each logged once${kind.skip === null ? '' : ` (skipped: ${kind.skip})`}`,
    async () => {
      const { store, id: sessionId, close } = await kind.open()
      onTestFinished(close)
      const id = sessionId('run-wrapped')
      const session = await openAgentsSession(store, id)
      const model = new ScriptedModel(script())
      const ran: string[] = []
      const agent = new Agent({
        name: 'weather',
        instructions: 'Be brief.',
        model: session.wrapModel(model),
        tools: session.wrapTools([weather(ran)]),
      })
      const result = await run(agent, 'Weather in Paris and Oslo?', { session })
      expect(result.finalOutput).toBe('Both are sunny.')

      const memory = new MemorySession()
      const reference = new Agent({
        name: 'weather',
        instructions: 'Be brief.',
        model: new ScriptedModel(script()),
        tools: [weather([])],
      })
      await run(reference, 'Weather in Paris and Oslo?', { session: memory })
      const expected = await memory.getItems()
      expect(await session.getItems()).toEqual(expected)
      expect(await session.getItems(2)).toEqual(expected.slice(-2))
      await session.close()

      const events = await allEvents(store, id)
      expect(events.filter((event) => event.type !== ITEMS_EVENT_TYPE).map((event) => event.type)).toEqual([
        'system/message', // the agent's instructions, hidden from getItems
        'user/message',
        'assistant/message',
        'assistant/message',
        'tool/call',
        'tool/result',
        'assistant/message',
        'tool/call',
        'tool/result',
        'assistant/message',
      ])
      expect(ran).toEqual(['Paris', 'Oslo'])
      // Reopened, the session derives the same items from the file.
      const reopened = await openAgentsSession(store, id)
      expect(await reopened.getItems()).toEqual(expected)
      await reopened.close()
    },
  )
})

describe('AgentLedgerSession with the SDK runner', () => {
  it('logs a streamed run (run with stream: true) once, with the same items as MemorySession', async () => {
    const store = createJsonlStore({ root })
    const session = await openAgentsSession(store, 'streamed')
    const agent = new Agent({
      name: 'weather',
      model: session.wrapModel(new ScriptedModel(script())),
      tools: session.wrapTools([weather([])]),
    })
    const streamed = await run(agent, 'Weather in Paris and Oslo?', { session, stream: true })
    let text = ''
    for await (const chunk of streamed.toTextStream()) text += chunk
    await streamed.completed
    expect(text).toContain('Both are sunny.')

    const memory = new MemorySession()
    const reference = new Agent({ name: 'weather', model: new ScriptedModel(script()), tools: [weather([])] })
    const referenceRun = await run(reference, 'Weather in Paris and Oslo?', { session: memory, stream: true })
    await referenceRun.completed
    expect(await session.getItems()).toEqual(await memory.getItems())
    await session.close()
    const types = (await allEvents(store, 'streamed'))
      .map((event) => event.type)
      .filter((type) => type !== ITEMS_EVENT_TYPE)
    expect(types).toEqual([
      'user/message',
      'assistant/message',
      'assistant/message',
      'tool/call',
      'tool/result',
      'assistant/message',
      'tool/call',
      'tool/result',
      'assistant/message',
    ])
    const answers = (await allEvents(store, 'streamed')).filter((event) => event.type === 'assistant/message')
    expect(answers.at(-1)!.data).toMatchObject({
      usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 },
    })
  })

  it('logs the function call durably before the tool runs', async () => {
    const store = createJsonlStore({ root })
    const session = await openAgentsSession(store, 'durable-call')
    const onDisk: string[][] = []
    const probe = tool({
      name: 'weather',
      description: 'Weather',
      parameters: z.object({ city: z.string() }),
      execute: async ({ city }) => {
        onDisk.push((await allEvents(store, 'durable-call')).map((event) => event.type))
        return `${city}: rain`
      },
    })
    const model = new ScriptedModel([[call('c1', 'weather', { city: 'Rome' })], [say('Rain.')]])
    const agent = new Agent({ name: 'a', model: session.wrapModel(model), tools: session.wrapTools([probe]) })
    await run(agent, 'Rome?', { session })
    await session.close()
    expect(onDisk).toEqual([['user/message', 'assistant/message', 'tool/call']])
    // The second model request carried the tool's output as the runner built it.
    expect(model.requests[1]!.input).toContainEqual(
      expect.objectContaining({
        type: 'function_call_result',
        callId: 'c1',
        output: { type: 'text', text: 'Rome: rain' },
      }),
    )
  })

  it('works as a plain Session too (no wrappers): the runner persists the turn through addItems', async () => {
    const store = createJsonlStore({ root })
    const session = await openAgentsSession(store, 'plain')
    const agent = new Agent({ name: 'w', model: new ScriptedModel(script()), tools: [weather([])] })
    await run(agent, 'Weather?', { session })
    const second = new Agent({ name: 'w', model: new ScriptedModel([[say('Still sunny.')]]) })
    await run(second, 'And now?', { session })
    const items = await session.getItems()
    await session.close()
    expect(items.map((item) => ('role' in item ? `${item.role}` : item.type))).toEqual([
      'user',
      'assistant',
      'function_call',
      'function_call_result',
      'function_call',
      'function_call_result',
      'assistant',
      'user',
      'assistant',
    ])
    const events = await allEvents(store, 'plain')
    // Every function call got a tool/call before its result.
    const types = events.map((event) => event.type)
    expect(types.filter((type) => type === 'tool/call')).toHaveLength(2)
    expect(types.indexOf('tool/call')).toBeLessThan(types.indexOf('tool/result'))
  })
})

describe('addItems', () => {
  it('flushes the function calls before it appends their outputs', async () => {
    const store = createJsonlStore({ root })
    const trace: string[] = []
    const traced: SessionStore = new Proxy(store, {
      get(target, key) {
        if (key === 'create')
          return async (request: Parameters<SessionStore['create']>[0]) =>
            spy(await target.create(request), trace)
        if (key === 'openWriter') {
          return async (id: string, options?: Parameters<SessionStore['openWriter']>[1]) =>
            spy(await target.openWriter(id, options), trace)
        }
        const value: unknown = Reflect.get(target, key)
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
      },
    })
    const session = await openAgentsSession(traced, 'ordering')
    await session.addItems([
      { type: 'message', role: 'user', content: 'Go' },
      call('c1', 'weather', { city: 'Paris' }),
      {
        type: 'function_call_result',
        callId: 'c1',
        name: 'weather',
        status: 'completed',
        output: { type: 'text', text: 'ok' },
      },
    ])
    await session.close()
    expect(trace).toEqual([
      'append user/message',
      'append assistant/message',
      'append tool/call',
      'flush',
      'append tool/result',
      'flush',
      'close',
    ])
  })

  it('keeps items the wire shape cannot hold exactly, and gives them back byte for byte after a reopen', async () => {
    const store = createJsonlStore({ root })
    const items: AgentInputItem[] = [
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'Summarise this file' },
          { type: 'input_file', file: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' },
        ],
      },
      { type: 'reasoning', id: 'rs_1', content: [], providerData: { encrypted_content: 'opaque' } },
      { type: 'hosted_tool_call', id: 'ws_1', name: 'web_search_call', status: 'completed' },
      {
        type: 'function_call',
        id: 'fc_1',
        callId: 'c9',
        name: 'lookup',
        arguments: '{}',
        status: 'completed',
      },
      {
        type: 'function_call_result',
        callId: 'c9',
        name: 'lookup',
        status: 'completed',
        output: 'plain string output',
      },
    ]
    const session = await openAgentsSession(store, 'lossless')
    await session.addItems(items)
    await session.close()
    const reopened = await openAgentsSession(store, 'lossless')
    expect(await reopened.getItems()).toEqual(items)
    expect(reopened.writer.deriveMessages()).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Summarise this file' },
          {
            type: 'text',
            text: '[a input_file part kept verbatim by @agent-ledger/openai-agents: the chat wire shape cannot hold it]',
          },
        ],
      },
      { role: 'assistant', content: null, reasoning_content: '' },
      {
        role: 'assistant',
        content:
          '[a hosted_tool_call item kept verbatim by @agent-ledger/openai-agents: the chat wire shape cannot hold it]',
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c9', type: 'function', function: { name: 'lookup', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c9', content: 'plain string output' },
    ])
    await reopened.close()
  })
})

describe.each(storeKinds)('popItem and clearSession over the %s store', (_name, kind) => {
  it.skipIf(kind.skip !== null)(
    `hide items with a replace that cites them, never deleting a byte of the log${kind.skip === null ? '' : ` (skipped: ${kind.skip})`}`,
    async () => {
      const { store, id: sessionId, snapshot, close } = await kind.open()
      onTestFinished(close)
      const id = sessionId('pop')
      const session = await openAgentsSession(store, id)
      const items: AgentInputItem[] = [
        { type: 'message', role: 'user', content: 'Weather?' },
        call('c1', 'weather', { city: 'Paris' }),
        {
          type: 'function_call_result',
          callId: 'c1',
          name: 'weather',
          status: 'completed',
          output: { type: 'text', text: 'sunny' },
        },
        say('Sunny.'),
      ]
      await session.addItems(items)
      let before = await snapshot(id)

      expect(await session.popItem()).toEqual(items[3])
      expect(await session.getItems()).toEqual(items.slice(0, 3))
      expect(await session.popItem()).toEqual(items[2]) // the function call's output
      expect(await session.getItems()).toEqual(items.slice(0, 2))
      expect(await session.popItem()).toEqual(items[1]) // the call itself, with its hidden output
      expect(await session.getItems()).toEqual(items.slice(0, 1))
      let after = await snapshot(id)
      expect(after.startsWith(before)).toBe(true)

      before = after
      await session.clearSession()
      expect(await session.getItems()).toEqual([])
      // The model-visible history (and so the transcript) says what was removed and where it is.
      expect(session.writer.deriveMessages()).toEqual([
        {
          role: 'system',
          content: '[removed from the session by clearSession; the originals stay in the log at seq 0, 9, 5]',
        },
      ])
      expect(await session.popItem()).toBeUndefined()
      await session.addItems([{ type: 'message', role: 'user', content: 'Fresh start' }])
      expect(await session.getItems()).toEqual([{ type: 'message', role: 'user', content: 'Fresh start' }])
      await session.close()
      after = await snapshot(id)
      expect(after.startsWith(before)).toBe(true)

      const events = await allEvents(store, id)
      const replaces = events.filter((event) => event.surfaceOp !== undefined)
      expect(replaces.map((event) => [event.type, event.surfaceOp, event.sourceEventSeqs])).toEqual([
        // seq 0 user, 1 assistant call, 2 tool/call, 3 its result, 4 assistant answer.
        ['system/message', { op: 'replace', startSeq: 4, endSeq: 4 }, [4]], // seq 5 (+ items event 6)
        ['tool/result', { op: 'replace', startSeq: 3, endSeq: 3 }, [3]], // seq 7 (+ 8)
        ['system/message', { op: 'replace', startSeq: 1, endSeq: 7 }, [1, 7]], // the call and its hidden result: seq 9 (+ 10)
        ['system/message', { op: 'replace', startSeq: 0, endSeq: 5 }, [0, 9, 5]], // clearSession: every node
      ])
      // Every original message is still in the log.
      const userTexts = events.filter((event) => event.type === 'user/message').map((event) => event.data)
      expect(userTexts).toHaveLength(2)
    },
  )
})

describe('popItem on events written by another adapter', () => {
  it('pops one item of an assistant message that stands for several, keeping the rest visible', async () => {
    const store = createJsonlStore({ root })
    const writer = await store.create({ id: 'foreign' })
    writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'Go' } } })
    writer.append({
      type: 'assistant/message',
      data: {
        message: {
          role: 'assistant',
          content: 'On it.',
          tool_calls: [{ id: 'x1', type: 'function', function: { name: 'run', arguments: '{}' } }],
        },
      },
    })
    await writer.close()
    const session = await openAgentsSession(store, 'foreign')
    // Reopening repaired the unanswered call: its placeholder is the last item.
    const before = await session.getItems()
    expect(before.map((item) => item.type)).toEqual([
      'message',
      'message',
      'function_call',
      'function_call_result',
    ])
    expect(await session.popItem()).toMatchObject({ type: 'function_call_result', callId: 'x1' })
    expect(await session.popItem()).toEqual(before[2])
    expect(await session.getItems()).toEqual(before.slice(0, 2))
    expect(session.writer.deriveMessages().slice(0, 2)).toEqual([
      { role: 'user', content: 'Go' },
      { role: 'assistant', content: 'On it.' },
    ])
    await session.close()
  })
})

describe.each(crossProcessStoreKinds)('a crashed run over the %s store', (_name, kind) => {
  it.skipIf(kind.skip !== null)(
    `a run SIGKILLed inside a tool resumes with TOOL_OUTCOME_UNKNOWN, which the next model request carries${kind.skip === null ? '' : ` (skipped: ${kind.skip})`}`,
    async () => {
      const { store, target, id: sessionId, close } = await kind.open()
      onTestFinished(close)
      const id = sessionId('killed-run')
      const child = spawnTsChild(new URL('./fixtures/crash-mid-tool.ts', import.meta.url), [
        target!,
        id,
        'run',
      ])
      await child.waitFor('IN_TOOL')
      child.child.kill('SIGKILL')
      expect((await child.exited).signal).toBe('SIGKILL')

      // A second process with its own owner. On PostgreSQL the dead child's lease is still live
      // (30 s), so a plain open is refused with a typed SESSION_LOCKED naming the holder and the
      // expiry; the JSONL writer lock dies with its process, so there the plain open succeeds.
      const owner = `${hostname()}:${process.pid}`
      const holder = `${hostname()}:${child.child.pid}`
      expect(child.output().stdout).toContain(`OWNER ${holder}\n`)
      if (kind.name === 'PostgreSQL (core)') {
        const refused = await openAgentsSession(store, id, { owner }).then(
          () => null,
          (error: unknown) => error,
        )
        expect(refused).toMatchObject({ code: 'SESSION_LOCKED', details: { holder } })
        const { expiresAt } = (refused as { details: { expiresAt: string } }).details
        expect(Date.parse(expiresAt)).toBeGreaterThan(Date.now())
        expect((refused as Error).message).toContain(holder)
      }
      // The caller who knows the session's worker is dead takes over at once.
      const session = await openAgentsSession(store, id, { owner, takeover: true })
      const items = await session.getItems()
      expect(items.slice(0, 3)).toEqual([
        { type: 'message', role: 'user', content: 'Deploy the web service.' },
        say('Deploying.'),
        call('call-deploy', 'deploy', { service: 'web' }),
      ])
      const placeholder = items[3] as { type: string; callId: string; output: { type: string; text: string } }
      expect(placeholder.type).toBe('function_call_result')
      expect(placeholder.callId).toBe('call-deploy')
      expect(placeholder.output.text).toMatch(/outcome is unknown.*\[TOOL_OUTCOME_UNKNOWN\]$/s)

      const model = new ScriptedModel([[say('I will check whether web is deployed before retrying.')]])
      const agent = new Agent({ name: 'deployer', model: session.wrapModel(model) })
      await run(agent, 'Did it deploy?', { session })
      await session.close()
      const input = model.requests[0]!.input as AgentInputItem[]
      expect(input).toContainEqual(placeholder)
      expect(input.at(-1)).toEqual({ type: 'message', role: 'user', content: 'Did it deploy?' })
    },
  )
})

describe('crash and resume', () => {
  it('a process SIGKILLed between addItems of a function call and of its output resumes with TOOL_OUTCOME_UNKNOWN', async () => {
    const child = spawnTsChild(new URL('./fixtures/crash-mid-tool.ts', import.meta.url), [
      root,
      'killed-add',
      'add',
    ])
    await child.waitFor('ADDED')
    child.child.kill('SIGKILL')
    await child.exited
    const store = createJsonlStore({ root })
    const session = await openAgentsSession(store, 'killed-add')
    const items = await session.getItems()
    await session.close()
    expect(items).toHaveLength(3)
    expect(items[2]).toMatchObject({ type: 'function_call_result', callId: 'call-deploy', name: 'deploy' })
    expect(JSON.stringify(items[2])).toContain('[TOOL_OUTCOME_UNKNOWN]')
    const repaired = (await allEvents(store, 'killed-add')).find((event) => event.type === 'tool/result')
    expect(repaired?.data).toMatchObject({ isError: true, code: 'TOOL_OUTCOME_UNKNOWN' })
  })
})

function spy(writer: SessionWriter, trace: string[]): SessionWriter {
  return {
    get id() {
      return writer.id
    },
    get projection() {
      return writer.projection
    },
    append: (input: Parameters<SessionWriter['append']>[0]) => {
      trace.push(`append ${input.type}`)
      return writer.append(input)
    },
    flush: () => {
      trace.push('flush')
      return writer.flush()
    },
    deriveMessages: () => writer.deriveMessages(),
    close: () => {
      trace.push('close')
      return writer.close()
    },
  } as SessionWriter
}
