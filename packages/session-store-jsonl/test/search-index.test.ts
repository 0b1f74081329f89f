/**
 * The JSONL search index (`search.index`, issue 26 item 2), against the core's scan of the
 * same root: every search here runs twice, through the index and through a store whose
 * backend hides `capabilities.search` (the core then scans every line), and the hits must
 * be equal. Faults are real: the sidecar truncated mid-record (a crash mid-append), bytes
 * flipped in a record, the log rolled back and regrown, a log line damaged.
 */
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  openSync,
  readFileSync,
  readSync,
  closeSync,
  rmSync,
  statSync,
  truncateSync,
  writeSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { createSessionStore, ENCRYPTION_SCHEME } from '@agent-ledger/session-store'
import type { SearchHit, SessionEncryption, SessionStore } from '@agent-ledger/session-store'
import { RECORD_BYTES } from '@agent-ledger/session-store/search-index'

import { createJsonlBackend } from '../src/index.ts'
import { ChainCache } from '../src/backend/search-index-cache.ts'
import { nodeFsOps } from '../src/fs-ops.ts'
import type { FsOps } from '../src/fs-ops.ts'
import type { LogEncoding } from '../src/zstd-log-writer.ts'
import { scanning } from './support/scanning.ts'

const CLOCK = (): string => '2026-12-01T00:00:00.000Z'
const INDEX = 'search.index'
const LOG = 'session.v4.jsonl'
const V0_FIXTURE = new URL('./fixtures/v0/normal-tool-calls.jsonl', import.meta.url)
const roots: string[] = []

afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
})

interface Pair {
  readonly root: string
  readonly indexed: SessionStore
  readonly scanned: SessionStore
  close(): Promise<void>
}

/**
 * The backend's clock: the real one, or an hour ahead, so every directory and log is old
 * enough for a search to reuse what it learned of a session and to close an idle log's last block.
 */
let clockAhead = 0

function stores(options: { encoding?: LogEncoding; encryption?: SessionEncryption; fs?: FsOps } = {}): Pair {
  const root = mkdtempSync(join(tmpdir(), 'search-index-'))
  roots.push(root)
  const ahead = clockAhead
  const backend = createJsonlBackend({
    root,
    now: () => Date.now() + ahead,
    ...(options.fs === undefined ? {} : { fs: options.fs }),
    ...(options.encoding === undefined ? {} : { encoding: options.encoding }),
  })
  const core = {
    clock: CLOCK,
    redaction: null,
    ...(options.encryption === undefined ? {} : { encryption: options.encryption }),
  }
  const indexed = createSessionStore({ ...core, backend })
  const scanned = createSessionStore({ clock: CLOCK, redaction: null, backend: scanning(backend) })
  return {
    root,
    indexed,
    scanned,
    close: async () => Promise.all([indexed.close(), scanned.close()]).then(() => undefined),
  }
}

/** Deterministic filler words (no planted word is among them). */
function filler(seed: number, words: number): string {
  const vocabulary = [
    'store',
    'flush',
    'frame',
    'offset',
    'buffer',
    'header',
    'replay',
    'tool',
    'result',
    'seq',
    'torn',
  ]
  let state = seed
  const out: string[] = []
  for (let index = 0; index < words; index += 1) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0
    out.push(`${vocabulary[state % vocabulary.length]!}${state % 97}`)
  }
  return out.join(' ')
}

/** Appends `count` user messages (~700 bytes each); every 37th holds `word`. */
async function write(
  store: SessionStore,
  id: string,
  from: number,
  count: number,
  word = 'zanzibar',
): Promise<void> {
  const writer = from === 0 ? await store.create({ id }) : await store.openWriter(id)
  for (let index = from; index < from + count; index += 1) {
    const planted = index % 37 === 5 ? ` The ${word} Migration broke.` : ''
    writer.append({
      type: 'user/message',
      data: { message: { role: 'user', content: `${filler(index, 80)}${planted}` } },
    })
    if (index % 250 === 249) await writer.flush()
  }
  await writer.close()
}

