/**
 * The SDK's documented SessionStore contract, one test per sentence, over each store kind
 * (JSONL, the core on its memory backend, the core on PostgreSQL). Each test quotes its
 * sentence: from `sdk.d.ts` of @anthropic-ai/claude-agent-sdk 0.3.333 (the `SessionStore`,
 * `SessionKey`, `SessionStoreEntry`, `SessionSummaryEntry` types and `foldSessionSummary`), or
 * from the Agent SDK "session storage" page (code.claude.com, marked "docs"). Sentences
 * tested elsewhere: "After the final failure the batch is dropped and a mirror_error system
 * message is emitted. The subprocess continues unaffected." (the real SDK, test/sdk-e2e.test.ts);
 * a SIGKILL mid-append (test/sigkill-append.test.ts); the failing store and the leases
 * (test/failures-and-leases.test.ts).
 */
import {
  deleteSession,
  foldSessionSummary,
  getSessionMessages,
  listSessions,
} from '@anthropic-ai/claude-agent-sdk'
import type {
  SessionKey,
  SessionStore as SdkSessionStore,
  SessionStoreEntry,
  SessionSummaryEntry,
} from '@anthropic-ai/claude-agent-sdk'
import { describe, expect, expectTypeOf, it } from 'vitest'

import { ClaudeStoreError, createClaudeSessionStore, ledgerSessionId } from '../src/index.ts'
import type { LedgerClaudeSessionStore } from '../src/index.ts'
import { openStoreAt } from './store-target.ts'
import { crossProcessStoreKinds, storeKinds } from './stores.ts'
import { titleEntry, userEntry } from './support.ts'

type Kind = (typeof storeKinds)[number][1]
type Opened = Awaited<ReturnType<Kind['open']>>

/** Runs `body` with a Claude store over a freshly opened store of `kind`, closing both after. */
async function withClaude(
  kind: Kind,
  body: (claude: LedgerClaudeSessionStore, opened: Opened) => Promise<void>,
): Promise<void> {
  const opened = await kind.open()
  const claude = createClaudeSessionStore(opened.store)
  try {
    await body(claude, opened)
  } finally {
    await claude.close()
    await opened.store.close()
    await opened.close()
  }
}

/** A directory whose SDK project key (the SDK's sanitized path) is unique to this run. */
function projectDir(opened: Opened, name: string): { dir: string; projectKey: string } {
  const dir = `/srv/${opened.id(name)}`
  return { dir, projectKey: dir.replace(/[^A-Za-z0-9]/g, '-') }
}

/** A session UUID for the SDK's own functions (they list UUID-named sessions only). */
function uuid(n: number): string {
  return `4f8e2a10-1b2c-4d3e-8f90-${String(n).padStart(12, '0')}`
}

it('is typed as the SDK SessionStore, every optional method implemented', () => {
  expectTypeOf(createClaudeSessionStore).returns.toMatchTypeOf<Required<SdkSessionStore>>()
})

