import fc from 'fast-check'
import { z } from 'zod'

import { createEventRegistry, defineEventType } from '@agent-ledger/session-events'
import type { EventInput, SurfaceEventType } from '@agent-ledger/session-events'

import { createSessionLog, planCompaction } from '../../src/index.ts'
import type { SessionLog, SurfaceNode } from '../../src/index.ts'
import { toolCallOf } from './events.ts'

declare module '@agent-ledger/session-events' {
  interface SessionEventMap {
    'test/note': { text: string }
  }
}

/** A registry that knows one plugin event, `test/note`. */
export const testRegistry = createEventRegistry([
  defineEventType('test/note', z.object({ text: z.string() })),
])

/** One step of a random session, interpreted against the live log by {@link runStep}. */
export type Step =
  | { readonly kind: 'system' | 'user'; readonly text: string }
  | { readonly kind: 'assistant'; readonly calls: readonly string[]; readonly text: string | null }
  | { readonly kind: 'tool-call'; readonly pick: number }
  | { readonly kind: 'tool-result'; readonly pick: number; readonly cite: boolean }
  | { readonly kind: 'stray-result'; readonly callId: string }
  | { readonly kind: 'turn-start' | 'turn-end' | 'plugin' | 'ignorable' }
  | {
      readonly kind: 'replace'
      readonly as: 'system' | 'user' | 'assistant'
      readonly from: number
      readonly span: number
      readonly extraCitation: boolean
      readonly calls: readonly string[]
    }
  | { readonly kind: 'tool-replace'; readonly pick: number }
  | {
      readonly kind: 'compaction'
      readonly from: number
      readonly span: number
      readonly upTo: 1 | 2 | 3 | 4
    }
  | { readonly kind: 'clock'; readonly deltaSeconds: number }

const callIds = fc.uniqueArray(fc.constantFrom('a', 'b', 'c', 'd'), { maxLength: 3 })

/** Arbitrary steps, weighted toward the common agent loop. */
export const stepArbitrary: fc.Arbitrary<Step> = fc.oneof(
  {
    arbitrary: fc.record({ kind: fc.constant('user' as const), text: fc.string({ maxLength: 8 }) }),
    weight: 4,
  },
  {
    arbitrary: fc.record({ kind: fc.constant('system' as const), text: fc.string({ maxLength: 8 }) }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('assistant' as const),
      calls: callIds,
      text: fc.option(fc.string({ maxLength: 8 }), { nil: null }),
    }),
    weight: 4,
  },
  { arbitrary: fc.record({ kind: fc.constant('tool-call' as const), pick: fc.nat() }), weight: 2 },
  {
    arbitrary: fc.record({ kind: fc.constant('tool-result' as const), pick: fc.nat(), cite: fc.boolean() }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('stray-result' as const),
      callId: fc.constantFrom('a', 'b', 'zz'),
    }),
    weight: 1,
  },
  { arbitrary: fc.constantFrom<Step>({ kind: 'turn-start' }, { kind: 'turn-end' }), weight: 2 },
  { arbitrary: fc.constantFrom<Step>({ kind: 'plugin' }, { kind: 'ignorable' }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant('replace' as const),
      as: fc.constantFrom('system' as const, 'user' as const, 'assistant' as const),
      from: fc.nat(),
      span: fc.nat({ max: 3 }),
      extraCitation: fc.boolean(),
      calls: callIds,
    }),
    weight: 2,
  },
  { arbitrary: fc.record({ kind: fc.constant('tool-replace' as const), pick: fc.nat() }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant('compaction' as const),
      from: fc.nat(),
      span: fc.nat({ max: 6 }),
      upTo: fc.constantFrom(1 as const, 2 as const, 3 as const, 4 as const, 4 as const),
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('clock' as const),
      deltaSeconds: fc.oneof(fc.constant(-3600), fc.integer({ min: -5, max: 5 })),
    }),
    weight: 1,
  },
)

/** A log whose clock the steps can move (also backwards, RELIABILITY W11). */
export interface RandomLog {
  readonly log: SessionLog
  moveClock(seconds: number): void
}

/** A fresh log with the test registry and a clock that advances one second per event. */
export function newRandomLog(): RandomLog {
  let milliseconds = Date.UTC(2026, 0, 1)
  const log = createSessionLog({
    registry: testRegistry,
    clock: {
      now: () => {
        milliseconds += 1000
        return new Date(milliseconds).toISOString()
      },
    },
  })
  return {
    log,
    moveClock: (seconds) => {
      milliseconds += seconds * 1000
    },
  }
}

const replacementType: Record<'system' | 'user' | 'assistant', SurfaceEventType> = {
  system: 'system/message',
  user: 'user/message',
  assistant: 'assistant/message',
}

/**
 * A valid replace range over `nodes` near `from`, for a replacement of `type`: widened so
 * that no tool result is split from its assistant message, and moved off a leading system
 * message unless the replacement is one.
 */
