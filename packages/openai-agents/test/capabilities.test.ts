/**
 * The optional session capabilities the SDK's runner probes for (`@openai/agents-core` 0.14
 * and 0.20, `dist/memory/session.d.ts`), each with the runner and a scripted model where the
 * runner calls it, asserting the model input and the log.
 */
import { rmSync } from 'node:fs'

import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import * as core from '@openai/agents-core'
import { Agent, run, setTracingDisabled, tool } from '@openai/agents-core'
import type { AgentInputItem } from '@openai/agents-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'

import { OPERATION_EVENT_TYPE, openAgentsSession } from '../src/index.ts'
import type { AgentLedgerSession, HistoryTransactionArgs } from '../src/index.ts'
import { allEvents, tempRoot } from '../../../tooling/adapters/stores.ts'
import { call, say, ScriptedModel } from './support.ts'

const root = tempRoot('agents-capabilities')
const store = createJsonlStore({ root })
beforeAll(() => setTracingDisabled(true))
afterAll(async () => {
  await store.close()
  rmSync(root, { recursive: true, force: true })
})

const user = (content: string): AgentInputItem => ({ type: 'message', role: 'user', content })
const result = (callId: string, name: string, text: string): AgentInputItem => ({
  type: 'function_call_result',
  name,
  callId,
  status: 'completed',
  output: { type: 'text', text },
})

function lookup(log: string[] = []) {
  return tool({
    name: 'lookup',
    description: 'Looks a thing up',
    parameters: z.object({ q: z.string() }),
    execute: ({ q }) => {
      log.push(q)
      return Promise.resolve('found')
    },
  })
}

/** Calls to `applyHistoryTransaction` the runner made, recorded as they pass through. */
function recordTransactions(session: AgentLedgerSession): HistoryTransactionArgs[] {
  const seen: HistoryTransactionArgs[] = []
  const apply = session.applyHistoryTransaction.bind(session)
  session.applyHistoryTransaction = (args) => {
    seen.push(structuredClone(args))
    return apply(args)
  }
  return seen
}

const snapshot = async (id: string) => JSON.stringify(await allEvents(store, id))

