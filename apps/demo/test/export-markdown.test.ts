import { planRepair } from '@agent-ledger/loop-repair'
import type { LoggedEvent } from '@agent-ledger/session-events'
import { createSessionLog, planCompaction } from '@agent-ledger/session-projection'
import { describe, expect, it } from 'vitest'

import { describeEvent } from '../src/describe-event.ts'
import { exportMarkdown } from '../src/export-markdown.ts'

function sampleLog(): readonly LoggedEvent[] {
  const log = createSessionLog({ clock: { now: () => '2025-01-01T00:00:00.000Z' } })
  log.append({ type: 'system/message', data: { message: { role: 'system', content: 'be brief' } } })
  log.append({ type: 'turn/start', data: { turn: 1 } })
  const user = log.append({
    type: 'user/message',
    data: { message: { role: 'user', content: 'show ```code```' } },
  })
  log.append({
    type: 'assistant/message',
    data: {
      message: {
        role: 'assistant',
        content: 'Reading.',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a`b"}' } },
        ],
      },
    },
  })
  const call = log.append({
    type: 'tool/call',
    data: { callId: 'c1', name: 'read_file', arguments: '{"path":"a`b"}' },
  })
  log.append({
    type: 'tool/result',
    data: { message: { role: 'tool', tool_call_id: 'c1', content: 'has a fence:\n```\ninside\n```\n' } },
    sourceEventSeqs: [call.seq],
  })
  const answer = log.append({
    type: 'assistant/message',
    data: { message: { role: 'assistant', content: 'Done.' } },
  })
  log.append({ type: 'turn/end', data: { turn: 1, reason: 'completed' } })
  for (const input of planCompaction(log.projection, {
    compactionId: 'k1',
    startSeq: user.seq,
    endSeq: answer.seq,
    summary: 'read a file',
  })) {
    log.append(input)
  }
  log.append({ type: 'turn/start', data: { turn: 2 } })
  log.append({
    type: 'assistant/message',
    data: {
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c2', type: 'function', function: { name: 'write_file', arguments: '{}' } }],
      },
    },
  })
  log.append({ type: 'tool/call', data: { callId: 'c2', name: 'write_file', arguments: '{}' } })
  for (const event of planRepair(log.events).events) {
    const { seq: _seq, time: _time, ...input } = event
    log.append(input)
  }
  return log.events
}

describe('exportMarkdown', () => {
  const events = sampleLog()
  const markdown = exportMarkdown(events, {
    format: 'agent-ledger.session',
    version: 4,
    id: 'sample',
    createdAt: '2025-01-01T00:00:00.000Z',
  })

  it('mentions every event by its seq, in order', () => {
    let position = 0
    for (const event of events) {
      const match = new RegExp(`seq ${event.seq}\\b`).exec(markdown.slice(position))
      expect(match, `seq ${event.seq} (${event.type})`).not.toBeNull()
      position += match!.index
    }
  })

  it('marks repair placeholders, compactions and the messages a compaction hid', () => {
    expect(markdown).toContain('**Repair placeholder `TOOL_OUTCOME_UNKNOWN`** for call `c2`')
    expect(markdown).toContain('_Turn 2 ended: **interrupted**')
    expect(markdown).toContain('Compaction summary, shown to the model instead of seq 2..6')
    expect(markdown).toMatch(/\*\*User\*\* \(seq 2, hidden by the compaction at seq \d+\)/)
  })

  it('keeps fences and inline code intact when the content holds backticks', () => {
    expect(markdown).toContain('````text\nhas a fence:\n```\ninside\n```\n````')
    expect(markdown).toContain('with ``{"path":"a`b"}``')
  })

  it('is a pure function of the events', () => {
    expect(exportMarkdown(events)).toBe(exportMarkdown(events))
    expect(exportMarkdown(events)).toContain('# Session (unknown id)')
  })
})

describe('describeEvent', () => {
  it('gives one line per event with its seq and type', () => {
    const lines = sampleLog().map(describeEvent)
    for (const line of lines) expect(line).not.toContain('\n')
    expect(lines[4]).toBe('seq   4  tool/call          read_file {"path":"a`b"} (durable before it runs)')
    expect(lines.at(-2)).toContain('error [TOOL_OUTCOME_UNKNOWN]')
  })
})
