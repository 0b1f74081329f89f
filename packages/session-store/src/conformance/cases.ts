/**
 * The conformance cases (issue 11 item 5), each run against a fresh harness.
 */
import type { LoggedEvent } from '@agent-ledger/session-events'

import type { AbortSignalLike, SessionBackend } from '../port.ts'
import { createSessionStore } from '../store.ts'
import type { SessionStore } from '../store.ts'
import { checkError, deepEqual, equal, ok, rejects, throws } from './assert.ts'

/** What `makeBackend` returns for one test. */
export interface ConformanceHarness {
  /** A backend over fresh (or test-isolated) storage. */
  readonly backend: SessionBackend
  /**
   * A NEW backend instance over the same storage (a restart, or a second process). Without
   * it, the durability test is skipped and the two-writer tests share `backend`.
   */
  reopen?(): Promise<SessionBackend>
  /**
   * Lets `ms` milliseconds pass for the backend's lease clock (the memory backend:
   * advance its logical clock). Default: really wait `ms` (`setTimeout`).
   */
  advanceTime?(ms: number): Promise<void>
  /**
   * Simulates a full disk (true) and frees it (false), when the backend can: the release
   * test then checks that releasing a lease needs no space.
   */
  setFull?(full: boolean): Promise<void> | void
  /** Frees the storage and closes every backend instance made. */
  cleanup(): Promise<void>
}

/** Options of `runBackendConformance`. */
export interface ConformanceOptions {
  /** The backend's name, in the describe block's title. */
  readonly name: string
  /** Makes a harness for one test. Every test gets its own. */
  readonly makeBackend: () => Promise<ConformanceHarness>
  /** The framework's `describe`. */
  readonly describe: (name: string, body: () => void) => void
  /** The framework's `it`/`test`; `timeout` is passed as the third argument. */
  readonly it: (name: string, body: () => Promise<void>, timeout?: number) => void
  /**
   * Prefix of every session id the suite creates (default `conf`). Pass a unique one per
   * run when `makeBackend` does not give empty storage.
   */
  readonly idPrefix?: string | undefined
  /** Lease length for the expiry test, in ms (default 2,000; the test lets 1.5 x pass). */
  readonly leaseMs?: number | undefined
  /** Per-test timeout passed to `it`, in ms (default 30,000). */
  readonly timeoutMs?: number | undefined
}

interface Case {
  readonly title: string
  readonly run: (context: CaseContext) => Promise<void>
}

interface CaseContext {
  readonly harness: ConformanceHarness
  readonly backend: SessionBackend
  readonly options: ConformanceOptions
  /** A session id unique to this test. */
  readonly id: (name: string) => string
  /** A store over `backend` (or another instance) writing as `owner`. */
  readonly store: (owner?: string, backend?: SessionBackend, leaseMs?: number) => SessionStore
  /** A second backend instance over the same storage, or `backend` itself. */
  readonly second: () => Promise<SessionBackend>
  readonly advance: (ms: number) => Promise<void>
}

declare const setTimeout: (run: () => void, ms: number) => unknown
declare const AbortController: new () => { readonly signal: AbortSignalLike; abort(reason?: unknown): void }

function makeClock(): () => string {
  let tick = 0
  return () => {
    tick += 1
    return new Date(Date.UTC(2026, 0, 1) + tick).toISOString()
  }
}

async function lines(backend: SessionBackend, id: string): Promise<string[]> {
  const found: string[] = []
  for await (const stored of backend.read(id, { fromSeq: 0 })) found.push(stored.line)
  return found
}

async function events(store: SessionStore, id: string): Promise<LoggedEvent[]> {
  const found: LoggedEvent[] = []
  for await (const event of store.readEvents(id)) found.push(event)
  return found
}

const user = (content: string) =>
  ({ type: 'user/message', data: { message: { role: 'user', content } } }) as const

/** A turn with one tool call that got its result, then a second turn left open with an unanswered call. */
async function writeTurns(store: SessionStore, id: string): Promise<void> {
  const writer = await store.create({ id, header: { cwd: '/conformance' } })
  writer.append({ type: 'turn/start', data: { turn: 1 } })
  writer.append(user('list files'))
  writer.append({
    type: 'assistant/message',
    data: {
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'ls', arguments: '{}' } }],
      },
    },
  })
  await writer.flush()
  writer.append({ type: 'tool/call', data: { callId: 'c1', name: 'ls', arguments: '{}' } })
  writer.append({
    type: 'tool/result',
    data: { message: { role: 'tool', tool_call_id: 'c1', content: 'a b' } },
    sourceEventSeqs: [3],
  })
  writer.append({ type: 'assistant/message', data: { message: { role: 'assistant', content: 'two files' } } })
  writer.append({ type: 'turn/end', data: { turn: 1, reason: 'completed' } })
  await writer.close()
}

const CASES: readonly Case[] = [
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
      const again = await backend.acquire(alias, { owner: 'other', leaseMs: 1000 })
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
      let flips = 0
      const sneaky = {
        role: 'user',
        get content(): unknown {
          flips += 1
          return flips === 1 ? 'valid first' : 42
        },
      }
      throws(
        () => writer.append({ type: 'user/message', data: { message: sneaky } } as never),
        'INVALID_EVENT',
        'an accessor that turns invalid after the first read',
      )
      await writer.close()
      const [stored] = await events(store('reader'), sid)
      deepEqual(stored, returned, 'the event read back equals the one append returned')
      equal(writer.durableSeq, 0, 'only the first event was written')
    },
  },
  {
    title: 'abort: create, fork and salvage with an aborted signal publish nothing',
    run: async ({ store, backend, id }) => {
      const s = store()
      const parent = id('abort-parent')
      await writeTurns(s, parent)
      const controller = new AbortController()
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
      const acquired = await backend.acquire(sid, { owner: 'c', leaseMs: 1000 })
      await backend.release(acquired.lease)
      await backend.release(acquired.lease)
      const last = await backend.acquire(sid, { owner: 'd', leaseMs: 1000 })
      await backend.release(acquired.lease)
      await rejects(
        () => backend.acquire(sid, { owner: 'e', leaseMs: 1000 }),
        'SESSION_LOCKED',
        'releasing an old lease kept the new one',
      )
      await backend.release(last.lease)
    },
  },
  {
    title: 'verify reports ok for a healthy session; salvage copies it with a session/salvage event',
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
]

/**
 * Registers every case under one `describe` block.
 *
 * @param options - The harness factory and the framework functions.
 */
export function registerCases(options: ConformanceOptions): void {
  const prefix = options.idPrefix ?? 'conf'
  const timeout = options.timeoutMs ?? 30_000
  options.describe(`session backend conformance: ${options.name}`, () => {
    for (const [index, testCase] of CASES.entries()) {
      options.it(
        testCase.title,
        async () => {
          const harness = await options.makeBackend()
          const instances: SessionBackend[] = []
          const context: CaseContext = {
            harness,
            backend: harness.backend,
            options,
            id: (name) => `${prefix}-${index}-${name}`,
            store: (owner = 'conformance', backend = harness.backend, leaseMs = 60_000) =>
              createSessionStore({ backend, clock: makeClock(), owner, leaseMs }),
            second: async () => {
              if (harness.reopen === undefined) return harness.backend
              const instance = await harness.reopen()
              instances.push(instance)
              return instance
            },
            advance: (ms) =>
              harness.advanceTime?.(ms) ??
              new Promise<void>((resolve) => {
                setTimeout(resolve, ms)
              }),
          }
          try {
            await testCase.run(context)
          } finally {
            await harness.cleanup()
          }
        },
        timeout,
      )
    }
  })
}
