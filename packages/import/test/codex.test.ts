import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import { RepairCode } from '@agent-ledger/loop-repair'
import type { LoggedEvent, WireMessage } from '@agent-ledger/session-events'
import { describe, expect, it } from 'vitest'

import { planIncrement } from '../src/index.ts'
import type { ImportResult } from '../src/index.ts'
import { importFile, importText, replay, SYNTHETIC, verbatimLines } from './support/import.ts'

const fixture = (name: string): string => join(SYNTHETIC, 'codex', name)

/** Each message as `role:text` (`+calls` when it calls tools, `[n parts]` for content parts). */
function shown(messages: readonly WireMessage[]): string[] {
  return messages.map((message) => {
    const content = message.content
    const text = typeof content === 'string' ? content : content === null ? '' : `[${content.length} parts]`
    const calls = 'tool_calls' in message && message.tool_calls !== undefined ? '+calls' : ''
    return `${message.role}:${text}${calls}`
  })
}

function turns(events: readonly LoggedEvent[]): string[] {
  return events
    .filter((event) => event.type === 'turn/start' || event.type === 'turn/end')
    .map((event) => {
      const data = event.data as { turn: number; reason?: string }
      return data.reason === undefined ? `start ${data.turn}` : `end ${data.turn} ${data.reason}`
    })
}

describe('Codex older layouts (synthetic)', () => {
  it('bare-layout.jsonl (mid-2025): bare meta, record_type state, bare items; prompts start turns; image, local_shell_call, web_search_call', async () => {
    const result = await importFile(fixture('bare-layout.jsonl'))
    expect(result.detection).toBe(
      'detected codex: a bare session meta {id, timestamp, instructions, git} (mid-2025 rollout layout)',
    )
    const [session] = result.sessions
    expect(session!.id).toBe('codex-5f2b7c3e-1d4a-4e8b-9c0d-000000000003')
    // cwd from the <environment_context> of line 4 (the meta has none); branch from the meta's git.
    expect(session!.header.cwd).toBe('/home/user/legacy')
    expect(session!.header.metadata).toMatchObject({
      source: { formatVersion: 'unknown', gitBranch: 'main', layout: 'bare-items' },
    })
    // Lines 3, 4 (context, no turn), 6 (prompt: turn 1), 9+10 (one message, one call), 11
    // (result), 12, 14 (prompt: turn 2), 16+17 (reasoning and a call never answered).
    expect(shown(replay(session!.events))).toEqual([
      'user:<user_instructions>\n\nUse pnpm.\n\n</user_instructions>',
      'user:<environment_context>\n  <cwd>/home/user/legacy</cwd>\n  <approval_policy>on-request</approval_policy>\n</environment_context>',
      'user:[2 parts]',
      'assistant:A red square. Let me check the file.+calls',
      'tool:{"output":"square.png\\n","metadata":{"exit_code":0,"duration_seconds":0.1}}',
      'assistant:The file is square.png.',
      'user:search the web for it',
      'assistant:+calls',
      `tool:${replay(session!.events).at(-1)!.content as string}`,
    ])
    expect(replay(session!.events)[2]!.content).toEqual([
      { type: 'text', text: 'what is in this picture?' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
    ])
    expect(turns(session!.events)).toEqual(['start 1', 'end 1 completed', 'start 2', 'end 2 interrupted'])
    expect(result.report.messages).toEqual({ system: 0, user: 4, assistant: 3, tool: 2 })
    expect(result.report.repairs).toEqual({ [RepairCode.TOOL_OUTCOME_UNKNOWN]: 1, CLOSE_TURN: 1 })
    expect(result.report.lossy).toEqual({
      'codex.encrypted_content': 1,
      'codex.local_shell_call': 1,
      'codex.response_item.web_search_call': 1,
    })
    expect(result.report.logOnly).toEqual({
      'log-only:codex.session_meta': 1,
      'log-only:codex.state': 4,
      'log-only:codex.web_search_call': 1,
    })
    expect(verbatimLines(session!.events)).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
    ])
  })

  it('legacy-document.json (early 2025): one pretty-printed {session, items} object, split into its wrapper and items', async () => {
    const result = await importFile(fixture('legacy-document.json'))
    expect(result.detection).toBe('detected codex: a {session, items} rollout document (early 2025 layout)')
    const [session] = result.sessions
    expect(session!.id).toBe('codex-c0ffee00-0000-4000-8000-000000000004')
    expect(result.report.records).toBe(6)
    expect(shown(replay(session!.events))).toEqual([
      'system:Prefer small diffs.',
      'user:fix the typo in README',
      'assistant:+calls',
      'tool:{"output":"Helo world\\n","metadata":{"exit_code":0,"duration_seconds":0.01}}',
      'assistant:Fixed: Helo -> Hello.',
    ])
    const reasoning = session!.events.find((event) => event.type === 'assistant/message')!.data as {
      message: { reasoning_content: string }
    }
    expect(reasoning.message.reasoning_content).toBe('Look at README first.')
    expect(turns(session!.events)).toEqual(['start 1', 'end 1 completed'])
    // Items carry no time: every event has the session's.
    expect(new Set(session!.events.map((event) => event.time))).toEqual(new Set(['2025-04-20T12:00:00.000Z']))
    // The wrapper (element 1) keeps the session object; the items are elements 2 to 6.
    const first = session!.events.find((event) => event.type === 'import/source-record')!.data as {
      line: number
      record: unknown
    }
    expect(first).toMatchObject({
      line: 1,
      record: { session: { id: 'c0ffee00-0000-4000-8000-000000000004' } },
    })
    // The same document on one line imports the same way.
    const oneLine = JSON.stringify(JSON.parse(readFileSync(fixture('legacy-document.json'), 'utf8')))
    const again = await importText(`${oneLine}\n`, { file: fixture('legacy-document.json') })
    expect(JSON.stringify(again.sessions[0]!.events)).toBe(JSON.stringify(session!.events))
  })

  it('refuses a JSON object that is no rollout, naming what it found', async () => {
    await expect(
      importText('{"id": "x", "timestamp": "2025-01-01T00:00:00Z", "title": "a note"}\n'),
    ).rejects.toMatchObject({
      code: 'UNRECOGNIZED_FORMAT',
      message: expect.stringContaining('found an object with keys id, timestamp, title') as unknown,
    })
    const document = {
      session: { id: 'a', timestamp: '2025-04-20T12:00:00.000Z' },
      items: [{ type: 'message' }, 7],
    }
    await expect(importText(`${JSON.stringify(document, null, 2)}\n`)).rejects.toMatchObject({
      code: 'INVALID_RECORD',
      line: 3,
      message: expect.stringContaining('element 3: expected an event object, found number') as unknown,
    })
  })
})

