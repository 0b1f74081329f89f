import { join } from 'node:path'

import { describe, expect, it } from 'vitest'

import { importFile, importText, replay, SYNTHETIC, verbatimLines } from './support/import.ts'

/**
 * Shapes of real Claude Code transcripts (0.2.x to 2.1.x) found in public repositories, each
 * reproduced by a hand-written fixture (sources in `fixtures/README.md`); the counts below are
 * derived by hand from the fixture lines.
 */
const fixture = (name: string): string => join(SYNTHETIC, 'claude-code', name)
const SESSION = 'claude-7c1e2a90-5b4d-4e6f-8a1b-2c3d4e5f6a7b'

function contents(messages: readonly { content?: unknown }[]): unknown[] {
  return messages.map((message) => message.content)
}

describe('Claude Code shapes of real transcripts (synthetic)', () => {
  it('parallel-calls.jsonl: the blocks of one response written as a chain, each result under its own call, stay one session', async () => {
    const result = await importFile(fixture('parallel-calls.jsonl'))
    // p-a3 (the second call of msg_p1) and its result p-r2 hang off the path: attached, not a fork.
    expect(result.sessions.map((session) => session.id)).toEqual([SESSION])
    expect(result.report.forks).toBe(0)
    expect(result.report.messages).toEqual({ system: 0, user: 1, assistant: 3, tool: 4 })
    expect(result.report.toolCalls).toBe(4)
    expect(result.report.repairs).toEqual({})
    expect(result.report.diagnostics).toEqual([])
    expect(result.report.lossy).toEqual({ 'claude.signature': 1 })
    const messages = replay(result.sessions[0]!.events)
    expect(messages).toMatchObject([
      { role: 'user', content: 'list the files and read the notes' },
      {
        role: 'assistant',
        reasoning_content: 'Two independent reads.',
        tool_calls: [{ id: 'toolu_ls' }, { id: 'toolu_cat' }],
      },
      { role: 'tool', tool_call_id: 'toolu_ls', content: 'a.txt\nnotes.md' },
      { role: 'tool', tool_call_id: 'toolu_cat', content: 'notes: ship on friday' },
      // msg_p2: its second block was written after the first call had run and answered.
      { role: 'assistant', tool_calls: [{ id: 'toolu_wc' }, { id: 'toolu_head' }] },
      { role: 'tool', tool_call_id: 'toolu_wc' },
      { role: 'tool', tool_call_id: 'toolu_head' },
      { role: 'assistant', content: 'Two files; the notes say ship on friday.' },
    ])
    expect(verbatimLines(result.sessions[0]!.events).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 13 }, (_, i) => i + 1),
    )
  })

  it('nested-forks.jsonl: two branches leaving the main path at one record get distinct fork ids', async () => {
    const result = await importFile(fixture('nested-forks.jsonl'))
    // Leaves n6, n8, n10: n10 is the session; n8 (later) keeps n3 as its id, n6 takes n5.
    expect(result.sessions.map((session) => [session.role, session.id])).toEqual([
      ['main', SESSION],
      ['fork', `${SESSION}-fork-n5`],
      ['fork', `${SESSION}-fork-n3`],
    ])
    const [main, forkN5, forkN3] = result.sessions
    expect(contents(replay(main!.events))).toEqual(['first question', 'first answer', 'try B', 'B answer'])
    expect(contents(replay(forkN5!.events))).toEqual([
      'first question',
      'first answer',
      'try A',
      'A one',
      'A more',
      'A more answer',
    ])
    expect(contents(replay(forkN3!.events))).toEqual([
      'first question',
      'first answer',
      'try A',
      'A one',
      'A other',
      'A other answer',
    ])
    for (const fork of [forkN5!, forkN3!]) {
      const inherited = fork.header.inheritedEventCount!
      expect(fork.events.slice(0, inherited)).toEqual(main!.events.slice(0, inherited))
    }
  })

  it('flat.jsonl: records that name no parent (trimmed copies) are one path in file order, not one fork each', async () => {
    const result = await importFile(fixture('flat.jsonl'))
    expect(result.sessions).toHaveLength(1)
    expect(result.report.messages).toEqual({ system: 0, user: 1, assistant: 2, tool: 1 })
    expect(result.report.diagnostics.map((finding) => [finding.code, finding.line])).toEqual([
      ['NO_PARENT_LINKS', 0],
    ])
    expect(result.report.logOnly).toEqual({ 'log-only:claude.summary': 1 })
  })

  it('compact-lost-parent.jsonl: a compact_boundary whose logicalParentUuid is not in the file continues the record before it', async () => {
    const result = await importFile(fixture('compact-lost-parent.jsonl'))
    expect(result.sessions).toHaveLength(1)
    expect(result.report.forks).toBe(0)
    expect(result.report.compactions).toBe(1)
    expect(result.report.diagnostics.map((finding) => [finding.code, finding.line])).toEqual([
      ['COMPACT_PARENT_MISSING', 5],
    ])
    const session = result.sessions[0]!
    expect(contents(replay(session.events))).toEqual([
      'This session is being continued from a previous conversation. Summary: two tasks were done.',
      'third task',
      'third done',
    ])
    // The conversation before the compaction is in the session (hidden by it), not in a fork.
    const texts = session.events
      .filter((event) => event.type === 'user/message')
      .map((event) => (event.data as { message: { content: unknown } }).message.content)
    expect(texts.slice(0, 2)).toEqual(['first task', 'second task'])
  })

  it('slash-command.jsonl: the prompt a slash command expands to is the user prompt; notes and echoes stay log-only', async () => {
    const result = await importFile(fixture('slash-command.jsonl'))
    expect(result.report.messages).toEqual({ system: 0, user: 1, assistant: 2, tool: 1 })
    expect(result.report.turns).toBe(1)
    // Lines 1 (/init echo), 5 (system-reminder), 7 (caveat), 8 (/cost echo), 9 (its output).
    expect(result.report.logOnly).toEqual({ 'log-only:claude.local-command': 5 })
    expect(replay(result.sessions[0]!.events)[0]).toEqual({
      role: 'user',
      content: 'Please analyze this codebase and write a notes file.',
    })
  })

  it('inline-sidechains.jsonl: each Task sidechain written inline (1.0.x) is a session of its own', async () => {
    const result = await importFile(fixture('inline-sidechains.jsonl'))
    expect(result.sessions.map((session) => [session.role, session.id])).toEqual([
      ['main', SESSION],
      ['sidechain', `${SESSION}-agent-w1`],
      ['sidechain', `${SESSION}-agent-j1`],
    ])
    expect(result.report.forks).toBe(0)
    expect(result.report.sidechains).toBe(2)
    const [main, web, jobs] = result.sessions
    expect(replay(main!.events)).toHaveLength(5)
    expect(contents(replay(web!.events))).toEqual(['survey web', 'web renders pages'])
    expect(contents(replay(jobs!.events))).toEqual(['survey jobs', 'jobs runs three tasks'])
    for (const side of [web!, jobs!])
      expect(side.header).toMatchObject({ parentSession: SESSION, delegationDepth: 1 })
  })

  it('resumed.jsonl: a file that starts with the records of the session it resumes is imported as its own session', async () => {
    const own = '66666666-7777-4888-9999-aaaaaaaaaaaa'
    const resumed = '11111111-2222-4333-8444-555555555555'
    for (const sourceName of [own, undefined]) {
      const result = await importFile(
        fixture('resumed.jsonl'),
        sourceName === undefined ? {} : { sourceName },
      )
      expect(result.sessions.map((session) => session.id)).toEqual([`claude-${own}`])
      expect(result.sessions[0]!.header.metadata?.['source']).toMatchObject({
        id: own,
        resumedFrom: [resumed],
      })
      expect(result.report.diagnostics.map((finding) => finding.code)).toEqual(['RESUMED_SESSION'])
      expect(contents(replay(result.sessions[0]!.events))).toEqual([
        'start the migration',
        'Started.',
        'continue it',
        'Continued.',
      ])
    }
    // Named after the session it resumes (a copy renamed by hand): the file name decides.
    const renamed = await importFile(fixture('resumed.jsonl'), { sourceName: resumed })
    expect(renamed.sessions[0]!.id).toBe(`claude-${resumed}`)
    expect(renamed.sessions[0]!.header.metadata?.['source']).toMatchObject({ resumedFrom: [own] })
  })

  it('summary-only.jsonl: a file of only summary lines imports as an empty session and says so', async () => {
    const result = await importFile(fixture('summary-only.jsonl'), { sourceName: 'summary-only' })
    expect(result.sessions.map((session) => session.id)).toEqual(['claude-summary-only'])
    expect(result.report.messages).toEqual({ system: 0, user: 0, assistant: 0, tool: 0 })
    expect(result.report.diagnostics.map((finding) => finding.code)).toEqual(['NO_CONVERSATION'])
    expect(verbatimLines(result.sessions[0]!.events)).toEqual([1, 2])
  })

  it('broken-chain.jsonl: a parentUuid that is not in the file continues the record before it', async () => {
    const result = await importFile(fixture('broken-chain.jsonl'))
    expect(result.sessions).toHaveLength(1)
    expect(result.report.diagnostics.map((finding) => [finding.code, finding.line])).toEqual([
      ['BROKEN_PARENT', 3],
    ])
    expect(contents(replay(result.sessions[0]!.events))).toEqual([
      'first',
      'first answer',
      'second',
      'second answer',
    ])
  })

  it('agent-acompact.jsonl: a compaction sub-agent file whose notes hang off the parent session is one session', async () => {
    const result = await importFile(fixture('agent-acompact.jsonl'))
    expect(result.sessions).toHaveLength(1)
    expect(result.sessions[0]!.header).toMatchObject({ delegationDepth: 1, parentSession: SESSION })
    expect(result.report.forks).toBe(0)
    expect(result.report.messages).toEqual({ system: 0, user: 1, assistant: 1, tool: 0 })
    expect(result.report.logOnly).toEqual({ 'log-only:claude.local-command': 2 })
    expect(result.report.diagnostics.map((finding) => [finding.code, finding.line])).toEqual([
      ['BROKEN_PARENT', 2],
      ['BROKEN_PARENT', 3],
    ])
  })

  it('metadata-first.jsonl: a 2.x transcript that starts with session metadata records is detected', async () => {
    const result = await importFile(fixture('metadata-first.jsonl'))
    expect(result.format).toBe('claude-code')
    expect(result.detection).toContain('permission-mode')
    expect(result.report.messages).toEqual({ system: 0, user: 1, assistant: 1, tool: 0 })
    expect(result.report.logOnly).toEqual({
      'log-only:claude.permission-mode': 1,
      'log-only:claude.ai-title': 1,
    })
  })

  it('images.jsonl: a pasted image is an image part; an image in a tool result is counted, its text kept', async () => {
    const result = await importFile(fixture('images.jsonl'))
    expect(result.report.lossy).toEqual({ 'claude.tool_result-image': 1 })
    const messages = replay(result.sessions[0]!.events)
    expect(messages[0]).toMatchObject({
      role: 'user',
      content: [
        { type: 'text', text: 'what is in this screenshot?' },
        { type: 'image_url', image_url: { url: expect.stringMatching(/^data:image\/png;base64,iVBOR/) } },
      ],
    })
    expect(messages[2]).toMatchObject({ role: 'tool', tool_call_id: 'toolu_shot', content: 'read 1 image' })
  })

  it('queued-prompt.jsonl: a prompt queued while the agent worked (a queued_command attachment) is a user message mid-turn', async () => {
    const result = await importFile(fixture('queued-prompt.jsonl'))
    expect(result.report.messages).toEqual({ system: 0, user: 3, assistant: 3, tool: 2 })
    expect(result.report.turns).toBe(1)
    expect(result.report.logOnly).toEqual({ 'log-only:claude.attachment': 1 })
    const messages = replay(result.sessions[0]!.events)
    expect(messages.map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'user',
      'assistant',
      'tool',
      'user',
      'assistant',
    ])
    expect(messages[3]).toEqual({ role: 'user', content: 'also run the tests' })
    expect(messages[6]).toMatchObject({
      role: 'user',
      content: [{ type: 'image_url' }, { type: 'text', text: 'and this error?' }],
    })
  })

  it('records trimmed to type, message and cwd (no uuid, no session id) are detected and read in file order', async () => {
    const text = [
      {
        type: 'user',
        timestamp: '2026-03-02T10:00:00Z',
        message: { content: 'fix the login bug' },
        cwd: '/srv/app',
      },
      {
        type: 'assistant',
        timestamp: '2026-03-02T10:00:05Z',
        message: {
          content: [{ type: 'tool_use', id: 'toolu_1', name: 'Read', input: { file_path: 'auth.ts' } }],
        },
      },
      {
        type: 'user',
        timestamp: '2026-03-02T10:00:06Z',
        message: { content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'export {}' }] },
      },
      {
        type: 'assistant',
        timestamp: '2026-03-02T10:00:09Z',
        message: { content: [{ type: 'text', text: 'Fixed.' }] },
      },
    ]
      .map((record) => JSON.stringify(record))
      .join('\n')
    const result = await importText(text, { sourceName: 'trimmed' })
    expect(result.format).toBe('claude-code')
    expect(result.sessions.map((session) => session.id)).toEqual(['claude-trimmed'])
    expect(result.report.diagnostics).toEqual([])
    expect(replay(result.sessions[0]!.events).map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
    ])
  })
})
