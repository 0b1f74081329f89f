/**
 * Conformance cases: seqs, durability, leases, fencing and the append contract.
 */
import type { SessionStore } from '../store-api.ts'
import { checkError, deepEqual, equal, ok, rejects, throws } from './assert.ts'
import { events, lines, user, writeTurns } from './harness.ts'
import type { Case } from './harness.ts'

/** Seqs, durability, leases and fencing. */
export const LEASE_CASES: readonly Case[] = [
  {
    title: 'dense seq: events get 0, 1, 2... across flushes and the head agrees',
    run: async ({ store, backend, id }) => {
      const s = store()
      const sid = id('dense')
      await writeTurns(s, sid)
      const found = await events(s, sid)
      deepEqual(
        found.map((event) => event.seq),
        [0, 1, 2, 3, 4, 5, 6],
        'seqs read back',
      )
      const stored: number[] = []
      for await (const line of backend.read(sid, { fromSeq: 0 })) stored.push(line.seq)
      deepEqual(stored, [0, 1, 2, 3, 4, 5, 6], 'stored positions')
      equal((await backend.head(sid)).nextSeq, 7, 'head.nextSeq')
    },
  },
  {
    title:
      'acknowledged means durable: a new backend instance over the same storage reads every flushed line',
    run: async ({ harness, store, backend, id }) => {
      if (harness.reopen === undefined) return
      const sid = id('durable')
      const writer = await store().create({ id: sid })
      writer.append({ type: 'turn/start', data: { turn: 1 } })
      writer.append(user('remember me'))
      await writer.flush()
      const written = await lines(backend, sid)
      // No close, no release: the flush alone must have made them durable.
      const reopened = await harness.reopen()
      deepEqual(await lines(reopened, sid), written, 'lines after reopen')
      const head = await reopened.head(sid)
      equal(head.nextSeq, 2, 'head.nextSeq after reopen')
      const again = await events(store('reader', reopened), sid)
      equal(again[1]?.type, 'user/message', 'event 1 type after reopen')
    },
  },
  {
    title: 'two writers: exactly one gets the lease; the other is SESSION_LOCKED naming the holder',
    run: async ({ store, second, id }) => {
      const sid = id('two')
      await (await store('writer-a').create({ id: sid })).close()
      const other = await second()
      const results = await Promise.allSettled([
        store('writer-a').openWriter(sid),
        store('writer-b', other).openWriter(sid),
      ])
      const granted = results.filter((result) => result.status === 'fulfilled')
      const refused = results.filter((result) => result.status === 'rejected')
      equal(granted.length, 1, 'writers granted')
      equal(refused.length, 1, 'writers refused')
      const error = checkError(
        (refused[0] as PromiseRejectedResult).reason,
        'SESSION_LOCKED',
        'second writer',
      )
      ok(typeof error.details['holder'] === 'string', 'SESSION_LOCKED names the holder in details.holder')
      await (
        granted[0] as PromiseFulfilledResult<Awaited<ReturnType<SessionStore['openWriter']>>>
      ).value.close()
    },
  },
  {
    title:
      'stale lease takeover: after the lease expires another owner acquires and the old writer is fenced',
    run: async ({ store, second, id, advance, options }) => {
      const leaseMs = options.leaseMs ?? 2000
      const sid = id('stale')
      await (await store('a', undefined, leaseMs).create({ id: sid })).close()
      const first = await store('a', undefined, leaseMs).openWriter(sid)
      await rejects(
        () => store('b', undefined, leaseMs).openWriter(sid),
        'SESSION_LOCKED',
        'open while the lease is live',
      )
      await advance(Math.ceil(leaseMs * 1.5))
      const takeover = await store('b', await second(), leaseMs).openWriter(sid)
      ok(takeover.epoch > first.epoch, 'the new epoch is greater than the old one')
      first.append(user('late'))
      await rejects(() => first.flush(), 'FENCED', 'flush by the expired writer')
      equal(first.state, 'fenced', 'old writer state')
      await takeover.close()
      await first.close()
    },
  },
  {
    title: 'forced takeover: takeover fences a live writer; its append is refused with nothing written',
    run: async ({ store, second, backend, id }) => {
      const sid = id('forced')
      const first = await store('a').create({ id: sid })
      first.append({ type: 'turn/start', data: { turn: 1 } })
      await first.flush()
      const thief = await store('b', await second()).openWriter(sid, { takeover: true })
      // The thief's open closed the turn the first writer left open (a durable repair).
      const before = await lines(backend, sid)
      first.append(user('from the fenced writer'))
      await rejects(() => first.flush(), 'FENCED', 'flush by the fenced writer')
      throws(() => first.append(user('again')), 'FENCED', 'append after fencing')
      deepEqual(await lines(backend, sid), before, 'stored lines after the refused flush')
      equal((await backend.head(sid)).nextSeq, before.length, 'head after the refused flush')
      thief.append(user('from the new writer'))
      await thief.flush()
      const all = await events(store('reader'), sid)
      equal(all.length, before.length + 1, 'events after the new writer flushed')
      deepEqual(
        all.at(-1)?.data,
        { message: { role: 'user', content: 'from the new writer' } },
        'the next seq holds the new writer event',
      )
      await first.close()
      await thief.close()
    },
  },
  {
    title: 'port: append at a wrong expected seq is CONFLICT and writes nothing; a stale epoch is FENCED',
    run: async ({ store, backend, id }) => {
      const sid = id('conflict')
      await (await store().create({ id: sid })).close()
      const acquired = await backend.acquire(sid, { owner: 'port', leaseMs: 60_000 })
      const line =
        '{"seq":5,"time":"2026-01-01T00:00:00.000Z","type":"turn/start","data":{"turn":1},"crc":"00000000"}'
      await rejects(
        () =>
          backend.append(acquired.lease, {
            expectedSeq: 5,
            lines: [line],
            lastCrc: '00000000',
            batchId: 'x:1',
          }),
        'CONFLICT',
        'append at seq 5 of an empty session',
      )
      const next = await backend.acquire(sid, { owner: 'port-2', leaseMs: 60_000, takeover: true })
      await rejects(
        () =>
          backend.append(acquired.lease, {
            expectedSeq: 0,
            lines: [line],
            lastCrc: '00000000',
            batchId: 'x:2',
          }),
        'FENCED',
        'append with the old epoch',
      )
      equal((await backend.head(sid)).nextSeq, 0, 'head after refused appends')
      await backend.release(next.lease)
      await backend.release(next.lease)
      await backend.release(acquired.lease)
    },
  },
  {
    title: 'create is atomic and refuses an existing id with SESSION_EXISTS, leaving it untouched',
    run: async ({ store, backend, id }) => {
      const sid = id('exists')
      await writeTurns(store(), sid)
      const before = await lines(backend, sid)
      await rejects(() => store().create({ id: sid }), 'SESSION_EXISTS', 'second create')
      deepEqual(await lines(backend, sid), before, 'lines after the refused create')
    },
  },
]
