import { describe, expect, it } from 'vitest'

import {
  coreEventSchemas,
  isCoreEventType,
  isSurfaceEventType,
  parseEvent,
  SessionEventsError,
  SURFACE_EVENT_TYPES,
  TurnEndReason,
  turnEndReasonSchema,
} from '../src/index.ts'
import type { CoreEventType } from '../src/index.ts'

const toolCall = {
  id: 'call-1',
  type: 'function',
  function: { name: 'read_file', arguments: '{"path":"a"}' },
}

/** At least one valid payload per core type, including every optional field. */
const validPayloads: Record<CoreEventType, unknown[]> = {
  'turn/start': [{ turn: 0 }, { turn: 12 }],
  'turn/end': Object.values(TurnEndReason).map((reason) => ({ turn: 1, reason })),
  'system/message': [
    { message: { role: 'system', content: 'be brief' } },
    { message: { role: 'system', content: '', name: 'x' } },
  ],
  'user/message': [
    { message: { role: 'user', content: 'hi' } },
    {
      message: {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AA', detail: 'low' } },
        ],
      },
    },
  ],
  'assistant/message': [
    { message: { role: 'assistant', content: 'done' } },
    {
      message: { role: 'assistant', content: null, tool_calls: [toolCall], reasoning_content: 'think' },
      usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12, cached_tokens: 4 },
      interrupted: true,
    },
  ],
  'tool/call': [{ callId: 'call-1', name: 'bash', arguments: '' }],
  'tool/result': [
    { message: { role: 'tool', tool_call_id: 'call-1', content: 'ok' } },
    {
      message: { role: 'tool', tool_call_id: 'call-1', content: 'Error' },
      isError: true,
      code: 'TOOL_NOT_STARTED',
    },
  ],
  'compaction/start': [
    { compactionId: 'c1', startSeq: 0, endSeq: 4 },
    { compactionId: 'c1', startSeq: 0, endSeq: 4, reason: 'tokens' },
  ],
  'compaction/summary': [{ compactionId: 'c1', summary: 'so far', usage: { total_tokens: 3 } }],
  'compaction/end': [{ compactionId: 'c1', replacementSeq: 7, hiddenCount: 5 }],
  'session/end-seed': [{}, { inherited: true, parentSession: 'parent-1', boundarySeq: 9 }],
  'session/salvage': [
    {
      sourceSession: 's',
      sourceFile: 'session.v4.jsonl',
      lastGoodSeq: -1,
      droppedFromOffset: 0,
      reason: 'crc',
    },
  ],
}

/** Invalid payloads per type, each with the one field the error must name. */
const invalidPayloads: [CoreEventType, unknown, string][] = [
  ['turn/start', {}, 'data.turn'],
  ['turn/start', { turn: -1 }, 'data.turn'],
  ['turn/start', { turn: '1' }, 'data.turn'],
  ['turn/end', { turn: 1, reason: 'crashed' }, 'data.reason'],
  ['turn/end', { reason: 'completed' }, 'data.turn'],
  ['system/message', { message: { role: 'user', content: 'x' } }, 'data.message.role'],
  ['system/message', { message: { role: 'system' } }, 'data.message.content'],
  ['user/message', { message: { role: 'user', content: 3 } }, 'data.message.content'],
  ['user/message', {}, 'data.message'],
  ['assistant/message', { message: { role: 'assistant' } }, 'data.message.content'],
  [
    'assistant/message',
    { message: { role: 'assistant', content: null, tool_calls: [{ ...toolCall, id: '' }] } },
    'data.message.tool_calls.0.id',
  ],
  [
    'assistant/message',
    { message: { role: 'assistant', content: null, tool_calls: [{ ...toolCall, type: 'custom' }] } },
    'data.message.tool_calls.0.type',
  ],
  [
    'assistant/message',
    {
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [{ ...toolCall, function: { name: 'x', arguments: {} } }],
      },
    },
    'data.message.tool_calls.0.function.arguments',
  ],
  [
    'assistant/message',
    { message: { role: 'assistant', content: 'x' }, usage: { total_tokens: -1 } },
    'data.usage.total_tokens',
  ],
  [
    'assistant/message',
    { message: { role: 'assistant', content: 'x' }, interrupted: 'yes' },
    'data.interrupted',
  ],
  ['tool/call', { callId: '', name: 'bash', arguments: '' }, 'data.callId'],
  ['tool/call', { callId: 'c', name: 'bash', arguments: { a: 1 } }, 'data.arguments'],
  ['tool/call', { callId: 'c', arguments: '' }, 'data.name'],
  ['tool/result', { message: { role: 'tool', tool_call_id: '', content: 'x' } }, 'data.message.tool_call_id'],
  ['tool/result', { message: { role: 'tool', tool_call_id: 'c', content: 'x' }, isError: 1 }, 'data.isError'],
  ['tool/result', { message: { role: 'tool', tool_call_id: 'c', content: 'x' }, code: '' }, 'data.code'],
  ['compaction/start', { compactionId: 'c', startSeq: -1, endSeq: 1 }, 'data.startSeq'],
  ['compaction/summary', { compactionId: 'c' }, 'data.summary'],
  ['compaction/end', { compactionId: 'c', replacementSeq: 1, hiddenCount: 0.5 }, 'data.hiddenCount'],
  ['session/end-seed', { inherited: 'yes' }, 'data.inherited'],
  [
    'session/salvage',
    { sourceSession: 's', sourceFile: 'f', lastGoodSeq: -2, droppedFromOffset: 0, reason: 'r' },
    'data.lastGoodSeq',
  ],
]

const surfaceTypes = new Set<string>(SURFACE_EVENT_TYPES)

describe('core event schemas', () => {
  it('cover exactly the core types, and the four surface types are core', () => {
    expect(Object.keys(validPayloads).sort()).toEqual(Object.keys(coreEventSchemas).sort())
    expect([...SURFACE_EVENT_TYPES].sort()).toEqual([
      'assistant/message',
      'system/message',
      'tool/result',
      'user/message',
    ])
    for (const type of SURFACE_EVENT_TYPES) expect(isCoreEventType(type)).toBe(true)
  })

  it.each(
    Object.entries(validPayloads).flatMap(([type, payloads]) =>
      payloads.map((data) => [type, data] as const),
    ),
  )('accept a valid %s payload', (type, data) => {
    const event = { seq: 3, time: '2025-01-01T00:00:00Z', type, data }
    expect(parseEvent(event)).toBe(event)
  })

  it.each(invalidPayloads)('refuse an invalid %s payload (case %#) naming the field', (type, data, field) => {
    try {
      parseEvent({ seq: 3, time: '2025-01-01T00:00:00Z', type, data })
      expect.unreachable(`expected ${type} ${JSON.stringify(data)} to be refused`)
    } catch (error) {
      expect(SessionEventsError.is(error)).toBe(true)
      expect(error).toMatchObject({ code: 'INVALID_EVENT', field, seq: 3, type })
    }
  })

  it('classify surface and core types, including names that exist on Object.prototype', () => {
    for (const type of Object.keys(coreEventSchemas))
      expect(isSurfaceEventType(type)).toBe(surfaceTypes.has(type))
    for (const type of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'plan/update']) {
      expect(isCoreEventType(type)).toBe(false)
      expect(isSurfaceEventType(type)).toBe(false)
    }
  })

  it('has TurnEndReason values equal to the schema options, including interrupted', () => {
    expect(Object.values(TurnEndReason).sort()).toEqual([...turnEndReasonSchema.options].sort())
    expect(TurnEndReason.INTERRUPTED).toBe('interrupted')
  })
})
