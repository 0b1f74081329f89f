import { join } from 'node:path'

import { RepairCode } from '@agent-ledger/loop-repair'
import { describe, expect, it } from 'vitest'

import { importFile, replay, SYNTHETIC } from './support/import.ts'

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
