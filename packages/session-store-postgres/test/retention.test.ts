/**
 * Delete and retention through the port on PostgreSQL (issue 27; RELIABILITY D3, D4):
 * `store.prune` removes idle sessions whose lease is not live (rows, lines, checkpoints,
 * follower rows) and keeps the others; it is fenced-safe: a writer of a removed session
 * writes nothing, even one whose append was waiting on the session row while the delete
 * ran; a server process killed in the middle of a delete rolls all of it back.
 */
import { createSessionStore, SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type { WriterLease } from '@agent-ledger/session-store'
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

  const DAY = 86_400_000

  it('prune (older than 30 days) removes idle sessions whose lease is released or expired (lines, checkpoint, followers too), keeps live leases and recent sessions, reports the bytes; the expired writer then writes nothing', async () => {
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
    await waitUntil(
      'the 50 ms lease to run out',
      async () => (await backend.head(expired.id)).owner === null,
      {
        pollMs: 25,
      },
    )
    expect(await present(expired.id)).toEqual({ session: 1, events: 3, checkpoints: 1, followers: 1 })
    const [sizes] = await sqlOnce<{ bytes: string }>(
      url,
      `SELECT sum(octet_length(header_line) + 1 + (SELECT sum(octet_length(line) + 1) FROM ledger_events e WHERE e.session_id = s.session_id))::text AS bytes
         FROM ledger_sessions s WHERE session_id = ANY($1)`,
      [[released.id, expired.id]],
    )

    const store = createSessionStore({ backend, clock: () => new Date().toISOString() })
    const dry = await store.prune({ olderThanMs: 30 * DAY, dryRun: true })
    const report = await store.prune({ olderThanMs: 30 * DAY })
    const ours = (ids: readonly { id: string }[]) =>
      ids
        .map((entry) => entry.id)
        .filter((id) => id.startsWith('ret-'))
        .sort()
    expect(ours(dry.deleted)).toEqual(ours(report.deleted))
    expect(ours(report.deleted)).toEqual([expired.id, released.id].sort())
    expect(report.skipped.filter((skip) => skip.id === live.id)).toMatchObject([
      { reason: 'live-lease', holder: 'ret-live-writer' },
    ])
    const freed = report.deleted
      .filter((entry) => entry.id === released.id || entry.id === expired.id)
      .reduce((sum, entry) => sum + entry.bytes, 0)
    expect(freed).toBe(Number(sizes!.bytes) + 3) // + the checkpoint body's 3 bytes

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

  /**
   * Installs a trigger that holds the first delete of a session's lines mid-transaction
   * (after the row and the lines are deleted, before COMMIT), sleeping until a row appears in
   * `<name>_go` (each `SELECT` of a volatile function sees what others committed since).
   */
  async function pauseAfterLineDelete(name: string): Promise<() => Promise<void>> {
    await sqlOnce(url, `CREATE SEQUENCE IF NOT EXISTS ${name}_once`)
    await sqlOnce(url, `CREATE TABLE IF NOT EXISTS ${name}_go (go boolean)`)
    await sqlOnce(
      url,
      `CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF nextval('${name}_once') = 1 THEN
           LOOP EXIT WHEN EXISTS (SELECT 1 FROM ${name}_go); PERFORM pg_sleep(0.05); END LOOP;
         END IF;
         RETURN NULL;
       END $$`,
    )
    await sqlOnce(
      url,
      `CREATE TRIGGER ${name} AFTER DELETE ON ledger_events FOR EACH STATEMENT EXECUTE FUNCTION ${name}()`,
    )
    return async () => {
      await sqlOnce(url, `INSERT INTO ${name}_go VALUES (true)`)
    }
  }

  async function sleepingPid(): Promise<number> {
    let pid: number | undefined
    await waitUntil(
      'the delete to sleep in its trigger',
      async () => {
        const rows = await sqlOnce<{ pid: number }>(
          url,
          "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep'",
        )
        pid = rows[0]?.pid
        return pid !== undefined
      },
      { pollMs: 25 },
    )
    return pid!
  }

  it('D4: the server process of a delete killed between its statements (row and lines deleted, not committed) leaves the session whole; the next delete removes it', async () => {
    const target = await session('ret-kill', { leaseMs: 60_000, idleDays: 0, release: true })
    const before = await storedRows(url, target.id)
    const headBefore = await backend.head(target.id)
    const release = await pauseAfterLineDelete('delete_pause')
    try {
      const deleting = backend.capabilities.delete!.delete(target.id)
      deleting.catch(() => undefined)
      const pid = await sleepingPid()
      // Mid-transaction: the row and the lines are deleted, not committed; everybody else sees the session whole.
      expect(await present(target.id)).toMatchObject({ session: 1, events: 3 })
      const [killed] = await sqlOnce<{ ok: boolean }>(url, 'SELECT pg_terminate_backend($1, 10000) AS ok', [
        pid,
      ])
      expect(killed?.ok).toBe(true)
      expect(
        SessionStoreError.is(
          await deleting.then(
            () => null,
            (error: unknown) => error,
          ),
        ),
      ).toBe(true)
      expect(await present(target.id)).toMatchObject({ session: 1, events: 3 })
      // Whole: every line as it was, the same head, and it still takes a lease.
      expect(await storedRows(url, target.id)).toEqual(before)
      expect(await backend.head(target.id)).toMatchObject({
        nextSeq: headBefore.nextSeq,
        lastCrc: headBefore.lastCrc,
      })
      const { lease } = await backend.acquire(target.id, { owner: 'after-kill', leaseMs: 60_000 })
      await backend.release(lease)
      const store = createSessionStore({ backend, clock: () => new Date().toISOString() })
      expect(await store.delete(target.id)).toMatchObject({ outcome: 'deleted' })
      expect(await present(target.id)).toEqual({ session: 0, events: 0, checkpoints: 0, followers: 0 })
      expect(await store.delete(target.id)).toEqual({ outcome: 'missing', bytes: 0 })
    } finally {
      await release()
      await sqlOnce(url, 'DROP TRIGGER IF EXISTS delete_pause ON ledger_events')
    }
  })

  it('an append that waits on the session row while a delete runs matches nothing after its COMMIT: SESSION_NOT_FOUND, no orphan line', async () => {
    const target = await session('ret-race', { leaseMs: 50, idleDays: 31 })
    await waitUntil(
      'the 50 ms lease to run out',
      async () => (await backend.head(target.id)).owner === null,
      {
        pollMs: 25,
      },
    )
    const release = await pauseAfterLineDelete('race_pause')
    try {
      // The delete holds the session row (deleted, not committed) while it waits; the expired
      // writer renews nothing, it simply appends (its epoch and owner still match the row).
      const deleting = backend.capabilities.delete!.delete(target.id)
      deleting.catch(() => undefined)
      await sleepingPid()
      const late = eventLines(3, 2)
      const appending = codeOf(
        backend.append(target.lease, {
          expectedSeq: 3,
          lines: late,
          lastCrc: crcOf(late[1] as string),
          batchId: 'race',
        }),
      )
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
      await release()
      expect(await deleting).toMatchObject({ outcome: 'deleted' })
      expect(await appending).toBe(SessionStoreErrorCode.SESSION_NOT_FOUND)
      expect(await present(target.id)).toEqual({ session: 0, events: 0, checkpoints: 0, followers: 0 })
    } finally {
      await release()
      await sqlOnce(url, 'DROP TRIGGER IF EXISTS race_pause ON ledger_events')
    }
  })
})
