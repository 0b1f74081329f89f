import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { RepairCode } from '@agent-ledger/loop-repair'
import { assertJsonValue, SESSION_ID_PATTERN } from '@agent-ledger/session-events'
import { describe, expect, it } from 'vitest'

import { fitId } from '../src/ids.ts'
import { importedSessionId, importLive, importSource, splitLines } from '../src/index.ts'
import {
  importFile,
  importText,
  replay,
  SHARED_FIXTURES,
  sharedFixturesAvailable,
  SYNTHETIC,
} from './support/import.ts'

const fixture = (...parts: string[]): string => join(SYNTHETIC, ...parts)
const here = dirname(fileURLToPath(import.meta.url))
const CODEX_ROLLOUT = 'rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl'

describe('pi: calls that never ran (issue 25 item 1)', () => {
  it('v3-errored-calls.jsonl: an errored or aborted assistant message is log-only, its calls get no placeholder', async () => {
    const result = await importFile(fixture('pi', 'v3-errored-calls.jsonl'))
    const session = result.sessions[0]!
    // pi's agent loop runs no call of such a message and never replays it to the model.
    expect(result.report.repairs).toEqual({})
    expect(
      session.events.filter(
        (event) => event.type === 'tool/result' && (event.data as { code?: string }).code,
      ),
    ).toEqual([])
    expect(session.events.filter((event) => event.type === 'tool/call').map((event) => event.data)).toEqual([
      { callId: 'toolu_ok1', name: 'bash', arguments: '{"command":"ls"}' },
    ])
    expect(replay(session.events).map((message) => [message.role, message.content])).toEqual([
      ['user', 'list the files'],
      ['user', 'try again'],
      ['user', 'once more'],
      ['assistant', null],
      ['tool', 'README.md\nsrc'],
      ['assistant', 'README.md and src.'],
    ])
    expect(session.events.filter((event) => event.type === 'turn/end').map((event) => event.data)).toEqual([
      { turn: 1, reason: 'error' },
      { turn: 2, reason: 'aborted' },
      { turn: 3, reason: 'completed' },
    ])
    expect(result.report.logOnly).toMatchObject({
      'log-only:pi.assistant-error': 1,
      'log-only:pi.assistant-aborted': 1,
    })
    expect(result.report.diagnostics.filter((finding) => finding.code === 'UNANSWERED_TOOL_CALL')).toEqual([])
    expect(RepairCode.TOOL_OUTCOME_UNKNOWN in result.report.repairs).toBe(false)
  })
})

