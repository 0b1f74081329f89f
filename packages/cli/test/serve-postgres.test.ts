/**
 * `agent-ledger serve --store postgres://...` against the global setup's throwaway cluster:
 * the list (event counts as sizes, no password anywhere), a session page, search through the
 * PostgreSQL capability, and the live feed woken by LISTEN/NOTIFY while another store appends.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { createSessionStore } from '@agent-ledger/session-store'
import { openPostgresBackend } from '@agent-ledger/session-store-postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { testTime, waitUntil } from '../../../tooling/test-time.ts'
import { adminUrl, createDatabase, pgTitle } from './support/pg.ts'
import { feedUpdates, openFeed, raw, startServe } from './support/serve.ts'
import type { RunningServe } from './support/serve.ts'
import { cli, testStore, writeSession } from './support/sessions.ts'

const PASSWORD = 'pw-never-shown'

describe.skipIf(adminUrl === null)(pgTitle('serve on a PostgreSQL store'), () => {
  let root: string
  let url: string
  let serve: RunningServe
  const authed = (): Record<string, string> => ({ 'x-agent-ledger-token': serve.token })

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'al-serve-pg-'))
    const store = testStore(root)
    await writeSession(store, 'pg-a', { turns: 2 })
    await writeSession(store, 'pg-b', { turns: 1 })
    await store.close()
    url = await createDatabase(adminUrl!, PASSWORD)
    expect((await cli(['copy', root, url, '--no-progress'], { env: {} })).code).toBe(0)
    serve = await startServe(['--store', url], { env: {} })
  }, testTime(60_000))

  afterAll(async () => {
    if (serve !== undefined) expect(await serve.stop()).toBe(0)
    rmSync(root, { recursive: true, force: true })
  })

  it('lists the sessions with their event counts, names the store without its password, shows a session', async () => {
    const list = await raw(serve, '/', { headers: authed() })
    expect(list.status).toBe(200)
    expect([...list.body.matchAll(/<tr data-session="([^"]+)"/g)].map((match) => match[1]).sort()).toEqual([
      'pg-a',
      'pg-b',
    ])
    expect(list.body).toContain('15 events')
    expect(list.body).not.toContain(PASSWORD)
    const page = await raw(serve, '/session/pg-a', { headers: authed() })
    expect(page.body).toContain('events #0..#14 of 15')
    expect(page.body).toContain('File 2 says hello.')
    expect((await raw(serve, '/', {})).status).toBe(401)
  })

  it('search goes through the store and links each hit to its seq', async () => {
    const found = await raw(serve, '/search?q=says+hello', { headers: authed() })
    expect(found.body).toContain('href="/session/pg-a?seq=6#seq-6"')
    expect(found.body).toContain('href="/session/pg-b?seq=6#seq-6"')
  })

  it('the live feed wakes on an append by another store (LISTEN/NOTIFY)', async () => {
    const feed = await openFeed(serve, '/session/pg-b/live?after=7', authed())
    expect(feed.status).toBe(200)
    await waitUntil('the feed opens', () => feed.received().includes(': agent-ledger live feed'))
    const other = createSessionStore({
      backend: await openPostgresBackend({ connectionString: url }),
      clock: () => '2026-03-01T00:00:00.000Z',
      owner: 'another-worker',
    })
    try {
      const writer = await other.openWriter('pg-b')
      writer.append({
        type: 'user/message',
        data: { message: { role: 'user', content: 'written elsewhere' } },
      })
      await writer.close()
    } finally {
      await other.close()
    }
    await waitUntil('the append arrives', () => feed.received().includes('written elsewhere'), {
      detail: () => feed.received(),
    })
    expect(feedUpdates(feed.received()).at(-1)!.html).toContain('id="e8"')
    feed.close()
  })
})
