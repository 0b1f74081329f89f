// The checker is tested on hand-built journals and sessions, one defect each, so that a 0 from
// a chaos run means the defect did not happen, not that the checker cannot see it.
import { mkdtempSync, appendFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { describe, expect, it, onTestFinished } from 'vitest'

import type { WireMessage } from '@agent-ledger/session-events'

import { checkRun, openJournal, percentile, readJournals } from '../src/index.ts'
import type { CheckedSession, JournalEntry, LoggedEvent } from '../src/index.ts'

const started = (callId: string, worker = 'w1'): JournalEntry => ({ callId, phase: 'started', worker })
const finished = (callId: string, worker = 'w1'): JournalEntry => ({ callId, phase: 'finished', worker })

const call = (seq: number, callId: string): LoggedEvent => ({
  seq,
  type: 'assistant/message',
  data: { message: { role: 'assistant', tool_calls: [{ id: callId }] } },
})
const result = (seq: number, callId: string, code?: string): LoggedEvent => ({
  seq,
  type: 'tool/result',
  data: {
    message: { role: 'tool', tool_call_id: callId, content: 'x' },
    ...(code === undefined ? {} : { code }),
  },
})
const user: WireMessage = { role: 'user', content: 'go' }
const asks = (callId: string): WireMessage => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id: callId, type: 'function', function: { name: 'run', arguments: '{}' } }],
})
const answers = (callId: string): WireMessage => ({ role: 'tool', tool_call_id: callId, content: 'ok' })
const paired = (callId: string): WireMessage[] => [user, asks(callId), answers(callId)]
const session = (events: LoggedEvent[], extra: Partial<CheckedSession> = {}): CheckedSession => ({
  id: 's',
  events,
  ackedSeq: events.length - 1,
  nextRequest: [],
  ...extra,
})

describe('checkRun', () => {
  it('counts nothing on a clean run: each call started once, finished, answered', () => {
    const counts = checkRun(
      [started('a'), finished('a')],
      [session([call(0, 'a'), result(1, 'a')], { nextRequest: paired('a') })],
    )
    expect(counts).toEqual({
      duplicatedExecutions: 0,
      forgottenActions: 0,
      dishonestRepairs: 0,
      ackedEventsLost: 0,
      providerInvalidRequests: 0,
      toolCallsStarted: 1,
    })
  })

  it('counts a call id whose tool started twice (two workers) as one duplicated execution', () => {
    const journal = [started('a', 'w1'), started('a', 'w2'), finished('a', 'w2'), started('b'), finished('b')]
    const sessions = [session([call(0, 'a'), result(1, 'a'), call(2, 'b'), result(3, 'b')])]
    expect(checkRun(journal, sessions).duplicatedExecutions).toBe(1)
  })

  it('counts a finished call the history does not answer as forgotten; TOOL_OUTCOME_UNKNOWN is honest, TOOL_NOT_STARTED forgets it', () => {
    const journal = [
      started('a'),
      finished('a'),
      started('b'),
      finished('b'),
      started('c'),
      finished('c'),
      started('d'),
      finished('d'),
    ]
    const sessions = [
      session([
        call(0, 'a'),
        call(1, 'b'),
        result(2, 'b', 'TOOL_OUTCOME_UNKNOWN'),
        call(3, 'c'),
        result(4, 'c', 'TOOL_NOT_STARTED'),
        result(5, 'd'),
      ]),
    ]
    // a: no result; c: answered "not started" although it finished. b and d are kept.
    expect(checkRun(journal, sessions).forgottenActions).toBe(2)
  })

  it('counts TOOL_NOT_STARTED for a call the journal shows started as a dishonest repair', () => {
    const journal = [started('a'), started('b')]
    const sessions = [
      session([
        call(0, 'a'),
        result(1, 'a', 'TOOL_NOT_STARTED'),
        call(2, 'b'),
        result(3, 'b', 'TOOL_OUTCOME_UNKNOWN'),
        call(4, 'c'),
        result(5, 'c', 'TOOL_NOT_STARTED'),
      ]),
    ]
    // c never started: its TOOL_NOT_STARTED is the truth.
    expect(checkRun(journal, sessions).dishonestRepairs).toBe(1)
  })

  it('counts acknowledged events missing from a session', () => {
    const sessions = [
      session([call(0, 'a')], { ackedSeq: 3 }),
      session([], { ackedSeq: 0 }),
      session([call(0, 'b')], { ackedSeq: -1 }),
    ]
    expect(checkRun([], sessions).ackedEventsLost).toBe(4)
  })

  it('counts sessions whose next request breaks the pairing rule', () => {
    const sessions = [
      session([], { nextRequest: [user, asks('a')] }),
      session([], { nextRequest: paired('b') }),
      session([], { nextRequest: [...paired('c'), answers('c')] }),
    ]
    expect(checkRun([], sessions).providerInvalidRequests).toBe(2)
  })

  it('counts a session that cannot be opened to build its next request (bricked) as provider-invalid', () => {
    const sessions = [
      session([], { nextRequest: paired('a') }),
      session([], { nextRequest: [], openError: 'SEQ_GAP at seq 5' }),
    ]
    expect(checkRun([], sessions).providerInvalidRequests).toBe(1)
  })
})

describe('journal', () => {
  it('reads back every fsynced entry and leaves out a torn last line', () => {
    const directory = mkdtempSync(join(tmpdir(), 'agent-ledger-chaos-'))
    onTestFinished(() => rmSync(directory, { recursive: true, force: true }))
    const journal = openJournal(directory, 'w1')
    journal.record(started('a'))
    journal.record(finished('a'))
    journal.close()
    appendFileSync(join(directory, 'w1.jsonl'), '{"callId":"b","pha')
    expect(readJournals(directory)).toEqual([started('a'), finished('a')])
  })
})

describe('percentile', () => {
  it('is the nearest-rank value', () => {
    const samples = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6]
    expect(percentile(samples, 50)).toBe(5)
    expect(percentile(samples, 99)).toBe(10)
    expect(percentile([], 50)).toBeNaN()
  })
})
