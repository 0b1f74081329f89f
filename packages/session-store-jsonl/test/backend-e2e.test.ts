/**
 * The session core over the JSONL backend, end to end on real files: create, append,
 * flush, reopen with a new backend; a child writer SIGKILLed mid-stream loses nothing it
 * acknowledged; a torn tail (plain: half a line; zstd: half a frame) is quarantined and
 * truncated at acquire and reported in the writer's recovery.
 */
import { appendFileSync, readdirSync, readFileSync, statSync, truncateSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'

import { afterEach, describe, expect, it } from 'vitest'

import type { LoggedEvent } from '@agent-ledger/session-events'
import { createSessionStore } from '@agent-ledger/session-store'
import type { SessionStore } from '@agent-ledger/session-store'

import { testTime } from '../../../tooling/test-time.ts'
import { createJsonlBackend } from '../src/index.ts'
import { LOG_FILE_NAME } from '../src/layout.ts'
import { spawnTsChild } from './support/children.ts'
import { tempRoot } from './backend/jsonl-harness.ts'

const roots: string[] = []
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true })
})

async function newRoot(): Promise<string> {
  const root = await tempRoot()
  roots.push(root)
  return root
}

function storeOver(root: string, encoding: 'plain' | 'zstd', owner = 'parent'): SessionStore {
  return createSessionStore({
    backend: createJsonlBackend({ root, encoding, lock: { heartbeatMs: 0 } }),
    clock: () => new Date().toISOString(),
    owner,
  })
}

async function readAll(store: SessionStore, id: string): Promise<LoggedEvent[]> {
  const events: LoggedEvent[] = []
  for await (const event of store.readEvents(id)) events.push(event)
  return events
}

const user = (content: string) =>
  ({ type: 'user/message', data: { message: { role: 'user', content } } }) as const

const logName = (encoding: 'plain' | 'zstd'): string =>
  encoding === 'zstd' ? `${LOG_FILE_NAME}.zstd` : LOG_FILE_NAME