function validRange(
  nodes: readonly SurfaceNode[],
  from: number,
  span: number,
  type: SurfaceEventType,
): { startSeq: number; endSeq: number; hidden: number[] } | undefined {
  if (nodes.length === 0) return undefined
  let start = from % nodes.length
  if (start === 0 && nodes[0]!.type === 'system/message' && type !== 'system/message') start = 1
  if (start >= nodes.length) return undefined
  let end = Math.min(nodes.length - 1, start + span)
  while (start > 0 && nodes[start]!.type === 'tool/result') start -= 1
  if (start === 0 && nodes[0]!.type === 'system/message' && type !== 'system/message') return undefined
  while (end + 1 < nodes.length && nodes[end + 1]!.type === 'tool/result') end += 1
  return {
    startSeq: nodes[start]!.seq,
    endSeq: nodes[end]!.seq,
    hidden: nodes.slice(start, end + 1).map((node) => node.seq),
  }
}

function appendAll(log: SessionLog, inputs: readonly EventInput[]): void {
  for (const input of inputs) log.append(input)
}

/**
 * Turns one step into zero or more valid appends, given the log as it is now. Steps that
 * make no sense in the current state (a result with no open call...) do nothing.
 */
export function runStep(random: RandomLog, step: Step): void {
  const { log } = random
  const projection = log.projection
  const pending = projection.repairState.pendingCalls
  switch (step.kind) {
    case 'system':
    case 'user':
      log.append({
        type: step.kind === 'system' ? 'system/message' : 'user/message',
        data: { message: { role: step.kind, content: step.text } },
      } as EventInput)
      return
    case 'assistant':
      log.append({
        type: 'assistant/message',
        data: {
          message:
            step.calls.length === 0
              ? { role: 'assistant', content: step.text ?? '' }
              : { role: 'assistant', content: step.text, tool_calls: step.calls.map((id) => toolCallOf(id)) },
        },
      })
      return
    case 'tool-call': {
      const unstarted = pending.filter((call) => call.toolCallSeq === null)
      const call = unstarted[step.pick % Math.max(1, unstarted.length)]
      if (call === undefined) return
      log.append({
        type: 'tool/call',
        data: { callId: call.callId, name: call.name, arguments: call.arguments },
      })
      return
    }
    case 'tool-result': {
      const call = pending[step.pick % Math.max(1, pending.length)]
      if (call === undefined) return
      log.append({
        type: 'tool/result',
        data: { message: { role: 'tool', tool_call_id: call.callId, content: `result of ${call.callId}` } },
        ...(step.cite ? { sourceEventSeqs: [call.toolCallSeq ?? call.assistantSeq] } : {}),
      })
      return
    }
    case 'stray-result':
      log.append({
        type: 'tool/result',
        data: { message: { role: 'tool', tool_call_id: step.callId, content: 'stray' } },
      })
      return
    case 'turn-start':
      log.append({ type: 'turn/start', data: { turn: projection.stats.turns + 1 } })
      return
    case 'turn-end': {
      const open = projection.repairState.openTurn
      if (open === null) return
      log.append({ type: 'turn/end', data: { turn: open.turn, reason: 'completed' } })
      return
    }
    case 'plugin':
      log.append({ type: 'test/note', data: { text: 'note' } })
      return
    case 'ignorable':
      log.append({ type: 'future/thing', data: { anything: [1, 2] }, ignorable: true } as never)
      return
    case 'replace': {
      const type = replacementType[step.as]
      const range = validRange(projection.surface(), step.from, step.span, type)
      if (range === undefined) return
      const extra = step.extraCitation && projection.nextSeq > 0 ? [projection.nextSeq - 1] : []
      const sourceEventSeqs = [...new Set([...range.hidden, ...extra])]
      const surfaceOp = { op: 'replace' as const, startSeq: range.startSeq, endSeq: range.endSeq }
      const message =
        step.as === 'assistant'
          ? step.calls.length === 0
            ? { role: 'assistant' as const, content: 'rewritten' }
            : {
                role: 'assistant' as const,
                content: null,
                tool_calls: step.calls.map((id) => toolCallOf(id)),
              }
          : { role: step.as, content: `rewritten ${step.as}` }
      log.append({ type, data: { message }, surfaceOp, sourceEventSeqs } as EventInput)
      return
    }
    case 'tool-replace': {
      const candidates = projection
        .surface()
        .filter(
          (node) =>
            node.message.role === 'tool' &&
            !pending.some(
              (call) => node.message.role === 'tool' && call.callId === node.message.tool_call_id,
            ),
        )
      const node = candidates[step.pick % Math.max(1, candidates.length)]
      if (node === undefined || node.message.role !== 'tool') return
      log.append({
        type: 'tool/result',
        data: { message: { role: 'tool', tool_call_id: node.message.tool_call_id, content: 'trimmed' } },
        surfaceOp: { op: 'replace', startSeq: node.seq, endSeq: node.seq },
        sourceEventSeqs: [node.seq],
      })
      return
    }
    case 'compaction': {
      const range = validRange(projection.surface(), step.from, step.span, 'user/message')
      if (range === undefined) return
      const inputs = planCompaction(projection, {
        compactionId: `compaction-${projection.nextSeq}`,
        startSeq: range.startSeq,
        endSeq: range.endSeq,
        summary: 'summary',
      })
      appendAll(log, inputs.slice(0, step.upTo))
      return
    }
    case 'clock':
      random.moveClock(step.deltaSeconds)
      return
  }
}

/** Builds a random log from `steps`. */
export function buildRandomLog(steps: readonly Step[]): SessionLog {
  const random = newRandomLog()
  for (const step of steps) runStep(random, step)
  return random.log
}