describe('Codex current shapes (synthetic)', () => {
  it('current-shapes.jsonl: a developer message between a call and its output follows the output; custom tools; compacted without history; turn_started aliases; an image', async () => {
    const result = await importFile(fixture('current-shapes.jsonl'))
    const events = result.sessions[0]!.events
    // Before the compaction (line 13), the surface was: user, assistant (reasoning + call_p),
    // tool call_p, developer notice (line 7, moved after the output of line 8), assistant
    // (call_e), tool call_e, assistant "Patched.".
    const compaction = events.find((event) => event.type === 'compaction/start')!
    expect(compaction.data).toMatchObject({ reason: 'codex compacted' })
    const hidden = events.filter(
      (event) =>
        event.seq >= (compaction.data as { startSeq: number }).startSeq &&
        event.seq <= (compaction.data as { endSeq: number }).endSeq &&
        ['user/message', 'assistant/message', 'tool/result', 'system/message'].includes(event.type),
    )
    expect(hidden.map((event) => event.type)).toEqual([
      'user/message',
      'assistant/message',
      'tool/result',
      'system/message',
      'assistant/message',
      'tool/result',
      'assistant/message',
    ])
    expect((hidden[3]!.data as { message: unknown }).message).toEqual({
      role: 'system',
      content: 'Approved command prefix saved: apply_patch',
      name: 'developer',
    })
    expect((hidden[1]!.data as { message: unknown; usage: unknown }).usage).toEqual({
      prompt_tokens: 50,
      completion_tokens: 5,
      total_tokens: 55,
      cached_tokens: 10,
    })
    expect((hidden[1]!.data as { message: { reasoning_content: string } }).message.reasoning_content).toBe(
      'Need to edit config.',
    )
    expect(shown(replay(events))).toEqual([
      'user:The config was patched.',
      'user:[2 parts]',
      'assistant:It shows the patched config.',
    ])
    expect(turns(events)).toEqual(['start 1', 'end 1 completed', 'start 2', 'end 2 aborted'])
    expect(result.report.messages).toEqual({ system: 1, user: 3, assistant: 4, tool: 2 })
    expect(result.report.diagnostics).toEqual([])
    expect(result.report.lossy).toEqual({
      'codex.custom_tool_call': 1,
      'codex.message-after-open-call': 1,
      'codex.developer-role': 1,
      'codex.phase': 1,
    })
  })
})

