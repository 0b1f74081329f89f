/**
 * The create of a plain log and the write open that follows it (`store.create` acquires at
 * once): the staged copy is compared by sha256, not parsed again, and the open reuses the
 * head the create published, reading only its last line, while the log is what the create
 * left. Anything written to it in between (bytes appended by another process, a line changed
 * in place with its mtime put back, another writer's lease) makes the open scan as always.
 */
import { appendFileSync, constants, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import type { LoggedEvent } from '@agent-ledger/session-events'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { nodeFsOps } from '../src/index.ts'
import type { FileHandleOps, FsOps } from '../src/index.ts'
import { coreTestStore, makeTempDir, turnInputs } from './support/sessions.ts'

let temp: ReturnType<typeof makeTempDir>
beforeEach(() => {
  temp = makeTempDir('al-published-head-')
})
afterEach(() => temp.cleanup())

function seedOf(turns: number): LoggedEvent[] {
  const events: LoggedEvent[] = []
  for (let turn = 1; turn <= turns; turn += 1) {
    for (const input of turnInputs(turn, { toolOutput: 'o'.repeat(200) })) {
      events.push({
        ...input,
        seq: events.length,
        time: new Date(Date.UTC(2026, 2, 1) + events.length * 1000).toISOString(),
      })
    }
  }
  return events
}

async function* batches(events: readonly LoggedEvent[]): AsyncGenerator<LoggedEvent[], void, undefined> {
  for (let at = 0; at < events.length; at += 7) yield await Promise.resolve(events.slice(at, at + 7))
}

/** A session's header and event lines as the core encoded them (written under `root`), for port-level creates. */
async function portSeed(root: string) {
  const { store } = coreTestStore(root)
  await (await store.create({ id: 's', seed: seedOf(3) })).close()
  const { line: headerLine } = await store.backend.readHeader('s')
  const { header } = await store.openReader('s')
  const lines: string[] = []
  for await (const stored of store.backend.read('s', { fromSeq: 0 })) lines.push(stored.line)
  return { headerLine, header, lines }
}

async function* batchesOfLines(lines: readonly string[]): AsyncGenerator<string[], void, undefined> {
  for (let at = 0; at < lines.length; at += 5) yield await Promise.resolve(lines.slice(at, at + 5))
}

/**
 * Counts the bytes read from the published log through handles opened for writing (the
 * acquire's; not the temp copy, not the header peeks of a read open); `onOpen` runs before
 * the log's first open of any kind.
 */
function watchedFs(
  onOpen: (path: string) => void = () => undefined,
): FsOps & { readonly logBytesRead: () => number } {
  let read = 0
  let opened = false
  return {
    ...nodeFsOps,
    logBytesRead: () => read,
    async open(path, flags, mode) {
      const log = path.endsWith('/session.v4.jsonl')
      if (log && !opened) {
        opened = true
        onOpen(path)
      }
      const handle = await nodeFsOps.open(path, flags, mode)
      if (!log || (flags & (constants.O_RDWR | constants.O_WRONLY)) === 0) return handle
      const wrapped: FileHandleOps = Object.create(handle) as FileHandleOps
      wrapped.read = async (buffer, offset, length, position) => {
        const count = await handle.read(buffer, offset, length, position)
        read += count
        return count
      }
      return wrapped
    },
  }
}

describe('the write open after a create reuses the published head', () => {
  it('reads only the last line of the log it just published, then appends and verifies', async () => {
    const fs = watchedFs()
    const { store } = coreTestStore(temp.path, { fs })
    const seed = seedOf(40)
    const writer = await store.create({ id: 's', header: { cwd: '/x' }, seed: batches(seed) })
    const path = join(temp.path, 's', 'session.v4.jsonl')
    const lines = readFileSync(path, 'utf8').split('\n')
    // The last event line and the newline before it: nothing else of the log was read.
    expect(fs.logBytesRead()).toBe(Buffer.byteLength(lines.at(-2)!) + 2)
    writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'after the seed' } } })
    await writer.close()
    const report = await coreTestStore(temp.path).store.verify('s')
    expect(report).toMatchObject({ status: 'ok', events: seed.length + 1 })
  })

  it('scans when bytes were appended between the create and the open: the torn tail is quarantined', async () => {
    const fs = watchedFs((path) => appendFileSync(path, '{"seq":99,"torn'))
    const { store } = coreTestStore(temp.path, { fs })
    const seed = seedOf(10)
    const writer = await store.create({ id: 's', seed: batches(seed) })
    const directory = join(temp.path, 's')
    expect(fs.logBytesRead()).toBeGreaterThanOrEqual(statSync(join(directory, 'session.v4.jsonl')).size)
    expect(readdirSync(directory).filter((name) => name.includes('.torn-'))).toHaveLength(1)
    writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'next' } } })
    await writer.close()
    expect(await coreTestStore(temp.path).store.verify('s')).toMatchObject({
      status: 'ok',
      events: seed.length + 1,
    })
  })

  it('scans when a line was changed in place, same size (its last line intact): the damage is found', async () => {
    const fs = watchedFs((path) => {
      const bytes = readFileSync(path)
      // One byte of the second event line's text, same length: its checksum no longer holds.
      const second = bytes.indexOf(0x0a, bytes.indexOf(0x0a) + 1) + 1
      const at = bytes.indexOf('"seq":1', second) + 6
      bytes[at] = bytes[at] === 0x31 ? 0x32 : 0x31
      writeFileSync(path, bytes)
    })
    const { store } = coreTestStore(temp.path, { fs })
    // The open finds the damage the create's head would have hidden; the core then reads the log.
    await expect(store.create({ id: 's', seed: batches(seedOf(10)) })).rejects.toMatchObject({
      code: 'CORRUPT_LINE',
    })
  })

  it('scans once another writer took a lease since the create, even one that wrote nothing', async () => {
    const { headerLine, header, lines } = await portSeed(join(temp.path, 'source'))
    const fs = watchedFs()
    const root = join(temp.path, 'store')
    const { store } = coreTestStore(root, { fs })
    await store.backend.create({ id: 's', headerLine, header, lines: batchesOfLines(lines) })
    // Another store (another process as far as this backend knows) opens and closes a writer.
    await (await coreTestStore(root).store.openWriter('s')).close()
    const acquired = await store.backend.acquire('s', { owner: 'again', leaseMs: 60_000 })
    expect(acquired.head.nextSeq).toBe(lines.length)
    expect(fs.logBytesRead()).toBeGreaterThanOrEqual(statSync(join(root, 's', 'session.v4.jsonl')).size)
    await store.backend.release(acquired.lease)
  })
})

describe('the create of a plain log is checked without parsing it again', () => {
  it('refuses a seed line holding a newline through the port (CREATE_FAILED at verify), nothing published', async () => {
    const { headerLine, header, lines } = await portSeed(join(temp.path, 'source'))
    // The last two lines given as one: the newline count of the bytes written says so.
    const spliced = [...lines.slice(0, -2), `${lines.at(-2)!}\n${lines.at(-1)!}`]
    const other = join(temp.path, 'other')
    const { store } = coreTestStore(other)
    await expect(
      store.backend.create({
        id: 's',
        headerLine,
        header,
        lines: batchesOfLines(spliced),
      }),
    ).rejects.toMatchObject({ code: 'CREATE_FAILED', details: { step: 'verify', published: false } })
    expect(readdirSync(other)).toEqual([])
  })
})
