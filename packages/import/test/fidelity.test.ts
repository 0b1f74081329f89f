import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

import { RepairCode } from '@agent-ledger/loop-repair'
import { SESSION_ID_PATTERN } from '@agent-ledger/session-events'
import { describe, expect, it } from 'vitest'

import { fitId } from '../src/ids.ts'
import { importedSessionId } from '../src/index.ts'
import { importFile, importText, replay, SYNTHETIC } from './support/import.ts'

const fixture = (...parts: string[]): string => join(SYNTHETIC, ...parts)

describe('pi: calls that never ran (issue 25 item 1)', () => {
  it('v3-errored-calls.jsonl: an errored or aborted assistant message is log-only, its calls get no placeholder', async () => {
    const result = await importFile(fixture('pi', 'v3-errored-calls.jsonl'))
    const session = result.sessions[0]!
    // pi's agent loop runs no call of such a message and never replays it to the model.
    expect(result.report.repairs).toEqual({})
    expect(
      session.events.filter((event) => event.type === 'tool/result' && (event.data as { code?: string }).code),
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
      return lines.every((line) => line.trim() === '' || JSON.stringify(JSON.parse(line)) === line)
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
      const result = await importText(text.replaceAll('acompact-1a2b3c', agent), { file: `agent-${agent}.jsonl` })
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
