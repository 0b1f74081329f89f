import { describe, expect, it } from 'vitest'

import { createMemoryBackend, createSessionStore, SessionStoreError } from '../src/index.ts'
import type {
  AbortSignalLike,
  SearchCandidate,
  SearchCandidateQuery,
  SessionBackend,
  SessionStore,
} from '../src/index.ts'
import { compileQuery, decodeCursor, encodeCursor, parseQuery, snippetOf } from '../src/search-query.ts'

declare const AbortController: new () => { readonly signal: AbortSignalLike; abort(reason?: unknown): void }

function clock(): () => string {
  let tick = 0
  return () => new Date(Date.UTC(2026, 0, 1) + ++tick * 1000).toISOString()
}

const user = (content: string) =>
  ({ type: 'user/message', data: { message: { role: 'user', content } } }) as const

async function session(store: SessionStore, id: string, texts: readonly string[]): Promise<void> {
  const writer = await store.create({ id })
  for (const text of texts) writer.append(user(text))
  await writer.close()
}

function codeOf(run: () => unknown): unknown {
  try {
    run()
  } catch (error) {
    return error instanceof SessionStoreError ? { code: error.code, message: error.message } : error
  }
  return 'no error'
}

describe('search query language', () => {
  it('splits terms on whitespace, keeps quoted phrases whole, and takes an unclosed quote to the end', () => {
    expect(parseQuery('  alpha "beta  gamma" delta "eps zeta')).toMatchObject({
      terms: ['alpha', 'delta'],
      phrases: [
        ['beta', 'gamma'],
        ['eps', 'zeta'],
      ],
    })
    expect(parseQuery('"single"').terms).toEqual(['single'])
  })

  it('gives an index only fragments JSON writes verbatim (printable ASCII without quotes or backslashes), lowercased', () => {
    expect(parseQuery('Foo é a\\b "x y" x').fragments).toEqual(['foo', 'x', 'y'])
  })

  it('refuses an empty, blank, quote-only, non-string or oversized query with INVALID_OPTION naming the query', () => {
    for (const query of ['', '  \n', '""', '" "']) {
      expect(codeOf(() => parseQuery(query))).toMatchObject({
        code: 'INVALID_OPTION',
        message: expect.stringContaining('Option query') as unknown,
      })
    }
    expect(codeOf(() => parseQuery(42))).toMatchObject({ code: 'INVALID_OPTION' })
    expect(codeOf(() => parseQuery('x'.repeat(1001)))).toMatchObject({ code: 'INVALID_OPTION' })
    expect(codeOf(() => parseQuery(Array.from({ length: 33 }, (_, i) => `t${i}`).join(' ')))).toMatchObject({
      code: 'INVALID_OPTION',
    })
  })

  it('matches every term case-insensitively (regex characters literal), a phrase across any whitespace, and marks the earliest match', () => {
    const matcher = compileQuery(parseQuery('b.c "big  Table" zz'))
    expect(matcher.match('ZZ big\ntable then b.c')).toEqual({ start: 0, end: 2 })
    expect(matcher.match('big table b.c')).toBeNull()
    expect(matcher.match('zz big table bxc')).toBeNull()
    expect(matcher.match('zz table big b.c')).toBeNull()
    expect(matcher.lineMayMatch('{"A":"BIG TABLE b.c zZ"}')).toBe(true)
    expect(matcher.lineMayMatch('{"a":"big"}')).toBe(false)
  })

  it('the line prefilter folds U+212A KELVIN SIGN and U+017F LONG S as the matcher does (no line it drops could match)', () => {
    const matcher = compileQuery(parseQuery('kelvin status'))
    const text = '\u212Aelvin \u017Ftatus'
    expect(matcher.match(text)).not.toBeNull()
    expect(matcher.lineMayMatch(JSON.stringify({ text }))).toBe(true)
    expect(matcher.lineMayMatch(JSON.stringify({ text: '\u212Aelvin only' }))).toBe(false)
  })
})