describe.each(storeKinds)('the SessionStore contract over the %s store', (_name, kind) => {
  it('"Entries are JSON-safe POJOs — one per line in the local JSONL file" / "round-tripping JSON.stringify / JSON.parse is the only required invariant"', () =>
    withClaude(kind, async (claude, opened) => {
      const key = { projectKey: opened.id('proj'), sessionId: 'json' }
      const entries: SessionStoreEntry[] = [
        userEntry('json', 1),
        { type: 'x-future-kind', uuid: 'f-1', values: [0, -1, 1.5e300, 2 ** 53 - 1, '', 'é😀\u0000\n'] },
        { type: 'nested', deep: { a: { b: { c: [[[]], {}, null, false] } } }, empty: {} },
        { type: 'omitted-undefined', uuid: 'f-2', gone: undefined, kept: 'x' },
      ]
      await claude.append(key, entries)
      expect(await claude.load(key)).toStrictEqual(JSON.parse(JSON.stringify(entries)))
    }))

  it('"Returned entries must be deep-equal to what was appended — byte-equal serialization is NOT required"', () =>
    withClaude(kind, async (claude, opened) => {
      const key = { projectKey: opened.id('proj'), sessionId: 'deep' }
      const entry = { zeta: 1, type: 'user', alpha: { y: 2, x: 1 }, uuid: 'd-1', list: [{ b: 1, a: 2 }] }
      await claude.append(key, [entry])
      const [loaded] = (await claude.load(key))!
      expect(loaded).toStrictEqual(entry)
    }))

  it('"Within a single process, persist entries in append-call order" (calls made at once, two keys interleaved)', () =>
    withClaude(kind, async (claude, opened) => {
      const a = { projectKey: opened.id('proj'), sessionId: 'order-a' }
      const b = { projectKey: opened.id('proj'), sessionId: 'order-b' }
      const batches = Array.from({ length: 6 }, (_, i) => [
        userEntry('o', 2 * i + 1),
        userEntry('o', 2 * i + 2),
      ])
      await Promise.all(
        batches.flatMap((batch) => [claude.append(a, batch), claude.append(b, [...batch].reverse())]),
      )
      expect(await claude.load(a)).toStrictEqual(batches.flat())
      expect(await claude.load(b)).toStrictEqual(batches.flatMap((batch) => [...batch].reverse()))
    }))

  it('"Adapters SHOULD treat `uuid` as an idempotency key ... so that retries and `importSessionToStore()` replays do not create duplicate rows"', () =>
    withClaude(kind, async (claude, opened) => {
      const key = { projectKey: opened.id('proj'), sessionId: 'idem' }
      await claude.append(key, [userEntry('idem', 1), userEntry('idem', 2)])
      await claude.append(key, [userEntry('idem', 1), userEntry('idem', 2)]) // a retry
      await claude.append(key, [userEntry('idem', 1), userEntry('idem', 2), userEntry('idem', 3)]) // a replay
      await claude.append(key, [userEntry('idem', 4), userEntry('idem', 4)]) // twice in one batch
      expect(await claude.load(key)).toStrictEqual([1, 2, 3, 4].map((n) => userEntry('idem', n)))
    }))

  it('"Entries without a `uuid` (e.g. titles, tags, mode markers) should be appended without dedup"', () =>
    withClaude(kind, async (claude, opened) => {
      const key = { projectKey: opened.id('proj'), sessionId: 'no-uuid' }
      await claude.append(key, [titleEntry('no-uuid', 't'), titleEntry('no-uuid', 't')])
      await claude.append(key, [titleEntry('no-uuid', 't')])
      expect(await claude.load(key)).toStrictEqual([1, 2, 3].map(() => titleEntry('no-uuid', 't')))
    }))

  it('"Return `null` for a key that was never written" (docs: "Return null if the session is unknown")', () =>
    withClaude(kind, async (claude, opened) => {
      const key = { projectKey: opened.id('proj'), sessionId: 'never' }
      expect(await claude.load(key)).toBeNull()
      expect(await claude.load({ ...key, subpath: 'subagents/agent-x' })).toBeNull()
      await claude.append(key, []) // an empty batch writes nothing
      expect(await claude.load(key)).toBeNull()
    }))

  it("\"adapters that cannot distinguish 'never written' from 'emptied' ... may return `null` for both\": a deleted key loads null", () =>
    withClaude(kind, async (claude, opened) => {
      const key = { projectKey: opened.id('proj'), sessionId: 'emptied' }
      await claude.append(key, [userEntry('emptied', 1)])
      await claude.delete(key)
      expect(await claude.load(key)).toBeNull()
    }))

  it('"List sessions for a projectKey. Returns IDs + modification times." (main transcripts of that project only)', () =>
    withClaude(kind, async (claude, opened) => {
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
      expect(listed.every((session) => Object.keys(session).sort().join() === 'mtime,sessionId')).toBe(true)
    }))

  it('"`mtime` is integer Unix epoch milliseconds (floor fractional sources)": the store clock of the last write', () =>
    withClaude(kind, async (claude, opened) => {
      const projectKey = opened.id('proj')
      const before = Date.now()
      await claude.append({ projectKey, sessionId: 'm' }, [userEntry('m', 1)])
      const [listed] = await claude.listSessions(projectKey)
      expect(Number.isInteger(listed!.mtime)).toBe(true)
      expect(listed!.mtime).toBeGreaterThanOrEqual(before - 1)
      expect(listed!.mtime).toBeLessThanOrEqual(Date.now())
    }))

  it('"Result order is unspecified — the SDK sorts by mtime descending": the SDK lists the last-written session first', () =>
    withClaude(kind, async (claude, opened) => {
      const { dir, projectKey } = projectDir(opened, 'sorted')
      for (const n of [1, 2, 3])
        await claude.append({ projectKey, sessionId: uuid(n) }, [userEntry(uuid(n), n)])
      // Written last, on a later millisecond than the others.
      const latest = (await claude.listSessions(projectKey)).reduce((max, s) => Math.max(max, s.mtime), 0)
      while (Date.now() <= latest) await new Promise((resolve) => setTimeout(resolve, 1))
      await claude.append({ projectKey, sessionId: uuid(1) }, [userEntry(uuid(1), 9)])
      const listed = await listSessions({ dir, sessionStore: claude })
      expect(listed[0]!.sessionId).toBe(uuid(1))
      const times = listed.map((session) => session.lastModified)
      expect(times).toStrictEqual([...times].sort((x, y) => y - x))
    }))

  it('"Optional — if undefined, listSessions() with a sessionStore throws": implemented here, so the SDK lists', () =>
    withClaude(kind, async (claude, opened) => {
      const { dir, projectKey } = projectDir(opened, 'optional')
      await claude.append({ projectKey, sessionId: uuid(1) }, [userEntry(uuid(1), 1)])
      const { listSessions: _dropped, listSessionSummaries: _also, ...without } = claude
      await expect(listSessions({ dir, sessionStore: without })).rejects.toThrow()
      expect((await listSessions({ dir, sessionStore: claude })).map((s) => s.sessionId)).toStrictEqual([
        uuid(1),
      ])
    }))

  it('"Stores should maintain these via foldSessionSummary inside append()" / "data: Opaque SDK-owned state. Stores MUST persist verbatim"', () =>
    withClaude(kind, async (claude, opened) => {
      const projectKey = opened.id('proj')
      const key = { projectKey, sessionId: 'sum' }
      const batches = [
        [userEntry('sum', 1)],
        [titleEntry('sum', 'first title'), userEntry('sum', 2)],
        [titleEntry('sum', 'second')],
      ]
      let expected: SessionSummaryEntry | undefined
      for (const batch of batches) {
        await claude.append(key, batch)
        expected = foldSessionSummary(expected, key, batch, { mtime: 0 })
      }
      const summaries = await claude.listSessionSummaries(projectKey)
      expect(summaries.map((summary) => summary.data)).toStrictEqual([expected!.data])
    }))

  it('"[mtime] Must share a clock source with the `mtime` returned by `listSessions()`" / "Do not derive from entry ISO timestamps"', () =>
    withClaude(kind, async (claude, opened) => {
      const projectKey = opened.id('proj')
      const old = { ...userEntry('clock', 1), timestamp: '2001-01-01T00:00:00.000Z' }
      await claude.append({ projectKey, sessionId: 'clock' }, [old])
      const [summary] = await claude.listSessionSummaries(projectKey)
      const [listed] = await claude.listSessions(projectKey)
      expect(summary!.mtime).toBe(listed!.mtime)
      expect(summary!.mtime).toBeGreaterThan(Date.parse('2020-01-01T00:00:00.000Z'))
    }))

  it('"When implemented, listSessions({ sessionStore }) reads all summary metadata in a single round-trip; when undefined, it falls back to listSessions() + per-session load()"', () =>
    withClaude(kind, async (claude, opened) => {
      const { dir, projectKey } = projectDir(opened, 'summaries')
      for (const n of [1, 2]) {
        const sessionId = uuid(n)
        await claude.append({ projectKey, sessionId }, [
          userEntry(sessionId, 1),
          titleEntry(sessionId, `title ${n}`),
        ])
        await claude.append({ projectKey, sessionId }, [userEntry(sessionId, 2)])
      }
      const calls: string[] = []
      const counted = new Proxy(claude, {
        get(target, property, receiver) {
          const value: unknown = Reflect.get(target, property, receiver)
          if (typeof value !== 'function') return value
          return (...args: unknown[]) => {
            calls.push(String(property))
            return (value as (...a: unknown[]) => unknown).apply(target, args)
          }
        },
      })
      const listed = await listSessions({ dir, sessionStore: counted })
      // One summaries call (the SDK also lists, to check each summary's mtime), no load.
      expect(calls.filter((call) => call === 'listSessionSummaries')).toHaveLength(1)
      expect(calls).not.toContain('load')
      // The fallback (no summaries): the SDK loads every session and folds it itself; same answer.
      const { listSessionSummaries: _dropped, ...fallback } = claude
      const folded = await listSessions({ dir, sessionStore: fallback })
      const shape = (infos: typeof listed) =>
        infos
          .map(({ sessionId, summary, customTitle, firstPrompt, lastModified }) => ({
            sessionId,
            summary,
            customTitle,
            firstPrompt,
            lastModified,
          }))
          .sort((x, y) => x.sessionId.localeCompare(y.sessionId))
      expect(shape(listed)).toStrictEqual(shape(folded))
      expect(shape(listed).map((info) => info.customTitle)).toStrictEqual(['title 1', 'title 2'])
    }))

  it('"Stores that maintain summaries inside append() MUST serialize sidecar writes if append() calls can race for the same session"', () =>
    withClaude(kind, async (claude, opened) => {
      const projectKey = opened.id('proj')
      const key = { projectKey, sessionId: 'race' }
      const batches = Array.from({ length: 8 }, (_, i) => [
        userEntry('race', i + 1),
        titleEntry('race', `title ${i}`),
      ])
      await Promise.all(batches.map((batch) => claude.append(key, batch)))
      const expected = batches.reduce<SessionSummaryEntry | undefined>(
        (summary, batch) => foldSessionSummary(summary, key, batch, { mtime: 0 }),
        undefined,
      )
      const [summary] = await claude.listSessionSummaries(projectKey)
      expect(summary!.data).toStrictEqual(expected!.data)
    }))

  it('"Adapters never re-read previously appended entries": appends read nothing back; summaries read one event per session where the listing counts events', () =>
    withClaude(kind, async (_claude, opened) => {
      const reads: { id: string; fromSeq: number | undefined }[] = []
      const spied = new Proxy(opened.store, {
        get(target, property, receiver) {
          const value: unknown = Reflect.get(target, property, receiver)
          if (property !== 'readEvents')
            return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value
          return (id: string, options?: { fromSeq?: number }) => {
            reads.push({ id, fromSeq: options?.fromSeq })
            return target.readEvents(id, options)
          }
        },
      })
      const watched = createClaudeSessionStore(spied)
      const projectKey = opened.id('proj')
      const key = { projectKey, sessionId: 'no-reread' }
      for (let n = 1; n <= 10; n += 1) await watched.append(key, [userEntry('no-reread', n)])
      expect(reads).toStrictEqual([])
      await watched.listSessionSummaries(projectKey)
      expect(reads).toHaveLength(1)
      const listed = (await opened.store.list()).sessions.find(
        (session) => session.id === watched.sessionIdFor(key),
      )
      // JSONL's listing does not count events: its summary is read whole (see the README's limitations).
      if (listed!.events !== undefined) expect(reads[0]!.fromSeq).toBe(listed!.events - 1)
      else expect(reads[0]!.fromSeq).toBeUndefined()
      await watched.close()
    }))

  it('"Delete a session. Optional — if undefined, deletion is a no-op": implemented, the SDK\'s deleteSession erases through it', () =>
    withClaude(kind, async (claude, opened) => {
      const { dir, projectKey } = projectDir(opened, 'delete')
      const key = { projectKey, sessionId: uuid(7) }
      await claude.append(key, [userEntry(uuid(7), 1)])
      await deleteSession(uuid(7), { dir, sessionStore: claude })
      expect(await claude.load(key)).toBeNull()
      await expect(opened.store.verify(claude.sessionIdFor(key))).rejects.toMatchObject({
        code: 'SESSION_NOT_FOUND',
      })
    }))

  it('docs: "Deleting the main key (no subpath) must cascade to all subkeys for that session"; a subkey alone deletes only itself', () =>
    withClaude(kind, async (claude, opened) => {
      const projectKey = opened.id('proj')
      const main = { projectKey, sessionId: 'gone' }
      const sub = { ...main, subpath: 'subagents/agent-1' }
      const kept = { projectKey, sessionId: 'kept' }
      await claude.append(main, [userEntry('gone', 1)])
      await claude.append(sub, [userEntry('gone', 2)])
      await claude.append(kept, [userEntry('kept', 1)])
      await claude.delete(sub)
      expect(await claude.load(sub)).toBeNull()
      expect(await claude.load(main)).toStrictEqual([userEntry('gone', 1)])
      await claude.append(sub, [userEntry('gone', 3)])
      await claude.delete(main)
      expect(await claude.load(main)).toBeNull()
      expect(await claude.load(sub)).toBeNull()
      expect(await claude.listSubkeys(main)).toStrictEqual([])
      expect((await claude.listSessions(projectKey)).map((s) => s.sessionId)).toStrictEqual(['kept'])
      // A deleted uuid is not a duplicate any more; deleting a key never written is no error.
      await claude.append(main, [userEntry('gone', 1)])
      expect(await claude.load(main)).toStrictEqual([userEntry('gone', 1)])
      await claude.delete({ projectKey, sessionId: 'never' })
    }))

  it('"The SDK never deletes from your store unless you call deleteSession()": listing and reading delete nothing', () =>
    withClaude(kind, async (claude, opened) => {
      const { dir, projectKey } = projectDir(opened, 'never-deletes')
      const key = { projectKey, sessionId: uuid(3) }
      const entries = [userEntry(uuid(3), 1), userEntry(uuid(3), 2)]
      await claude.append(key, entries)
      const deletes: SessionKey[] = []
      const watched = { ...claude, delete: (k: SessionKey) => (deletes.push(k), claude.delete(k)) }
      await listSessions({ dir, sessionStore: watched })
      await getSessionMessages(uuid(3), { dir, sessionStore: watched })
      expect(deletes).toStrictEqual([])
      expect(await claude.load(key)).toStrictEqual(entries)
    }))

  it('"List all subpath keys under a session (e.g., subagent transcripts)"', () =>
    withClaude(kind, async (claude, opened) => {
      const main = { projectKey: opened.id('proj'), sessionId: 'subs' }
      await claude.append(main, [userEntry('subs', 1)])
      await claude.append({ ...main, subpath: 'subagents/agent-a' }, [userEntry('subs', 2)])
      await claude.append({ ...main, subpath: 'subagents/agent-b' }, [userEntry('subs', 3)])
      await claude.append({ ...main, sessionId: 'other', subpath: 'subagents/agent-c' }, [
        userEntry('other', 1),
      ])
      expect((await claude.listSubkeys(main)).sort()).toStrictEqual([
        'subagents/agent-a',
        'subagents/agent-b',
      ])
      expect(await claude.listSubkeys({ ...main, sessionId: 'nothing' })).toStrictEqual([])
    }))

  it('"Used during resume to discover and materialize all subagent data": each listed subkey loads its own transcript', () =>
    withClaude(kind, async (claude, opened) => {
      const main = { projectKey: opened.id('proj'), sessionId: 'resume' }
      const written = new Map<string, SessionStoreEntry[]>()
      for (const [n, subpath] of [
        'subagents/agent-1',
        'subagents/agent-2',
        'subagents/workflows/w/agent-3',
      ].entries()) {
        const entries = [userEntry('resume', 10 * n + 1), userEntry('resume', 10 * n + 2)]
        written.set(subpath, entries)
        await claude.append({ ...main, subpath }, entries)
      }
      await claude.append(main, [userEntry('resume', 99)])
      const materialized = new Map<string, SessionStoreEntry[] | null>()
      for (const subpath of await claude.listSubkeys(main))
        materialized.set(subpath, await claude.load({ ...main, subpath }))
      expect(materialized).toStrictEqual(written)
      expect(await claude.load(main)).toStrictEqual([userEntry('resume', 99)])
    }))

  it('SessionKey.subpath: "Empty string is invalid — omit the field for the main transcript"; "Undefined = main transcript"', () =>
    withClaude(kind, async (claude, opened) => {
      const key = { projectKey: opened.id('proj'), sessionId: 'empty-sub' }
      await expect(claude.append({ ...key, subpath: '' }, [userEntry('e', 1)])).rejects.toSatisfy(
        (error) =>
          ClaudeStoreError.is(error) && error.code === 'INVALID_KEY' && error.details['field'] === 'subpath',
      )
      await expect(claude.load({ ...key, subpath: '' })).rejects.toMatchObject({ code: 'INVALID_KEY' })
      await claude.append({ ...key, subpath: undefined } as unknown as SessionKey, [userEntry('e', 1)])
      expect(await claude.load(key)).toStrictEqual([userEntry('e', 1)])
      expect(claude.sessionIdFor({ ...key, subpath: undefined } as unknown as SessionKey)).toBe(
        claude.sessionIdFor(key),
      )
    }))

  it('SessionKey.subpath: "Opaque to the adapter — just use it as a storage key suffix"', () =>
    withClaude(kind, async (claude, opened) => {
      const main = { projectKey: opened.id('proj'), sessionId: 'opaque' }
      const subpaths = [
        'subagents/agent-1',
        '../..',
        'a/b/../c',
        'ünï cödé 😀',
        'x'.repeat(500),
        'subagents/agent-1/',
      ]
      for (const [n, subpath] of subpaths.entries())
        await claude.append({ ...main, subpath }, [userEntry('opaque', n + 1)])
      expect((await claude.listSubkeys(main)).sort()).toStrictEqual([...subpaths].sort())
      for (const [n, subpath] of subpaths.entries()) {
        expect(await claude.load({ ...main, subpath })).toStrictEqual([userEntry('opaque', n + 1)])
      }
    }))

  it('SessionKey.projectKey: "Caller-defined scope ... Multi-tenant deployments should set this to a tenant ID"; long keys stay distinct', () =>
    withClaude(kind, async (claude, opened) => {
      const base = opened.id('tenant')
      const projects = [
        `${base}:acme`,
        `${base}:acme:`,
        `${base}/${'p'.repeat(240)}a`,
        `${base}/${'p'.repeat(240)}b`,
      ]
      for (const [n, projectKey] of projects.entries())
        await claude.append({ projectKey, sessionId: 's' }, [userEntry('s', n + 1)])
      for (const [n, projectKey] of projects.entries()) {
        expect(await claude.listSessions(projectKey)).toMatchObject([{ sessionId: 's' }])
        expect(await claude.load({ projectKey, sessionId: 's' })).toStrictEqual([userEntry('s', n + 1)])
      }
    }))

  it('SessionStoreEntry: "every entry has a string `type` discriminant": anything else is refused before anything is written', () =>
    withClaude(kind, async (claude, opened) => {
      const key = { projectKey: opened.id('proj'), sessionId: 'typed' }
      for (const bad of [{ notType: 1 }, { type: 7 }, null, [], 'user']) {
        await expect(claude.append(key, [userEntry('typed', 1), bad as never])).rejects.toMatchObject({
          code: 'INVALID_ENTRY',
          details: { index: 1 },
        })
      }
      expect(await claude.load(key)).toBeNull()
    }))
})

