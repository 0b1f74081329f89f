import { z } from 'zod'
import { describe, expect, it } from 'vitest'

import {
  classifyEventType,
  coreEventRegistry,
  coreEventSchemas,
  createEventRegistry,
  defineEventType,
  parseEvent,
  SessionEventsError,
} from '../src/index.ts'
import type { EventTypeDefinition } from '../src/index.ts'

declare module '@agent-ledger/session-events' {
  interface SessionEventMap {
    'review/request': { readonly reviewer: string; readonly files: readonly string[] }
  }
}

const time = '2025-01-01T00:00:00Z'
const reviewRequest = defineEventType(
  'review/request',
  z.object({ reviewer: z.string().min(1), files: z.array(z.string()) }),
)

function thrown(action: () => unknown): SessionEventsError {
  try {
    action()
  } catch (error) {
    if (SessionEventsError.is(error)) return error
    throw error
  }
  throw new Error('expected a SessionEventsError')
}

describe('defineEventType', () => {
  it('returns a frozen definition with the type and its schema', () => {
    expect(reviewRequest.type).toBe('review/request')
    expect(Object.isFrozen(reviewRequest)).toBe(true)
  })

  it('refuses to define a core type, surface types included', () => {
    for (const type of Object.keys(coreEventSchemas)) {
      const error = thrown(() => defineEventType(type as 'review/request', z.any()))
      expect(error).toMatchObject({ code: 'INVALID_EVENT_DEFINITION', type })
      expect(error.message).toContain('core type')
    }
  })

  it.each(['review', 'Review/Request', '/request', 'review/', 'a/b/c', 'review request/x', ''])(
    'refuses the malformed name %j',
    (type) => {
      expect(thrown(() => defineEventType(type as 'review/request', z.any())).code).toBe(
        'INVALID_EVENT_DEFINITION',
      )
    },
  )
})

describe('createEventRegistry', () => {
  it('knows the core types plus the registered ones, core first', () => {
    const registry = createEventRegistry([reviewRequest])
    expect(registry.types).toEqual([...Object.keys(coreEventSchemas), 'review/request'])
    expect(registry.has('review/request')).toBe(true)
    expect(registry.has('turn/start')).toBe(true)
    expect(registry.has('vendor/x')).toBe(false)
    expect(registry.schemaOf('review/request')).toBe(reviewRequest.schema)
    expect(registry.schemaOf('vendor/x')).toBeUndefined()
  })

  it('does not change the core registry or other registries', () => {
    createEventRegistry([reviewRequest])
    expect(coreEventRegistry.has('review/request')).toBe(false)
    expect(createEventRegistry().has('review/request')).toBe(false)
  })

  it('refuses the same plugin type registered twice', () => {
    expect(thrown(() => createEventRegistry([reviewRequest, reviewRequest]))).toMatchObject({
      code: 'INVALID_EVENT_DEFINITION',
      type: 'review/request',
    })
  })

  it('refuses a hand-built definition of a core type', () => {
    const forged = { type: 'user/message', schema: z.any() } as unknown as EventTypeDefinition
    expect(thrown(() => createEventRegistry([forged])).code).toBe('INVALID_EVENT_DEFINITION')
  })
})

describe('plugin events through parseEvent', () => {
  const registry = createEventRegistry([reviewRequest])
  const valid = { seq: 5, time, type: 'review/request', data: { reviewer: 'ada', files: ['a.ts'] } }

  it('validates a registered plugin event against its schema and keeps it as is', () => {
    expect(parseEvent(valid, registry)).toBe(valid)
    expect(thrown(() => parseEvent({ ...valid, data: { reviewer: '', files: [] } }, registry))).toMatchObject(
      {
        code: 'INVALID_EVENT',
        field: 'data.reviewer',
        type: 'review/request',
      },
    )
  })

  it('V5: refuses the plugin type with a registry that does not know it', () => {
    expect(thrown(() => parseEvent(valid)).code).toBe('UNKNOWN_EVENT_TYPE')
  })

  it('V6: keeps it unvalidated with a registry that does not know it when it is ignorable', () => {
    const ignorable = { ...valid, data: { anything: true }, ignorable: true }
    expect(parseEvent(ignorable)).toBe(ignorable)
  })

  it('still validates an ignorable plugin event when its type is registered', () => {
    const ignorable = { ...valid, data: { anything: true }, ignorable: true }
    expect(thrown(() => parseEvent(ignorable, registry)).code).toBe('INVALID_EVENT')
  })

  it('refuses a plugin event that tries to be a surface event', () => {
    expect(thrown(() => parseEvent({ ...valid, surfaceOp: 'append' }, registry))).toMatchObject({
      code: 'INVALID_EVENT',
      field: 'surfaceOp',
    })
    expect(thrown(() => parseEvent({ ...valid, sourceEventSeqs: [1] }, registry))).toMatchObject({
      code: 'INVALID_EVENT',
      field: 'sourceEventSeqs',
    })
  })
})

describe('classifyEventType', () => {
  it('classifies core, plugin, ignorable unknown and unknown types', () => {
    const registry = createEventRegistry([reviewRequest])
    expect(classifyEventType('tool/call', false, registry)).toBe('core')
    expect(classifyEventType('tool/call', true, registry)).toBe('core')
    expect(classifyEventType('review/request', false, registry)).toBe('plugin')
    expect(classifyEventType('review/request', false, coreEventRegistry)).toBe('unknown')
    expect(classifyEventType('review/request', true, coreEventRegistry)).toBe('ignorable-unknown')
    expect(classifyEventType('constructor', false, registry)).toBe('unknown')
  })
})