describe('history transactions (applyHistoryTransaction)', () => {
  it('an output guardrail that blocks a turn: the runner keeps the executed call through an append_items transaction, once, with its operation id in the log', async () => {
    const session = await openAgentsSession(store, 'blocked')
    const transactions = recordTransactions(session)
    const log: string[] = []
    const model = new ScriptedModel([
      [call('c1', 'lookup', { q: 'x' })],
      [say('the secret is 42')],
      [say('I cannot share that.')],
    ])
    const agent = new Agent({
      name: 'guarded',
      model,
      tools: [lookup(log)],
      outputGuardrails: [
        {
          name: 'no-secrets',
          execute: ({ agentOutput }) =>
            Promise.resolve({ tripwireTriggered: String(agentOutput).includes('secret'), outputInfo: null }),
        },
      ],
    })
    await expect(run(agent, 'Tell me the secret.', { session })).rejects.toThrow(/guardrail/i)
    expect(log).toEqual(['x'])
    expect(transactions).toHaveLength(1)
    const [transaction] = transactions
    expect(transaction!.transaction.type).toBe('append_items')
    // The blocked answer is not in the history; the executed call and its result are.
    const kept = [
      user('Tell me the secret.'),
      call('c1', 'lookup', { q: 'x' }),
      result('c1', 'lookup', 'found'),
    ]
    expect(await session.getItems()).toEqual(kept)
    const operations = (await allEvents(store, 'blocked')).filter(
      (event) => event.type === OPERATION_EVENT_TYPE,
    )
    expect(operations.map((event) => (event.data as { operationId: string }).operationId)).toEqual([
      transaction!.operationId,
    ])

    // A retry of the same operation writes nothing, in this process or after a reopen.
    const before = await snapshot('blocked')
    await session.applyHistoryTransaction(transaction!)
    expect(await snapshot('blocked')).toBe(before)
    await session.close()
    const reopened = await openAgentsSession(store, 'blocked')
    await reopened.applyHistoryTransaction(transaction!)
    expect(await snapshot('blocked')).toBe(before)
    // The same id with another transaction is refused before anything is written.
    await expect(
      reopened.applyHistoryTransaction({
        operationId: transaction!.operationId,
        transaction: { type: 'append_items', items: [user('something else')] },
      }),
    ).rejects.toMatchObject({
      code: 'OPERATION_CONFLICT',
      details: { operationId: transaction!.operationId },
    })
    expect(await snapshot('blocked')).toBe(before)

    // The next turn's model input carries the kept history.
    const next = new Agent({ name: 'guarded', model })
    await run(next, 'Then what did you find?', { session: reopened })
    expect(model.requests[2]!.input).toEqual([...kept, user('Then what did you find?')])
    await reopened.close()
  })

  it('replace_suffix appends a replace over the suffix (the originals stay in the log); a suffix that does not match is refused with nothing written', async () => {
    const session = await openAgentsSession(store, 'suffix')
    await session.addItems([user('Deploy web.'), say('Deployed.')])
    const original = (await allEvents(store, 'suffix')).find((event) => event.type === 'assistant/message')!
    const before = await snapshot('suffix')
    await expect(
      session.applyHistoryTransaction({
        operationId: 'op-mismatch',
        transaction: { type: 'replace_suffix', expectedSuffix: [say('Something else.')], replacement: [] },
      }),
    ).rejects.toMatchObject({
      code: 'SUFFIX_MISMATCH',
      details: { operationId: 'op-mismatch', expected: 1, found: 2 },
    })
    expect(await snapshot('suffix')).toBe(before)

    const args: HistoryTransactionArgs = {
      operationId: 'op-1',
      transaction: {
        type: 'replace_suffix',
        expectedSuffix: [say('Deployed.')],
        replacement: [say('Deployment blocked by policy.')],
      },
    }
    await session.applyHistoryTransaction(args)
    expect(await session.getItems()).toEqual([user('Deploy web.'), say('Deployment blocked by policy.')])
    const events = await allEvents(store, 'suffix')
    expect(events).toContainEqual(original)
    const replacing = events.find((event) => event.surfaceOp !== undefined)!
    expect(replacing).toMatchObject({
      type: 'assistant/message',
      surfaceOp: { op: 'replace', startSeq: original.seq, endSeq: original.seq },
      sourceEventSeqs: [original.seq],
    })
    expect(session.writer.deriveMessages().at(-1)).toMatchObject({ content: 'Deployment blocked by policy.' })
    const after = await snapshot('suffix')
    await session.applyHistoryTransaction(args)
    expect(await snapshot('suffix')).toBe(after)
    await session.close()
  })

  it('a replace_suffix that starts on a function output takes its call along, and keeps the pair valid', async () => {
    const session = await openAgentsSession(store, 'suffix-tool')
    const history = [user('Look x up.'), call('c1', 'lookup', { q: 'x' }), result('c1', 'lookup', 'found')]
    await session.addItems(history)
    await session.applyHistoryTransaction({
      operationId: 'op-redact',
      transaction: {
        type: 'replace_suffix',
        expectedSuffix: [result('c1', 'lookup', 'found')],
        replacement: [result('c1', 'lookup', '[redacted]')],
      },
    })
    expect(await session.getItems()).toEqual([...history.slice(0, 2), result('c1', 'lookup', '[redacted]')])
    expect(session.writer.deriveMessages().at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'c1',
      content: '[redacted]',
    })
    await session.close()
  })

  it('refuses a malformed transaction with INVALID_TRANSACTION', async () => {
    const session = await openAgentsSession(store, 'malformed')
    await expect(
      session.applyHistoryTransaction({ operationId: ' ', transaction: { type: 'append_items', items: [] } }),
    ).rejects.toMatchObject({ code: 'INVALID_TRANSACTION', details: { field: 'operationId' } })
    await expect(
      session.applyHistoryTransaction({
        operationId: 'op',
        transaction: { type: 'drop_all' } as unknown as HistoryTransactionArgs['transaction'],
      }),
    ).rejects.toMatchObject({ code: 'INVALID_TRANSACTION', details: { field: 'transaction.type' } })
    await session.close()
  })
})

