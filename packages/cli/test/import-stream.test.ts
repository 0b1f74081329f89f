import { createHash } from 'node:crypto'
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import { importEventRegistry, importSource, splitLines } from '@agent-ledger/import'
import type { ImportResult } from '@agent-ledger/import'
import type { LoggedEvent } from '@agent-ledger/session-events'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { RECORDS_PER_TURN, TRANSCRIPT_SESSION_ID, transcriptLines } from './support/claude-transcript.ts'
import { cli, makeRoot } from './support/sessions.ts'

interface ImportJson {
  sources: {
    report: { records: number; events: number }
    sessions: { id: string; action: string; appended?: number; events: number }[]
  }[]
}

let root: string
let cleanup: () => void
beforeEach(() => {
  ;({ root, cleanup } = makeRoot('al-import-stream-'))
})
afterEach(() => cleanup())

const ID = `claude-${TRANSCRIPT_SESSION_ID}`

/** A one-shot import held in memory: what the stored session must equal. */
async function oneShot(text: string): Promise<ImportResult> {
  return importSource(
    splitLines(
      (async function* () {
        await Promise.resolve()
        yield text
      })(),
    ),
    { file: 'source.jsonl', sha256: createHash('sha256').update(text).digest('hex') },
  )
}

async function stored(store: string, id: string): Promise<LoggedEvent[]> {
  const reader = createJsonlStore({
    root: store,
    registry: importEventRegistry,
    clock: () => '2026-01-01T00:00:00.000Z',
  })
  const events: LoggedEvent[] = []
  for await (const event of reader.readEvents(id)) events.push(event)
  return events
}

function sha(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex')
}

describe('agent-ledger import, streamed (a session larger than one batch)', () => {
  it('writes the events of a one-shot import, batch by batch; again changes nothing; a grown source appends exactly the new events', async () => {
    const store = join(root, 'store')
    const source = join(root, 'transcript.jsonl')
    // 300 turns: about 2,100 records and 5,000 events, so 3 batches of the default 2,048.
    const first = transcriptLines({ turns: 300 })
    writeFileSync(source, `${first.join('\n')}\n`)
    const run = await cli(['import', source, '--root', store, '--json', '--no-progress'])
    expect(run.code, run.stderr).toBe(0)
    const report = (JSON.parse(run.stdout) as ImportJson).sources[0]!
    // 300 turns of 7 records, plus 2 per compaction (turns 25, 50, ... 300: 12).
    expect(report.report.records).toBe(300 * RECORDS_PER_TURN + 12 * 2)
    expect(report.report.events).toBeGreaterThan(2 * 2048)
    expect(report.sessions).toEqual([
      { id: ID, role: 'main', events: report.report.events, action: 'created' },
    ])
    const expected = await oneShot(readFileSync(source, 'utf8'))
    expect(JSON.stringify(await stored(store, ID))).toBe(JSON.stringify(expected.sessions[0]!.events))

    const log = join(store, ID, 'session.v4.jsonl')
    const before = sha(log)
    const again = await cli(['import', source, '--root', store, '--json', '--no-progress'])
    expect(again.code, again.stderr).toBe(0)
    expect((JSON.parse(again.stdout) as ImportJson).sources[0]!.sessions[0]!.action).toBe('unchanged')
    expect(sha(log)).toBe(before)

    // The agent went on: 120 more turns, chained after the last record.
    appendFileSync(source, `${transcriptLines({ turns: 120, from: 301 }).join('\n')}\n`)
    const grown = await cli(['import', source, '--root', store, '--json', '--no-progress'])
    expect(grown.code, grown.stderr).toBe(0)
    const outcome = (JSON.parse(grown.stdout) as ImportJson).sources[0]!.sessions[0]!
    const full = await oneShot(readFileSync(source, 'utf8'))
    const fullEvents = full.sessions[0]!.events
    expect(outcome).toMatchObject({
      action: 'appended',
      appended: fullEvents.length - expected.sessions[0]!.events.length,
    })
    // The earlier import ended between turns (nothing left open): the log is the one-shot import of the grown source.
    expect(JSON.stringify(await stored(store, ID))).toBe(JSON.stringify(fullEvents))
    const verify = await cli(['verify', join(store, ID), '--json'])
    expect(JSON.parse(verify.stdout)).toMatchObject({ status: 'ok', events: fullEvents.length })
  })

  it('--dry-run of a large source counts the same events and writes nothing', async () => {
    const source = join(root, 'transcript.jsonl')
    writeFileSync(source, `${transcriptLines({ turns: 300, danglingCall: true }).join('\n')}\n`)
    const run = await cli([
      'import',
      source,
      '--root',
      join(root, 'store'),
      '--dry-run',
      '--json',
      '--no-progress',
    ])
    expect(run.code, run.stderr).toBe(0)
    const expected = await oneShot(readFileSync(source, 'utf8'))
    const session = (JSON.parse(run.stdout) as ImportJson).sources[0]!.sessions[0]!
    expect(session).toEqual({
      id: ID,
      role: 'main',
      events: expected.sessions[0]!.events.length,
      action: 'would-create',
    })
    // The dangling call at the end got its placeholder and the turn was closed.
    expect(expected.report.repairs).toEqual({ TOOL_OUTCOME_UNKNOWN: 1, CLOSE_TURN: 1 })
  })

  it('a fork larger than one batch is stored as a one-shot import builds it (seeded with its inherited prefix), and verifies', async () => {
    const store = join(root, 'store')
    const source = join(root, 'forked.jsonl')
    const lines = transcriptLines({ turns: 400 })
    // A prompt on another branch in turn 390: a fork sharing about 5,400 events with the main session.
    const at = lines.findIndex((line) => line.includes('"Turn 390: run the tests."'))
    const prompt = JSON.parse(lines[at]!) as Record<string, unknown>
    const fork = {
      ...prompt,
      uuid: 'b0000000-fork-4000-8000-000000000001',
      message: { role: 'user', content: 'Lint instead.' },
    }
    lines.splice(at + 3, 0, JSON.stringify(fork))
    const text = `${lines.join('\n')}\n`
    writeFileSync(source, text)
    const run = await cli(['import', source, '--root', store, '--json', '--no-progress'])
    expect(run.code, run.stderr).toBe(0)
    const expected = await oneShot(text)
    const forked = expected.sessions.find((session) => session.role === 'fork')!
    expect(forked.header).toMatchObject({ seeded: true })
    expect(forked.events.length).toBeGreaterThan(2 * 2048)
    const sessions = (JSON.parse(run.stdout) as ImportJson).sources[0]!.sessions
    expect(sessions.map((session) => [session.id, session.action])).toEqual(
      expected.sessions.map((session) => [session.id, 'created']),
    )
    expect(JSON.stringify(await stored(store, forked.id))).toBe(JSON.stringify(forked.events))
    const verify = await cli(['verify', join(store, forked.id), '--json'])
    expect(JSON.parse(verify.stdout)).toMatchObject({ status: 'ok' })
  })
})
