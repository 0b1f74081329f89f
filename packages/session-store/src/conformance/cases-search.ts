/**
 * Conformance cases of `store.search` (issue 26): hits in every searchable field, all terms
 * required, quoted phrases, pages whose cursor holds across appends, a forked session, a
 * deleted session no longer hit, hostile text returned verbatim, typed option errors. The
 * same cases pass through a backend's `search` capability and through the core's scan.
 */
import type { SearchHit, SearchPage, SessionStore } from '../store-api.ts'
import { deepEqual, equal, ok, rejects } from './assert.ts'
import { user } from './harness.ts'
import type { Case } from './harness.ts'

/** A word no other case writes (the cases share a database on some backends). */
function tokenOf(sid: string): string {
  return `tok${sid.replace(/[^A-Za-z0-9]/gu, '')}`
}

/** Writes a session whose events carry `token` in every searchable field. */
async function writeSearchable(store: SessionStore, sid: string, token: string): Promise<void> {
  const writer = await store.create({ id: sid, header: { cwd: '/conformance' } })
  writer.append({ type: 'turn/start', data: { turn: 1 } })
  writer.append(user(`Please fix the Migration ${token} that broke on deploy`))
  writer.append({
    type: 'assistant/message',
    data: {
      message: {
        role: 'assistant',
        content: `Looking at the migration now ${token}`,
        tool_calls: [
          {
            id: 'c1',
            type: 'function',
            function: { name: `grep_${token}`, arguments: `{"pattern":"ALTER TABLE ${token}"}` },
          },
        ],
      },
    },
  })
  writer.append({
    type: 'tool/call',
    data: { callId: 'c1', name: `grep_${token}`, arguments: `{"pattern":"ALTER TABLE ${token}"}` },
  })
  writer.append({
    type: 'tool/result',
    data: {
      message: {
        role: 'tool',
        tool_call_id: 'c1',
        content: `db/007.sql: ALTER TABLE ${token} <script>alert(1)</script>`,
      },
    },
    sourceEventSeqs: [3],
  })
  writer.append({ type: 'turn/end', data: { turn: 1, reason: 'completed' } })
  await writer.close()
}

function keys(hits: readonly SearchHit[]): string[] {
  return hits.map((hit) => `${hit.sessionId}:${hit.seq}:${hit.field}`)
}

function matched(hit: SearchHit): string {
  return hit.snippet.slice(hit.match.start, hit.match.end)
}

/** Every page of a search, at `limit` hits per page (bounded by count). */
async function allPages(store: SessionStore, query: string, limit: number): Promise<SearchHit[]> {
  const hits: SearchHit[] = []
  let cursor: string | null = null
  for (let page = 0; page < 100; page += 1) {
    const result: SearchPage = await store.search(query, { limit, cursor })
    hits.push(...result.hits)
    if (result.nextCursor === null) return hits
    cursor = result.nextCursor
  }
  throw new Error(`search ${query} did not end within 100 pages`)
}

