import type { EventInput, LoggedEvent, SessionEvent, SessionEventType } from '@agent-ledger/session-events'
import { describe, expectTypeOf, it } from 'vitest'

// The augmentation from the TSDoc of `SessionEventMap` (src/event-map.ts), verbatim, so the
// documented example cannot drift from what compiles.
declare module '@agent-ledger/session-events' {
  interface SessionEventMap {
    'plan/update': { steps: string[] }
  }
}

describe('SessionEventMap augmentation', () => {
  it('adds the plugin type to the known event names', () => {
    expectTypeOf<'plan/update'>().toExtend<SessionEventType>()
    expectTypeOf<'turn/start'>().toExtend<SessionEventType>()
    expectTypeOf<'plan/unknown'>().not.toExtend<SessionEventType>()
  })

  it('types the data of a plugin event at append', () => {
    const input: EventInput<'plan/update'> = { type: 'plan/update', data: { steps: ['read', 'edit'] } }
    expectTypeOf(input.data).toEqualTypeOf<{ steps: string[] }>()

    // @ts-expect-error steps must be an array of strings
    const wrongData: EventInput<'plan/update'> = { type: 'plan/update', data: { steps: 'read' } }
    // @ts-expect-error steps is required
    const missingData: EventInput<'plan/update'> = { type: 'plan/update', data: {} }
    // @ts-expect-error the type and the data must belong together
    const mismatched: EventInput<'plan/update'> = { type: 'turn/start', data: { steps: [] } }
    // @ts-expect-error a core payload does not fit the plugin type in the open union either
    const crossed: EventInput = { type: 'plan/update', data: { turn: 1 } }
    expectTypeOf([wrongData, missingData, mismatched, crossed]).toBeArray()
  })

  it('narrows a SessionEvent to typed data in a switch on its type', () => {
    function describeEvent(event: SessionEvent): string {
      switch (event.type) {
        case 'plan/update':
          expectTypeOf(event.data).toEqualTypeOf<{ steps: string[] }>()
          return event.data.steps.join(', ')
        case 'turn/start':
          expectTypeOf(event.data.turn).toEqualTypeOf<number>()
          return `turn ${event.data.turn}`
        case 'tool/call':
          expectTypeOf(event.data.arguments).toEqualTypeOf<string>()
          return event.data.name
        default:
          // Every other known type, core or plugin: no model-visible effect here.
          return event.type
      }
    }
    expectTypeOf(describeEvent).parameter(0).toEqualTypeOf<SessionEvent>()
  })

  it('narrows SessionEvent<T> to one member and keeps LoggedEvent open for ignorable unknown events', () => {
    expectTypeOf<SessionEvent<'plan/update'>['data']>().toEqualTypeOf<{ steps: string[] }>()
    expectTypeOf<SessionEvent<'plan/update'>['type']>().toEqualTypeOf<'plan/update'>()
    expectTypeOf<SessionEvent<'plan/update'>>().toExtend<LoggedEvent>()
    expectTypeOf<{
      seq: 1
      time: string
      type: 'vendor/x'
      data: unknown
      ignorable: true
    }>().toExtend<LoggedEvent>()
  })
})
