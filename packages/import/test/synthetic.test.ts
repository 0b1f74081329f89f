import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import { RepairCode } from '@agent-ledger/loop-repair'
import { describe, expect, it } from 'vitest'

import { ImportError, planIncrement, USER_REJECTED } from '../src/index.ts'
import { importFile, importText, replay, SYNTHETIC, verbatimLines } from './support/import.ts'

const fixture = (...parts: string[]): string => join(SYNTHETIC, ...parts)

describe('Claude Code (synthetic)', () => {
  it('branches.jsonl: last leaf is the session, a rewind becomes a seeded fork, the sidechain its own session', async () => {
    const result = await importFile(fixture('claude-code', 'branches.jsonl'))
    expect(result.sessions.map((session) => [session.role, session.id])).toEqual([
      ['main', 'claude-0b7c1a52-1111-4a2b-9c3d-5e6f7a8b9c0d'],
      ['fork', 'claude-0b7c1a52-1111-4a2b-9c3d-5e6f7a8b9c0d-fork-b8'],
      ['sidechain', 'claude-0b7c1a52-1111-4a2b-9c3d-5e6f7a8b9c0d-agent-ag1'],
    ])
    // Main path b1 b2 b3 b4 b6 b7 b10 b11 (+ b5 attached after b2): user, assistant (A, B merged
    // from b2/b3), tool A, tool B (call order, not file order), assistant b7, user b10,
    // assistant b11 (call C, never answered), placeholder for C.
    expect(result.report.messages).toEqual({ system: 0, user: 2, assistant: 3, tool: 3 })
    expect(result.report.toolCalls).toBe(3)
    expect(result.report.forks).toBe(1)
    expect(result.report.sidechains).toBe(1)
    expect(result.report.repairs).toEqual({ [RepairCode.TOOL_OUTCOME_UNKNOWN]: 1, CLOSE_TURN: 1 })
    expect(result.report.diagnostics.map((finding) => [finding.code, finding.line])).toEqual([
      ['ORPHAN_TOOL_RESULT', 7],
      ['DUPLICATE_UUID', 14],
    ])
    const [main, fork, side] = result.sessions
    const mainMessages = replay(main!.events)
    expect(mainMessages.slice(1, 4)).toMatchObject([
      { role: 'assistant', tool_calls: [{ id: 'toolu_A' }, { id: 'toolu_B' }] },
      { role: 'tool', tool_call_id: 'toolu_A' },
      { role: 'tool', tool_call_id: 'toolu_B' },
    ])
    // Usage of msg_10 is its last record's (output 7), not the sum (8).
    const merged = main!.events.find((event) => event.type === 'assistant/message')
    expect((merged!.data as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(7)
    // The fork shares everything up to the answer both branches follow (b7), then its own prompt.
    expect(fork!.header).toMatchObject({ parentSession: main!.id, seeded: true })
    const inherited = fork!.header.inheritedEventCount!
    expect(fork!.events.slice(0, inherited)).toEqual(main!.events.slice(0, inherited))
    expect(fork!.events[inherited]).toMatchObject({
      type: 'session/end-seed',
      data: { parentSession: main!.id },
    })
    expect(replay(fork!.events).map((message) => message.content)).toContain('now delete a.txt')
    expect(side!.header).toMatchObject({ parentSession: main!.id, delegationDepth: 1 })
    expect(replay(side!.events)).toHaveLength(2)
    // Nothing lost: each of the 15 lines is kept verbatim in some session.
    const kept = new Set(result.sessions.flatMap((session) => verbatimLines(session.events)))
    expect([...kept].sort((a, b) => a - b)).toEqual(Array.from({ length: 15 }, (_, i) => i + 1))
  })

  it('compaction.jsonl: compact_boundary + isCompactSummary hide the earlier messages', async () => {
    const result = await importFile(fixture('claude-code', 'compaction.jsonl'))
    expect(result.report.compactions).toBe(1)
    expect(result.report.lossy['claude.compact.preTokens']).toBe(1)
    const messages = replay(result.sessions[0]!.events)
    expect(messages.map((message) => message.content)).toEqual([
      'This session is being continued from a previous conversation that ran out of context. Summary: two questions were answered.',
      'third question',
      'third answer',
    ])
  })
})

describe('Codex (synthetic)', () => {
  it('compacted.jsonl: replacement_history replaces the history, orphan output dropped, aborted turn', async () => {
    const result = await importFile(fixture('codex', 'compacted.jsonl'))
    const session = result.sessions[0]!
    expect(session.header.parentSession).toBe('codex-019c8fff-aaaa-7bbb-8ccc-000000000000')
    expect(result.report.compactions).toBe(1)
    expect(result.report.turns).toBe(3)
    // call_2 had no output when the turn was aborted: a placeholder mid-file.
    expect(result.report.repairs).toEqual({ [RepairCode.TOOL_OUTCOME_UNKNOWN]: 1 })
    expect(result.report.diagnostics.map((finding) => finding.code)).toEqual([
      'ORPHAN_TOOL_RESULT',
      'UNANSWERED_TOOL_CALL',
    ])
    const turnEnds = session.events.filter((event) => event.type === 'turn/end').map((event) => event.data)
    expect(turnEnds).toEqual([
      { turn: 1, reason: 'completed' },
      { turn: 2, reason: 'aborted' },
      { turn: 3, reason: 'completed' },
    ])
    const messages = replay(session.events)
    expect(messages.slice(0, 3)).toEqual([
      { role: 'system', content: 'You are Codex.' },
      { role: 'user', content: 'run the tests' },
      { role: 'user', content: 'Summary: the tests were run and pass.' },
    ])
    expect(messages.at(-1)).toEqual({ role: 'assistant', content: 'You are welcome.' })
  })
})

describe('pi-mono (synthetic)', () => {
  it('v3-tree.jsonl: branch_summary path is the session, the abandoned branch a fork, compaction keeps firstKeptEntryId on', async () => {
    const result = await importFile(fixture('pi', 'v3-tree.jsonl'))
    expect(result.formatVersion).toBe('3')
    expect(result.sessions.map((session) => session.role)).toEqual(['main', 'fork'])
    const [main, fork] = result.sessions
    const messages = replay(main!.events)
    expect(
      messages.map((message) => [
        message.role,
        typeof message.content === 'string' ? message.content : 'parts',
      ]),
    ).toEqual([
      ['user', 'Earlier: a cat picture, a file saying meow.'],
      ['user', 'now summarise'],
      ['assistant', 'A cat that says meow.'],
      ['user', 'Remember the cat.'],
      ['user', 'bye'],
    ])
    const turnEnds = main!.events.filter((event) => event.type === 'turn/end').map((event) => event.data)
    expect(turnEnds.at(-1)).toEqual({ turn: 3, reason: 'aborted' })
    const forkMessages = replay(fork!.events)
    expect(forkMessages[0]).toMatchObject({
      role: 'user',
      content: [{ type: 'text' }, { type: 'image_url' }],
    })
    expect(forkMessages.at(-1)).toEqual({ role: 'assistant', content: 'miaou' })
    expect(fork!.header.inheritedEventCount).toBeGreaterThan(0)
  })

  it('v1.jsonl: entries without ids are chained, firstKeptEntryIndex honoured, the dangling call repaired', async () => {
    const result = await importFile(fixture('pi', 'v1.jsonl'))
    expect(result.formatVersion).toBe('1')
    expect(result.report.repairs).toEqual({ [RepairCode.TOOL_OUTCOME_UNKNOWN]: 1, CLOSE_TURN: 1 })
    const messages = replay(result.sessions[0]!.events)
    expect(messages.map((message) => message.role)).toEqual([
      'user',
      'user',
      'assistant',
      'user',
      'assistant',
      'tool',
    ])
    expect(messages[0]).toEqual({ role: 'user', content: 'Greetings were exchanged.' })
    expect(messages[1]).toEqual({ role: 'user', content: 'again' })
  })

  it('v2.jsonl: hookMessage is read as a custom message; stopReason error ends the turn in error, the message log-only', async () => {
    const result = await importFile(fixture('pi', 'v2.jsonl'))
    const session = result.sessions[0]!
    // pi never replays an errored assistant message to the model.
    expect(replay(session.events).map((message) => message.content)).toEqual(['hello', 'branch main, clean'])
    expect(result.report.logOnly['log-only:pi.assistant-error']).toBe(1)
    expect(session.events.findLast((event) => event.type === 'turn/end')?.data).toEqual({
      turn: 1,
      reason: 'error',
    })
  })
})

describe('pi-mono SessionManager shapes (synthetic)', () => {
  it('v3-session-manager.jsonl: bashExecution as pi shows it to the model, !! excluded, custom_message, an error turn, a second root', async () => {
    const result = await importFile(fixture('pi', 'v3-session-manager.jsonl'))
    // Two roots (resetLeaf): the last leaf's tree is the session, the first tree a fork.
    expect(result.sessions.map((session) => session.role)).toEqual(['main', 'fork'])
    const [main, fork] = result.sessions
    expect(replay(main!.events)).toEqual([
      { role: 'user', content: 'deploy it (edited)' },
      { role: 'assistant', content: 'Deploying to staging.' },
    ])
    expect(main!.header.metadata).toMatchObject({
      source: {
        model: 'claude-x',
        parentSessionFile:
          '/home/u/.pi/agent/sessions/--home-u-app--/2026-03-31T09-00-00-000Z_11111111-2222-4333-8444-555555555555.jsonl',
      },
    })
    const messages = replay(fork!.events)
    expect(messages.map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'user',
      'user',
      'user',
      'user',
      'user',
    ])
    expect(messages.slice(4).map((message) => message.content)).toEqual([
      'Ran `git status`\n```\nclean\n\n```',
      'Ran `npm test`\n```\nFAIL x\n```\n\nCommand exited with code 1\n\n[Output truncated. Full output: /tmp/pi-bash-1.log]',
      // b3 (`!!env`) is excluded from the context: not a message.
      'Ran `sleep 9`\n(no output)\n\n(command cancelled)',
      'Remember the staging flag.',
      'try again with --staging',
    ])
    // The commands the user ran start no turn; the next prompt does, and the rate-limit error ends it.
    expect(fork!.events.filter((event) => event.type === 'turn/end').map((event) => event.data)).toEqual([
      { turn: 1, reason: 'completed' },
      { turn: 2, reason: 'error' },
    ])
    expect(result.report.lossy).toEqual({
      'pi.provider': 3,
      'pi.signature': 1,
      'pi.cost': 1,
      'pi.details': 2,
      'pi.display': 1,
    })
    expect(result.report.logOnly).toEqual({
      'log-only:pi.session-header': 2,
      'log-only:pi.model_change': 1,
      'log-only:pi.thinking_level_change': 1,
      'log-only:pi.bashExecution-excluded': 1,
      'log-only:pi.session_info': 1,
      'log-only:pi.label': 1,
      'log-only:pi.assistant-error': 1,
    })
    // Nothing lost: every one of the 18 lines is kept verbatim in one session or the other.
    const kept = new Set([...verbatimLines(main!.events), ...verbatimLines(fork!.events)])
    expect([...kept].sort((a, b) => a - b)).toEqual(Array.from({ length: 18 }, (_, index) => index + 1))
  })

  it('v1-branched.jsonl: a v1 branched session (branchedFrom) and a v1 bashExecution', async () => {
    const result = await importFile(fixture('pi', 'v1-branched.jsonl'))
    expect(result.formatVersion).toBe('1')
    const session = result.sessions[0]!
    expect(replay(session.events)).toEqual([
      { role: 'user', content: 'list the files' },
      { role: 'assistant', content: 'Run ls yourself.' },
      { role: 'user', content: 'Ran `ls`\n```\na.txt\n```' },
    ])
    expect(session.header.metadata).toMatchObject({
      source: {
        parentSessionFile:
          '/home/u/.pi/agent/sessions/--home-u-app--/2026-01-09T08-00-00-000Z_22222222-3333-4444-8555-666666666666.jsonl',
      },
    })
  })
})

describe('OpenHands V1 SDK (synthetic)', () => {
  it('v1-events.jsonl: parallel actions grouped by llm_response_id, results reordered, orphan dropped, think tags stripped', async () => {
    const result = await importFile(fixture('openhands', 'v1-events.jsonl'), { sourceName: 'conv-1' })
    expect(result.formatVersion).toBe('v1')
    expect(result.report.diagnostics.map((finding) => [finding.code, finding.line])).toEqual([
      ['ORPHAN_TOOL_RESULT', 7],
    ])
    expect(result.report.lossy['openhands.think-tags-stripped']).toBe(1)
    const messages = replay(result.sessions[0]!.events)
    expect(messages).toMatchObject([
      { role: 'system', content: 'You are OpenHands.' },
      { role: 'user', content: 'count the files' },
      {
        role: 'assistant',
        content: 'I will count them.',
        reasoning_content: 'ls and wc',
        tool_calls: [{ id: 'call_a' }, { id: 'call_b' }],
      },
      { role: 'tool', tool_call_id: 'call_a', content: 'a.txt\nb.txt' },
      { role: 'tool', tool_call_id: 'call_b', content: '2' },
      { role: 'assistant', content: 'Check the disk.', tool_calls: [{ id: 'call_c' }] },
      { role: 'tool', tool_call_id: 'call_c', content: 'command timed out' },
      { role: 'assistant', content: 'There are 2 files.' },
    ])
  })
})

describe('OpenHands V1 SDK event kinds (synthetic)', () => {
  it('v1-sdk-kinds.jsonl: rejected call, pause and interrupt end turns interrupted, a conversation error ends one in error, an image, a system prompt update', async () => {
    const result = await importFile(fixture('openhands', 'v1-sdk-kinds.jsonl'))
    const session = result.sessions[0]!
    const messages = replay(session.events)
    expect(messages.map((message) => message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'user',
      'assistant',
      'tool',
      'system',
      'user',
      'assistant',
    ])
    expect(messages[1]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'what is in this screenshot?' },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
      ],
    })
    expect(messages[3]).toEqual({ role: 'tool', tool_call_id: 'call_1', content: 'too risky' })
    expect(messages[8]).toEqual({ role: 'tool', tool_call_id: 'call_3', content: 'du: command timed out' })
    expect(messages[9]).toEqual({ role: 'system', content: 'You are OpenHands, now with a browser.' })
    expect(messages[11]).toEqual({
      role: 'assistant',
      content: 'I cannot browse yet.',
      reasoning_content: 'no browser tool',
    })
    const results = session.events.filter((event) => event.type === 'tool/result').map((event) => event.data)
    expect(results[0]).toMatchObject({
      message: { tool_call_id: 'call_1' },
      isError: true,
      code: USER_REJECTED,
    })
    expect(results[2]).toMatchObject({ message: { tool_call_id: 'call_3' }, isError: true })
    expect(session.events.filter((event) => event.type === 'turn/end').map((event) => event.data)).toEqual([
      { turn: 1, reason: 'interrupted' },
      { turn: 2, reason: 'interrupted' },
      { turn: 3, reason: 'error' },
    ])
    expect(result.report.lossy).toEqual({
      'time.no-zone-assumed-utc': 18,
      'openhands.tool-specs': 2,
      'openhands.security_risk': 3,
    })
    expect(result.report.logOnly).toEqual({
      'log-only:openhands.TokenEvent': 1,
      'log-only:openhands.ConversationStateUpdateEvent': 1,
      'log-only:openhands.HookExecutionEvent': 1,
    })
    expect(verbatimLines(session.events)).toEqual(Array.from({ length: 18 }, (_, index) => index + 1))
  })
})

