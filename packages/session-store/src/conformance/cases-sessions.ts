/**
 * Conformance cases: repair, fork, list, reads, header and seed rules, accessors, abort,
 * release, verify and salvage, follow.
 */
import type { LoggedEvent } from '@agent-ledger/session-events'

import { deepEqual, equal, ok, rejects, throws } from './assert.ts'
import { abortController, events, lines, user, writeTurns } from './harness.ts'
import type { Case } from './harness.ts'

/** Sessions: repair, fork, list, reads, refusals, abort, release, verify, follow. */
export const SESSION_CASES: readonly Case[] = [
  {
    title:
      'the default redaction covers the header (cwd, metadata) on create, fork and salvage: no stored header line holds the secret',
    run: async ({ store, backend, id }) => {
      const s = store()
      const key = 'sk-proj-Hh3kT9qLmN2pR7sV4wX8yZ1aB5cD6eF0gJ'
      const url = 'postgres://app:hunter2-secret@db.internal:5432/app'
      const created = id('header-redacted')
      const writer = await s.create({
        id: created,
        header: {
          cwd: `/conformance/${key}`,
          metadata: { env: { OPENAI_API_KEY: key, DATABASE_URL: url }, tags: [key] },
        },
      })
      writer.append(user('one'))
      writer.append(user('two'))
      await writer.close()
      const forked = id('header-redacted-fork')
      await (await s.fork(created, { to: forked, atSeq: 0 })).close()
      const salvaged = id('header-redacted-salvage')
      await s.salvage(created, { to: salvaged })
      for (const sid of [created, forked, salvaged]) {
        const stored = await backend.readHeader(sid)
        ok(
          !stored.line.includes(key) && !stored.line.includes('hunter2'),
          `${sid}: the header line holds no secret`,
        )
        const header = JSON.parse(stored.line) as { cwd?: unknown; metadata?: unknown }
        equal(header.cwd, '/conformance/[REDACTED:sk-key]', `${sid}: cwd`)
        deepEqual(
          header.metadata,
          {
            env: {
              OPENAI_API_KEY: '[REDACTED:sk-key]',
              DATABASE_URL: 'postgres://app:[REDACTED:url-password]@db.internal:5432/app',
            },
            tags: ['[REDACTED:sk-key]'],
          },
          `${sid}: metadata`,
        )
      }
    },
  },
  {
    title: 'open for write repairs an interrupted turn durably (TOOL_OUTCOME_UNKNOWN, turn/end interrupted)',
    run: async ({ store, id }) => {
      const sid = id('repair')
      const writer = await store().create({ id: sid })
      writer.append({ type: 'turn/start', data: { turn: 1 } })
      writer.append({
        type: 'assistant/message',
        data: {
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c9', type: 'function', function: { name: 'rm', arguments: '{}' } }],
          },
        },
      })
      writer.append({ type: 'tool/call', data: { callId: 'c9', name: 'rm', arguments: '{}' } })
      await writer.close()
      const reopened = await store().openWriter(sid)
      deepEqual(
        reopened.recovery.repairs.map((action) => action.code),
        ['TOOL_OUTCOME_UNKNOWN', 'CLOSE_TURN'],
        'repair codes',
      )
      await reopened.close()
      const all = await events(store('reader'), sid)
      equal(all[3]?.type, 'tool/result', 'seq 3 is the placeholder result')
      equal(all.at(-1)?.type, 'turn/end', 'the last event closes the turn')
      const again = await store().openWriter(sid)
      equal(again.recovery.repairs.length, 0, 'a second open repairs nothing')
      await again.close()
    },
  },
  {
    title:
      'fork writes the prefix byte for byte, the closers and the session/end-seed marker; the parent is untouched',
    plainOnly: 'an encrypted fork seals its prefix again under its own data key',
    run: async ({ store, backend, id }) => {
      const s = store()
      const parent = id('parent')
      const child = id('child')
      await writeTurns(s, parent)
      const parentLines = await lines(backend, parent)
      const writer = await s.fork(parent, { to: child, atSeq: 2 })
      await writer.close()
      const childLines = await lines(backend, child)
      deepEqual(childLines.slice(0, 3), parentLines.slice(0, 3), 'inherited lines')
      const childEvents = await events(s, child)
      const marker = childEvents.find((event) => event.type === 'session/end-seed')
      ok(marker !== undefined, 'the child has a session/end-seed event')
      deepEqual(marker?.data, { inherited: true, parentSession: parent, boundarySeq: 2 }, 'end-seed data')
      ok(
        childEvents.some((event) => event.type === 'tool/result' && event.seq > 2),
        'the open tool call at the cut got a closer',
      )
      const { header } = await s.openReader(child)
      equal(header.parentSession, parent, 'child header parentSession')
      equal(header.seeded, true, 'child header seeded')
      deepEqual(await lines(backend, parent), parentLines, 'parent lines after the fork')
      await rejects(
        () => s.fork(parent, { to: id('child2'), atSeq: 99 }),
        'FORK_REFUSED',
        'fork past the end',
      )
    },
  },
  {
    title: 'list: keyset pages cover every session exactly once; cwd and parentSession filters',
    run: async ({ store, id, options }) => {
      const s = store()
      const cwd = `/conformance/${options.idPrefix ?? 'conf'}/list`
      const made: string[] = []
      for (let index = 0; index < 5; index += 1) {
        const sid = id(`list-${index}`)
        made.push(sid)
        await (await s.create({ id: sid, header: { cwd } })).close()
      }
      await (await s.create({ id: id('list-other'), header: { cwd: `${cwd}-other` } })).close()
      const seen: string[] = []
      let cursor: string | null | undefined
      let pages = 0
      do {
        const page = await s.list({ limit: 2, cursor: cursor ?? undefined, filter: { cwd } })
        equal(page.problems.length, 0, 'problems')
        ok(page.sessions.length <= 2, 'page size at most the limit')
        seen.push(...page.sessions.map((session) => session.id))
        cursor = page.cursor
        pages += 1
      } while (cursor !== null && pages < 10)
      deepEqual([...seen].sort(), [...made].sort(), 'ids over all pages')
      const forked = await s.fork(made[0]!, { to: id('list-fork'), atSeq: 0 }).catch(() => null)
      if (forked === null) {
        // A session of only a header has no seq 0 to cut at: give it one event.
        const writer = await s.openWriter(made[0]!)
        writer.append({ type: 'turn/start', data: { turn: 1 } })
        await writer.close()
        await (await s.fork(made[0]!, { to: id('list-fork'), atSeq: 0 })).close()
      } else {
        await forked.close()
      }
      const children = await s.list({ filter: { parentSession: made[0]! } })
      deepEqual(
        children.sessions.map((session) => session.id),
        [id('list-fork')],
        'sessions forked from the first one',
      )
      const future = await s.list({ filter: { cwd, updatedSince: '9999-01-01T00:00:00.000Z' } })
      equal(future.sessions.length, 0, 'sessions updated after 9999')
    },
  },
  {
    title: 'reads from a seq: fromSeq/toSeq give exactly that range',
    run: async ({ store, backend, id }) => {
      const s = store()
      const sid = id('range')
      await writeTurns(s, sid)
      const found: number[] = []
      for await (const event of s.readEvents(sid, { fromSeq: 3, toSeq: 5 })) found.push(event.seq)
      deepEqual(found, [3, 4, 5], 'seqs 3..5')
      const tail: number[] = []
      for await (const stored of backend.read(sid, { fromSeq: 5 })) tail.push(stored.seq)
      deepEqual(tail, [5, 6], 'backend read from 5')
      const empty: number[] = []
      for await (const event of s.readEvents(sid, { fromSeq: 7 })) empty.push(event.seq)
      deepEqual(empty, [], 'read from the head')
    },
  },
  {
    title: 'bad fromSeq/toSeq are refused with INVALID_OPTION before any read',
    run: async ({ store, id }) => {
      const s = store()
      const sid = id('badseq')
      await writeTurns(s, sid)
      for (const fromSeq of [-1, 1.5, Number.NaN, Infinity, '2' as unknown as number]) {
        throws(() => s.readEvents(sid, { fromSeq }), 'INVALID_OPTION', `fromSeq ${String(fromSeq)}`)
      }
      throws(() => s.readEvents(sid, { toSeq: -2 }), 'INVALID_OPTION', 'toSeq -2')
      throws(() => s.readEvents(sid, { fromSeq: 4, toSeq: 3 }), 'INVALID_OPTION', 'fromSeq > toSeq')
    },
  },
  {
    title: 'a header naming another session is refused with HEADER_ID_MISMATCH',
    run: async ({ store, backend, id }) => {
      const s = store()
      const real = id('hdr-real')
      const alias = id('hdr-alias')
      await (await s.create({ id: real })).close()
      const { line } = await backend.readHeader(real)
      const { header } = await s.openReader(real)
      await backend.create({
        id: alias,
        headerLine: line,
        header: { ...header, id: alias },
        lines: [],
        lastCrc: null,
      })
      await rejects(() => s.openWriter(alias), 'HEADER_ID_MISMATCH', 'open for write')
      await rejects(() => s.openReader(alias), 'HEADER_ID_MISMATCH', 'open for read')
      equal((await s.verify(alias)).damage?.code, 'HEADER_ID_MISMATCH', 'verify reports it')
      // The refused write open released its lease.
      const again = await backend.acquire(alias, { owner: 'other', leaseMs: 60_000 })
      await backend.release(again.lease)
    },
  },
  {
    title: 'a seeded header without a session/end-seed marker is refused; nothing is published',
    run: async ({ store, backend, id }) => {
      const sid = id('seeded')
      const seed = [
        { seq: 0, time: '2026-01-01T00:00:00.000Z', type: 'turn/start', data: { turn: 1 } },
      ] as LoggedEvent[]
      await rejects(
        () => store().create({ id: sid, header: { seeded: true, parentSession: 'p' }, seed }),
        'INVALID_SEED',
        'create with a seeded header and no marker',
      )
      await rejects(
        () => store().create({ id: sid, header: { seeded: true }, seed: [] }),
        'INVALID_SEED',
        'create with a seeded header and no seed',
      )
      await rejects(() => backend.head(sid), 'SESSION_NOT_FOUND', 'head of the refused session')
    },
  },
  {
    title: 'an event with accessor properties reopens exactly as it was validated and returned',
    run: async ({ store, id }) => {
      const sid = id('accessor')
      const writer = await store().create({ id: sid })
      let reads = 0
      const message = {
        role: 'user',
        get content(): string {
          reads += 1
          return `read ${reads}`
        },
      }
      const returned = writer.append({ type: 'user/message', data: { message } } as never)
      equal(reads, 1, 'getter calls during append (the input is read once)')
      let flips = 0
      const sneaky = {
        role: 'user',
        get content(): unknown {
          flips += 1
          return flips === 1 ? 'valid first' : 42
        },
      }
      // Valid at its one read: accepted with that value, whatever the getter says later.
      const second = writer.append({ type: 'user/message', data: { message: sneaky } } as never)
      equal(flips, 1, 'getter calls of the second input')
      const invalid = {
        role: 'user',
        get content(): unknown {
          return 42
        },
      }
      throws(
        () => writer.append({ type: 'user/message', data: { message: invalid } } as never),
        'INVALID_EVENT',
        'an accessor that is invalid at its read',
      )
      await writer.close()
      const stored = await events(store('reader'), sid)
      deepEqual(stored, [returned, second], 'the events read back equal the ones append returned')
      equal(
        (stored[1]?.data as { message: { content: unknown } }).message.content,
        'valid first',
        'the stored content is the value that was validated',
      )
      equal(writer.durableSeq, 1, 'the refused event was not written')
    },
  },
  {
    title: 'abort: create, fork and salvage with an aborted signal publish nothing',
    run: async ({ store, backend, id }) => {
      const s = store()
      const parent = id('abort-parent')
      await writeTurns(s, parent)
      const controller = abortController()
      controller.abort(new Error('stop'))
      const signal = controller.signal
      await rejects(() => s.create({ id: id('abort-new'), signal }), 'ABORTED', 'create')
      await rejects(() => s.fork(parent, { to: id('abort-fork'), atSeq: 2, signal }), 'ABORTED', 'fork')
      await rejects(() => s.salvage(parent, { to: id('abort-salvage'), signal }), 'ABORTED', 'salvage')
      for (const name of ['abort-new', 'abort-fork', 'abort-salvage']) {
        await rejects(() => backend.head(id(name)), 'SESSION_NOT_FOUND', `head of ${name}`)
      }
    },
  },
  {
    title: 'release is idempotent, ignores a fenced lease, and needs no free space',
    run: async ({ harness, store, backend, id }) => {
      const sid = id('release')
      const writer = await store('a').create({ id: sid })
      writer.append({ type: 'turn/start', data: { turn: 1 } })
      if (harness.setFull !== undefined) {
        await harness.setFull(true)
        await rejects(() => writer.flush(), 'DISK_FULL', 'flush on a full disk')
        equal(writer.bufferedEvents, 1, 'the event stays buffered after DISK_FULL')
        await rejects(() => writer.close(), 'DISK_FULL', 'close on a full disk keeps the lease')
        await writer.close({ discardUnflushed: true })
        await harness.setFull(false)
      } else {
        await writer.close()
        await writer.close()
      }
      const next = await store('b').openWriter(sid)
      await next.close()
      const acquired = await backend.acquire(sid, { owner: 'c', leaseMs: 60_000 })
      await backend.release(acquired.lease)
      await backend.release(acquired.lease)
      const last = await backend.acquire(sid, { owner: 'd', leaseMs: 60_000 })
      await backend.release(acquired.lease)
      await rejects(
        () => backend.acquire(sid, { owner: 'e', leaseMs: 60_000 }),
        'SESSION_LOCKED',
        'releasing an old lease kept the new one',
      )
      await backend.release(last.lease)
    },
  },
  {
    title: 'verify reports ok for a healthy session; salvage copies it with a session/salvage event',
    plainOnly: 'an encrypted salvage seals the copied prefix under the own data key of the new session',
    run: async ({ store, backend, id }) => {
      const s = store()
      const sid = id('verify')
      await writeTurns(s, sid)
      const report = await s.verify(sid)
      equal(report.status, 'ok', 'status')
      equal(report.events, 7, 'events')
      const salvaged = await s.salvage(sid, { to: id('verify-copy') })
      equal(salvaged.copiedEvents, 7, 'copied events')
      equal(salvaged.reason, 'none', 'reason')
      const copied = await lines(backend, id('verify-copy'))
      deepEqual(copied.slice(0, 7), await lines(backend, sid), 'copied lines')
      equal((await events(s, id('verify-copy')))[7]?.type, 'session/salvage', 'the salvage event')
    },
  },
  {
    title: 'follow: yields the durable events, then each new flush, and ends quietly on abort',
    run: async ({ store, id }) => {
      const s = store()
      const sid = id('follow')
      const writer = await s.create({ id: sid })
      writer.append({ type: 'turn/start', data: { turn: 1 } })
      await writer.flush()
      const controller = abortController()
      const seen: number[] = []
      const following = (async () => {
        for await (const event of s.follow(sid, { signal: controller.signal, pollMs: 20 })) {
          seen.push(event.seq)
          if (event.seq === 0) {
            writer.append(user('one'))
            writer.append(user('two'))
            await writer.flush()
          }
          if (seen.length === 3) controller.abort()
        }
      })()
      await following
      deepEqual(seen, [0, 1, 2], 'seqs followed')
      await writer.close()
    },
  },
  {
    title: 'port: an aborted signal publishes nothing (create, append)',
    run: async ({ store, backend, id }) => {
      const controller = abortController()
      controller.abort(new Error('stop'))
      const signal = controller.signal
      const sid = id('port-abort')
      await (await store().create({ id: sid })).close()
      const { line } = await backend.readHeader(sid)
      const { header } = await store().openReader(sid)
      const other = id('port-abort-2')
      await rejects(
        () => backend.create({ id: other, headerLine: line, header, lines: [], lastCrc: null, signal }),
        'ABORTED',
        'backend.create with an aborted signal',
      )
      await rejects(() => backend.head(other), 'SESSION_NOT_FOUND', 'head after the aborted create')
      const acquired = await backend.acquire(sid, { owner: 'port', leaseMs: 60_000 })
      const event =
        '{"seq":0,"time":"2026-01-01T00:00:00.000Z","type":"turn/start","data":{"turn":1},"crc":"79ea275d"}'
      await rejects(
        () =>
          backend.append(acquired.lease, {
            expectedSeq: 0,
            lines: [event],
            lastCrc: '79ea275d',
            batchId: 'port:1',
            signal,
          }),
        'ABORTED',
        'backend.append with an aborted signal',
      )
      equal((await backend.head(sid)).nextSeq, 0, 'head after the aborted append')
      await backend.append(acquired.lease, {
        expectedSeq: 0,
        lines: [event],
        lastCrc: '79ea275d',
        batchId: 'port:2',
      })
      const head = await backend.head(sid)
      deepEqual(
        [head.nextSeq, head.lastCrc, head.lastBatchId],
        [1, '79ea275d', 'port:2'],
        'head after the append',
      )
      deepEqual(await lines(backend, sid), [event], 'the stored line is byte-identical')
      await backend.release(acquired.lease)
    },
  },
]
