import pg from 'pg'
import { beforeAll, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { adminUrl, createDatabase, pgTitle } from './support/pg.ts'
import { cli } from './support/sessions.ts'

async function tables(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const result = await client.query<{ tablename: string }>(
      "SELECT tablename FROM pg_tables WHERE tablename LIKE 'ledger_%' ORDER BY tablename",
    )
    return result.rows.map((row) => row.tablename)
  } finally {
    await client.end()
  }
}

describe.skipIf(adminUrl === null)(pgTitle('agent-ledger db migrate'), () => {
  let url: string

  beforeAll(async () => {
    url = await createDatabase(adminUrl!)
  }, testTime(60_000))

  it('applies the schema once, then reports it current; --json gives the versions; the store URL can come from AGENT_LEDGER_STORE', async () => {
    const first = await cli(['db', 'migrate', '--store', url])
    expect(first).toMatchObject({ code: 0, stderr: '' })
    expect(first.stdout).toMatch(/applied migrations 1, 2, 3; schema at version 3\n$/)
    expect(await tables(url)).toEqual([
      'ledger_checkpoints',
      'ledger_events',
      'ledger_followers',
      'ledger_schema_migrations',
      'ledger_search_blocks',
      'ledger_search_progress',
      'ledger_sessions',
    ])
    const again = await cli(['db', 'migrate', '--store', url, '--json'])
    expect(again.code).toBe(0)
    expect(JSON.parse(again.stdout)).toMatchObject({ applied: [], version: 3 })
    process.env.AGENT_LEDGER_STORE = url
    try {
      const viaEnv = await cli(['db', 'migrate'])
      expect(viaEnv.code).toBe(0)
      expect(viaEnv.stdout).toContain('schema already at version 3')
    } finally {
      delete process.env.AGENT_LEDGER_STORE
    }
  })

  it('an unreachable server exits 2 naming host and database, never the password', async () => {
    const run = await cli(['db', 'migrate', '--store', 'postgres://ops:hunter2-secret@127.0.0.1:1/fleet'])
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(/^agent-ledger: BACKEND_FAILED: .*127\.0\.0\.1:1.*"fleet"/)
    expect(run.stderr).not.toContain('hunter2')
  })
})

describe('agent-ledger db (arguments)', () => {
  it('refuses a missing store, a non-postgres URL and an unknown action with exit 2 and what was expected', async () => {
    const saved = process.env.AGENT_LEDGER_STORE
    delete process.env.AGENT_LEDGER_STORE
    try {
      const none = await cli(['db', 'migrate'])
      expect(none.code).toBe(2)
      expect(none.stderr).toContain('expected --store <postgres-url> or AGENT_LEDGER_STORE, found neither')
    } finally {
      if (saved !== undefined) process.env.AGENT_LEDGER_STORE = saved
    }
    const wrong = await cli(['db', 'migrate', '--store', 'mysql://x@h/db'])
    expect(wrong.code).toBe(2)
    expect(wrong.stderr).toContain('expected a postgres:// or postgresql:// URL, found one starting "mysql"')
    const action = await cli(['db', 'drop', '--store', 'postgres://x@h/db'])
    expect(action.code).toBe(2)
    expect(action.stderr).toContain('expected the action "migrate", found "drop"')
  })
})