describe('OpenHands condensations (synthetic)', () => {
  it('v1-condensation.jsonl: a contiguous Condensation with a summary is a compaction; a scattered one and one without summary are kept verbatim and counted', async () => {
    const result = await importFile(fixture('openhands', 'v1-condensation.jsonl'), { sourceName: 'conv-2' })
    const events = result.sessions[0]!.events
    // Line 7 forgets events 3-6 (the two calls and their results): one compaction hiding 4 nodes.
    expect(result.report.compactions).toBe(1)
    const start = events.find((event) => event.type === 'compaction/start')!
    const end = events.find((event) => event.type === 'compaction/end')!
    expect(end.data).toMatchObject({ hiddenCount: 4 })
    expect(start.data).toMatchObject({ reason: 'openhands condensation' })
    // Line 11 forgets the prompt and the third call, which the summary sits between; line 12 has no summary.
    expect(result.report.lossy).toMatchObject({
      'openhands.condensation-not-contiguous': 1,
      'openhands.condensation-without-summary': 1,
      'openhands.condensation.summary_offset': 1,
    })
    expect(verbatimLines(events)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])
    expect(replay(events)).toMatchObject([
      { role: 'system', content: 'You are OpenHands.' },
      { role: 'user', content: 'fix the failing test' },
      { role: 'user', content: 'Read a.py (add subtracts); pytest shows 1 failure.' },
      { role: 'assistant', content: 'Fix the operator.', tool_calls: [{ id: 'call_3' }] },
      { role: 'tool', tool_call_id: 'call_3', content: '' },
      { role: 'assistant', content: 'Fixed: add now adds.' },
    ])
  })

  it('v0-condensation.jsonl: a condensation action forgetting the id range 1-2 replaces the call and its result by the summary', async () => {
    const result = await importFile(fixture('openhands', 'v0-condensation.jsonl'), { sourceName: 'conv-3' })
    expect(result.formatVersion).toBe('v0')
    expect(result.report.compactions).toBe(1)
    expect(result.report.lossy['openhands.condensation.summary_offset']).toBe(1)
    expect(replay(result.sessions[0]!.events)).toEqual([
      { role: 'user', content: 'list the files' },
      { role: 'user', content: 'Listed the files: a.py and b.py.' },
      { role: 'assistant', content: 'There are 2 files.' },
    ])
  })
})