describe.each(['plain', 'zstd'] as const)('core over the JSONL backend (%s)', (encoding) => {
  it('backend.append refuses a batch with a line holding a newline (INVALID_OPTION), writing nothing; a whole batch lands', async () => {
    const root = await newRoot()
    const backend = createJsonlBackend({ root, encoding, lock: { heartbeatMs: 0 } })
    const store = createSessionStore({ backend, clock: () => new Date().toISOString(), owner: 'parent' })
    const writer = await store.create({ id: 'nl' })
    writer.append(user('one'))
    await writer.close()
    const [line] = await (async () => {
      const found: string[] = []
      for await (const stored of backend.read('nl', { fromSeq: 0 })) found.push(stored.line)
      return found
    })()
    const { lease, head } = await backend.acquire('nl', { owner: 'parent', leaseMs: 60_000 })
    const size = statSync(join(root, 'nl', logName(encoding))).size
    for (const lines of [[`${line!.slice(0, 5)}\n${line!.slice(5)}`], [line!, 'a\nb'], ['\n']]) {
      await expect(
        backend.append(lease, { expectedSeq: head.nextSeq, lines, lastCrc: '00000000', batchId: 'x:1:1' }),
      ).rejects.toMatchObject({ code: 'INVALID_OPTION' })
    }
    expect(statSync(join(root, 'nl', logName(encoding))).size).toBe(size)
    expect((await backend.head('nl')).nextSeq).toBe(head.nextSeq)
    await backend.release(lease)
    await store.close()
  })

  it('create, append, flush, close; a new backend instance reads the same events from the same file', async () => {
    const root = await newRoot()
    const first = storeOver(root, encoding)
    const writer = await first.create({ id: 's1', header: { cwd: '/work' } })
    // A fresh session has nothing to repair (no quarantine file, no repair reported).
    expect(writer.recovery.backendRepairs).toEqual([])
    const appended = [writer.append(user('one')), writer.append(user('two'))]
    await writer.flush()
    appended.push(writer.append(user('three')))
    await writer.close()
    await first.close()
    expect(readdirSync(join(root, 's1')).sort()).toEqual([logName(encoding), 'writer.lease'])

    const second = storeOver(root, encoding, 'other')
    expect(await readAll(second, 's1')).toEqual(appended)
    const listed = await second.list()
    expect(listed.sessions.map((session) => [session.id, session.header.cwd])).toEqual([['s1', '/work']])
    expect(await second.verify('s1')).toMatchObject({ status: 'ok', events: 3 })
    await second.close()
  })

  it(
    'a child writer SIGKILLed mid-stream: every acknowledged event survives the reopen, seqs dense',
    async () => {
      const root = await newRoot()
      const child = spawnTsChild('backend-writer-child.ts', [root, 'crash', encoding])
      // Let it acknowledge a few dozen flushes, then kill it between (or inside) writes.
      const line = await child.waitForLine((text) => text.startsWith('ACK ') && Number(text.slice(4)) >= 60, {
        timeoutMs: 60_000,
      })
      let acked = Number(line.slice(4))
      child.process.kill('SIGKILL')
      const exit = await child.exited
      expect(exit.signal).toBe('SIGKILL')
      for (const text of child.lines)
        if (text.startsWith('ACK ')) acked = Math.max(acked, Number(text.slice(4)))

      const store = storeOver(root, encoding, 'survivor')
      // The dead child's lock is stale (its pid is gone): the open takes it without `takeover`.
      const writer = await store.openWriter('crash')
      expect(writer.durableSeq).toBeGreaterThanOrEqual(acked)
      const events = await readAll(store, 'crash')
      expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index))
      for (let seq = 0; seq <= acked; seq += 1) {
        expect(events[seq]?.data).toEqual({
          message: { role: 'user', content: `event ${seq} ${'padding '.repeat(seq % 50)}` },
        })
      }
      // The session stays writable after the crash.
      writer.append(user('after the crash'))
      await writer.flush()
      await writer.close()
      expect((await store.verify('crash')).status).toBe('ok')
      await store.close()
    },
    testTime(120_000),
  )

  it('a torn tail is quarantined and truncated at acquire, reported in the recovery, and nothing acknowledged is lost', async () => {
    const root = await newRoot()
    const store = storeOver(root, encoding)
    const writer = await store.create({ id: 'torn' })
    writer.append(user('kept 1'))
    writer.append(user('kept 2'))
    await writer.flush()
    await writer.close()
    const path = join(root, 'torn', logName(encoding))
    const goodSize = statSync(path).size
    // A crash in the middle of the next write: half a line (plain) or half a frame (zstd).
    const other = storeOver(root, encoding, 'tearer')
    const tearer = await other.openWriter('torn')
    tearer.append(user('never acknowledged'))
    await tearer.flush()
    await tearer.close()
    await other.close()
    const fullSize = statSync(path).size
    const tornBytes = readFileSync(path).subarray(goodSize, fullSize - 7)
    truncateSync(path, goodSize)
    appendFileSync(path, tornBytes)

    const reader = await store.verify('torn')
    expect(reader.status).toBe('torn-tail')
    const reopened = await store.openWriter('torn')
    const [repair] = reopened.recovery.backendRepairs
    expect(reopened.recovery.backendRepairs).toHaveLength(1)
    expect(repair).toMatchObject({
      kind: 'torn-tail',
      droppedBytes: tornBytes.length,
      quarantinedTo: `torn/${logName(encoding)}.torn-${goodSize}`,
    })
    expect(statSync(path).size).toBe(goodSize)
    expect(readFileSync(join(root, 'torn', `${logName(encoding)}.torn-${goodSize}`))).toEqual(tornBytes)
    expect(reopened.durableSeq).toBe(1)
    reopened.append(user('after repair'))
    await reopened.flush()
    await reopened.close()
    const events = await readAll(store, 'torn')
    expect(events.map((event) => (event.data as { message: { content: string } }).message.content)).toEqual([
      'kept 1',
      'kept 2',
      'after repair',
    ])
    // A second open finds nothing to repair.
    const again = await store.openWriter('torn')
    expect(again.recovery.backendRepairs).toEqual([])
    await again.close()
    await store.close()
  })
})

describe('the JSONL backend: fencing across instances', () => {
  it('fences a JSONL backend lease whose lock was broken by a takeover: the old append writes nothing', async () => {
    const root = await newRoot()
    const backend = createJsonlBackend({ root, lock: { heartbeatMs: 0 } })
    const store = createSessionStore({ backend, clock: () => new Date().toISOString(), owner: 'a' })
    const writer = await store.create({ id: 'fence' })
    writer.append(user('acked'))
    await writer.flush()
    const path = join(root, 'fence', LOG_FILE_NAME)
    const before = readFileSync(path)
    const other = createJsonlBackend({ root, lock: { heartbeatMs: 0 } })
    const taken = await other.acquire('fence', { owner: 'b', leaseMs: 60_000, takeover: true })
    expect(taken.lease.epoch).toBeGreaterThan(writer.epoch)
    writer.append(user('refused'))
    await expect(writer.flush()).rejects.toMatchObject({ code: 'FENCED' })
    expect(readFileSync(path)).toEqual(before)
    await other.release(taken.lease)
    await writer.close({ discardUnflushed: true })
    await store.close()
    // The epoch survives a new instance: the next lease is above both.
    const third = createJsonlBackend({ root })
    const next = await third.acquire('fence', { owner: 'c', leaseMs: 1000 })
    expect(next.lease.epoch).toBe(taken.lease.epoch + 1)
    await third.release(next.lease)
  })
})
