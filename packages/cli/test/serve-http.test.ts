/**
 * `agent-ledger serve` over HTTP, in process: one server on a temp JSONL store for the file.
 * The guard (token, Host, Origin), no CORS, the CSP, read-only, hostile content escaped,
 * the list's pages, filters and sorts, a session in seq pages, and the live feed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { EventInput } from '@agent-ledger/session-events'

import { waitUntil } from '../../../tooling/test-time.ts'
import { CliErrorCode } from '../src/cli-error.ts'
import { cli, makeRoot, testStore, writeCrashedSession, writeSession } from './support/sessions.ts'
import { feedUpdates, openFeed, raw, startServe } from './support/serve.ts'
import type { RunningServe } from './support/serve.ts'

const HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 1">'

const { root, cleanup } = makeRoot('al-serve-http-')
let serve: RunningServe
const store = testStore(root)

/** Headers that carry the token the way the browser does after the first visit. */
function authed(extra: Record<string, string> = {}): Record<string, string> {
  return { cookie: `agent-ledger-token-${serve.port}=${serve.token}`, ...extra }
}

beforeAll(async () => {
  // Three headed sessions with known days, sources and cwds; a fork; a crashed one (open turn).
  await writeSession(store, 'native-old', { turns: 1 })
  const imported = await store.create({
    id: 'imported-claude',
    header: {
      createdAt: '2026-03-10T09:00:00.000Z',
      cwd: '/home/dev/webapp',
      metadata: { source: { format: 'claude-code' } },
    },
  })
  imported.append({ type: 'turn/start', data: { turn: 1 } })
  imported.append({ type: 'user/message', data: { message: { role: 'user', content: 'migrate the db' } } })
  imported.append({
    type: 'assistant/message',
    data: {
      message: { role: 'assistant', content: 'done' },
      usage: { prompt_tokens: 5000, completion_tokens: 700 },
    },
  })
  imported.append({ type: 'turn/end', data: { turn: 1, reason: 'completed' } })
  await imported.close()
  const fork = await store.fork('imported-claude', { to: 'forked-child', atSeq: 1 })
  await fork.close()
  await writeCrashedSession(store, 'crashed')
  // Hostile text everywhere a log can carry it.
  const hostile = await store.create({ id: 'hostile', header: { cwd: HOSTILE } })
  hostile.append({ type: 'turn/start', data: { turn: 1 } })
  hostile.append({ type: 'user/message', data: { message: { role: 'user', content: HOSTILE } } })
  hostile.append({
    type: 'assistant/message',
    data: {
      message: {
        role: 'assistant',
        content: HOSTILE,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: HOSTILE, arguments: HOSTILE } }],
      },
    },
  })
  hostile.append({
    type: 'tool/result',
    data: { message: { role: 'tool', tool_call_id: 'c1', content: HOSTILE } },
  })
  hostile.append({ type: 'turn/end', data: { turn: 1, reason: 'completed' } })
  await hostile.close()
  // A long session: 1 + 31 * 7 = 218 events, two pages of 200.
  await writeSession(store, 'long', { turns: 31 })
  // Header-only sessions, enough for a second page of the list (50 a page).
  for (let index = 0; index < 46; index += 1) {
    const writer = await store.create({
      id: `bulk-${String(index).padStart(2, '0')}`,
      header: { createdAt: `2025-06-01T00:00:${String(index).padStart(2, '0')}.000Z` },
    })
    await writer.close()
  }
  serve = await startServe([root])
})

afterAll(async () => {
  expect(await serve.stop()).toBe(0)
  await store.close()
  cleanup()
})