describe('verbatim records are the source line (issue 25 item 4)', () => {
  // Sources written with JSON.stringify's form (pi, Claude Code, these Codex and OpenHands V1
  // fixtures): the stored record, serialized, must be the line byte for byte.
  const sources = readdirSync(SYNTHETIC, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.jsonl'))
    .filter((name) => {
      const lines = readFileSync(join(SYNTHETIC, name), 'utf8').split('\n')
      return lines.every((line) => {
        if (line.trim() === '') return true
        try {
          return JSON.stringify(JSON.parse(line)) === line
        } catch {
          return false // a spliced line (v3-spliced.jsonl)
        }
      })
    })
    .sort()

  it('covers the pi v1 compaction fixture', () => {
    expect(sources).toContain(join('pi', 'v1.jsonl'))
    expect(sources.length).toBeGreaterThan(20)
  })

  it.each(sources)('%s: every import/source-record record serializes to its line', async (name) => {
    const lines = readFileSync(join(SYNTHETIC, name), 'utf8').split('\n')
    const result = await importFile(join(SYNTHETIC, name))
    let compared = 0
    for (const session of result.sessions) {
      for (const event of session.events) {
        if (event.type !== 'import/source-record') continue
        const data = event.data as { line: number; record?: unknown }
        if (data.record === undefined) continue
        expect(JSON.stringify(data.record), `${name} line ${data.line}`).toBe(lines[data.line - 1])
        compared += 1
      }
    }
    expect(compared).toBeGreaterThan(0)
  })

  /** The bytes an `import/source-record` event keeps of its line: its text, or its record serialized. */
  const keptBytes = (data: { record?: unknown; text?: string }): string =>
    data.text ?? JSON.stringify(data.record)

  it.skipIf(!sharedFixturesAvailable())(
    'the real Codex rollout: lines with numbers written 19.0 keep their text; every record is its line byte for byte',
    async () => {
      const path = join(SHARED_FIXTURES, 'codex', CODEX_ROLLOUT)
      const lines = readFileSync(path, 'utf8').split('\n')
      // What makes this recording matter: JSON.stringify would write lines 13 and 19 otherwise.
      const changed = lines.flatMap((line, index) =>
        line !== '' && JSON.stringify(JSON.parse(line)) !== line ? [index + 1] : [],
      )
      expect(changed).toEqual([13, 19])
      expect(lines[12]).toContain('19.0')
      const result = await importFile(path)
      const kept = new Map<number, { record?: unknown; text?: string }>()
      for (const event of result.sessions[0]!.events) {
        if (event.type !== 'import/source-record') continue
        // Through the store's serialization and back, as a reader of the log gets it.
        const data = JSON.parse(JSON.stringify(event.data)) as {
          line: number
          record?: unknown
          text?: string
        }
        kept.set(data.line, data)
      }
      expect([...kept.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: 19 }, (_, i) => i + 1))
      for (const [line, data] of kept) expect(keptBytes(data), `line ${line}`).toBe(lines[line - 1])
      expect(kept.get(13)).toMatchObject({ text: lines[12], disposition: expect.any(String) })
      expect(kept.get(13)).not.toHaveProperty('record')
      expect(kept.get(12)).toHaveProperty('record')
      expect(kept.get(12)).not.toHaveProperty('text')
      // The mapping still reads the line (its token counts): only the kept copy changed.
      expect(result.report.malformedLines).toBe(0)
    },
  )

  it.skipIf(!sharedFixturesAvailable())(
    'Python\'s json.dumps form (OpenHands V0 events/<id>.json: ", " and ": " separators): each record kept as its text',
    async () => {
      // The real trajectory's events, each one line as OpenHands V0 writes an event file
      // (fixtures/openhands-v0-python of the CLI tests: python3 json.dumps of each element).
      const dir = join(here, '..', '..', 'cli', 'test', 'fixtures', 'openhands-v0-python', 'events')
      const lines = ['0', '3', '4', '5'].map((id) => readFileSync(join(dir, `${id}.json`), 'utf8'))
      expect(lines[0]).toMatch(/^\{"id": 0, "timestamp": /)
      const result = await importText(lines.join('\n'), { file: 'events', sourceName: 'python' })
      const records = result.sessions[0]!.events.filter((event) => event.type === 'import/source-record')
      expect(
        records.map((event) => keptBytes(JSON.parse(JSON.stringify(event.data)) as { text?: string })),
      ).toEqual(lines)
      expect(records.every((event) => (event.data as { record?: unknown }).record === undefined)).toBe(true)
    },
  )

  it('a spliced line keeps each record as its own piece of the line', async () => {
    const one =
      '{"type": "session", "version": 3, "id": "s-1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}'
    const two =
      '{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1.0}}'
    const result = await importText(`${one}${two}\n`, { file: 'spliced.jsonl' })
    const records = result.sessions[0]!.events.filter((event) => event.type === 'import/source-record')
    expect(records.map((event) => keptBytes(event.data as { text?: string }))).toEqual([one, two])
  })

  it.skipIf(!sharedFixturesAvailable())(
    'a live import keeps the text of appended lines too (import --follow)',
    async () => {
      const path = join(SHARED_FIXTURES, 'codex', CODEX_ROLLOUT)
      const lines = readFileSync(path, 'utf8').split('\n').slice(0, 19)
      // Cut after the turn context (line 12: earlier lines change what the header says).
      const head = `${lines.slice(0, 12).join('\n')}\n`
      const live = await importLive(
        () =>
          splitLines(
            (async function* () {
              await Promise.resolve()
              yield head
            })(),
          ),
        {
          file: CODEX_ROLLOUT,
          sha256: createHash('sha256').update(head).digest('hex'),
        },
      )
      const outcome = live.append(lines.slice(12))
      expect(outcome.kind).toBe('appended')
      const events = outcome.kind === 'appended' ? outcome.events : []
      const kept = events.flatMap((event) =>
        event.type === 'import/source-record'
          ? [event.data as { line: number; record?: unknown; text?: string }]
          : [],
      )
      expect(kept.map((data) => data.line)).toContain(13)
      for (const data of kept) expect(keptBytes(data), `line ${data.line}`).toBe(lines[data.line - 1])
      expect(kept.find((data) => data.line === 13)).toHaveProperty('text')
    },
  )

  it('pi v1: the compaction is stored without the firstKeptEntryId the migration derives, and still honoured', async () => {
    const result = await importFile(fixture('pi', 'v1.jsonl'))
    const compaction = result.sessions[0]!.events.find(
      (event) =>
        event.type === 'import/source-record' &&
        (event.data as { record?: { type?: string } }).record?.type === 'compaction',
    )
    expect(compaction?.data).toMatchObject({ record: { firstKeptEntryIndex: expect.any(Number) } })
    expect((compaction?.data as { record: object }).record).not.toHaveProperty('firstKeptEntryId')
    expect(result.sessions[0]!.events.some((event) => event.type === 'compaction/end')).toBe(true)
  })
})

describe('sub-agent and fork ids cannot collide (issue 25 item 5)', () => {
  it('two compaction agents of one session whose ids share their first 12 characters get two ids', async () => {
    const text = readFileSync(fixture('claude-code', 'agent-acompact.jsonl'), 'utf8')
    const ids: string[] = []
    for (const agent of ['acompact-1a2b3c4d5e6f7a80', 'acompact-1a2b3c4d5e6f7a81']) {
      const result = await importText(text.replaceAll('acompact-1a2b3c', agent), {
        file: `agent-${agent}.jsonl`,
      })
      ids.push(result.sessions[0]!.id)
    }
    expect(ids[0]).not.toBe(ids[1])
    for (const id of ids) {
      expect(id).toMatch(SESSION_ID_PATTERN)
      expect(id).toContain('acompact1a2b3c4d5e6f7a8')
    }
  })

  it('an id over the budget keeps its head and ends with a digest of all of it', () => {
    const head = `claude-${'a'.repeat(150)}`
    const one = fitId(`${head}-agent-x1`, 128)
    const two = fitId(`${head}-agent-x2`, 128)
    expect(one).not.toBe(two)
    for (const id of [one, two]) {
      expect(id.length).toBeLessThanOrEqual(128)
      expect(id).toMatch(SESSION_ID_PATTERN)
      expect(id.startsWith('claude-aaaa')).toBe(true)
    }
    expect(fitId('claude-short', 128)).toBe('claude-short')
    expect(importedSessionId('claude-code', `${'b'.repeat(120)}1`)).not.toBe(
      importedSessionId('claude-code', `${'b'.repeat(120)}2`),
    )
  })
})

describe('pi: two records on one line (issue 25 item 2)', () => {
  it('v3-spliced.jsonl: each record of a spliced line is imported by default, with a SPLICED_LINE warning', async () => {
    const result = await importFile(fixture('pi', 'v3-spliced.jsonl'))
    const session = result.sessions[0]!
    expect(result.report.lines).toBe(5)
    expect(result.report.records).toBe(7)
    expect(result.report.malformedLines).toBe(0)
    expect(result.report.diagnostics.map((finding) => [finding.code, finding.line])).toEqual([
      ['SPLICED_LINE', 3],
      ['SPLICED_LINE', 5],
    ])
    expect(replay(session.events).map((message) => message.content)).toEqual([
      'hello',
      'hi {not a brace} "quoted"',
      'and now?',
      'now this.',
    ])
    // Verbatim records name their line, and their place on a spliced one.
    const kept = session.events
      .filter((event) => event.type === 'import/source-record')
      .map((event) => {
        const data = event.data as { line: number; part?: number; record: { id: string } }
        return [data.record.id, data.line, data.part]
      })
    expect(kept).toEqual([
      ['5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d', 1, undefined],
      ['s1', 2, undefined],
      ['s2', 3, 1],
      ['s3', 3, 2],
      ['s4', 4, undefined],
      ['s5', 5, 1],
      ['s6', 5, 2],
    ])
  })

  it('a bad last line ending with a newline is MALFORMED_LINE; only one without its newline is TORN_LINE', async () => {
    const text = readFileSync(fixture('pi', 'v3-errored-calls.jsonl'), 'utf8')
    await expect(importText(`${text}{"type":"message","id":"x"\n`)).rejects.toMatchObject({
      code: 'MALFORMED_LINE',
      line: 10,
    })
    await expect(importText(`${text}{"type":"message","id":"x"`)).rejects.toMatchObject({
      code: 'TORN_LINE',
      line: 10,
    })
    const lenient = await importText(`${text}{"type":"message","id":"x"\n`, { lenient: true })
    expect(lenient.report.lines).toBe(10)
    expect(lenient.report.diagnostics.map((finding) => finding.code)).toContain('MALFORMED_LINE')
  })

  it('splitLines gives what text.split("\\n") gives, wherever the chunks are cut', async () => {
    const text = 'a\nbb\n\nccc\n'
    for (const size of [1, 2, 3, 64]) {
      const chunks = (async function* () {
        await Promise.resolve()
        for (let index = 0; index < text.length; index += size) yield text.slice(index, index + size)
      })()
      const lines: unknown[] = []
      for await (const line of splitLines(chunks)) lines.push(line)
      expect(lines).toEqual(text.split('\n'))
    }
  })
})

describe('one very long line (issue 25 item 6)', () => {
  const MIB = 1024 * 1024
  /**
   * A source of `before`, one line of 65 MiB (over the store's 64 MiB line limit), then
   * `after`, in 1 MiB chunks; every chunk counts the characters its `indexOf` scans, so the
   * test bounds the splitter's work by a count, not by time.
   */
  function longLineSource(
    before: string,
    after: string,
  ): { chunks: AsyncIterable<string>; scanned: () => number } {
    let scanned = 0
    const counted = (text: string): string => {
      // A String object whose indexOf counts what it scans (it stands in for the chunk).
      // eslint-disable-next-line @typescript-eslint/no-wrapper-object-types -- the boxed chunk is the point
      const boxed = new String(text) as String & { indexOf: (search: string, from?: number) => number }
      boxed.indexOf = (search: string, from = 0): number => {
        const found = String.prototype.indexOf.call(text, search, from)
        scanned += (found === -1 ? text.length : found + 1) - from
        return found
      }
      return boxed as unknown as string
    }
    const filler = 'x'.repeat(MIB)
    return {
      scanned: () => scanned,
      chunks: (async function* () {
        await Promise.resolve()
        yield counted(`${before}\n{"type":"user","pad":"`)
        for (let index = 0; index < 65; index += 1) yield counted(filler)
        yield counted(`"}\n${after}`)
      })(),
    }
  }
  // Two records of a real Claude Code transcript, then the long line.
  const first = readFileSync(join(SYNTHETIC, 'claude-code', 'flat.jsonl'), 'utf8')
    .split('\n')
    .slice(0, 2)
    .join('\n')

  it('strict: LINE_TOO_LARGE naming the line; each character is scanned once', async () => {
    const source = longLineSource(first, '')
    const sha256 = '0'.repeat(64)
    await expect(
      importSource(splitLines(source.chunks), { file: 'long.jsonl', sha256 }),
    ).rejects.toMatchObject({
      code: 'LINE_TOO_LARGE',
      line: 3,
      message: expect.stringContaining(
        `long.jsonl line 3: expected a line of at most ${64 * MIB} characters (the store's line limit), found one of`,
      ) as unknown,
    })
    // Linear: the text is about 65 MiB and is searched once (a re-search of the pending text on each chunk would scan ~2 GiB).
    expect(source.scanned()).toBeLessThanOrEqual(66 * MIB + first.length + 64)
    expect(source.scanned()).toBeGreaterThanOrEqual(65 * MIB)
  })

  it('lenient: the line is skipped and counted, the rest imported', async () => {
    const source = longLineSource(first, '')
    const result = await importSource(splitLines(source.chunks), {
      file: 'long.jsonl',
      sha256: '0'.repeat(64),
      lenient: true,
    })
    expect(result.report.malformedLines).toBe(1)
    expect(result.report.diagnostics.filter((finding) => finding.code === 'LINE_TOO_LARGE')).toMatchObject([
      { line: 3 },
    ])
    expect(result.report.records).toBe(2)
    expect(source.scanned()).toBeLessThanOrEqual(66 * MIB + first.length + 64)
  })
})

describe('records the store cannot hold (issue 25 item 7)', () => {
  const good = readFileSync(fixture('pi', 'v3-errored-calls.jsonl'), 'utf8').split('\n')
  const deep = `{"type":"custom","id":"deep","parentId":"c8","timestamp":"2026-04-02T09:00:09.000Z","data":${'['.repeat(100_000)}${']'.repeat(100_000)}}`
  const huge =
    '{"type":"custom","id":"huge","parentId":"c8","timestamp":"2026-04-02T09:00:09.000Z","usage":{"input_tokens":1e400}}'

  it.each([
    ['nested 100,000 deep', deep],
    ['a number like 1e400', huge],
  ])('strict: a record %s is UNSTORABLE_RECORD naming its line', async (_what, line) => {
    const text = [...good.slice(0, 9), line, ''].join('\n')
    await expect(importText(text)).rejects.toMatchObject({ code: 'UNSTORABLE_RECORD', line: 10 })
  })

  it('lenient: each is skipped and counted, kept as text, the rest imported', async () => {
    const text = [...good.slice(0, 5), deep, ...good.slice(5, 9), huge, ''].join('\n')
    const result = await importText(text, { lenient: true })
    expect(result.report.malformedLines).toBe(2)
    expect(
      result.report.diagnostics
        .filter((finding) => finding.code === 'UNSTORABLE_RECORD')
        .map((finding) => finding.line),
    ).toEqual([6, 11])
    const session = result.sessions[0]!
    const kept = session.events.filter(
      (event) =>
        event.type === 'import/source-record' && (event.data as { text?: string }).text !== undefined,
    )
    expect(kept.map((event) => (event.data as { line: number }).line)).toEqual([6, 11])
    // Every event the import built is one the store accepts (depth and numbers checked as it does).
    for (const event of session.events) expect(() => assertJsonValue(event)).not.toThrow()
    expect(replay(session.events).at(-1)).toEqual({ role: 'assistant', content: 'README.md and src.' })
  })
})
