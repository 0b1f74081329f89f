/**
 * The model-visible mapping is incremental: each append hands the importer its own entries
 * only (the live import is kept between batches), counted at the importer's door (a wrapper
 * around `importLive`), not by the code under test. And the incremental mapping writes the
 * same model-visible events as the mapping of the whole transcript in one batch.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

import type { SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk'
import * as importer from '@agent-ledger/import'
import type { LoggedEvent } from '@agent-ledger/session-events'
import { createMemoryBackend, createSessionStore } from '@agent-ledger/session-store'
import type { SessionStore } from '@agent-ledger/session-store'
import { describe, expect, it, vi } from 'vitest'

import { createClaudeSessionStore } from '../src/index.ts'
import { openStoreAt } from './store-target.ts'
import { crossProcessStoreKinds } from './stores.ts'

/** Lines the importer was handed: each line of each pass over a source, and each appended line. */
const handed = { lines: 0 }

vi.mock('@agent-ledger/import', async (importOriginal) => {
  const actual = await importOriginal<typeof importer>()
  return {
    ...actual,
    importLive: async (
      lines: () => AsyncIterable<string>,
      options: Parameters<typeof actual.importLive>[1],
    ): Promise<importer.LiveImport> => {
      const counted = (): AsyncIterable<string> => ({
        async *[Symbol.asyncIterator]() {
          for await (const line of lines()) {
            handed.lines += 1
            yield line
          }
        },
      })
      const live = await actual.importLive(counted, options)
      return {
        result: live.result,
        append: (appended) => {
          handed.lines += appended.length
          return live.append(appended)
        },
      }
    },
  }
})

/** A conversation of `count` entries, each a child of the one before (user and assistant by turns). */
function chain(sessionId: string, count: number): SessionStoreEntry[] {
  return Array.from({ length: count }, (_, i) => ({
    type: i % 2 === 0 ? 'user' : 'assistant',
    uuid: `u-${i}`,
    parentUuid: i === 0 ? null : `u-${i - 1}`,
    sessionId,
    cwd: '/home/dev/demo',
    timestamp: `2026-12-01T10:${String(Math.floor(i / 60) % 60).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}.000Z`,
    message:
      i % 2 === 0
        ? { role: 'user', content: `question ${i}` }
        : {
            id: `msg-${i}`,
            role: 'assistant',
            model: 'claude-sonnet-4-5',
            content: [{ type: 'text', text: `answer ${i}` }],
          },
  }))
}

function memoryStore(): SessionStore {
  return createSessionStore({ backend: createMemoryBackend(), clock: () => new Date().toISOString() })
}

/** The core's repair events of a session (closers appended when a writer reopened it), as the store lists them. */
async function repairEvents(store: SessionStore, id: string): Promise<LoggedEvent[]> {
  const all: LoggedEvent[] = []
  for await (const event of store.readEvents(id)) all.push(event)
  const seqs = all
    .filter((event) => event.type === 'claude-agent-sdk/repaired')
    .flatMap((event) => (event.data as { seqs: number[] }).seqs)
  return all.filter((event) => seqs.includes(event.seq))
}

/**
 * The mapped events of a session (model-visible, the core's repair events left out), citations
 * as offsets among them (comparable across sessions).
 */
async function modelVisible(store: SessionStore, id: string): Promise<unknown[]> {
  const repairs = new Set((await repairEvents(store, id)).map((event) => event.seq))
  const events: LoggedEvent[] = []
  for await (const event of store.readEvents(id)) {
    if (event.type === importer.SOURCE_RECORD_EVENT_TYPE || event.type.startsWith('claude-agent-sdk/'))
      continue
    if (repairs.has(event.seq)) continue
    events.push(event)
  }
  const at = (seq: number): number => events.findIndex((event) => event.seq === seq)
  return events.map((event) => ({
    type: event.type,
    data: event.data,
    sources: event.sourceEventSeqs?.map(at),
    surfaceOp:
      typeof event.surfaceOp === 'object'
        ? { ...event.surfaceOp, startSeq: at(event.surfaceOp.startSeq), endSeq: at(event.surfaceOp.endSeq) }
        : event.surfaceOp,
  }))
}