describe('serve: the guard', () => {
  it('prints a loopback URL with a random token, and refuses every request without it (401, no content)', async () => {
    expect(serve.url.hostname).toBe('127.0.0.1')
    expect(serve.token).toMatch(/^[\w-]{43}$/)
    for (const path of [
      '/',
      '/session/hostile',
      '/session/long/live',
      '/search?q=db',
      '/static/app.js',
      '/nope',
    ]) {
      const response = await raw(serve, path)
      expect(response.status, path).toBe(401)
      expect(response.body).not.toMatch(/native-old|hostile|migrate|EventSource/)
    }
  })

  it('a wrong token gets 403 wherever it is carried', async () => {
    const wrong = 'x'.repeat(43)
    for (const headers of [
      { cookie: `agent-ledger-token-${serve.port}=${wrong}` },
      { 'x-agent-ledger-token': wrong },
      { authorization: `Bearer ${wrong}` },
    ]) {
      const response = await raw(serve, '/', { headers })
      expect(response.status).toBe(403)
      expect(response.body).not.toContain('native-old')
    }
    expect((await raw(serve, `/?token=${wrong}`)).status).toBe(403)
  })

  it('the query token once: 303 to the same page without it, setting an HttpOnly SameSite=Strict cookie', async () => {
    const response = await raw(serve, `/?sort=size&token=${serve.token}`)
    expect(response.status).toBe(303)
    expect(response.headers.location).toBe('/?sort=size')
    const cookie = String(response.headers['set-cookie'])
    expect(cookie).toContain(`agent-ledger-token-${serve.port}=${serve.token}`)
    expect(cookie).toMatch(/HttpOnly/)
    expect(cookie).toMatch(/SameSite=Strict/)
    expect((await raw(serve, '/', { headers: authed() })).status).toBe(200)
    expect((await raw(serve, '/', { headers: { 'x-agent-ledger-token': serve.token } })).status).toBe(200)
    expect((await raw(serve, '/', { headers: { authorization: `Bearer ${serve.token}` } })).status).toBe(200)
  })

  it('a Host header other than the bound address is refused even with the token (DNS rebinding)', async () => {
    for (const host of ['evil.example:' + serve.port, `127.0.0.1:${serve.port + 1}`, 'evil.example']) {
      const response = await raw(serve, '/', { headers: authed({ host }) })
      expect(response.status, host).toBe(403)
      expect(response.body).not.toContain('native-old')
    }
    expect((await raw(serve, '/', { headers: authed({ host: `localhost:${serve.port}` }) })).status).toBe(200)
  })

  it('a foreign Origin or a cross-site fetch is refused; the own origin is fine', async () => {
    for (const origin of ['http://evil.example', `http://127.0.0.1:${serve.port + 1}`, 'null']) {
      const response = await raw(serve, '/session/hostile', { headers: authed({ origin }) })
      expect(response.status, origin).toBe(403)
      expect(response.body).not.toContain('Session hostile')
    }
    for (const site of ['cross-site', 'same-site']) {
      expect((await raw(serve, '/', { headers: authed({ 'sec-fetch-site': site }) })).status, site).toBe(403)
    }
    expect((await raw(serve, '/', { headers: authed({ 'sec-fetch-site': 'same-origin' }) })).status).toBe(200)
    expect((await raw(serve, '/', { headers: authed({ origin: `http://${serve.host}` }) })).status).toBe(200)
  })

  it('no CORS header on any answer, a strict CSP on every one, and no state-changing method', async () => {
    const answers = [
      await raw(serve, '/'),
      await raw(serve, '/', { headers: authed() }),
      await raw(serve, '/session/long', { headers: authed() }),
      await raw(serve, '/', { method: 'OPTIONS', headers: authed({ origin: `http://${serve.host}` }) }),
      await raw(serve, '/', { method: 'POST', headers: authed() }),
    ]
    for (const answer of answers) {
      expect(Object.keys(answer.headers).filter((name) => name.startsWith('access-control-'))).toEqual([])
      const csp = String(answer.headers['content-security-policy'])
      expect(csp).toContain("default-src 'none'")
      expect(csp).toContain("script-src 'self'")
      expect(csp).not.toMatch(/script-src[^;]*unsafe-inline/)
    }
    expect(answers[3]!.status).toBe(405)
    expect(answers[4]!.status).toBe(405)
    expect((await raw(serve, '/', { method: 'POST' })).status).toBe(401)
  })

  it('a host other than loopback without --token refuses to start (TOKEN_REQUIRED, exit 2), nothing listens', async () => {
    const run = await cli(['serve', root, '--host', '0.0.0.0', '--port', '0'])
    expect(run.code).toBe(2)
    expect(run.stderr).toContain(CliErrorCode.TOKEN_REQUIRED)
    expect(run.stderr).toContain('--token')
    expect(run.stdout).toBe('')
    const taken = await cli(['serve', root, '--port', String(serve.port)])
    expect(taken.code).toBe(2)
    expect(taken.stderr).toContain('IO_ERROR')
    expect(taken.stderr).toContain('the port is taken')
    const short = await cli(['serve', root, '--host', '0.0.0.0', '--token', 'short', '--port', '0'])
    expect(short.code).toBe(2)
    expect(short.stderr).toContain('at least 16 characters')
  })
})