/** How many of events `from..from + count - 1` {@link write} plants the word in. */
function planted(from: number, count: number): number {
  let n = 0
  for (let index = from; index < from + count; index += 1) if (index % 37 === 5) n += 1
  return n
}

function keys(hits: readonly SearchHit[]): string[] {
  return hits.map((hit) => `${hit.sessionId}:${hit.seq}:${hit.field}:${hit.snippet}`)
}

async function allHits(store: SessionStore, query: string, limit = 7): Promise<string[]> {
  const out: string[] = []
  let cursor: string | null = null
  for (let page = 0; page < 200; page += 1) {
    const result = await store.search(query, { limit, cursor })
    out.push(...keys(result.hits))
    if (result.nextCursor === null) return out
    cursor = result.nextCursor
  }
  throw new Error(`search ${query} did not end within 200 pages`)
}

/** Searches through the index and through the scan; returns the hits after checking they are equal. */
async function same(pair: Pair, query: string): Promise<string[]> {
  const viaIndex = await allHits(pair.indexed, query)
  const viaScan = await allHits(pair.scanned, query)
  expect(viaIndex).toEqual(viaScan)
  return viaIndex
}

const QUERIES = ['ZANZIBAR migration', '"zanzibar migration"', 'zz']

/** File-system ops that record every open of a `search.index` sidecar. */
function indexOpens(): { fs: FsOps; opened: string[] } {
  const opened: string[] = []
  const fs: FsOps = {
    ...nodeFsOps,
    open: (path, flags, mode) => {
      if (path.endsWith(INDEX)) opened.push(path)
      return nodeFsOps.open(path, flags, mode)
    },
  }
  return { fs, opened }
}

function indexOf(pair: Pair, id: string): string {
  return join(pair.root, id, INDEX)
}

