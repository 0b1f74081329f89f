/**
 * Conformance cases of the error contract (issue 23 item 4): one session-id rule on every
 * backend, a backend's typed error reaching the caller with its code, a fork into an
 * existing id, and appends whose data cannot be read or cites nothing.
 */
import { AgentLedgerError } from '@agent-ledger/session-events'
import type { SessionHeader } from '@agent-ledger/session-events'

import type { SessionWriter } from '../writer.ts'
import { checkError, ConformanceError, deepEqual, equal, ok, rejects, throws } from './assert.ts'
import { lines, user, writeTurns } from './harness.ts'
import type { Case } from './harness.ts'

/** Ids the one rule refuses: Windows device names in any case and with a suffix, and ids breaking the pattern. */
const REFUSED_IDS = [
  'CON',
  'con',
  'Nul',
  'PRN',
  'aux',
  'COM1',
  'lpt9',
  'con-2',
  'NUL_backup',
  '',
  '-leading-dash',
  'has.dot',
  'has/slash',
  'x'.repeat(129),
  'caf\u00e9',
] as const

/** Ids that only look like device names: the rule accepts them. */
const ACCEPTED_LOOKALIKES = ['CONSOLE', 'nullable', 'com', 'COM10x', 'auxiliary'] as const

/** The first error of: open for write, one append, flush (closing whatever was opened). */
async function firstWriteError(open: () => Promise<SessionWriter>): Promise<unknown> {
  let writer: SessionWriter | undefined
  try {
    writer = await open()
    writer.append(user('after the fault'))
    await writer.flush()
  } catch (error) {
    return error
  } finally {
    await writer?.close({ discardUnflushed: true }).catch(() => undefined)
  }
  return undefined
}