describe('history rewrite (applyHistoryMutations)', () => {
  it('an approved call whose arguments are rewritten: the next model request carries the rewritten call, the log keeps the original', async () => {
    const session = await openAgentsSession(store, 'rewrite')
    const log: string[] = []
    const guarded = tool({
      name: 'lookup',
      description: 'Looks a thing up',
      parameters: z.object({ q: z.string() }),
      needsApproval: () => Promise.resolve(true),
      execute: ({ q }) => {
        log.push(q)
        return Promise.resolve('found')
      },
    })
    const model = new ScriptedModel([
      [call('c1', 'lookup', { q: 'token=s3cret' })],
      [say('Found it.')],
      [say('Done.')],
    ])
    const agent = new Agent({ name: 'approver', model, tools: [guarded] })
    const first = await run(agent, 'Look the token up.', { session })
    expect(first.interruptions).toHaveLength(1)
    first.state.approve(first.interruptions[0]!)
    const resumed = await run(agent, first.state, { session })
    expect(resumed.finalOutput).toBe('Found it.')
    expect(log).toEqual(['token=s3cret'])

    const rewritten = call('c1', 'lookup', { q: 'token=[redacted]' })
    await session.applyHistoryMutations({
      mutations: [{ type: 'replace_function_call', callId: 'c1', replacement: rewritten }],
    })
    const items = await session.getItems()
    expect(items.filter((item) => item.type === 'function_call')).toEqual([rewritten])
    expect(items.filter((item) => item.type === 'function_call_result')).toEqual([
      result('c1', 'lookup', 'found'),
    ])

    await run(agent, 'Thanks.', { session })
    const input = model.requests[2]!.input as AgentInputItem[]
    expect(input).toContainEqual(rewritten)
    expect(JSON.stringify(input)).not.toContain('s3cret')
    const events = await allEvents(store, 'rewrite')
    const originals = events.filter((event) => JSON.stringify(event.data).includes('token=s3cret'))
    expect(originals.length).toBeGreaterThan(0)
    const replacing = events.find(
      (event) => event.surfaceOp !== undefined && event.type === 'assistant/message',
    )!
    expect(replacing.sourceEventSeqs).toEqual(
      expect.arrayContaining(
        originals.filter((event) => event.type === 'assistant/message').map((event) => event.seq),
      ),
    )
    await session.close()
  })

  it('a call id the history does not show changes nothing', async () => {
    const session = await openAgentsSession(store, 'rewrite-none')
    await session.addItems([user('Hi.')])
    const before = await snapshot('rewrite-none')
    await session.applyHistoryMutations({
      mutations: [{ type: 'replace_function_call', callId: 'nope', replacement: call('nope', 'x', {}) }],
    })
    expect(await snapshot('rewrite-none')).toBe(before)
    await session.close()
  })
})

