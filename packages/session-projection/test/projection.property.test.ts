import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

import { planRepair, validateProviderMessages } from '@agent-ledger/loop-repair'
import type { EventInput, LoggedEvent } from '@agent-ledger/session-events'

import { createProjection, createSessionLog, ProjectionError, restoreProjection } from '../src/index.ts'
import type { Projection, ProjectionSnapshot, SessionLog } from '../src/index.ts'
import { referenceFold } from './support/reference-fold.ts'
import { buildRandomLog, newRandomLog, runStep, stepArbitrary, testRegistry } from './support/random-log.ts'

const steps = fc.array(stepArbitrary, { maxLength: 120, size: '+1' })
const runs = { numRuns: 200 }

function foldAll(events: readonly LoggedEvent[]): Projection {
  const projection = createProjection({ registry: testRegistry })
  for (const event of events) projection.apply(event)
  return projection
}

/** A checkpoint as the store keeps it: serialized and parsed back. */
function throughJson(snapshot: ProjectionSnapshot): ProjectionSnapshot {
  return JSON.parse(JSON.stringify(snapshot)) as ProjectionSnapshot
}

describe('projection properties', () => {
  it('incremental deriveMessages at random call points equals a from-scratch fold', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(stepArbitrary, fc.boolean()), { maxLength: 120, size: '+1' }), (plan) => {
        const random = newRandomLog()
        let previous: readonly unknown[] | undefined
        let previousCount = -1
        for (const [step, deriveNow] of plan) {
          runStep(random, step)
          if (!deriveNow) continue
          const messages = random.log.deriveMessages()
          expect(messages).toEqual(referenceFold(random.log.events))
          // Nothing new since the last call: the very same frozen array.
          if (previous !== undefined && random.log.events.length === previousCount)
            expect(messages).toBe(previous)
          expect(random.log.deriveMessages()).toBe(messages)
          previous = messages
          previousCount = random.log.events.length
        }
        const final = random.log.deriveMessages()
        expect(final).toEqual(referenceFold(random.log.events))
        expect(final).toEqual(foldAll(random.log.events).deriveMessages())
        expect(Object.isFrozen(final)).toBe(true)
      }),
      runs,
    )
  })

  it('folding a ++ b equals restoring the snapshot after a (through JSON) and folding b', () => {
    fc.assert(
      fc.property(steps, fc.nat(), (plan, cut) => {
        const events = buildRandomLog(plan).events
        const k = cut % (events.length + 1)
        const whole = foldAll(events)
        const first = foldAll(events.slice(0, k))
        first.deriveMessages()
        const continued = restoreProjection(throughJson(first.snapshot()), { registry: testRegistry })
        for (const event of events.slice(k)) continued.apply(event)
        expect(continued.snapshot()).toEqual(whole.snapshot())
        expect(continued.deriveMessages()).toEqual(whole.deriveMessages())
        expect(continued.stats).toEqual(whole.stats)
      }),
      runs,
    )
  })

  it('after loop-repair closes any random log, the projection passes the provider validator', () => {
    fc.assert(
      fc.property(steps, (plan) => {
        const log = buildRandomLog(plan)
        for (const { seq: _seq, time: _time, ...closing } of planRepair(log.events).events) {
          log.append(closing)
        }
        expect(validateProviderMessages(log.deriveMessages())).toEqual([])
        expect(planRepair(log.events).events).toEqual([])
      }),
      runs,
    )
  })

  it('a refused append leaves the events, nextSeq, surface, messages and snapshot unchanged', () => {
    const invalid = fc.oneof(
      fc.constant<EventInput>({
        type: 'user/message',
        data: { message: { role: 'user', content: 'x' } },
        surfaceOp: { op: 'replace', startSeq: 10_000_000, endSeq: 10_000_000 },
        sourceEventSeqs: [],
      }),
      fc.constant({ type: 'nobody/knows', data: {} } as unknown as EventInput),
      fc.constant({
        type: 'user/message',
        data: { message: { role: 'robot', content: 'x' } },
      } as unknown as EventInput),
      fc.constant({ type: 'turn/start', data: { turn: 1 }, surfaceOp: 'append' } as unknown as EventInput),
      fc.constant({
        type: 'user/message',
        data: { message: { role: 'user', content: [1n] } },
      } as unknown as EventInput),
    )
    const attempt = (log: SessionLog, input: EventInput): void => {
      const events = log.events
      const surface = log.projection.surface()
      const messages = log.deriveMessages()
      const snapshot = JSON.stringify(log.projection.snapshot())
      expect(() => log.append(input)).toThrow(ProjectionError)
      expect(log.events).toBe(events)
      expect(log.projection.nextSeq).toBe(events.length)
      expect(log.projection.surface()).toBe(surface)
      expect(log.deriveMessages()).toBe(messages)
      expect(JSON.stringify(log.projection.snapshot())).toBe(snapshot)
    }
    fc.assert(
      fc.property(steps, invalid, fc.nat(), (plan, input, seed) => {
        const log = buildRandomLog(plan)
        attempt(log, input)
        // A replace citing nothing over a real range is refused too.
        const surface = log.projection.surface()
        const node = surface[seed % Math.max(1, surface.length)]
        if (node !== undefined && node.type !== 'system/message') {
          attempt(log, {
            type: 'user/message',
            data: { message: { role: 'user', content: 'uncited' } },
            surfaceOp: { op: 'replace', startSeq: node.seq, endSeq: node.seq },
          })
        }
        const rebuilt = createSessionLog({
          clock: { now: () => '2026-01-01T00:00:00.000Z' },
          registry: testRegistry,
          events: log.events,
        })
        expect(rebuilt.deriveMessages()).toEqual(log.deriveMessages())
      }),
      runs,
    )
  })
})