/** Error contract: ids, codes through the port, fork targets, unreadable appends. */
export const ERROR_CASES: readonly Case[] = [
  {
    title:
      'id refused: CON and every other id the one rule refuses is INVALID_SESSION_ID from the store and from the backend itself',
    run: async ({ store, backend, id }) => {
      const s = store()
      const donor = id('donor')
      await writeTurns(s, donor)
      const stored = await backend.readHeader(donor)
      const header = JSON.parse(stored.line) as SessionHeader
      for (const refused of REFUSED_IDS) {
        const shown = JSON.stringify(refused.length > 20 ? `${refused.slice(0, 20)}...` : refused)
        await rejects(() => s.create({ id: refused }), 'INVALID_SESSION_ID', `store.create(${shown})`)
        await rejects(() => s.openReader(refused), 'INVALID_SESSION_ID', `store.openReader(${shown})`)
        await rejects(
          () => s.fork(donor, { to: refused, atSeq: 1 }),
          'INVALID_SESSION_ID',
          `store.fork into ${shown}`,
        )
        await rejects(
          () => backend.create({ id: refused, headerLine: stored.line, header, lines: [], lastCrc: null }),
          'INVALID_SESSION_ID',
          `backend.create(${shown})`,
        )
        await rejects(() => backend.head(refused), 'INVALID_SESSION_ID', `backend.head(${shown})`)
        await rejects(
          () => backend.acquire(refused, { owner: 'conformance', leaseMs: 60_000 }),
          'INVALID_SESSION_ID',
          `backend.acquire(${shown})`,
        )
      }
      for (const lookalike of ACCEPTED_LOOKALIKES) {
        const sid = id(lookalike)
        await (await s.create({ id: sid })).close()
        equal((await backend.head(sid)).nextSeq, 0, `head of ${sid}`)
      }
    },
  },
  {
    title:
      "code preserved: a backend's typed error reaches the caller of createSessionStore with its code and details unchanged",
    run: async ({ harness, store, id }) => {
      if (harness.injectFault === undefined) return
      const s = store()
      const sid = id('fault')
      await writeTurns(s, sid)
      const fault = await harness.injectFault(sid)
      const failure = await firstWriteError(() => s.openWriter(sid))
      if (failure === undefined) {
        throw new ConformanceError(
          `open, append and flush after the injected fault: expected a rejection with code ${fault.code}, found success`,
        )
      }
      ok(AgentLedgerError.is(failure), 'the error is an AgentLedgerError')
      const error = checkError(failure, fault.code, 'open, append and flush after the injected fault')
      for (const [key, value] of Object.entries(fault.details ?? {})) {
        deepEqual(error.details[key], value, `details.${key}`)
      }
    },
  },
  {
    title:
      'fork into an existing id is SESSION_EXISTS before the parent is read (a missing parent, a boundary past the end)',
    run: async ({ store, backend, id }) => {
      const s = store()
      const parent = id('parent')
      const existing = id('existing')
      await writeTurns(s, parent)
      await (await s.create({ id: existing })).close()
      const before = await lines(backend, existing)
      await rejects(
        () => s.fork(parent, { to: existing, atSeq: 2 }),
        'SESSION_EXISTS',
        'fork into an existing id',
      )
      await rejects(
        () => s.fork(id('no-such-parent'), { to: existing, atSeq: 0 }),
        'SESSION_EXISTS',
        'fork of a missing parent into an existing id (the target is checked first)',
      )
      await rejects(
        () => s.fork(parent, { to: existing, atSeq: 99 }),
        'SESSION_EXISTS',
        'fork past the end into an existing id (the target is checked before the prefix)',
      )
      await rejects(
        () => s.salvage(parent, { to: existing }),
        'SESSION_EXISTS',
        'salvage into an existing id',
      )
      deepEqual(await lines(backend, existing), before, 'the existing session is untouched')
    },
  },
  {
    title:
      'append whose data has a throwing getter or a Proxy whose trap throws is UNSERIALIZABLE_EVENT naming the event; nothing is buffered',
    run: async ({ store, id }) => {
      const s = store()
      const sid = id('getter')
      const writer = await s.create({ id: sid })
      const boom = new Error('getter exploded')
      const getter = {
        type: 'user/message',
        data: {
          get message(): never {
            throw boom
          },
        },
      }
      const proxy = {
        type: 'user/message',
        data: new Proxy(
          {},
          {
            ownKeys: () => {
              throw boom
            },
          },
        ),
      }
      for (const [name, input] of [
        ['a throwing getter', getter],
        ['a Proxy', proxy],
      ] as const) {
        const error = throws(
          () => writer.append(input as unknown as Parameters<SessionWriter['append']>[0]),
          'UNSERIALIZABLE_EVENT',
          `append with ${name}`,
        )
        equal(error.cause, boom, `the cause of ${name} is the caller's error`)
        equal(error.seq, 0, `the error of ${name} names seq 0`)
        ok(
          error.message.includes('seq 0') && error.message.includes(sid),
          `the message of ${name} names the event`,
        )
      }
      equal(writer.append(user('fine')).seq, 0, 'the next append gets seq 0: nothing was buffered')
      await writer.close()
    },
  },
  {
    title: 'append with an empty sourceEventSeqs ([]) is INVALID_EVENT; nothing is buffered',
    run: async ({ store, id }) => {
      const s = store()
      const sid = id('cites-nothing')
      const writer = await s.create({ id: sid })
      writer.append(user('one'))
      writer.append(user('two'))
      const error = throws(
        () =>
          writer.append({
            type: 'user/message',
            data: { message: { role: 'user', content: '[summary] one and two' } },
            surfaceOp: { op: 'replace', startSeq: 0, endSeq: 1 },
            sourceEventSeqs: [],
          }),
        'INVALID_EVENT',
        'a compaction summary citing nothing',
      )
      ok(error.message.includes('sourceEventSeqs'), 'the message names the field')
      equal(writer.append(user('three')).seq, 2, 'the next append gets seq 2')
      await writer.close()
    },
  },
]
