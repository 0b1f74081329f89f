import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

import { describe, expect, it } from 'vitest'

import { importSource, splitLines } from '../src/index.ts'
import type { ImportBatch, ImportResult, SourceLine } from '../src/index.ts'
import { parseJsonArray } from '../src/lines.ts'
import { createReport } from '../src/report.ts'
import { importText, SHARED_FIXTURES, sharedFixturesAvailable, SYNTHETIC } from './support/import.ts'

/**
 * Digests of every pi and OpenHands fixture's import (sessions and report, the importer
 * version left out), computed by the whole-in-memory importer this package had before pi
 * was streamed and JSON arrays were split element by element (main at 224c64e). A streamed
 * import must give the same bytes. Re-recorded for importer version 4 (issue 25: pi errored
 * and aborted messages log-only, the v1 compaction stored as read, OpenHands V0 `finish` as
 * text) for the four fixtures those change (pi v1, v2, v3-tree, basic.json), with the
 * whole-in-memory path of this test; the three OpenHands fixtures kept their digests. Re-recorded
 * for importer version 5 (issue 25 item 4: a record whose line `JSON.stringify` would change is
 * kept as its text) for the two fixtures written with Python's `", "` separators
 * (OpenHands v0/v1 condensation), with the same path; the others kept their digests.
 */
const BEFORE_STREAMING: Readonly<Record<string, string>> = {
  'pi/v1.jsonl': '70e71af08225e27674b8b83be6ef3eef421d4e10ed16a0cb49b7a3591507f054',
  'pi/v2.jsonl': '330dcb280dddc467b7ab1a491591513c2761a7def44181c5be282650fd3c9328',
  'pi/v3-tree.jsonl': '6f6bb3fb00ee7492f2af91776a977a145b4a43c20441f231a56809c2aaec3415',
  'openhands/v0-condensation.jsonl': '8ba90bb5d736def86d67ece6713c8f35e764adbc6b3dbf6fcadb3608a0f6f531',
  'openhands/v1-condensation.jsonl': 'bc2f62e1121241f7035070b52081d606b99295d069f99b7e01a2145f65b2b427',
  'openhands/v1-events.jsonl': '4b005823e80929f39b00d9bfb5126ed01c4f4752543d24b417c3d634f729591c',
  'shared:openhands/basic.json': '3df9c02b0b84da19dfc762a41ce3853301c5a61570b652d5768495885aafc94e',
}

function digest(result: Pick<ImportResult, 'sessions' | 'report'>): string {
  const text = JSON.stringify({ sessions: result.sessions, report: result.report }).replace(
    /"importer":\{"name":"@agent-ledger\/import","version":\d+\}/g,
    '"importer":null',
  )
  return createHash('sha256').update(text).digest('hex')
}

/** A source read again on every call, in 173-character chunks; counts the reads and the lines handed out. */
function reader(text: string): {
  open: () => AsyncIterable<SourceLine>
  opened: () => number
  lines: () => number
} {
  let opened = 0
  let lines = 0
  return {
    open: () => {
      opened += 1
      const split = splitLines(
        (async function* () {
          await Promise.resolve()
          for (let index = 0; index < text.length; index += 173) yield text.slice(index, index + 173)
        })(),
      )
      return (async function* () {
        for await (const line of split) {
          lines += 1
          yield line
        }
      })()
    },
    opened: () => opened,
    lines: () => lines,
  }
}

async function streamed(
  text: string,
  onBatch: (batch: ImportBatch) => void = () => undefined,
): Promise<{ result: ImportResult; batches: ImportBatch[]; opened: number }> {
  const source = reader(text)
  const batches: ImportBatch[] = []
  const result = await importSource(source.open, {
    file: 'source.jsonl',
    sha256: createHash('sha256').update(text).digest('hex'),
    sourceName: 'x',
    batchEvents: 2,
    sink: {
      write: (batch) => {
        batches.push(batch)
        onBatch(batch)
        return Promise.resolve()
      },
    },
  })
  return { result, batches, opened: source.opened() }
}

function fixtureFiles(): [string, string][] {
  const files: [string, string][] = ['pi', 'openhands'].flatMap((dir) =>
    readdirSync(join(SYNTHETIC, dir)).map((name): [string, string] => [
      `${dir}/${name}`,
      join(SYNTHETIC, dir, name),
    ]),
  )
  if (sharedFixturesAvailable())
    files.push(['shared:openhands/basic.json', join(SHARED_FIXTURES, 'openhands', 'basic.json')])
  return files
}