describe('Responses compaction replacement (replaceHistoryWithCompaction)', () => {
  it.each([
    ['with', true],
    ['without', false],
  ])(
    'a model output that starts with a compaction item (%s the model wrapper): the history is replaced, the core compaction events hide the originals, the next request starts at the compaction',
    async (_with, wrapped) => {
      const id = `compaction-${String(wrapped)}`
      const session = await openAgentsSession(store, id)
      const compaction = { type: 'compaction', encrypted_content: 'opaque-summary' } as AgentInputItem
      const model = new ScriptedModel([
        [say('First answer.')],
        [compaction, say('Second answer.')],
        [say('Third answer.')],
      ])
      const agent = new Agent({
        name: 'compactor',
        instructions: 'Be brief.',
        model: wrapped ? session.wrapModel(model) : model,
      })
      await run(agent, 'One.', { session })
      await run(agent, 'Two.', { session })
      const items = await session.getItems()
      expect(items[0]).toEqual(compaction)
      expect(items).not.toContainEqual(user('One.'))
      const events = await allEvents(store, id)
      expect(events.map((event) => event.type)).toEqual(
        expect.arrayContaining(['compaction/start', 'compaction/summary', 'compaction/end']),
      )
      // The originals stay in the log.
      expect(
        events.filter((event) => JSON.stringify(event.data).includes('First answer.')).length,
      ).toBeGreaterThan(0)
      await run(agent, 'Three.', { session })
      const input = model.requests[2]!.input as AgentInputItem[]
      expect(input[0]).toEqual(compaction)
      expect(JSON.stringify(input)).not.toContain('One.')
      expect(input.at(-1)).toEqual(user('Three.'))
      await session.close()
      const reopened = await openAgentsSession(store, id)
      expect((await reopened.getItems())[0]).toEqual(compaction)
      await reopened.close()
    },
  )

  it('refuses items that do not start with a compaction item', async () => {
    const session = await openAgentsSession(store, 'compaction-bad')
    await expect(session.replaceHistoryWithCompaction([user('x')])).rejects.toMatchObject({
      code: 'INVALID_COMPACTION',
      details: { found: 'message' },
    })
    await session.close()
  })
})

describe('run context and the item hooks', () => {
  it('declares acceptsRunContext; the runner (0.20) passes its RunContext, and nothing of it reaches the log', async () => {
    const session = await openAgentsSession(store, 'context')
    expect(session.acceptsRunContext).toBe(true)
    const seen: unknown[] = []
    const getItems = session.getItems.bind(session)
    session.getItems = (limit?: number, ...rest: unknown[]) => {
      seen.push(rest[0])
      return getItems(limit)
    }
    // With the ownership capability the runner (0.20) reads through getItemsWithCompactionOwnership.
    const owned = session.getItemsWithCompactionOwnership.bind(session)
    session.getItemsWithCompactionOwnership = (...rest: unknown[]) => {
      seen.push(rest[0])
      return owned()
    }
    const model = new ScriptedModel([[say('Hello.')]])
    await run(new Agent({ name: 'ctx', model }), 'Hi.', { session, context: { tenant: 'tenant-secret' } })
    const contexts = seen.filter((value) => value !== undefined) as { context?: unknown }[]
    // 0.14 has no run-context capability and passes none; 0.20 passes the run's context.
    if ('isRunContextAwareSession' in core) expect(contexts.length).toBeGreaterThan(0)
    for (const context of contexts) expect(context.context).toEqual({ tenant: 'tenant-secret' })
    expect(await snapshot('context')).not.toContain('tenant-secret')
    await session.close()
  })

  it('keeps reasoning item ids verbatim (preserveReasoningItemIdsForPersistence) and compares items as the log holds them', async () => {
    const session = await openAgentsSession(store, 'reasoning')
    expect(session.preserveReasoningItemIdsForPersistence()).toBe(true)
    const reasoning = { type: 'reasoning', id: 'rs_1', content: [{ type: 'input_text', text: 'thinking' }] }
    const model = new ScriptedModel([[reasoning as never, say('Answer.')]])
    await run(new Agent({ name: 'thinker', model }), 'Why?', { session })
    expect(await session.getItems()).toContainEqual(reasoning)
    expect(await snapshot('reasoning')).toContain('"rs_1"')
    const withUndefined = { ...user('x'), providerData: undefined } as AgentInputItem
    expect(session.prepareHistoryItemsForPersistenceComparison([withUndefined])).toEqual([user('x')])
    expect(Object.keys(session.prepareHistoryItemForModelInput(withUndefined))).not.toContain('providerData')
    await session.close()
  })
})

