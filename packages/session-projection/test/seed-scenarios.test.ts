import { describe, expect, it } from 'vitest'

import { planRepair, RepairCode } from '@agent-ledger/loop-repair'
import type { LoggedEvent, SessionEvent } from '@agent-ledger/session-events'

import { createSessionLog, planCompaction } from '../src/index.ts'
import type { SessionLog } from '../src/index.ts'
import {
  assistant,
  newLog,
  roles,
  steppingClock,
  system,
  toolCall,
  toolResult,
  user,
} from './support/events.ts'

/** What the seed chapter's Session.open does, in memory: read the lines back, fold, repair. */
function reopen(lines: string): SessionLog {
  const events = lines
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as LoggedEvent)
  const log = createSessionLog({ clock: steppingClock(Date.UTC(2027, 0, 1)), events })
  for (const { seq: _seq, time: _time, ...closing } of planRepair(log.events).events) log.append(closing)
  return log
}

const toLines = (events: readonly LoggedEvent[]): string =>
  events.map((event) => `${JSON.stringify(event)}\n`).join('')

describe('the seed chapter scenarios', () => {
  it('replaying the written log gives the same events and the history system, user, assistant, tool', () => {
    const log = newLog()
    log.append(system('You are a coding agent.'))
    log.append(user('List the files.'))
    log.append(assistant(null, ['call-1']))
    log.append(toolCall('call-1', 'ls'))
    log.append(toolResult('call-1', 'a.ts b.ts', [3]))
    const reopened = reopen(toLines(log.events))
    expect(reopened.events).toHaveLength(log.events.length)
    expect(reopened.events).toEqual(log.events)
    expect(roles(reopened.deriveMessages())).toEqual(['system', 'user', 'assistant', 'tool'])
    expect(reopened.deriveMessages()).toEqual(log.deriveMessages())
  })

  it('a dangling tool call gets exactly one placeholder result, and reopening again adds nothing', () => {
    const log = newLog()
    log.append(system('sys'))
    log.append(user('Delete the build directory.'))
    log.append(assistant(null, ['call-rm']))
    log.append(toolCall('call-rm', 'rm'))
    // The process dies here: no tool/result was written.
    const once = reopen(toLines(log.events))
    expect(once.events).toHaveLength(log.events.length + 1)
    const placeholder = once.events.at(-1) as SessionEvent<'tool/result'>
    expect(placeholder.type).toBe('tool/result')
    expect(placeholder.data).toMatchObject({ isError: true, code: RepairCode.TOOL_OUTCOME_UNKNOWN })
    expect(placeholder.sourceEventSeqs).toEqual([3])
    expect(roles(once.deriveMessages())).toEqual(['system', 'user', 'assistant', 'tool'])
    const twice = reopen(toLines(once.events))
    expect(twice.events).toEqual(once.events)
  })

  it('after a replace the projection shrinks to system + summary while the event count does not', () => {
    const log = newLog()
    log.append(system('sys'))
    for (let turn = 1; turn <= 3; turn += 1) {
      log.append(user(`question ${turn}`))
      log.append(assistant(`answer ${turn}`))
    }
    const last = log.projection.surface().at(-1)!.seq
    const before = log.events.length
    for (const input of planCompaction(log.projection, {
      compactionId: 'k',
      startSeq: 1,
      endSeq: last,
      summary: 's',
    })) {
      log.append(input)
    }
    const reopened = reopen(toLines(log.events))
    expect(roles(reopened.deriveMessages())).toEqual(['system', 'user'])
    expect(reopened.events).toHaveLength(before + 4)
    // Every original event is still in the log.
    expect(reopened.events.slice(0, before)).toEqual(log.events.slice(0, before))
  })
})