describe('serve: pages', () => {
  it('hostile session content is escaped on the session page and in the list', async () => {
    const page = await raw(serve, '/session/hostile', { headers: authed() })
    expect(page.status).toBe(200)
    expect(page.body).not.toContain('<script>window.__pwned')
    expect(page.body).not.toMatch(/<img[^>]*onerror/)
    expect(page.body).toContain('&lt;script&gt;window.__pwned = 1&lt;/script&gt;')
    // The only script is the app's own file.
    expect([...page.body.matchAll(/<script\b[^>]*>/g)].map((match) => match[0])).toEqual([
      '<script src="/static/app.js" defer>',
    ])
    const list = await raw(serve, '/?source=native', { headers: authed() })
    expect(list.body).not.toContain('<script>window')
    expect(list.body).toContain('&lt;img src=x onerror=')
  })

  it('the list: newest first, 50 a page, a second page with the rest', async () => {
    const ids = (body: string): string[] =>
      [...body.matchAll(/<tr data-session="([^"]+)"/g)].map((match) => match[1]!)
    const first = await raw(serve, '/', { headers: authed() })
    const second = await raw(serve, '/?page=2', { headers: authed() })
    const page1 = ids(first.body)
    const page2 = ids(second.body)
    expect(page1).toHaveLength(50)
    expect(page2).toHaveLength(52 - 50)
    expect(new Set([...page1, ...page2]).size).toBe(52)
    // The bulk sessions are from 2025 and come last, newest of them first.
    expect(page2).toEqual(['bulk-01', 'bulk-00'])
    expect(page1.indexOf('imported-claude')).toBeLessThan(page1.indexOf('bulk-45'))
    expect(first.body).toContain('page 1 of 2 (52 sessions')
    expect(first.body).toContain('Listed from the session headers only')
  })

  it('the list filters by source, cwd, date range and status, and sorts by tokens', async () => {
    const ids = async (query: string): Promise<string[]> =>
      [...(await raw(serve, query, { headers: authed() })).body.matchAll(/<tr data-session="([^"]+)"/g)].map(
        (match) => match[1]!,
      )
    expect(await ids('/?source=claude-code')).toEqual(expect.arrayContaining(['imported-claude']))
    expect(
      (await ids('/?source=claude-code')).every((id) => ['imported-claude', 'forked-child'].includes(id)),
    ).toBe(true)
    expect(await ids('/?source=native')).not.toContain('imported-claude')
    expect(await ids('/?cwd=webapp')).toEqual(expect.arrayContaining(['imported-claude']))
    expect(await ids('/?cwd=webapp')).not.toContain('native-old')
    expect(await ids('/?from=2026-03-10&to=2026-03-10')).toEqual(['imported-claude'])
    expect(await ids('/?status=forked')).toEqual(['forked-child'])
    expect(await ids('/?status=open-turn')).toEqual(['crashed'])
    const byTokens = await ids('/?sort=tokens')
    expect(byTokens[0]).toBe('imported-claude')
    expect((await raw(serve, '/?sort=tokens', { headers: authed() })).body).toContain('read every listed log')
  })

  it('a session in pages of 200 events: the first page, the next one, the page of a seq, the stats panel', async () => {
    const first = await raw(serve, '/session/long', { headers: authed() })
    expect(first.body).toContain('events #0..#199 of 218')
    expect(first.body).toContain('id="e199"')
    expect(first.body).not.toContain('id="e200"')
    expect(first.body).toContain('class="summary"')
    expect(first.body).toContain('data-live="0"')
    const next = await raw(serve, '/session/long?from=200', { headers: authed() })
    expect(next.body).toContain('events #200..#217 of 218')
    expect(next.body).toContain('data-live="1"')
    expect(next.body).not.toContain('id="e199"')
    const bySeq = await raw(serve, '/session/long?seq=205', { headers: authed() })
    expect(bySeq.body).toContain('id="e205"')
    const past = await raw(serve, '/session/long?from=5000', { headers: authed() })
    expect(past.body).toContain('events #200..#217 of 218')
    expect((await raw(serve, '/session/missing', { headers: authed() })).status).toBe(404)
    expect((await raw(serve, '/session/%E0%A4%A', { headers: authed() })).status).toBe(404)
  })

  it('a fork links its parent, and the parent its forks', async () => {
    const parent = await raw(serve, '/session/imported-claude', { headers: authed() })
    expect(parent.body).toContain('forks: <a href="/session/forked-child">forked-child</a>')
    const child = await raw(serve, '/session/forked-child', { headers: authed() })
    expect(child.body).toContain('fork of <a href="/session/imported-claude">imported-claude</a>')
  })
})