describe('Responses compaction run and ownership (runCompaction, getItemsWithCompactionOwnership, addItemsWithCompactionOwnership)', () => {
  const compaction = { type: 'compaction', encrypted_content: 'opaque-summary' } as AgentInputItem
  const usage = () => new core.RequestUsage({ inputTokens: 7, outputTokens: 2, totalTokens: 9 })

  it('the runner runs the compaction after a persisted turn: the compactor gets the history, the next model request starts at the compaction item', async () => {
    const requests: AgentInputItem[][] = []
    const session = await openAgentsSession(store, 'run-compaction', {
      compact: (request) => {
        requests.push(structuredClone(request.items))
        return Promise.resolve(
          requests.length === 1 ? { items: [compaction, ...request.items.slice(-1)], usage: usage() } : null,
        )
      },
    })
    const model = new ScriptedModel([[say('First answer.')], [say('Second answer.')]])
    const agent = new Agent({ name: 'compactor', model: session.wrapModel(model) })
    await run(agent, 'One.', { session })
    expect(requests[0]).toEqual([user('One.'), say('First answer.')])
    expect(await session.getItems()).toEqual([compaction, say('First answer.')])
    await run(agent, 'Two.', { session })
    expect(model.requests[1]!.input).toEqual([compaction, say('First answer.'), user('Two.')])
    const types = (await allEvents(store, 'run-compaction')).map((event) => event.type)
    expect(types).toContain('compaction/end')
    await session.close()
  })

  it('automatic compaction needs a current receipt: a null or stale one compacts nothing, its own appends keep it current, undefined is manual', async () => {
    let calls = 0
    const session = await openAgentsSession(store, 'ownership', {
      compact: (request) => {
        calls += 1
        return Promise.resolve({ items: [compaction, ...request.items.slice(-1)], usage: usage() })
      },
    })
    await session.addItems([user('One.'), say('First.')])
    expect(await session.runCompaction({}, undefined, null)).toBeNull()
    const stale = await session.getItemsWithCompactionOwnership()
    await session.addItems([user('Two.')]) // a change the receipt did not make
    expect(await session.runCompaction({}, undefined, stale.ownership)).toBeNull()
    expect(calls).toBe(0)

    const fresh = await session.getItemsWithCompactionOwnership()
    expect(fresh.items).toEqual([user('One.'), say('First.'), user('Two.')])
    await session.addItemsWithCompactionOwnership([say('Second.')], fresh.ownership)
    // A stale receipt's append still lands, and does not make it current again.
    await session.addItemsWithCompactionOwnership([user('Three.')], stale.ownership)
    expect(await session.runCompaction({}, undefined, stale.ownership)).toBeNull()
    expect(await session.runCompaction({}, undefined, fresh.ownership)).toBeNull() // the stale append was a change too
    const current = await session.getItemsWithCompactionOwnership()
    await session.addItemsWithCompactionOwnership([say('Third.')], current.ownership)
    const compacted = await session.runCompaction({ force: true }, undefined, current.ownership)
    expect(compacted?.usage.totalTokens).toBe(9)
    expect(calls).toBe(1)
    expect(await session.getItems()).toEqual([compaction, say('Third.')])
    // Manual compaction (no ownership argument) runs regardless.
    expect(await session.runCompaction({ force: true })).not.toBeNull()
    expect(calls).toBe(2)
    await session.close()
  })

  it('without a compactor runCompaction compacts nothing', async () => {
    const session = await openAgentsSession(store, 'no-compactor')
    await session.addItems([user('One.')])
    expect(await session.runCompaction({ force: true })).toBeNull()
    expect(await session.getItems()).toEqual([user('One.')])
    await session.close()
  })
})
