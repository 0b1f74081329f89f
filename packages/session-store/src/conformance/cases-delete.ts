/**
 * Conformance cases of the `delete` capability (issue 27): complete removal, idempotence,
 * the live-lease refusal and `force`, forks surviving their parent, a listing that shows a
 * session whole or not at all, `unchangedSince` and `dryRun`. Skipped on a backend without it.
 */
import type { SessionBackend } from '../port.ts'
import type { SessionStore } from '../store-api.ts'
import { SessionStoreError } from '../session-store-error.ts'
import { deepEqual, equal, ok, rejects } from './assert.ts'
import { events, user, writeTurns } from './harness.ts'
import type { Case } from './harness.ts'

function hasDelete(backend: SessionBackend): boolean {
  return backend.capabilities.delete !== undefined
}

/** Ids of every listed session (all pages). */
async function listedIds(store: SessionStore): Promise<{ ids: string[]; problems: string[] }> {
  const ids: string[] = []
  const problems: string[] = []
  let cursor: string | undefined
  for (let page = 0; page < 1000; page += 1) {
    const result = await store.list({ limit: 1000, cursor })
    for (const session of result.sessions) ids.push(session.id)
    for (const problem of result.problems) problems.push(problem.id)
    if (result.cursor === null) break
    cursor = result.cursor
  }
  return { ids, problems }
}

export const DELETE_CASES: readonly Case[] = [
  {
    title:
      'delete: removes the session completely (head, header, reads, list); a second delete is "missing", not an error; the id can be created again, empty',
    run: async ({ store, backend, id }) => {
      if (!hasDelete(backend)) return
      const s = store()
      const sid = id('del')
      await writeTurns(s, sid)
      const first = await s.delete(sid)
      equal(first.outcome, 'deleted', 'outcome of the delete')
      ok(first.bytes > 0, `bytes freed is positive (found ${first.bytes})`)
      await rejects(() => backend.head(sid), 'SESSION_NOT_FOUND', 'head after delete')
      await rejects(() => backend.readHeader(sid), 'SESSION_NOT_FOUND', 'readHeader after delete')
      await rejects(() => s.openReader(sid), 'SESSION_NOT_FOUND', 'openReader after delete')
      await rejects(() => s.openWriter(sid), 'SESSION_NOT_FOUND', 'openWriter after delete')
      const listed = await listedIds(s)
      ok(!listed.ids.includes(sid) && !listed.problems.includes(sid), 'a deleted session is not listed')
      deepEqual(await s.delete(sid), { outcome: 'missing', bytes: 0 }, 'second delete')
      const again = await s.create({ id: sid })
      await again.close()
      equal((await events(s, sid)).length, 0, 'events of the re-created session')
    },
  },
  {
    title:
      'delete: refused with SESSION_LOCKED naming the holder and expiry while a live writer holds the lease (nothing removed); force deletes and that writer never writes again',
    run: async ({ store, backend, second, id }) => {
      if (!hasDelete(backend)) return
      const sid = id('locked')
      const writer = await store('holder').create({ id: sid })
      writer.append(user('still here'))
      await writer.flush()
      const other = store('deleter', await second())
      const refused = await rejects(() => other.delete(sid), 'SESSION_LOCKED', 'delete under a live lease')
      ok(typeof refused.details['holder'] === 'string', 'SESSION_LOCKED names the holder in details.holder')
      ok(
        typeof refused.details['expiresAt'] === 'string' &&
          Number.isFinite(Date.parse(refused.details['expiresAt'])),
        'SESSION_LOCKED names the lease expiry in details.expiresAt',
      )
      await rejects(
        () => other.delete(sid, { dryRun: true }),
        'SESSION_LOCKED',
        'a dry run under a live lease',
      )
      equal((await events(other, sid)).length, 1, 'events after the refused delete')
      equal((await other.delete(sid, { force: true })).outcome, 'deleted', 'forced delete')
      writer.append(user('too late'))
      let flushed = true
      try {
        await writer.flush()
      } catch (error) {
        ok(
          SessionStoreError.is(error),
          `the refused flush throws a SessionStoreError (found ${String(error)})`,
        )
        flushed = false
      }
      ok(!flushed, 'the writer of a force-deleted session cannot flush')
      await writer.close({ discardUnflushed: true }).catch(() => undefined)
      await rejects(() => other.openReader(sid), 'SESSION_NOT_FOUND', 'openReader after the forced delete')
    },
  },
  {
    title: 'delete: a fork stays whole after its parent is deleted (reads, verifies ok, reopens for write)',
    run: async ({ store, backend, id }) => {
      if (!hasDelete(backend)) return
      const s = store()
      const parent = id('parent')
      const child = id('child')
      await writeTurns(s, parent)
      await (await s.fork(parent, { to: child, atSeq: 2 })).close()
      const before = await events(s, child)
      equal((await s.delete(parent)).outcome, 'deleted', 'delete of the parent')
      deepEqual(await events(s, child), before, 'the fork reads the same events after the delete')
      equal((await s.verify(child)).status, 'ok', 'verify of the fork')
      const writer = await s.openWriter(child)
      writer.append(user('after the parent went'))
      await writer.close()
      const after = await events(s, child)
      deepEqual(after.slice(0, before.length), before, 'the fork keeps its events')
      equal(after.at(-1)?.type, 'user/message', 'the appended event is last')
    },
  },
  {
    title: 'delete: a listing taken while a session is deleted shows it whole or not at all',
    run: async ({ store, backend, second, id }) => {
      if (!hasDelete(backend)) return
      const s = store()
      const sid = id('whole')
      await writeTurns(s, sid)
      const reader = store('lister', await second())
      const deleting = s.delete(sid)
      let settled = false
      void deleting.then(
        () => (settled = true),
        () => (settled = true),
      )
      for (let round = 0; round < 50 && !settled; round += 1) {
        const page = await reader.list({ limit: 1000 })
        ok(
          !page.problems.some((problem) => problem.id === sid),
          `listing ${round}: no problem entry for ${sid}`,
        )
        const found = page.sessions.find((session) => session.id === sid)
        if (found !== undefined) {
          ok(
            found.events === undefined || found.events === 7,
            `listing ${round}: whole (7 events), found ${found.events}`,
          )
        }
      }
      equal((await deleting).outcome, 'deleted', 'outcome')
      ok(!(await listedIds(reader)).ids.includes(sid), 'not listed after the delete')
    },
  },
  {
    title: 'delete: unchangedSince keeps a session written after that time; dryRun measures without removing',
    run: async ({ store, backend, id }) => {
      if (!hasDelete(backend)) return
      const s = store()
      const sid = id('since')
      await writeTurns(s, sid)
      const head = await backend.head(sid)
      const earlier = new Date(Date.parse(head.updatedAt) - 60_000).toISOString()
      deepEqual(
        await s.delete(sid, { unchangedSince: earlier }),
        { outcome: 'kept', bytes: 0 },
        'written after',
      )
      const measured = await s.delete(sid, { dryRun: true })
      equal(measured.outcome, 'deleted', 'dry-run outcome')
      ok(measured.bytes > 0, 'dry run measures the bytes')
      equal((await events(s, sid)).length, 7, 'events after the dry run')
      const real = await s.delete(sid, { unchangedSince: head.updatedAt })
      deepEqual(real, measured, 'the delete frees what the dry run measured')
      await rejects(
        () => s.delete(sid, { unchangedSince: 'yesterday' }),
        'INVALID_OPTION',
        'an unchangedSince that is not a time',
      )
    },
  },
]
