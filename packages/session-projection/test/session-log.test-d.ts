import { describe, expectTypeOf, it } from 'vitest'

import type { SessionEvent, WireMessage } from '@agent-ledger/session-events'

import { createSessionLog, planCompaction } from '../src/index.ts'
import type { EventInput } from '@agent-ledger/session-events'

declare module '@agent-ledger/session-events' {
  interface SessionEventMap {
    'typed/plugin': { count: number }
  }
}

const log = createSessionLog({ clock: { now: () => '2026-01-01T00:00:00.000Z' } })

describe('SessionLog types', () => {
  it('types the committed event by the appended type, including merged plugin types', () => {
    const event = log.append({ type: 'user/message', data: { message: { role: 'user', content: 'x' } } })
    expectTypeOf(event).toEqualTypeOf<SessionEvent<'user/message'>>()
    expectTypeOf(event.data.message.role).toEqualTypeOf<'user'>()
    const plugin = log.append({ type: 'typed/plugin', data: { count: 1 } })
    expectTypeOf(plugin.data.count).toEqualTypeOf<number>()
    // @ts-expect-error: the payload must match the type
    log.append({ type: 'turn/start', data: { turn: 'one' } })
    // @ts-expect-error: a merged plugin payload is checked too
    log.append({ type: 'typed/plugin', data: { count: 'many' } })
  })

  it('returns read-only message lists and appendable compaction inputs', () => {
    expectTypeOf(log.deriveMessages()).toEqualTypeOf<readonly WireMessage[]>()
    const inputs = planCompaction(log.projection, { compactionId: 'k', startSeq: 0, endSeq: 0, summary: 's' })
    expectTypeOf(inputs).toEqualTypeOf<EventInput[]>()
    for (const input of inputs) log.append(input)
  })
})
