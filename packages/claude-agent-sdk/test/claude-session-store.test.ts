/**
 * The SDK's documented SessionStore contract (sdk.d.ts of @anthropic-ai/claude-agent-sdk and
 * the Agent SDK "session storage" page), sentence by sentence, over each store kind: JSONL,
 * the core on its memory backend, the core on PostgreSQL.
 */
import type { SessionStore as SdkSessionStore } from '@anthropic-ai/claude-agent-sdk'
import { describe, expect, expectTypeOf, it } from 'vitest'

import { ClaudeStoreError, createClaudeSessionStore, ledgerSessionId } from '../src/index.ts'
import { storeKinds, crossProcessStoreKinds } from './stores.ts'
import { openStoreAt } from './store-target.ts'
import { titleEntry, userEntry } from './support.ts'

it('is the SDK SessionStore type, every optional method but listSessionSummaries implemented', () => {
  expectTypeOf(createClaudeSessionStore).returns.toMatchTypeOf<SdkSessionStore>()
})

describe.each(storeKinds)('the Claude SessionStore over the %s store', (_name, kind) => {
  it('load returns what append stored, deep-equal and in append-call order, across calls', async () => {
    const opened = await kind.open()
    const claude = createClaudeSessionStore(opened.store)
    const key = { projectKey: opened.id('proj'), sessionId: 's1' }
    const first = [userEntry('s1', 1), titleEntry('s1', 'first'), userEntry('s1', 2)]
    const second = [userEntry('s1', 3)]
    await claude.append(key, first)
    await claude.append(key, [])
    await claude.append(key, second)
    expect(await claude.load(key)).toStrictEqual([...first, ...second])
    await claude.close()
    await opened.store.close()
    await opened.close()
  })

  it('load is null for a key that was never written', async () => {
    const opened = await kind.open()
    const claude = createClaudeSessionStore(opened.store)
    expect(await claude.load({ projectKey: opened.id('proj'), sessionId: 'never' })).toBeNull()
    expect(
      await claude.load({ projectKey: opened.id('proj'), sessionId: 'never', subpath: 'subagents/agent-x' }),
    ).toBeNull()
    await claude.close()
    await opened.store.close()
    await opened.close()
  })

  it('appends called concurrently for one key land in call order', async () => {
    const opened = await kind.open()
    const claude = createClaudeSessionStore(opened.store)
    const key = { projectKey: opened.id('proj'), sessionId: 'conc' }
    const batches = Array.from({ length: 8 }, (_, i) => [
      userEntry('conc', 2 * i + 1),
      userEntry('conc', 2 * i + 2),
    ])
    await Promise.all(batches.map((batch) => claude.append(key, batch)))
    expect(await claude.load(key)).toStrictEqual(batches.flat())
    await claude.close()
    await opened.store.close()
    await opened.close()
  })

  it('an entry whose uuid is already stored is not stored twice; entries without a uuid always are', async () => {
    const opened = await kind.open()
    const claude = createClaudeSessionStore(opened.store)
    const key = { projectKey: opened.id('proj'), sessionId: 'dedup' }
    await claude.append(key, [userEntry('dedup', 1), titleEntry('dedup', 't')])
    // A retry of the same batch (the SDK's), then a replay with one new entry (importSessionToStore).
    await claude.append(key, [userEntry('dedup', 1), titleEntry('dedup', 't')])
    await claude.append(key, [userEntry('dedup', 1), userEntry('dedup', 2), userEntry('dedup', 2)])
    expect(await claude.load(key)).toStrictEqual([
      userEntry('dedup', 1),
      titleEntry('dedup', 't'),
      titleEntry('dedup', 't'),
      userEntry('dedup', 2),
    ])
    await claude.close()
    await opened.store.close()
    await opened.close()
  })

  it('each subpath is its own transcript, listed by listSubkeys, never in the main one', async () => {
    const opened = await kind.open()
    const claude = createClaudeSessionStore(opened.store)
    const main = { projectKey: opened.id('proj'), sessionId: 'sub' }
    const agentA = { ...main, subpath: 'subagents/agent-a' }
    const agentB = { ...main, subpath: 'subagents/agent-b' }
    await claude.append(main, [userEntry('sub', 1)])
    await claude.append(agentA, [userEntry('sub', 2)])
    await claude.append(agentB, [userEntry('sub', 3), userEntry('sub', 4)])
    // Another session of the project, with a subagent of its own.
    await claude.append({ ...main, sessionId: 'other', subpath: 'subagents/agent-c' }, [
      userEntry('other', 1),
    ])
    expect(await claude.load(main)).toStrictEqual([userEntry('sub', 1)])
    expect(await claude.load(agentA)).toStrictEqual([userEntry('sub', 2)])
    expect(await claude.load(agentB)).toStrictEqual([userEntry('sub', 3), userEntry('sub', 4)])
    expect((await claude.listSubkeys(main)).sort()).toStrictEqual(['subagents/agent-a', 'subagents/agent-b'])
    expect(
      new Set([claude.sessionIdFor(main), claude.sessionIdFor(agentA), claude.sessionIdFor(agentB)]).size,
    ).toBe(3)
    await claude.close()
    await opened.store.close()
    await opened.close()
  })

  it('listSessions lists the main transcripts of one project, with integer epoch-ms mtimes from the store clock', async () => {
    const opened = await kind.open()
    const claude = createClaudeSessionStore(opened.store)
    const projectKey = opened.id('proj')
    await claude.append({ projectKey, sessionId: 'a' }, [userEntry('a', 1)])
    await claude.append({ projectKey, sessionId: 'b' }, [userEntry('b', 1)])
    await claude.append({ projectKey, sessionId: 'b', subpath: 'subagents/agent-1' }, [userEntry('b', 2)])
    await claude.append({ projectKey, sessionId: 'only-sub', subpath: 'subagents/agent-2' }, [
      userEntry('x', 1),
    ])
    await claude.append({ projectKey: opened.id('elsewhere'), sessionId: 'c' }, [userEntry('c', 1)])
    const listed = await claude.listSessions(projectKey)
    expect(listed.map((session) => session.sessionId).sort()).toStrictEqual(['a', 'b'])
    for (const { sessionId, mtime } of listed) {
      expect(Number.isInteger(mtime)).toBe(true)
      const events = []
      for await (const event of opened.store.readEvents(claude.sessionIdFor({ projectKey, sessionId })))
        events.push(event)
      expect(mtime).toBe(Math.floor(Date.parse(events.at(-1)!.time)))
    }
    await claude.close()
    await opened.store.close()
    await opened.close()
  })

  it('delete removes the transcript and its subkeys (main key) through store.delete, and a later append starts afresh', async () => {
    const opened = await kind.open()
    const claude = createClaudeSessionStore(opened.store)
    const projectKey = opened.id('proj')
    const main = { projectKey, sessionId: 'gone' }
    const sub = { ...main, subpath: 'subagents/agent-1' }
    const kept = { projectKey, sessionId: 'kept' }
    await claude.append(main, [userEntry('gone', 1)])
    await claude.append(sub, [userEntry('gone', 2)])
    await claude.append(kept, [userEntry('kept', 1)])
    await claude.delete(main)
    expect(await claude.load(main)).toBeNull()
    expect(await claude.load(sub)).toBeNull()
    expect(await claude.listSubkeys(main)).toStrictEqual([])
    expect((await claude.listSessions(projectKey)).map((s) => s.sessionId)).toStrictEqual(['kept'])
    expect(await claude.load(kept)).toStrictEqual([userEntry('kept', 1)])
    await expect(opened.store.verify(claude.sessionIdFor(main))).rejects.toMatchObject({
      code: 'SESSION_NOT_FOUND',
    })
    // A deleted uuid is not a duplicate any more: the new transcript takes it.
    await claude.append(main, [userEntry('gone', 1), userEntry('gone', 3)])
    expect(await claude.load(main)).toStrictEqual([userEntry('gone', 1), userEntry('gone', 3)])
    expect((await claude.listSessions(projectKey)).map((s) => s.sessionId).sort()).toStrictEqual([
      'gone',
      'kept',
    ])
    // Deleting a subkey deletes only it; deleting a key never written is a no-op.
    await claude.append(sub, [userEntry('gone', 4)])
    await claude.delete(sub)
    expect(await claude.load(sub)).toBeNull()
    expect(await claude.load(main)).toStrictEqual([userEntry('gone', 1), userEntry('gone', 3)])
    await claude.delete({ projectKey, sessionId: 'never' })
    expect(await claude.load({ projectKey, sessionId: 'never' })).toBeNull()
    await claude.close()
    await opened.store.close()
    await opened.close()
  })

  it('refuses a bad key or entry with a typed error naming it, before writing anything', async () => {
    const opened = await kind.open()
    const claude = createClaudeSessionStore(opened.store)
    const key = { projectKey: opened.id('proj'), sessionId: 'bad' }
    await expect(claude.append({ ...key, subpath: '' }, [userEntry('bad', 1)])).rejects.toSatisfy(
      (error) =>
        ClaudeStoreError.is(error) && error.code === 'INVALID_KEY' && error.details['field'] === 'subpath',
    )
    await expect(claude.load({ ...key, sessionId: '' })).rejects.toMatchObject({ code: 'INVALID_KEY' })
    await expect(claude.append(key, [userEntry('bad', 1), { notType: 1 } as never])).rejects.toMatchObject({
      code: 'INVALID_ENTRY',
      details: { index: 1 },
    })
    expect(await claude.load(key)).toBeNull()
    await claude.close()
    await opened.store.close()
    await opened.close()
  })
})

describe.each(crossProcessStoreKinds)('durability over the %s store', (_name, kind) => {
  it('what an append acknowledged is loaded by a store opened afresh, and appends go on there', async () => {
    const opened = await kind.open()
    const key = { projectKey: opened.id('proj'), sessionId: 'durable' }
    const claude = createClaudeSessionStore(opened.store, { owner: 'worker-1' })
    await claude.append(key, [userEntry('durable', 1), userEntry('durable', 2)])
    // A second store on the same target, as another process opens it (the first keeps its lease).
    const other = await openStoreAt(opened.target!)
    const reader = createClaudeSessionStore(other.store, { owner: 'worker-2' })
    expect(await reader.load(key)).toStrictEqual([userEntry('durable', 1), userEntry('durable', 2)])
    await claude.close()
    await reader.append(key, [userEntry('durable', 2), userEntry('durable', 3)])
    expect(await reader.load(key)).toStrictEqual([1, 2, 3].map((n) => userEntry('durable', n)))
    expect((await other.store.verify(ledgerSessionId(key))).status).toBe('ok')
    await reader.close()
    await other.close()
    await opened.store.close()
    await opened.close()
  })
})