describe.each([
  ['the real clock', 0],
  ['a clock an hour ahead (sessions known, idle logs closed)', 3_600_000],
])('JSONL search index, %s', (_name, ahead) => {
  beforeEach(() => {
    clockAhead = ahead
  })

  it('is built by a search and grows by appends only (same inode, old bytes unchanged); hits equal the scan', async () => {
    const pair = stores()
    try {
      await write(pair.indexed, 'a1', 0, 300)
      await write(pair.indexed, 'b2', 0, 100, 'zanzibar')
      for (const query of QUERIES) await same(pair, query)
      expect((await same(pair, 'zanzibar')).length).toBe(planted(0, 300) + planted(0, 100))
      const first = statSync(indexOf(pair, 'a1'))
      const firstBytes = readFileSync(indexOf(pair, 'a1'))
      // A header and about one block per 32 KB of the ~300 KB log.
      expect(first.size % RECORD_BYTES).toBe(0)
      expect(first.size / RECORD_BYTES).toBeGreaterThan(5)
      await write(pair.indexed, 'a1', 300, 150)
      for (const query of QUERIES) await same(pair, query)
      const second = statSync(indexOf(pair, 'a1'))
      expect(second.ino).toBe(first.ino)
      expect(second.size).toBeGreaterThan(first.size)
      expect(readFileSync(indexOf(pair, 'a1')).subarray(0, first.size).equals(firstBytes)).toBe(true)
    } finally {
      await pair.close()
    }
  })

  it('a word written with U+212A KELVIN SIGN is found by its ASCII spelling, as the scan finds it', async () => {
    const pair = stores()
    try {
      await write(pair.indexed, 'k1', 0, 300, '\u212Aelvinite')
      await write(pair.indexed, 'k2', 0, 100, 'kelvinite')
      expect((await same(pair, 'kelvinite')).length).toBe(planted(0, 300) + planted(0, 100))
      expect((await same(pair, 'KELVINITE migration')).length).toBe(planted(0, 300) + planted(0, 100))
    } finally {
      await pair.close()
    }
  })

  it('after a crash mid-append (the sidecar truncated inside a record) the chain ends there, is repaired and results equal the scan', async () => {
    const pair = stores()
    try {
      await write(pair.indexed, 'a1', 0, 300)
      await same(pair, 'zanzibar')
      const path = indexOf(pair, 'a1')
      const size = statSync(path).size
      truncateSync(path, size - RECORD_BYTES - 100)
      await write(pair.indexed, 'a1', 300, 50)
      for (const query of QUERIES) await same(pair, query)
      const repaired = statSync(path).size
      expect(repaired % RECORD_BYTES).toBe(0)
      expect(repaired).toBeGreaterThanOrEqual(size)
    } finally {
      await pair.close()
    }
  })

  it('a corrupt record (its signature zeroed: trusted, it would hide every hit) is detected; results equal the scan', async () => {
    const pair = stores()
    try {
      await write(pair.indexed, 'a1', 0, 300)
      await same(pair, 'zanzibar')
      const path = indexOf(pair, 'a1')
      const records = statSync(path).size / RECORD_BYTES
      const fd = openSync(path, 'r+')
      for (let record = 1; record < records; record += 1)
        writeSync(fd, Buffer.alloc(RECORD_BYTES - 80), 0, RECORD_BYTES - 80, record * RECORD_BYTES + 70)
      closeSync(fd)
      for (const query of QUERIES) await same(pair, query)
      expect((await same(pair, 'zanzibar')).length).toBe(planted(0, 300))
      // Replaced by a valid index again (the same blocks rebuilt).
      expect(statSync(path).size).toBe(records * RECORD_BYTES)
    } finally {
      await pair.close()
    }
  })

  it('a stale index (the log rolled back and regrown with other lines) is detected and rebuilt; results equal the scan', async () => {
    const pair = stores()
    try {
      await write(pair.indexed, 'a1', 0, 300)
      await same(pair, 'zanzibar')
      const log = join(pair.root, 'a1', LOG)
      const text = readFileSync(log, 'utf8')
      // Keep the header and the first 300 events: a rollback to a durable line boundary.
      let cut = 0
      for (let line = 0; line < 202; line += 1) cut = text.indexOf('\n', cut) + 1
      truncateSync(log, cut)
      await write(pair.indexed, 'a1', 200, 200, 'kilimanjaro')
      for (const query of [...QUERIES, 'kilimanjaro']) await same(pair, query)
      expect((await same(pair, 'kilimanjaro')).length).toBe(planted(200, 200))
    } finally {
      await pair.close()
    }
  })

  it('zstd sessions, encrypted sessions (unsearched without the key) and deleted sessions: results equal the scan', async () => {
    const encryption: SessionEncryption = {
      createDataKey: (id) =>
        Promise.resolve({
          header: { scheme: ENCRYPTION_SCHEME, keyId: 'k1', dataKeyId: `d-${id}` },
          cipher: toyCipher,
        }),
      openDataKey: () => Promise.resolve(toyCipher),
    }
    const pair = stores({ encryption })
    const zstd = stores({ encoding: 'zstd' })
    try {
      await write(pair.indexed, 'a1', 0, 200)
      await write(pair.indexed, 'b2', 0, 200)
      await write(zstd.indexed, 'z1', 0, 300)
      for (const query of QUERIES) await same(zstd, query)
      expect((await same(zstd, 'zanzibar')).length).toBe(planted(0, 300))
      // Without the key: each encrypted session is reported once, through the index as through the scan.
      const plainStore = createSessionStore({
        clock: CLOCK,
        redaction: null,
        backend: createJsonlBackend({ root: pair.root }),
      })
      const page = await plainStore.search('zanzibar')
      expect(page.hits).toEqual([])
      expect(page.unsearched?.map((entry) => entry.sessionId)).toEqual(['a1', 'b2'])
      expect(page.unsearched).toEqual((await pair.scanned.search('zanzibar')).unsearched)
      await plainStore.close()
      // Never indexed.
      expect(() => statSync(indexOf(pair, 'a1'))).toThrow()
      // Deleted: gone from both.
      const before = await same(zstd, 'zanzibar')
      await write(zstd.indexed, 'p3', 0, 200)
      expect((await same(zstd, 'zanzibar')).length).toBe(before.length + planted(0, 200))
      await zstd.indexed.delete('p3')
      expect(await same(zstd, 'zanzibar')).toEqual(before)
    } finally {
      await pair.close()
      await zstd.close()
    }
  })

  it('a deleted plain session is no longer hit and its index is removed with it', async () => {
    const pair = stores()
    try {
      await write(pair.indexed, 'a1', 0, 200)
      await write(pair.indexed, 'b2', 0, 200)
      expect((await same(pair, 'zanzibar')).length).toBe(2 * planted(0, 200))
      expect(statSync(indexOf(pair, 'b2')).size).toBeGreaterThan(RECORD_BYTES)
      await pair.indexed.delete('b2')
      expect((await same(pair, 'zanzibar')).length).toBe(planted(0, 200))
      expect(() => statSync(indexOf(pair, 'b2'))).toThrow()
    } finally {
      await pair.close()
    }
  })

  it('a damaged log line: never a hit; the index finds hits after it in indexed blocks where the scan stops (the documented divergence)', async () => {
    const pair = stores()
    try {
      await write(pair.indexed, 'a1', 0, 300)
      const before = await same(pair, 'zanzibar')
      expect(before.length).toBe(planted(0, 300))
      // Damage one line that holds the word (the 2nd hit) and one filler line before the 5th hit.
      const log = join(pair.root, 'a1', LOG)
      const text = readFileSync(log, 'latin1')
      const hitAt = text.indexOf('zanzibar', text.indexOf('zanzibar') + 1)
      const fd = openSync(log, 'r+')
      writeSync(fd, 'Z', hitAt)
      const lines = text.split('\n')
      const fillerLine = lines.findIndex((line, index) => index > 100 && !line.includes('zanzibar'))
      const fillerAt = lines.slice(0, fillerLine).join('\n').length + 20
      const probe = Buffer.alloc(1)
      readSync(fd, probe, 0, 1, fillerAt)
      writeSync(fd, probe[0] === 0x61 ? 'b' : 'a', fillerAt)
      closeSync(fd)
      const viaIndex = await allHits(pair.indexed, 'zanzibar')
      const viaScan = await allHits(pair.scanned, 'zanzibar')
      // The scan stops at the first damaged line: only the first hit.
      expect(viaScan).toEqual(before.slice(0, 1))
      // The index reads only candidate lines: the damaged one fails the core's checksum, the rest are found.
      expect(viaIndex).toEqual([before[0], ...before.slice(2)])
      // Damage that is there when the index is built ends the chain before it: as the scan.
      await write(pair.indexed, 'b2', 0, 300)
      const b2 = join(pair.root, 'b2', LOG)
      const damagedAt = readFileSync(b2, 'latin1').indexOf('zanzibar', 20_000)
      const b2fd = openSync(b2, 'r+')
      writeSync(b2fd, 'Z', damagedAt)
      closeSync(b2fd)
      const onlyB2 = (hits: string[]): string[] => hits.filter((hit) => hit.startsWith('b2:'))
      const fresh = onlyB2(await allHits(pair.indexed, 'zanzibar'))
      expect(fresh).toEqual(onlyB2(await allHits(pair.scanned, 'zanzibar')))
      expect(fresh.length).toBeGreaterThan(0)
      expect(fresh.length).toBeLessThan(planted(0, 300))
    } finally {
      await pair.close()
    }
  })
})