export const SEARCH_CASES: readonly Case[] = [
  {
    title:
      'search: finds message text, tool names, arguments and results, case-insensitively, in seq and field order, with the match marked in a verbatim snippet',
    run: async ({ store, id }) => {
      const s = store()
      const sid = id('find')
      const token = tokenOf(sid)
      await writeSearchable(s, sid, token)
      const page = await s.search(token.toUpperCase())
      deepEqual(
        keys(page.hits),
        [
          `${sid}:1:text`,
          `${sid}:2:text`,
          `${sid}:2:tool`,
          `${sid}:2:arguments`,
          `${sid}:3:tool`,
          `${sid}:3:arguments`,
          `${sid}:4:result`,
        ],
        'hits of the token across every field',
      )
      equal(page.nextCursor, null, 'nextCursor of a complete page')
      for (const hit of page.hits)
        equal(matched(hit).toLowerCase(), token.toLowerCase(), `match of ${hit.field} at ${hit.seq}`)
      const first = page.hits[0]
      equal(first?.eventType, 'user/message', 'eventType of the first hit')
      ok(typeof first?.at === 'string' && first.at.length > 0, 'the hit carries its event time')
      const result = page.hits.at(-1)
      equal(result?.eventType, 'tool/result', 'eventType of the result hit')
      ok(
        result?.snippet.includes('<script>alert(1)</script>') === true,
        `hostile text verbatim in the snippet: ${result?.snippet}`,
      )
      const hostile = await s.search('<script>', { sessionIds: [sid] })
      deepEqual(keys(hostile.hits), [`${sid}:4:result`], 'a search for markup')
      equal(hostile.hits[0] && matched(hostile.hits[0]), '<script>', 'the markup match')
      deepEqual(
        keys((await s.search(`grep_${token}`)).hits),
        [`${sid}:2:tool`, `${sid}:3:tool`],
        'a tool name',
      )
    },
  },
  {
    title: 'search: every term must match one field (AND); a quoted phrase matches its words in order',
    run: async ({ store, id }) => {
      const s = store()
      const sid = id('and')
      const token = tokenOf(sid)
      await writeSearchable(s, sid, token)
      deepEqual(keys((await s.search(`${token} deploy`)).hits), [`${sid}:1:text`], 'two terms')
      deepEqual(
        keys((await s.search(`deploy ${token} nowhere-word`)).hits),
        [],
        'a term that matches nothing',
      )
      deepEqual(
        keys((await s.search(`"alter table ${token}"`)).hits),
        [`${sid}:2:arguments`, `${sid}:3:arguments`, `${sid}:4:result`],
        'a phrase',
      )
      deepEqual(keys((await s.search(`"table alter" ${token}`)).hits), [], 'a phrase in the wrong order')
      const phrase = await s.search(`"MIGRATION ${token}"`, { sessionIds: [sid] })
      deepEqual(keys(phrase.hits), [`${sid}:1:text`], 'a phrase, case-insensitively')
      equal(phrase.hits[0] && matched(phrase.hits[0]), `Migration ${token}`, 'the phrase match')
    },
  },
  {
    title:
      'search: pages by cursor without repeating or skipping a hit, also when events are appended between pages; a bad cursor, an empty query or a bad limit is INVALID_OPTION naming it',
    run: async ({ store, id }) => {
      const s = store()
      const a = id('page-a')
      const b = id('page-b')
      const token = tokenOf(id('page'))
      await writeSearchable(s, a, token)
      await writeSearchable(s, b, token)
      const whole = await allPages(s, token, 1000)
      equal(whole.length, 14, 'hits of two sessions')
      deepEqual(keys(await allPages(s, token, 3)), keys(whole), 'pages of 3 hits')
      const first = await s.search(token, { limit: 5 })
      deepEqual(keys(first.hits), keys(whole.slice(0, 5)), 'first page')
      ok(first.nextCursor !== null, 'a full page has a cursor')
      const writer = await s.openWriter(a)
      writer.append(user(`later ${token}`))
      await writer.close()
      const rest = await allPages(s, token, 4)
      const resumed: SearchHit[] = []
      let cursor = first.nextCursor
      for (let page = 0; page < 100 && cursor !== null; page += 1) {
        const result = await s.search(token, { limit: 4, cursor })
        resumed.push(...result.hits)
        cursor = result.nextCursor
      }
      equal(rest.length, 15, 'hits after the append')
      deepEqual(
        keys(resumed),
        keys(rest).slice(5),
        'the pages after the cursor: the rest, the appended hit in its place',
      )
      ok(keys(resumed).includes(`${a}:6:text`), 'the appended event is hit')
      for (const bad of ['', '   ', '""'])
        await rejects(() => s.search(bad), 'INVALID_OPTION', `query ${JSON.stringify(bad)}`)
      const error = await s.search(token, { cursor: 'not-a-cursor' }).then(
        () => null,
        (thrown: unknown) => thrown as { code?: string; message?: string },
      )
      equal(error?.code, 'INVALID_OPTION', 'code of a bad cursor')
      ok(
        error?.message?.includes('cursor') === true && error.message.includes('not-a-cursor'),
        `the message names the cursor: ${error?.message}`,
      )
      await rejects(() => s.search(token, { limit: 0 }), 'INVALID_OPTION', 'limit 0')
      await rejects(() => s.search(token, { sessionIds: ['../x'] }), 'INVALID_SESSION_ID', 'a bad session id')
    },
  },
  {
    title:
      'search: a forked session is hit for its inherited events too; a deleted session is no longer hit; sessionIds narrows',
    run: async ({ store, backend, id }) => {
      const s = store()
      const parent = id('parent')
      const child = id('child')
      const token = tokenOf(id('fork'))
      await writeSearchable(s, parent, token)
      const forked = await s.fork(parent, { to: child, atSeq: 2 })
      forked.append(user(`child only ${token}`))
      await forked.close()
      const hits = await allPages(s, token, 1000)
      const ofChild = keys(hits.filter((hit) => hit.sessionId === child))
      ok(
        ofChild.includes(`${child}:1:text`) && ofChild.includes(`${child}:2:tool`),
        `inherited hits of the child: ${ofChild.join(' ')}`,
      )
      ok(
        ofChild.some((key) => key.endsWith(':text') && !key.endsWith(':1:text') && !key.endsWith(':2:text')),
        "the child's own hit",
      )
      deepEqual(
        [...new Set(hits.map((hit) => hit.sessionId))],
        [child, parent].sort(),
        'sessions hit, in id order',
      )
      deepEqual(
        keys((await s.search(token, { sessionIds: [parent] })).hits),
        keys(hits.filter((hit) => hit.sessionId === parent)),
        'sessionIds: the parent only',
      )
      if (backend.capabilities.delete === undefined) return
      await s.delete(child)
      const after = await allPages(s, token, 1000)
      deepEqual(
        keys(after),
        keys(hits.filter((hit) => hit.sessionId === parent)),
        'hits after the child was deleted',
      )
      deepEqual(
        (await s.search(token, { sessionIds: [child] })).hits,
        [],
        'a deleted session asked for by id',
      )
    },
  },
]