describe('search snippets and cursors', () => {
  it('cuts around the match with ellipses, offsets pointing at the match, never inside a surrogate pair', () => {
    const text = `${'x'.repeat(59)}😀needle${'y'.repeat(200)}`
    const start = text.indexOf('needle')
    const { snippet, match } = snippetOf(text, { start, end: start + 6 })
    expect(snippet.slice(match.start, match.end)).toBe('needle')
    expect(snippet.startsWith('…x')).toBe(true)
    expect(snippet.endsWith('y…')).toBe(true)
    const early = snippetOf(`😀${'z'.repeat(59)}needle`, { start: 61, end: 67 })
    expect(early.snippet.startsWith('😀')).toBe(true)
    expect(early.snippet.slice(early.match.start, early.match.end)).toBe('needle')
  })

  it('round-trips a position and refuses any other cursor with INVALID_OPTION naming the cursor', () => {
    const position = { sessionId: 's_1-x', seq: 12, field: 3 }
    expect(decodeCursor(encodeCursor(position))).toEqual(position)
    for (const bad of ['', 's1.1.9.s', 's1.01.0.s', 's1.1.0.', 's1.1.0.a/b', 12, {}]) {
      expect(codeOf(() => decodeCursor(bad))).toMatchObject({
        code: 'INVALID_OPTION',
        message: expect.stringContaining('Option cursor') as unknown,
      })
    }
  })
})

describe('store.search', () => {
  it('pages through a backend search capability batch by batch, the core dropping its false positives', async () => {
    const memory = createMemoryBackend()
    const asked: SearchCandidateQuery[] = []
    // An "index" that returns every line of every session (all false positives but the hits).
    const backend: SessionBackend = {
      ...memory,
      list: memory.list.bind(memory),
      read: memory.read.bind(memory),
      readHeader: memory.readHeader.bind(memory),
      head: memory.head.bind(memory),
      create: memory.create.bind(memory),
      acquire: memory.acquire.bind(memory),
      append: memory.append.bind(memory),
      renew: memory.renew.bind(memory),
      release: memory.release.bind(memory),
      close: memory.close.bind(memory),
      capabilities: {
        ...memory.capabilities,
        search: {
          candidates: async (query) => {
            asked.push(query)
            const all: SearchCandidate[] = []
            for (const id of ['a', 'b']) {
              for await (const stored of memory.read(id, { fromSeq: 0 })) all.push({ sessionId: id, stored })
            }
            const from = query.from
            const rest = all.filter(
              (c) =>
                from === null ||
                c.sessionId > from.sessionId ||
                (c.sessionId === from.sessionId && c.stored.seq >= from.seq),
            )
            return { candidates: rest.slice(0, 2), done: rest.length <= 2 }
          },
        },
      },
    }
    const store = createSessionStore({ backend, clock: clock() })
    await session(store, 'a', ['one hit', 'miss', 'hit two', 'miss'])
    await session(store, 'b', ['miss', 'third HIT'])
    const first = await store.search('hit', { limit: 2 })
    expect(first.hits.map((hit) => `${hit.sessionId}:${hit.seq}`)).toEqual(['a:0', 'a:2'])
    const second = await store.search('hit', { limit: 2, cursor: first.nextCursor })
    expect(second.hits.map((hit) => `${hit.sessionId}:${hit.seq}:${hit.snippet}`)).toEqual(['b:1:third HIT'])
    expect(second.nextCursor).toBeNull()
    expect(asked[0]).toMatchObject({ fragments: ['hit'], from: null, sessionIds: null })
    expect(asked.at(-1)?.from).not.toBeNull()
  })

  it('scans without an index, skipping a line that fails its checks, and stops on abort with ABORTED', async () => {
    const backend = createMemoryBackend()
    const store = createSessionStore({ backend, clock: clock() })
    await session(store, 'good', ['needle one'])
    await session(store, 'bad', ['needle before', 'needle damaged', 'needle after'])
    const lines: string[] = []
    for await (const stored of backend.read('bad', { fromSeq: 1, toSeq: 1 })) lines.push(stored.line)
    backend.testHooks.corruptLine('bad', 1, (lines[0] ?? '').replace('damaged', 'DAMAGED'))
    const page = await store.search('needle')
    expect(page.hits.map((hit) => `${hit.sessionId}:${hit.seq}`)).toEqual(['bad:0', 'bad:2', 'good:0'])
    const controller = new AbortController()
    controller.abort(new Error('stop'))
    await expect(store.search('needle', { signal: controller.signal })).rejects.toMatchObject({
      code: 'ABORTED',
    })
  })
})