const rollbackLines = (): string[] => readFileSync(fixture('rollback.jsonl'), 'utf8').trimEnd().split('\n')

function rollbackLine(second: number, numTurns: number): string {
  return JSON.stringify({
    timestamp: `2026-04-01T09:00:${String(second).padStart(2, '0')}.000Z`,
    type: 'event_msg',
    payload: { type: 'thread_rolled_back', num_turns: numTurns },
  })
}

/** The main session and the forks of a result, by id suffix, each with what it shows. */
function family(
  result: ImportResult,
): Record<string, { events: number; inherited: unknown; shown: string[] }> {
  const main = result.sessions[0]!.id
  return Object.fromEntries(
    result.sessions.map((session) => [
      session.id === main ? 'main' : session.id.slice(main.length + 1),
      {
        events: session.events.length,
        inherited: session.header.inheritedEventCount,
        shown: shown(replay(session.events)).filter(
          (text) => !text.startsWith('system:') && !text.includes('environment_context'),
        ),
      },
    ]),
  )
}

const THREE_TURNS = [
  'user:first question',
  'assistant:first answer',
  'user:second question',
  'assistant:+calls',
  'tool:README.md',
  'assistant:second answer',
  'user:third question',
  'assistant:third answer',
]

describe('Codex thread_rolled_back -> fork (synthetic rollback.jsonl)', () => {
  // rollback.jsonl: 1 session_meta; turn t1 = lines 2-6 (2 task_started, 3 environment
  // context, 4 prompt, 5 answer, 6 task_complete); t2 = 7-12 (a call and its output); t3 =
  // 13-16; 17 rollback 1; t4 = 18-21; 22 rollback 2. Events, as built: line 1 gives 2 (record,
  // system), t1 10, t2 13, t3 8 (record + event for 13 and 14, one record for 15, then the
  // answer, record and turn/end for 16).
  it('one turn rolled back: the main session ends after t2; the fork holds t3, seeded with the 25 events before it', async () => {
    const result = await importText(`${rollbackLines().slice(0, 17).join('\n')}\n`)
    expect(family(result)).toEqual({
      // 25 events for lines 1-12, then lines 13-17 kept verbatim only.
      main: { events: 30, inherited: undefined, shown: THREE_TURNS.slice(0, 6) },
      // 25 shared + session/end-seed + t3: 2 (13) + 2 (14) + 1 (15) + 3 (16).
      'rollback-1': { events: 34, inherited: 25, shown: THREE_TURNS },
    })
    const [main, fork] = result.sessions
    expect(fork!.header).toMatchObject({ parentSession: main!.id, seeded: true })
    expect(fork!.header.metadata).toMatchObject({ source: { rollbackLine: 17, numTurns: 1, branchLine: 13 } })
    // Same bytes for the shared prefix; the seed ends where the main session's own events start.
    expect(JSON.stringify(fork!.events.slice(0, 25))).toBe(JSON.stringify(main!.events.slice(0, 25)))
    expect(fork!.events[25]).toMatchObject({ type: 'session/end-seed', data: { boundarySeq: 24 } })
    expect(turns(main!.events)).toEqual(['start 1', 'end 1 completed', 'start 2', 'end 2 completed'])
    const dispositions = main!.events
      .filter((event) => event.type === 'import/source-record')
      .slice(-5)
      .map((event) => (event.data as { disposition: string }).disposition)
    expect(dispositions).toEqual([
      'log-only:codex.rolled-back',
      'log-only:codex.rolled-back',
      'log-only:codex.rolled-back',
      'log-only:codex.rolled-back',
      'log-only:codex.event_msg.thread_rolled_back',
    ])
    // Every line is kept verbatim in the main session.
    expect(verbatimLines(main!.events)).toEqual(Array.from({ length: 17 }, (_, index) => index + 1))
    expect(result.report).toMatchObject({
      sessions: 2,
      forks: 1,
      turns: 2,
      messages: { system: 1, user: 3, assistant: 3, tool: 1 },
      diagnostics: [],
    })
  })

  it('two turns rolled back: the cut is at the task_started of t2 (line 7)', async () => {
    const result = await importText(`${rollbackLines().slice(0, 16).join('\n')}\n${rollbackLine(13, 2)}\n`)
    expect(family(result)).toEqual({
      // 12 events for lines 1-6, then lines 7-17 verbatim only.
      main: { events: 23, inherited: undefined, shown: THREE_TURNS.slice(0, 2) },
      'rollback-1': { events: 34, inherited: 12, shown: THREE_TURNS },
    })
    expect(result.report.turns).toBe(1)
  })

  it('a rollback past the start drops every turn (cut before the first turn), as Codex does', async () => {
    const result = await importText(`${rollbackLines().slice(0, 16).join('\n')}\n${rollbackLine(13, 5)}\n`)
    // Main: line 1 (record, system message) and 16 records kept verbatim.
    expect(family(result)).toEqual({
      main: { events: 18, inherited: undefined, shown: [] },
      'rollback-1': { events: 34, inherited: 2, shown: THREE_TURNS },
    })
    expect(shown(replay(result.sessions[0]!.events))).toEqual(['system:You are Codex.'])
    expect(result.report.diagnostics).toEqual([])
  })

  it('a rollback followed by more turns: they follow t2 in the main session', async () => {
    const result = await importText(`${rollbackLines().slice(0, 21).join('\n')}\n`)
    const fourth = ['user:fourth question', 'assistant:fourth answer']
    expect(family(result)).toEqual({
      // 25 (lines 1-12) + 5 verbatim (13-17) + t4: 2 + 2 + 1 + 3 = 38.
      main: { events: 38, inherited: undefined, shown: [...THREE_TURNS.slice(0, 6), ...fourth] },
      'rollback-1': { events: 34, inherited: 25, shown: THREE_TURNS },
    })
    expect(turns(result.sessions[0]!.events)).toEqual([
      'start 1',
      'end 1 completed',
      'start 2',
      'end 2 completed',
      'start 3',
      'end 3 completed',
    ])
  })

  it('two rollbacks: each is a fork; the second replays the history with the first applied', async () => {
    const result = await importFile(fixture('rollback.jsonl'))
    expect(family(result)).toEqual({
      // The second rollback (2 turns: t4, then t2) cuts at line 7: 12 events, 16 verbatim.
      main: { events: 28, inherited: undefined, shown: THREE_TURNS.slice(0, 2) },
      'rollback-1': { events: 34, inherited: 12, shown: THREE_TURNS },
      // t1, t2 (13 events), t3 verbatim (4), line 17 verbatim, t4 (8): 12 + 13 + 4 + 1 + 8, + end-seed.
      'rollback-2': {
        events: 39,
        inherited: 12,
        shown: [...THREE_TURNS.slice(0, 6), 'user:fourth question', 'assistant:fourth answer'],
      },
    })
    // Each record is counted once over the family: both rollback lines are log-only.
    expect(result.report.logOnly).toEqual({ 'log-only:codex.event_msg.thread_rolled_back': 2 })
    expect(result.report.forks).toBe(2)
  })

  it('importing again gives the same sessions, byte for byte, and nothing to append', async () => {
    const text = readFileSync(fixture('rollback.jsonl'), 'utf8')
    const first = await importText(text)
    const second = await importText(text)
    expect(JSON.stringify(second.sessions)).toBe(JSON.stringify(first.sessions))
    for (const session of first.sessions)
      expect(planIncrement(session.events, session.events, { file: 'rollback.jsonl' })).toEqual({
        kind: 'unchanged',
      })
  })
})