it('an append one entry at a time hands the importer that entry only, not the transcript again', async () => {
  const store = memoryStore()
  const claude = createClaudeSessionStore(store)
  const key = { projectKey: 'p', sessionId: 'chain' }
  const entries = chain('chain', 120)
  const perAppend: number[] = []
  for (const entry of entries) {
    const before = handed.lines
    await claude.append(key, [entry])
    perAppend.push(handed.lines - before)
  }
  // The first batch starts the live import; the second maps both entries again (the first
  // assistant entry names the model, a header fact the live import cannot change); every
  // later append hands over its one entry.
  expect(perAppend[0]).toBeGreaterThan(0)
  expect(perAppend[1]).toBeGreaterThan(1)
  expect(perAppend.slice(2)).toStrictEqual(entries.slice(2).map(() => 1))
  // The mapping is the mapping of the whole transcript in one batch.
  const whole = { projectKey: 'p', sessionId: 'chain-whole' }
  await claude.append(whole, entries)
  const mapped = await modelVisible(store, claude.sessionIdFor(key))
  expect(mapped.length).toBeGreaterThan(entries.length)
  expect(mapped).toStrictEqual(await modelVisible(store, claude.sessionIdFor(whole)))
  await claude.close()
  await store.close()
})

describe.each(crossProcessStoreKinds)('over the %s store', (_name, kind) => {
  it('a store that reopens a key maps its transcript once, then each append only its own entries', async () => {
    const opened = await kind.open()
    const key = { projectKey: opened.id('p'), sessionId: 'reopen' }
    const entries = chain('reopen', 40)
    const first = createClaudeSessionStore(opened.store)
    for (const entry of entries.slice(0, 20)) await first.append(key, [entry])
    await first.close()
    const other = await openStoreAt(opened.target!)
    const second = createClaudeSessionStore(other.store)
    const perAppend: number[] = []
    for (const entry of entries.slice(20)) {
      const before = handed.lines
      await second.append(key, [entry])
      perAppend.push(handed.lines - before)
    }
    // Reopening maps the 20 stored entries (once per importer pass) and the new one.
    expect(perAppend[0]! % 20).toBe(1)
    expect(perAppend.slice(1)).toStrictEqual(entries.slice(21).map(() => 1))
    expect(await second.load(key)).toStrictEqual(entries)
    // The reopen closed the turn the first writer left open (the log's repair, marked as such),
    // and the mapping went on after it: the mapped events are those of the whole transcript.
    const repairs = await repairEvents(other.store, second.sessionIdFor(key))
    expect(repairs.map((event) => [event.type, (event.data as { reason?: string }).reason])).toStrictEqual([
      ['turn/end', 'interrupted'],
    ])
    expect((await other.store.verify(second.sessionIdFor(key))).status).toBe('ok')
    expect(await modelVisible(other.store, second.sessionIdFor(key))).toStrictEqual(
      await (async () => {
        const whole = memoryStore()
        const claude = createClaudeSessionStore(whole)
        await claude.append(key, entries)
        const events = await modelVisible(whole, claude.sessionIdFor(key))
        await claude.close()
        await whole.close()
        return events
      })(),
    )
    await second.close()
    await other.close()
    await opened.store.close()
    await opened.close()
  })
})

const FIXTURES = ['parallel-calls', 'compaction', 'queued-prompt', 'slash-command', 'inline-sidechains']

it.each(FIXTURES)(
  'the %s transcript appended one entry at a time maps to the events of its mapping in one batch',
  async (name) => {
    const text = readFileSync(
      fileURLToPath(new URL(`../../import/test/fixtures/claude-code/${name}.jsonl`, import.meta.url)),
      'utf8',
    )
    const entries = text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as SessionStoreEntry)
    const store = memoryStore()
    const claude = createClaudeSessionStore(store)
    const oneByOne = { projectKey: 'p', sessionId: `${name}-incremental` }
    const whole = { projectKey: 'p', sessionId: `${name}-whole` }
    for (const entry of entries) await claude.append(oneByOne, [entry])
    await claude.append(whole, entries)
    const incremental = await modelVisible(store, claude.sessionIdFor(oneByOne))
    expect(incremental.length).toBeGreaterThan(0)
    expect(incremental).toStrictEqual(await modelVisible(store, claude.sessionIdFor(whole)))
    await claude.close()
    await store.close()
  },
)