describe('bounded memory: pi streamed, JSON arrays split element by element', () => {
  it('gives the fixtures that existed before streaming the same bytes as the whole-in-memory importer', async () => {
    let compared = 0
    for (const [name, path] of fixtureFiles()) {
      const expected = BEFORE_STREAMING[name]
      if (expected === undefined) continue
      const text = readFileSync(path, 'utf8')
      expect(digest(await importText(text, { sourceName: 'x' })), name).toBe(expected)
      // Streamed: the same sessions once the batches are joined back.
      const { result, batches } = await streamed(text)
      const sessions = result.sessions.map((session) => ({
        ...session,
        events: batches.filter((batch) => batch.id === session.id).flatMap((batch) => batch.events),
      }))
      expect(digest({ sessions, report: result.report }), `${name} streamed`).toBe(expected)
      compared += 1
    }
    expect(compared).toBe(sharedFixturesAvailable() ? 7 : 6)
  })

  it('pi: the first pass keeps the tree index; the main path and each fork (twice: probe, build) read the source again', async () => {
    const text = readFileSync(join(SYNTHETIC, 'pi', 'v3-tree.jsonl'), 'utf8')
    const lines = text.trimEnd().split('\n').length
    const source = reader(text)
    const seenAtFirstBatch: number[] = []
    const result = await importSource(source.open, {
      file: 'v3-tree.jsonl',
      sha256: createHash('sha256').update(text).digest('hex'),
      batchEvents: 2,
      sink: {
        write: () => {
          seenAtFirstBatch.push(source.lines())
          return Promise.resolve()
        },
      },
    })
    const forks = result.sessions.filter((session) => session.role === 'fork').length
    expect(forks).toBeGreaterThan(0)
    // Pass 1, the main path, two reads per fork (a probe for the prefix it shares, then the
    // build handed over in batches).
    expect(source.opened()).toBe(2 + 2 * forks)
    // The main session's first batch leaves while its pass is still reading the source.
    expect(seenAtFirstBatch[0]).toBeLessThan(2 * lines)
  })

  it('OpenHands V0 trajectory: elements are handed over before the array is read to its end', async () => {
    const elements = Array.from({ length: 40 }, (_, index) =>
      JSON.stringify({
        id: index,
        timestamp: '2026-01-01T00:00:00',
        source: index % 2 === 0 ? 'user' : 'agent',
        action: 'message',
        message: `message ${index} with ] and } and "quotes" and \\ inside`,
        args: { content: `message ${index}`, wait_for_response: false },
      }),
    )
    // Pretty-printed across lines, as the OpenHands trajectories are.
    const text = `[\n  ${elements.join(',\n  ')}\n]\n`
    const source = reader(text)
    const report = createReport('openhands', 'unknown')
    const seen: number[] = []
    for await (const parsed of parseJsonArray(source.open(), { file: 't.json', report })) {
      expect('value' in parsed && parsed.value['id']).toBe(parsed.line - 1)
      seen.push(source.lines())
    }
    expect(seen).toHaveLength(40)
    expect(seen[0]).toBeLessThanOrEqual(3)
    expect(report).toMatchObject({ lines: 42, records: 40 })
    // Re-read for the second pass, never held: the import reads the source twice.
    const { result, opened } = await streamed(text)
    expect(opened).toBe(2)
    expect(result.report.records).toBe(40)
  })
})

describe('parseJsonArray', () => {
  async function parse(text: string): Promise<unknown[]> {
    const values: unknown[] = []
    const report = createReport('openhands', 'unknown')
    for await (const parsed of parseJsonArray(reader(text).open(), { file: 'a.json', report }))
      values.push('value' in parsed ? parsed.value : parsed)
    return values
  }

  it('splits elements whatever the layout: one line, nested arrays, strings with brackets, commas and escapes', async () => {
    const values = [
      { a: [1, [2, { b: '],}' }]], c: 'x\\"y' },
      { s: 'a,b', t: '\\\\' },
      { u: '\u2028 \ud83d\ude00' },
    ]
    expect(await parse(JSON.stringify(values))).toEqual(values)
    expect(
      await parse(`\uFEFF\n\n  [\r\n${JSON.stringify(values, null, 2).slice(1, -1)}\r\n]  \n\n`),
    ).toEqual(values)
    expect(await parse('[]')).toEqual([])
    expect(await parse(' [ \n ] ')).toEqual([])
  })

  it('refuses what is not one array of objects, naming the line or element', async () => {
    await expect(parse('[{"a":1},\n{"b": }]')).rejects.toMatchObject({
      code: 'MALFORMED_LINE',
      line: 2,
      message: expect.stringContaining('element 2 of the JSON array does not parse') as unknown,
    })
    await expect(parse('[{"a":1},\n{"b":2}')).rejects.toMatchObject({ code: 'TORN_LINE', line: 2 })
    await expect(parse('[{"a":1},\n{"b":"cut')).rejects.toMatchObject({ code: 'TORN_LINE' })
    await expect(parse('[{"a":1}] {"b":2}')).rejects.toMatchObject({
      code: 'MALFORMED_LINE',
      message: expect.stringContaining("after the JSON array's closing bracket") as unknown,
    })
    await expect(parse('[{"a":1},]')).rejects.toMatchObject({ code: 'MALFORMED_LINE' })
    await expect(parse('[{"a":1},,{"b":2}]')).rejects.toMatchObject({ code: 'MALFORMED_LINE' })
    await expect(parse('[{"a":1}, 2]')).rejects.toMatchObject({
      code: 'INVALID_RECORD',
      line: 2,
      message: 'a.json element 2: expected an event object, found number',
    })
    await expect(parse('[[1]]')).rejects.toMatchObject({ code: 'INVALID_RECORD', line: 1 })
    await expect(parse('[null]')).rejects.toMatchObject({ code: 'INVALID_RECORD' })
  })
})
