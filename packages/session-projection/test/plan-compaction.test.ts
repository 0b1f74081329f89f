import { describe, expect, it } from 'vitest'

import { COMPACTION_SUMMARY_PREFIX, planCompaction, ProjectionError } from '../src/index.ts'
import type { SessionLog } from '../src/index.ts'
import { assistant, describeMessages, newLog, system, toolCall, toolResult, user } from './support/events.ts'

function conversation(): SessionLog {
  const log = newLog()
  log.append(system('sys')) // 0
  log.append(user('u1')) // 1
  log.append(assistant(null, ['c1'])) // 2
  log.append(toolCall('c1')) // 3
  log.append(toolResult('c1', 'r1')) // 4
  log.append(assistant('a1')) // 5
  log.append(user('u2')) // 6
  log.append(assistant('a2')) // 7
  return log
}

function codeOf(run: () => unknown): [string, string | undefined, unknown] {
  try {
    run()
  } catch (error) {
    if (ProjectionError.is(error)) return [error.code, error.field, error.found]
    throw error
  }
  throw new Error('expected a ProjectionError')
}

describe('planCompaction', () => {
  it('plans start, summary, the replacing message with full provenance, and end', () => {
    const log = conversation()
    const inputs = planCompaction(log.projection, {
      compactionId: 'k1',
      startSeq: 1,
      endSeq: 5,
      summary: 'The user asked; a tool ran.',
      reason: 'context-window',
    })
    expect(inputs).toEqual([
      {
        type: 'compaction/start',
        data: { compactionId: 'k1', startSeq: 1, endSeq: 5, reason: 'context-window' },
      },
      { type: 'compaction/summary', data: { compactionId: 'k1', summary: 'The user asked; a tool ran.' } },
      {
        type: 'user/message',
        data: {
          message: { role: 'user', content: `${COMPACTION_SUMMARY_PREFIX}The user asked; a tool ran.` },
        },
        surfaceOp: { op: 'replace', startSeq: 1, endSeq: 5 },
        sourceEventSeqs: [1, 2, 4, 5],
      },
      { type: 'compaction/end', data: { compactionId: 'k1', replacementSeq: 10, hiddenCount: 4 } },
    ])
    expect(Object.isFrozen(inputs[2])).toBe(true)
    for (const input of inputs) log.append(input)
    expect(log.events[10]?.type).toBe('user/message')
    expect(describeMessages(log.deriveMessages())).toEqual([
      'system:sys',
      `user:${COMPACTION_SUMMARY_PREFIX}The user asked; a tool ran.`,
      'user:u2',
      'assistant:a2',
    ])
    expect(log.events).toHaveLength(12)
    expect(log.projection.openCompaction).toBeNull()
  })

  it('leaves the surface unchanged and reports openCompaction when only compaction/start was written (a crash)', () => {
    const log = conversation()
    const messages = log.deriveMessages()
    const [start] = planCompaction(log.projection, {
      compactionId: 'k1',
      startSeq: 1,
      endSeq: 7,
      summary: 's',
    })
    log.append(start!)
    expect(log.projection.openCompaction).toEqual({ compactionId: 'k1', seq: 8, startSeq: 1, endSeq: 7 })
    expect(log.deriveMessages()).toBe(messages)
    // A later compaction runs normally and supersedes the abandoned one.
    for (const input of planCompaction(log.projection, {
      compactionId: 'k2',
      startSeq: 1,
      endSeq: 7,
      summary: 's',
    })) {
      log.append(input)
    }
    expect(log.projection.openCompaction).toBeNull()
    expect(log.deriveMessages()).toHaveLength(2)
  })

  it('refuses bad ranges with BAD_COMPACTION_RANGE, keeping the surface-rule error as cause', () => {
    const log = conversation()
    const request = { compactionId: 'k', summary: 's' }
    expect(codeOf(() => planCompaction(log.projection, { ...request, startSeq: 3, endSeq: 5 }))).toEqual([
      'BAD_COMPACTION_RANGE',
      'startSeq',
      3,
    ])
    expect(codeOf(() => planCompaction(log.projection, { ...request, startSeq: 1, endSeq: 99 }))).toEqual([
      'BAD_COMPACTION_RANGE',
      'endSeq',
      99,
    ])
    expect(codeOf(() => planCompaction(log.projection, { ...request, startSeq: 6, endSeq: 1 }))[0]).toBe(
      'BAD_COMPACTION_RANGE',
    )
    // The leading system message can only be replaced by a system message.
    expect(codeOf(() => planCompaction(log.projection, { ...request, startSeq: 0, endSeq: 1 }))[0]).toBe(
      'BAD_COMPACTION_RANGE',
    )
    // A range may not split tool results from their call.
    expect(codeOf(() => planCompaction(log.projection, { ...request, startSeq: 1, endSeq: 2 }))[0]).toBe(
      'BAD_COMPACTION_RANGE',
    )
    try {
      planCompaction(log.projection, { ...request, startSeq: 4, endSeq: 5 })
      expect.unreachable()
    } catch (error) {
      expect(ProjectionError.is(error) && ProjectionError.is(error.cause) && error.cause.code).toBe(
        'INVALID_SURFACE_OP',
      )
    }
  })

  it('compacts an earlier summary again (ranges are located in surface order)', () => {
    const log = conversation()
    for (const input of planCompaction(log.projection, {
      compactionId: 'k1',
      startSeq: 1,
      endSeq: 5,
      summary: 'one',
    })) {
      log.append(input)
    }
    // Surface: 0, 10 (summary), 6, 7. Compact 10..6 although 10 > 6.
    const inputs = planCompaction(log.projection, {
      compactionId: 'k2',
      startSeq: 10,
      endSeq: 6,
      summary: 'two',
    })
    expect(inputs[2]?.sourceEventSeqs).toEqual([10, 6])
    for (const input of inputs) log.append(input)
    expect(describeMessages(log.deriveMessages())).toEqual([
      'system:sys',
      `user:${COMPACTION_SUMMARY_PREFIX}two`,
      'assistant:a2',
    ])
  })
})
