import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

import { RepairCode } from '@agent-ledger/loop-repair'
import { describe, expect, it } from 'vitest'

import { planIncrement, USER_REJECTED } from '../src/index.ts'
import {
  importFile,
  importText,
  replay,
  SHARED_FIXTURES,
  sharedFixturesAvailable,
  verbatimLines,
} from './support/import.ts'

const available = sharedFixturesAvailable()
const claudeFile = join(SHARED_FIXTURES, 'claude-code', 'short.jsonl')
const codexFile = (): string => {
  const directory = join(SHARED_FIXTURES, 'codex')
  return join(
    directory,
    readdirSync(directory).find((name) => name.endsWith('.jsonl'))!,
  )
}
const openhandsFile = join(SHARED_FIXTURES, 'openhands', 'basic.json')

describe.skipIf(!available)('the shared recordings import', () => {
  it('claude-code/short.jsonl: one session, merged response, sibling results paired, interrupt closes the turn', async () => {
    const result = await importFile(claudeFile)
    expect(result.format).toBe('claude-code')
    expect(result.detection).toMatch(/^detected claude-code: /)
    // Counted by hand from the file: the leaves are line 11 (a tool result whose parent is
    // line 8, a sibling of the path) and line 15 (last): one session, no fork. Messages on
    // the path 2..15: user (4), one assistant merged from 5-8 and 10 (msg_01MKH1…), the two
    // rejected results (11 by tool_use_id, 12), the interrupt notice (13). 14-15 are
    // local_command records: log-only. 1-3 and 9 are snapshot/progress: log-only.
    expect(result.sessions).toHaveLength(1)
    expect(result.report.forks).toBe(0)
    expect(result.report.messages).toEqual({ system: 0, user: 2, assistant: 1, tool: 2 })
    expect(result.report.toolCalls).toBe(2)
    expect(result.report.turns).toBe(1)
    expect(result.report.repairs).toEqual({})
    // Lossy: the whitespace-only text (5), the signature (6), two `caller` (8, 10), `todos` (4), two toolUseResult (11, 12).
    expect(result.report.lossy).toEqual({
      'claude.whitespace-text': 1,
      'claude.signature': 1,
      'claude.caller': 2,
      'claude.todos': 1,
      'claude.toolUseResult': 2,
    })
    const session = result.sessions[0]!
    expect(session.id).toBe('claude-55604662-cf2a-4331-851a-ec234028f8ca')
    expect(session.header.metadata?.['source']).toMatchObject({
      format: 'claude-code',
      formatVersion: '2.1.38',
      model: 'claude-opus-4-6',
      importer: { name: '@agent-ledger/import', version: 5 },
    })
    // Nothing lost: every one of the 15 lines is kept verbatim, once.
    expect(verbatimLines(session.events).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 15 }, (_, i) => i + 1),
    )
    const results = session.events.filter((event) => event.type === 'tool/result')
    expect(results.map((event) => (event.data as { code?: string }).code)).toEqual([
      USER_REJECTED,
      USER_REJECTED,
    ])
    const lastTurnEnd = session.events.findLast((event) => event.type === 'turn/end')
    expect(lastTurnEnd?.data).toEqual({ turn: 1, reason: 'interrupted' })
    // Import -> openai messages, compared with the source's own messages (written from lines 4-13).
    const thinking =
      "The user is having trouble starting their Phoenix server. Let me check what's happening by trying to run the command and looking at the project structure."
    const rejected =
      "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed."
    expect(replay(session.events)).toEqual([
      { role: 'user', content: 'mix phx.server doesnt seem to start' },
      {
        role: 'assistant',
        content: 'Let me check the project structure and try running the server to see the error.',
        reasoning_content: thinking,
        tool_calls: [
          {
            id: 'toolu_0116Hyi5v8ut7Ffb7d8qV1Sc',
            type: 'function',
            function: {
              name: 'Bash',
              arguments: '{"command":"mix phx.server 2>&1 | head -80","timeout":30000}',
            },
          },
          {
            id: 'toolu_01FdQ8qTyVyZjE3Kw4dguQGx',
            type: 'function',
            function: {
              name: 'Glob',
              arguments: '{"pattern":"mix.exs","path":"/home/marco/projects/spotter"}',
            },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_0116Hyi5v8ut7Ffb7d8qV1Sc', content: rejected },
      { role: 'tool', tool_call_id: 'toolu_01FdQ8qTyVyZjE3Kw4dguQGx', content: rejected },
      { role: 'user', content: '[Request interrupted by user for tool use]' },
    ])
    // Usage of the merged response: the last record's (all five repeat it), never summed.
    const assistant = session.events.find((event) => event.type === 'assistant/message')
    expect((assistant?.data as { usage?: unknown }).usage).toEqual({
      prompt_tokens: 3 + 13835 + 11515,
      completion_tokens: 13,
      total_tokens: 3 + 13835 + 11515 + 13,
      cached_tokens: 11515,
    })
  })

  it('codex rollout: injected context, grouped response with usage, dangling call repaired', async () => {
    const result = await importFile(codexFile())
    expect(result.format).toBe('codex')
    expect(result.formatVersion).toBe('0.104.0-alpha.1')
    // By hand: system = base_instructions (1) + developer messages (2, 3, 6, 7); user =
    // response_item user messages (4, 5, 9, 11; the event_msg user_message 10 is a
    // duplicate); one assistant grouping reasoning 15, message 17 and function_call 18; its
    // call has no output: one TOOL_OUTCOME_UNKNOWN placeholder, and the turn opened by
    // task_started (8) has no task_complete: closed interrupted.
    expect(result.report.messages).toEqual({ system: 5, user: 4, assistant: 1, tool: 1 })
    expect(result.report.toolCalls).toBe(1)
    expect(result.report.turns).toBe(1)
    expect(result.report.repairs).toEqual({ [RepairCode.TOOL_OUTCOME_UNKNOWN]: 1, CLOSE_TURN: 1 })
    expect(result.report.lossy).toMatchObject({
      'codex.encrypted_content': 1,
      'codex.phase': 1,
      'codex.developer-role': 4,
    })
    const session = result.sessions[0]!
    expect(session.id).toBe('codex-019c8a70-dda7-7f33-98ea-f30553347322')
    expect(verbatimLines(session.events)).toHaveLength(19)
    const messages = replay(session.events)
    const text = (len: number, sha: string): string => `[REDACTED_TEXT len=${len} sha=${sha}]`
    // The source's own messages, in order (lines 1, 2, 3, 4, 5, 6, 7, 9, 11, 15+17+18).
    expect(messages.slice(0, 10)).toEqual([
      { role: 'system', content: text(13131, '036b7e47') },
      { role: 'system', content: text(3663, 'a67043b4'), name: 'developer' },
      { role: 'system', content: text(6684, '1eb53f31'), name: 'developer' },
      { role: 'user', content: text(3017, 'f3ffd0ed') },
      { role: 'user', content: text(108, 'fc56d2e9') },
      { role: 'system', content: text(3696, 'a789215d'), name: 'developer' },
      { role: 'system', content: text(806, 'd10ca27b'), name: 'developer' },
      { role: 'user', content: text(86, '2239bcba') },
      { role: 'user', content: text(3490, '00c48df1') },
      {
        role: 'assistant',
        content: text(124, '7a220b7e'),
        reasoning_content: text(34, 'c8b34894'),
        tool_calls: [
          {
            id: 'call_UtYwHmwWekzvq83m8Rb9K8jJ',
            type: 'function',
            function: { name: 'exec_command', arguments: '[REDACTED_ARGUMENTS len=456 sha=df6be51a]' },
          },
        ],
      },
    ])
    expect(messages[10]).toMatchObject({ role: 'tool', tool_call_id: 'call_UtYwHmwWekzvq83m8Rb9K8jJ' })
    const assistant = session.events.find((event) => event.type === 'assistant/message')
    expect((assistant?.data as { usage?: unknown }).usage).toEqual({
      prompt_tokens: 34469,
      completion_tokens: 431,
      total_tokens: 34900,
      cached_tokens: 3456,
    })
  })

  it('openhands/basic.json: V0 events, non-dense ids, finish is assistant text that ends the turn (no placeholder)', async () => {
    const result = await importFile(openhandsFile, { sourceName: 'basic' })
    expect(result.format).toBe('openhands')
    expect(result.formatVersion).toBe('v0')
    // By hand: user message (id 0); assistant from the model_response of the edit (id 3)
    // with its call, the observation (id 4, cause 3); the finish action (id 5) is the
    // assistant text OpenHands replays (its thought), never a call: nothing to repair.
    expect(result.report.messages).toEqual({ system: 0, user: 1, assistant: 2, tool: 1 })
    expect(result.report.toolCalls).toBe(1)
    expect(result.report.repairs).toEqual({})
    expect(result.report.lossy['openhands.finish-call']).toBe(1)
    const session = result.sessions[0]!
    expect(session.id).toBe('openhands-basic')
    expect(verbatimLines(session.events)).toEqual([1, 2, 3, 4])
    const messages = replay(session.events)
    expect(messages.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'assistant'])
    expect(messages[1]).toMatchObject({ tool_calls: [{ id: 'toolu_017nBp7UfiGqyrA7j77HgtFP' }] })
    expect(messages[3]).not.toHaveProperty('tool_calls')
    expect(messages[3]!.content).toMatch(/^I've created a simple implementation of the 2048 game/)
    expect(session.events.filter((event) => event.type === 'turn/end').map((event) => event.data)).toEqual([
      { turn: 1, reason: 'completed' },
    ])
  })

  it('claude-code/short.jsonl read while the calls ran (lines 1-10), then whole: the rest is appended after the closers', async () => {
    const text = readFileSync(claudeFile, 'utf8')
    const early = await importText(text.split('\n').slice(0, 10).join('\n') + '\n', { file: 'short.jsonl' })
    const stored = early.sessions[0]!.events
    // Both calls were open when line 10 was written: two TOOL_OUTCOME_UNKNOWN placeholders and the turn closed.
    expect(early.report.repairs).toEqual({ [RepairCode.TOOL_OUTCOME_UNKNOWN]: 2, CLOSE_TURN: 1 })
    const full = await importText(text, { file: 'short.jsonl' })
    const plan = planIncrement(stored, full.sessions[0]!.events, { file: 'short.jsonl' })
    expect(plan).toMatchObject({ kind: 'append', closersKept: 3 })
    if (plan.kind !== 'append') return
    const messages = replay([...stored, ...plan.events])
    // The placeholders stay what the model sees; the real (rejected) results are in the log, not projected.
    expect(messages.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'user'])
    expect(messages.at(-1)).toEqual({ role: 'user', content: '[Request interrupted by user for tool use]' })
  })

  it('is deterministic: the same source gives the same events, byte for byte', async () => {
    for (const file of [claudeFile, codexFile(), openhandsFile]) {
      const first = await importFile(file)
      const second = await importFile(file)
      expect(JSON.stringify(second.sessions)).toBe(JSON.stringify(first.sessions))
    }
  })
})