describe('bad input', () => {
  const codex = (): string => readFileSync(fixture('codex', 'compacted.jsonl'), 'utf8')

  it('a malformed line in the middle is refused with file and line; lenient mode skips, counts and keeps it', async () => {
    const lines = codex().split('\n')
    lines[4] = '{"timestamp": "2026-03-03T08:00:02.000Z", "type": "turn_con'
    const text = lines.join('\n')
    const error = await importText(text, { file: 'rollout.jsonl' }).catch((caught: unknown) => caught)
    expect(ImportError.is(error)).toBe(true)
    expect(error).toMatchObject({ code: 'MALFORMED_LINE', file: 'rollout.jsonl', line: 5 })
    const lenient = await importText(text, { lenient: true })
    expect(lenient.report.malformedLines).toBe(1)
    expect(lenient.report.diagnostics[0]).toMatchObject({ code: 'MALFORMED_LINE', line: 5 })
    const kept = lenient.sessions[0]!.events.find(
      (event) => (event.data as { disposition?: string }).disposition === 'malformed',
    )
    expect(kept?.data).toMatchObject({ line: 5, text: lines[4] })
  })

  it('a torn last line is TORN_LINE', async () => {
    const text = codex()
    const error = await importText(text.slice(0, text.length - 20)).catch((caught: unknown) => caught)
    expect(error).toMatchObject({ code: 'TORN_LINE', line: 22 })
  })

  it('refuses content it does not recognise, and a format that disagrees with the content', async () => {
    await expect(importText('{"hello": "world"}\n')).rejects.toMatchObject({
      code: 'UNRECOGNIZED_FORMAT',
      line: 1,
    })
    await expect(importText(codex(), { from: 'claude-code' })).rejects.toMatchObject({
      code: 'UNRECOGNIZED_FORMAT',
      message: expect.stringMatching(/expected claude-code content .* found codex content/) as unknown,
    })
    await expect(importText('\n\n')).rejects.toMatchObject({ code: 'EMPTY_SOURCE' })
    await expect(importText(codex(), { sha256: 'nope' })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' })
  })

  it('refuses an OpenHands evaluation output (one run per line in "history"), saying what it is and what to do', async () => {
    // The shape of SWE-bench / resolver `output.jsonl` lines (All-Hands-AI/OpenHands
    // tests/unit/resolver/mock_output/output.jsonl, evaluation/benchmarks/*/run_infer.py).
    const full = {
      instance_id: 'astropy__astropy-12907',
      instruction: 'fix it',
      history: [
        {
          id: 0,
          timestamp: '2026-01-01T00:00:00',
          source: 'user',
          action: 'message',
          args: { content: 'fix it' },
        },
        { id: 1, timestamp: '2026-01-01T00:00:01', source: 'agent', action: 'finish', args: {} },
      ],
      test_result: { git_patch: '' },
    }
    await expect(importText(`${JSON.stringify(full)}\n${JSON.stringify(full)}\n`)).rejects.toMatchObject({
      code: 'UNRECOGNIZED_FORMAT',
      line: 1,
      message: expect.stringContaining(
        'found an OpenHands evaluation output line ("astropy__astropy-12907") holding a run of 2 events in "history" beside its task and result: one line per run is not a session log; to import a run, write its "history" array to a file of its own',
      ) as unknown,
    })
    const flattened = {
      issue: { title: 'Add MIT license' },
      history: [
        { content: 'fix it', action: 'message' },
        { command: 'ls', action: 'run' },
        { content: '', observation: 'run' },
      ],
    }
    await expect(importText(`${JSON.stringify(flattened)}\n`)).rejects.toMatchObject({
      code: 'UNRECOGNIZED_FORMAT',
      message: expect.stringContaining(
        '("Add MIT license") holding a run of 3 events in "history" beside its task and result: one line per run is not a session log; its events are in an older flattened form',
      ) as unknown,
    })
    // A "history" of something else is just an unknown object.
    await expect(importText('{"history": [1, 2]}\n')).rejects.toMatchObject({
      message: expect.stringContaining('found an object with keys history;') as unknown,
    })
  })
})

describe('incremental import', () => {
  it('a grown Codex rollout appends only the new events; the same source changes nothing', async () => {
    const lines = readFileSync(fixture('codex', 'compacted.jsonl'), 'utf8').split('\n')
    // Cut after the token_count of turn 1 (line 8): the call has no output yet, so the earlier
    // import ends with closers. (A cut inside a response, before its token_count, diverges:
    // the stored message lacks the usage; see the README.)
    const early = await importText(lines.slice(0, 8).join('\n') + '\n')
    const stored = early.sessions[0]!.events
    expect(stored.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'interrupted' } })
    const full = await importText(lines.join('\n'))
    const plan = planIncrement(stored, full.sessions[0]!.events, { file: 'rollout.jsonl' })
    expect(plan.kind).toBe('append')
    if (plan.kind !== 'append') return
    expect(plan.closersKept).toBe(2)
    expect(plan.events[0]!.seq).toBe(stored.length)
    // The appended log is a valid session (the late real result is a duplicate the projection hides).
    const messages = replay([...stored, ...plan.events])
    expect(messages.at(-1)).toEqual({ role: 'assistant', content: 'You are welcome.' })
    expect(planIncrement(full.sessions[0]!.events, full.sessions[0]!.events, { file: 'r' })).toEqual({
      kind: 'unchanged',
    })
  })

  it('a rewritten source diverges', async () => {
    const text = readFileSync(fixture('codex', 'compacted.jsonl'), 'utf8')
    const stored = (await importText(text)).sessions[0]!.events
    const rewritten = (await importText(text.replace('run the tests', 'run the linter'))).sessions[0]!.events
    expect(() => planIncrement(stored, rewritten, { file: 'rollout.jsonl' })).toThrow(
      expect.objectContaining({ code: 'DIVERGED' }) as Error,
    )
  })
})
