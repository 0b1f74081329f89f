/**
 * The retention recipe of the package README ("Retention"), run exactly as written: it
 * removes idle sessions whose lease is not live (rows, lines, checkpoints, follower rows),
 * keeps the others, and is fenced-safe: a writer of a removed session writes nothing, even
 * one whose append was waiting on the session row while the recipe ran.
 */
import { readFileSync } from 'node:fs'

import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type { WriterLease } from '@agent-ledger/session-store'
import pg from 'pg'
import { expect, it } from 'vitest'

import { waitUntil } from '../../../tooling/test-time.ts'
import type { PostgresBackend } from '../src/index.ts'
import {
  crcOf,
  createRequest,
  describeOnServer,
  eventLines,
  sessionId,
  sqlOnce,
  storedRows,
  useDatabase,
} from './support/pg.ts'

/** The ```sql block of the README whose first line starts with `-- agent-ledger retention`. */
function readmeRecipe(): string {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
  const match = /```sql\n(-- agent-ledger retention[^\n]*\n[\s\S]*?)```/.exec(readme)
  if (match === null)
    throw new Error('README.md has no ```sql block starting with "-- agent-ledger retention"')
  return match[1]!
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (error) {
    if (SessionStoreError.is(error)) return error.code
    throw error
  }
  return 'resolved'
}

describeOnServer('PostgreSQL retention recipe', () => {
  let url: string
  let backend: PostgresBackend

  useDatabase((database) => ({ url, backend } = database))

  /** A session with 3 lines, written under a lease of `leaseMs`; idle for `idleDays` (its updated_at moved back). */
  async function session(
    prefix: string,
    options: { leaseMs: number; idleDays: number; release?: boolean },
  ): Promise<{ id: string; lease: WriterLease }> {
    const id = sessionId(prefix)
    await backend.create(createRequest(id))
    const { lease } = await backend.acquire(id, { owner: `${prefix}-writer`, leaseMs: options.leaseMs })
    const lines = eventLines(0, 3)
    await backend.append(lease, {
      expectedSeq: 0,
      lines,
      lastCrc: crcOf(lines[2] as string),
      batchId: `${id}:1`,
    })
    if (options.release === true) await backend.release(lease)
    await sqlOnce(
      url,
      `UPDATE ledger_sessions SET updated_at = clock_timestamp() - $2::integer * interval '1 day' WHERE session_id = $1`,
      [id, options.idleDays],
    )
    return { id, lease }
  }

  async function present(
    id: string,
  ): Promise<{ session: number; events: number; checkpoints: number; followers: number }> {
    const [row] = await sqlOnce<{
      session: string
      events: string
      checkpoints: string
      followers: string
    }>(
      url,
      `SELECT (SELECT count(*) FROM ledger_sessions WHERE session_id = $1) AS session,
                (SELECT count(*) FROM ledger_events WHERE session_id = $1) AS events,
                (SELECT count(*) FROM ledger_checkpoints WHERE session_id = $1) AS checkpoints,
                (SELECT count(*) FROM ledger_followers WHERE session_id = $1) AS followers`,
      [id],
    )
    return {
      session: Number(row!.session),
      events: Number(row!.events),
      checkpoints: Number(row!.checkpoints),
      followers: Number(row!.followers),
    }
  }

  it('removes idle sessions whose lease is released or expired (lines, checkpoint, followers too); keeps live leases and recent sessions; the expired writer then writes nothing', async () => {
    const released = await session('ret-released', { leaseMs: 60_000, idleDays: 31, release: true })
    const expired = await session('ret-expired', { leaseMs: 50, idleDays: 40 })
    await backend.capabilities.checkpoints!.putCheckpoint(expired.lease, {
      seq: 2,
      eventCrc: crcOf(eventLines(2, 1)[0] as string),
      headerCrc: '00000000',
      registryDigest: 'test',
      body: new Uint8Array([1, 2, 3]),
    })
    await sqlOnce(
      url,
      `INSERT INTO ledger_followers (session_id, follower, until) VALUES ($1, 'someone', clock_timestamp() + interval '1 minute')`,
      [expired.id],
    )
    const live = await session('ret-live', { leaseMs: 600_000, idleDays: 45 })
    const recent = await session('ret-recent', { leaseMs: 60_000, idleDays: 2, release: true })
    await new Promise((resolve) => setTimeout(resolve, 100)) // the 50 ms lease runs out
    expect(await present(expired.id)).toEqual({ session: 1, events: 3, checkpoints: 1, followers: 1 })

    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      // Several statements in one simple query: pg answers with one result per statement.
      const results = (await client.query(readmeRecipe())) as unknown as pg.QueryResult[]
      const counted = results.find((result) =>
        result.fields.some((field) => field.name === 'retired_sessions'),
      )
      expect(counted?.rows).toEqual([{ retired_sessions: '2' }])
    } finally {
      await client.end()
    }

    expect(await present(released.id)).toEqual({ session: 0, events: 0, checkpoints: 0, followers: 0 })
    expect(await present(expired.id)).toEqual({ session: 0, events: 0, checkpoints: 0, followers: 0 })
    expect(await present(live.id)).toMatchObject({ session: 1, events: 3 })
    expect(await present(recent.id)).toMatchObject({ session: 1, events: 3 })
    const late = eventLines(3, 1)
    expect(
      await codeOf(
        backend.append(expired.lease, {
          expectedSeq: 3,
          lines: late,
          lastCrc: crcOf(late[0] as string),
          batchId: 'late',
        }),
      ),
    ).toBe(SessionStoreErrorCode.SESSION_NOT_FOUND)
    expect(await storedRows(url, expired.id)).toEqual([])
    // The live writer goes on.
    const more = eventLines(3, 1)
    await backend.append(live.lease, {
      expectedSeq: 3,
      lines: more,
      lastCrc: crcOf(more[0] as string),
      batchId: 'more',
    })
    expect((await storedRows(url, live.id)).length).toBe(4)
  })

  it('an append that waits on the session row while the recipe runs matches nothing after its COMMIT: SESSION_NOT_FOUND, no orphan line', async () => {
    const target = await session('ret-race', { leaseMs: 50, idleDays: 31 })
    await new Promise((resolve) => setTimeout(resolve, 100))
    // The expired writer renews nothing; it simply appends (the epoch and owner still match the row).
    const recipe = readmeRecipe()
    const withoutCommit = recipe.replace(/\nCOMMIT;\s*$/, '\n')
    expect(withoutCommit).not.toBe(recipe)
    const retention = new pg.Client({ connectionString: url })
    await retention.connect()
    try {
      await retention.query(withoutCommit) // the rows are deleted, not yet committed: the session row stays locked
      const late = eventLines(3, 2)
      const appending = codeOf(
        backend.append(target.lease, {
          expectedSeq: 3,
          lines: late,
          lastCrc: crcOf(late[1] as string),
          batchId: 'race',
        }),
      )
      // Wait until the append is blocked on the session row lock, then commit the recipe.
      await waitUntil(
        'the append to wait on the session row',
        async () => {
          const [waiting] = await sqlOnce<{ n: string }>(
            url,
            `SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() AND application_name = 'agent-ledger'`,
          )
          return Number(waiting!.n) > 0
        },
        { pollMs: 25 },
      )
      await retention.query('COMMIT')
      expect(await appending).toBe(SessionStoreErrorCode.SESSION_NOT_FOUND)
      expect(await present(target.id)).toEqual({ session: 0, events: 0, checkpoints: 0, followers: 0 })
    } finally {
      await retention.end()
    }
  })
})