describe('serve: search', () => {
  it('hits in context, marked and escaped, each linked to the page of its seq', async () => {
    const found = await raw(serve, '/search?q=migrate', { headers: authed() })
    expect(found.status).toBe(200)
    expect(found.body).toContain('href="/session/imported-claude?seq=1#seq-1"')
    expect(found.body).toContain('<mark>migrate</mark> the db')
    const hostile = await raw(serve, '/search?q=pwned', { headers: authed() })
    expect(hostile.body).toContain('href="/session/hostile?seq=1#seq-1"')
    expect(hostile.body).not.toContain('<script>window')
    expect(hostile.body).toMatch(/&lt;script&gt;window\.__<mark>pwned<\/mark>/)
    const none = await raw(serve, '/search?q=nothing-matches-this', { headers: authed() })
    expect(none.body).toContain('No hits')
    const refused = await raw(serve, '/search?q=db&cursor=forged', { headers: authed() })
    expect(refused.status).toBe(400)
    expect(refused.body).toContain('The store refused this search')
  })
})

describe('serve: live', () => {
  it('the live feed sends the HTML of events appended after the page, fed by store.follow', async () => {
    const page = await raw(serve, '/session/native-old', { headers: authed() })
    const lastSeq = Number(/data-last-seq="(\d+)"/.exec(page.body)![1])
    const feed = await openFeed(serve, `/session/native-old/live?after=${lastSeq}`, authed())
    expect(feed.status).toBe(200)
    await waitUntil('the feed opens', () => feed.received().includes(': agent-ledger live feed'))
    const writer = await store.openWriter('native-old')
    const appended: EventInput[] = [
      { type: 'turn/start', data: { turn: 9 } },
      { type: 'user/message', data: { message: { role: 'user', content: `a live <b>${HOSTILE}</b> line` } } },
    ]
    for (const input of appended) writer.append(input)
    await writer.close()
    await waitUntil('the appended message arrives', () => feed.received().includes('a live &lt;b&gt;'), {
      detail: () => feed.received(),
    })
    const update = feedUpdates(feed.received()).at(-1)!
    expect(update.lastSeq).toBeGreaterThan(lastSeq)
    expect(update.html).not.toContain('<script>window')
    expect(update.html).toContain(`id="e${lastSeq + 1}"`)
    feed.close()
    // A reconnect resumes after the browser's Last-Event-ID: nothing it already has is sent again.
    const resumed = await openFeed(
      serve,
      `/session/native-old/live?after=${lastSeq}`,
      authed({ 'last-event-id': String(update.lastSeq) }),
    )
    await waitUntil('the feed reopens', () => resumed.received().includes(': agent-ledger live feed'))
    const again = await store.openWriter('native-old')
    again.append({
      type: 'user/message',
      data: { message: { role: 'user', content: 'after the reconnect' } },
    })
    await again.close()
    await waitUntil('the next message arrives', () => resumed.received().includes('after the reconnect'))
    const updates = feedUpdates(resumed.received())
    expect(updates.map((entry) => entry.html).join('')).not.toContain(`id="e${lastSeq + 1}"`)
    expect(updates[0]!.html).toContain(`id="e${update.lastSeq + 1}"`)
    resumed.close()
  })
})