describe.each(crossProcessStoreKinds)('across processes over the %s store', (_name, kind) => {
  it('"Load a full session for resume. Called once, in the SDK parent, before subprocess spawn": a store opened afresh loads every acknowledged batch', async () => {
    const opened = await kind.open()
    const key = { projectKey: opened.id('proj'), sessionId: 'durable' }
    const claude = createClaudeSessionStore(opened.store, { owner: 'worker-1' })
    await claude.append(key, [userEntry('durable', 1)])
    await claude.append(key, [userEntry('durable', 2), titleEntry('durable', 't')])
    const other = await openStoreAt(opened.target!)
    const reader = createClaudeSessionStore(other.store, { owner: 'worker-2' })
    expect(await reader.load(key)).toStrictEqual([
      userEntry('durable', 1),
      userEntry('durable', 2),
      titleEntry('durable', 't'),
    ])
    await reader.close()
    await other.close()
    await claude.close()
    await opened.store.close()
    await opened.close()
  })

  it('"across concurrent processes, order is by storage commit time, not call time"; a replay from another process adds no duplicate', async () => {
    const opened = await kind.open()
    const key = { projectKey: opened.id('proj'), sessionId: 'commit-order' }
    const first = createClaudeSessionStore(opened.store, { owner: 'worker-1' })
    await first.append(key, [userEntry('c', 1)])
    const other = await openStoreAt(opened.target!)
    const second = createClaudeSessionStore(other.store, { owner: 'worker-2', takeover: true })
    // The second process commits entry 2 (taking the lease over), and replays entry 1.
    await second.append(key, [userEntry('c', 1), userEntry('c', 2)])
    // The first process's next batch, called later, is refused (its writer is fenced): not stored.
    await expect(first.append(key, [userEntry('c', 3)])).rejects.toMatchObject({ code: 'FENCED' })
    await second.append(key, [userEntry('c', 4)])
    expect(await second.load(key)).toStrictEqual([1, 2, 4].map((n) => userEntry('c', n)))
    expect((await other.store.verify(ledgerSessionId(key))).status).toBe('ok')
    await second.close()
    await other.close()
    await first.close()
    await opened.store.close()
    await opened.close()
  })
})
