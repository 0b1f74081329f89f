/**
 * `agent-ledger import --follow` and an interrupted streamed import, against the built
 * binary as child processes: a writer child appends to a transcript (cutting lines in two)
 * while the follower runs, then SIGINT; an import of a large transcript is SIGKILLed in the
 * middle and run again.
 */
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { importEventRegistry, importSource, splitLines } from '@agent-ledger/import'
import type { ImportResult } from '@agent-ledger/import'
import type { LoggedEvent, SessionHeader } from '@agent-ledger/session-events'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { testTime, waitUntil } from '../../../tooling/test-time.ts'
import { runBin, spawnBin } from './support/bin.ts'
import { TRANSCRIPT_SESSION_ID, transcriptLines } from './support/claude-transcript.ts'

const ID = `claude-${TRANSCRIPT_SESSION_ID}`

let root: string
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'al-import-follow-'))
})
afterEach(() => rmSync(root, { recursive: true, force: true }))

async function oneShot(text: string, file = 'source.jsonl'): Promise<ImportResult> {
  return importSource(
    splitLines(
      (async function* () {
        await Promise.resolve()
        yield text
      })(),
    ),
    { file, sha256: createHash('sha256').update(text).digest('hex') },
  )
}

async function readSession(
  store: string,
  id: string,
): Promise<{ header: SessionHeader; events: LoggedEvent[] }> {
  const reader = createJsonlStore({
    root: store,
    registry: importEventRegistry,
    clock: () => '2026-01-01T00:00:00.000Z',
  })
  const events: LoggedEvent[] = []
  for await (const event of reader.readEvents(id)) events.push(event)
  const read = await reader.openReader(id)
  expect(read.projection.nextSeq).toBe(events.length)
  return { header: read.header, events }
}

async function until(what: string, check: () => boolean, detail: () => string): Promise<void> {
  await waitUntil(what, check, { timeoutMs: 120_000, pollMs: 25, detail })
}

/** A child that appends `pieces` to `file` one by one, pausing between them (an agent writing its log). */
function writer(file: string, pieces: readonly string[]): Promise<number | null> {
  const script = `
    const { appendFileSync } = require('node:fs')
    const { readFileSync } = require('node:fs')
    const [file, list] = process.argv.slice(1)
    const pieces = JSON.parse(readFileSync(list, 'utf8'))
    let index = 0
    const next = () => {
      if (index === pieces.length) return
      appendFileSync(file, pieces[index++])
      setTimeout(next, 15)
    }
    next()
  `
  const list = `${file}.pieces.json`
  writeFileSync(list, JSON.stringify(pieces))
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script, file, list], { stdio: 'ignore' })
    child.on('error', reject)
    child.on('exit', (code) => resolve(code))
  })
}