describe('JSONL search index, the chains kept in memory', () => {
  beforeEach(() => {
    clockAhead = 3_600_000
  })

  it('a search of unchanged sidecars opens none; a sidecar changed since (torn) is read again and repaired; hits equal the scan', async () => {
    const { fs, opened } = indexOpens()
    const pair = stores({ fs })
    try {
      await write(pair.indexed, 'a1', 0, 300)
      await write(pair.indexed, 'b2', 0, 200)
      const hits = await same(pair, 'zanzibar') // builds both sidecars
      await same(pair, 'zanzibar') // reads them, keeps their chains
      opened.length = 0
      expect(await same(pair, 'zanzibar')).toEqual(hits)
      expect(await same(pair, 'kilimanjaro')).toEqual([])
      expect(opened).toEqual([])
      const path = indexOf(pair, 'a1')
      const size = statSync(path).size
      truncateSync(path, size - RECORD_BYTES - 100)
      expect(await same(pair, 'zanzibar')).toEqual(hits)
      expect(opened.filter((name) => name === path).length).toBeGreaterThan(0)
      expect(statSync(path).size).toBe(size)
    } finally {
      await pair.close()
    }
  })

  it("compress drops the plain log's sidecar in its publish; the next search returns the same hits and opens no index", async () => {
    const { fs, opened } = indexOpens()
    const pair = stores({ fs })
    try {
      await write(pair.indexed, 'a1', 0, 300)
      const before = await same(pair, 'zanzibar')
      expect(before.length).toBe(planted(0, 300))
      expect(statSync(indexOf(pair, 'a1')).size).toBeGreaterThan(RECORD_BYTES)
      await pair.indexed.backend.capabilities.compress!.compress('a1')
      expect(readdirSync(join(pair.root, 'a1'))).not.toContain(INDEX)
      opened.length = 0
      expect(await same(pair, 'zanzibar')).toEqual(before)
      expect(opened).toEqual([])
    } finally {
      await pair.close()
    }
  })

  it('migrate drops a sidecar left beside the older generation in its publish; hits equal the scan', async () => {
    const pair = stores()
    try {
      const directory = join(pair.root, 'v0')
      mkdirSync(directory, { mode: 0o700 })
      copyFileSync(V0_FIXTURE, join(directory, 'session.jsonl'))
      // A sidecar of another log (as a v4 log later removed would leave): its bytes must go.
      await write(pair.indexed, 'a1', 0, 300)
      await same(pair, 'zanzibar')
      copyFileSync(indexOf(pair, 'a1'), join(directory, INDEX))
      await pair.indexed.backend.capabilities.migrate!.migrate('v0')
      expect(readdirSync(directory)).not.toContain(INDEX)
      for (const query of [...QUERIES, 'the']) await same(pair, query)
    } finally {
      await pair.close()
    }
  })

  it('stays within its byte budget, the least recently used chain evicted first; a chain over the budget is not kept', () => {
    const chain = (blocks: number, key: string) => ({
      indexKey: key,
      indexTime: 0,
      end: { nextSeq: blocks, offset: 100 },
      blocks: Array.from({ length: blocks }, (_, index) => ({
        firstSeq: index,
        lastSeq: index,
        start: 100 + index,
        lastLine: 100 + index,
        end: 101 + index,
        lastCrc: 0,
      })),
      signatures: new Uint8Array(blocks * 1024),
      keep: blocks + 1,
    })
    const cache = new ChainCache(10 * 1200)
    cache.set('a', chain(4, 'ka'))
    cache.set('b', chain(4, 'kb'))
    expect(cache.get('a', 'ka')?.blocks.length).toBe(4) // a is now the most recently used
    cache.set('c', chain(4, 'kc'))
    expect(cache.get('b', 'kb')).toBeUndefined()
    expect(cache.get('a', 'ka')).toBeDefined()
    expect(cache.get('c', 'kc')).toBeDefined()
    expect(cache.bytes).toBeLessThanOrEqual(10 * 1200)
    // Another state of the sidecar: not served, and forgotten.
    expect(cache.get('a', 'other')).toBeUndefined()
    expect(cache.get('a', 'ka')).toBeUndefined()
    cache.set('d', chain(11, 'kd'))
    expect(cache.get('d', 'kd')).toBeUndefined()
    expect(cache.get('c', 'kc')).toBeDefined()
  })
})

/** A reversible stand-in for a cipher (the test needs sealed text, not secrecy). */
const toyCipher = {
  seal: (plaintext: string): string => Buffer.from(plaintext, 'utf8').toString('base64'),
  open: (sealed: string): string | null => Buffer.from(sealed, 'base64').toString('utf8'),
}