describe('agent-ledger import --follow', () => {
  it('follows a transcript while a child writes it, waits for torn lines, and after SIGINT holds exactly a one-shot import of the final source', async () => {
    const store = join(root, 'store')
    const source = join(root, 'transcript.jsonl')
    // 40 turns ending with a call still running (its result never comes): the final import closes it.
    const lines = transcriptLines({ turns: 40, danglingCall: true, compactEvery: 15 })
    const text = `${lines.join('\n')}\n`
    // The follower starts on 30 lines and half of the 31st (a line being written).
    const head = `${lines.slice(0, 30).join('\n')}\n${lines[30]!.slice(0, 40)}`
    writeFileSync(source, head)
    // The rest arrives in pieces that cut lines in two.
    const rest = text.slice(head.length)
    const pieces: string[] = []
    for (let index = 0; index < rest.length; index += 997) pieces.push(rest.slice(index, index + 997))
    const follow = spawnBin(['import', '--follow', source, '--root', store, '--interval', '20'])
    await until(
      'the first import',
      () => follow.stderr().includes('30 records'),
      () => follow.stderr(),
    )
    expect(follow.stderr()).toMatch(/30 records, \+\d+ events .*; line 31 is still being written/)
    expect(await writer(source, pieces)).toBe(0)
    await until(
      `all ${lines.length} records`,
      () => follow.stderr().includes(`${lines.length} records,`),
      () => follow.stderr(),
    )
    expect(follow.stderr()).not.toMatch(/TORN_LINE|MALFORMED_LINE|DIVERGED/)
    follow.child.kill('SIGINT')
    const exit = await follow.exited
    expect(exit, follow.stderr()).toEqual({ code: 0, signal: null })
    expect(follow.stdout()).toMatch(
      /followed through \d+ import\(s\) \(2 whole, \d+ appends of the new bytes/,
    )
    // Each change read only the bytes appended since the last poll: no whole import between the first and the final one.
    expect(follow.stderr()).toMatch(/appended from the new bytes/)
    expect(follow.stderr()).not.toMatch(/imported again whole/)

    const expected = await oneShot(readFileSync(source, 'utf8'), source)
    expect(readFileSync(source, 'utf8')).toBe(text)
    const { header, events } = await readSession(store, ID)
    expect(JSON.stringify(events)).toBe(JSON.stringify(expected.sessions[0]!.events))
    // The closers of the dangling call are there (added by the final import, not while following).
    expect(expected.report.repairs).toEqual({ TOOL_OUTCOME_UNKNOWN: 1, CLOSE_TURN: 1 })
    // The header is the one-shot header, but for the digest: it names the source as first read.
    const source0 = (header.metadata as { source: Record<string, unknown> }).source
    const expectedSource = (expected.sessions[0]!.header.metadata as { source: Record<string, unknown> })
      .source
    expect({ ...source0, sha256: 'x' }).toEqual({ ...expectedSource, sha256: 'x' })
    expect(source0['sha256']).toBe(createHash('sha256').update(head).digest('hex'))
    expect(header.createdAt).toBe(expected.sessions[0]!.header.createdAt)
    const verify = await runBin(['verify', join(store, ID), '--json'])
    expect(JSON.parse(verify.stdout)).toMatchObject({ status: 'ok', events: events.length })
  })

  it('reads only the appended bytes, and imports again whole when a record does not extend the main leaf or the file is replaced', async () => {
    const store = join(root, 'store')
    const source = join(root, 'transcript.jsonl')
    const lines = transcriptLines({ turns: 30, compactEvery: 12 })
    // In turn 14 the hook progress record is a sibling of the tool result (both under the
    // tool_use), as Claude Code writes parallel records: the result does not extend the leaf.
    const sibling = lines.findIndex((line) => line.includes('"tool_use_id":"toolu_gen_14"'))
    const result = JSON.parse(lines[sibling]!) as Record<string, unknown>
    const progress = JSON.parse(lines[sibling - 1]!) as Record<string, unknown>
    expect(progress['type']).toBe('progress')
    lines[sibling] = JSON.stringify({ ...result, parentUuid: progress['parentUuid'] })
    const text = `${lines.join('\n')}\n`
    const cut = (from: number, to: number): string[] => {
      const part = text.slice(from, to)
      const pieces: string[] = []
      for (let index = 0; index < part.length; index += 301) pieces.push(part.slice(index, index + 301))
      return pieces
    }
    const headEnd = text.indexOf(lines[20]!)
    writeFileSync(source, text.slice(0, headEnd))
    const follow = spawnBin(['import', '--follow', source, '--root', store, '--interval', '20', '--json'])
    await until(
      'the first import',
      () => follow.stderr().includes('20 records'),
      () => follow.stderr(),
    )
    // Up to just before the sibling result, in small pieces that cut lines.
    const beforeSibling = text.indexOf(lines[sibling])
    expect(await writer(source, cut(headEnd, beforeSibling))).toBe(0)
    await until(
      'the pieces',
      () => follow.stderr().includes(`${sibling} records`),
      () => follow.stderr(),
    )
    // The sibling result and a few more lines.
    const afterSibling = text.indexOf(lines[sibling + 3]!)
    expect(await writer(source, cut(beforeSibling, afterSibling))).toBe(0)
    await until(
      'the re-import',
      () => follow.stderr().includes(`${sibling + 3} records`),
      () => follow.stderr(),
    )
    // The file is replaced (written elsewhere, renamed over): same content and more.
    const replacedEnd = text.indexOf(lines[sibling + 10]!)
    writeFileSync(`${source}.new`, text.slice(0, replacedEnd))
    renameSync(`${source}.new`, source)
    await until(
      'the replacement',
      () => follow.stderr().includes(`${sibling + 10} records`),
      () => follow.stderr(),
    )
    expect(await writer(source, cut(replacedEnd, text.length))).toBe(0)
    await until(
      'every record',
      () => follow.stderr().includes(`${lines.length} records,`),
      () => follow.stderr(),
    )
    follow.child.kill('SIGINT')
    expect(await follow.exited, follow.stderr()).toEqual({ code: 0, signal: null })
    expect(follow.stderr()).not.toMatch(/DIVERGED/)
    const out = JSON.parse(follow.stdout()) as {
      imports: number
      followed: { appends: number; fullImports: number; appendedBytes: number; reimports: string[] }
    }
    expect(out.followed.reimports).toEqual([
      expect.stringMatching(
        new RegExp(
          `^line ${sibling + 1}: record \\S+ hangs under \\S+, not under the main path's leaf .*branch switch`,
        ),
      ),
      'the file was replaced',
    ])
    // The first import, two re-imports, the final import; every other change was an append.
    expect(out.followed.fullImports).toBe(4)
    expect(out.followed.appends).toBeGreaterThan(10)
    expect(out.imports).toBe(out.followed.fullImports + out.followed.appends)
    expect(out.followed.appendedBytes).toBeLessThan(text.length - headEnd)
    const expected = await oneShot(readFileSync(source, 'utf8'), source)
    expect(readFileSync(source, 'utf8')).toBe(text)
    const { events } = await readSession(store, ID)
    expect(JSON.stringify(events)).toBe(JSON.stringify(expected.sessions[0]!.events))
  })

  it('waits for a source that does not exist yet and stops cleanly with nothing imported', async () => {
    const store = join(root, 'store')
    const source = join(root, 'later.jsonl')
    writeFileSync(source, '')
    const follow = spawnBin(['import', '--follow', source, '--root', store, '--interval', '20'])
    await until(
      'the follower to start',
      () => follow.stderr().includes('following'),
      () => follow.stderr(),
    )
    follow.child.kill('SIGINT')
    expect(await follow.exited).toEqual({ code: 0, signal: null })
    expect(follow.stderr()).toMatch(/no complete record was written while following; nothing imported/)
    expect(existsSync(join(store, ID))).toBe(false)
  })
})

describe('agent-ledger import killed in the middle', () => {
  it(
    'publishes nothing of the session (its batches were staged in the create temp file); the next import creates it whole: every source line kept once, in order',
    async () => {
      const store = join(root, 'store')
      const source = join(root, 'transcript.jsonl')
      const lines = transcriptLines({ turns: 2500, outputBytes: 300 })
      writeFileSync(source, `${lines.join('\n')}\n`)
      const child = spawnBin(['import', source, '--root', store, '--no-progress'])
      const directory = join(store, ID)
      const log = join(directory, 'session.v4.jsonl')
      const staged = (): number =>
        existsSync(directory)
          ? Math.max(
              0,
              ...readdirSync(directory)
                .filter((name) => name.startsWith('.tmp-'))
                .map((name) => statSync(join(directory, name), { throwIfNoEntry: false })?.size ?? 0),
            )
          : 0
      await until(
        'a few batches staged',
        () => staged() > 2_000_000,
        () => child.stderr(),
      )
      child.child.kill('SIGKILL')
      expect((await child.exited).signal).toBe('SIGKILL')
      expect(existsSync(log)).toBe(false)
      const again = await runBin(['import', source, '--root', store, '--json', '--no-progress'])
      expect(again.code, again.stderr).toBe(0)
      const outcome = (JSON.parse(again.stdout) as { sources: { sessions: { action: string }[] }[] })
        .sources[0]!
      expect(outcome.sessions[0]!.action).toBe('created')
      const { events } = await readSession(store, ID)
      const kept = events
        .filter((event) => event.type === 'import/source-record')
        .map((event) => (event.data as { line: number }).line)
      expect(kept).toEqual(lines.map((_, index) => index + 1))
      const verify = await runBin(['verify', join(store, ID), '--json'])
      expect(JSON.parse(verify.stdout)).toMatchObject({ status: 'ok' })
      const messages = await runBin(['messages', join(store, ID), '--json'])
      expect(messages.code).toBe(0)
    },
    testTime(180_000),
  )
})
