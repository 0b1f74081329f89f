import type { EventInput, WireMessage, WireToolCall } from '@agent-ledger/session-events'

import { createSessionLog } from '../../src/index.ts'
import type { Clock, SessionLog, SessionLogOptions } from '../../src/index.ts'

/** A deterministic clock: one second per call from 2026-01-01T00:00:00Z. */
export function steppingClock(startMs = Date.UTC(2026, 0, 1)): Clock & { calls: number } {
  const clock = {
    calls: 0,
    now(): string {
      const time = new Date(startMs + clock.calls * 1000).toISOString()
      clock.calls += 1
      return time
    },
  }
  return clock
}

/** A fresh in-memory log with a stepping clock. */
export function newLog(options: Partial<SessionLogOptions> = {}): SessionLog {
  return createSessionLog({ clock: steppingClock(), ...options })
}

export const system = (content: string): EventInput<'system/message'> => ({
  type: 'system/message',
  data: { message: { role: 'system', content } },
})

export const user = (content: string): EventInput<'user/message'> => ({
  type: 'user/message',
  data: { message: { role: 'user', content } },
})

export const toolCallOf = (id: string, name = 'run'): WireToolCall => ({
  id,
  type: 'function',
  function: { name, arguments: '{}' },
})

export const assistant = (
  content: string | null,
  callIds: readonly string[] = [],
): EventInput<'assistant/message'> => ({
  type: 'assistant/message',
  data: {
    message:
      callIds.length === 0
        ? { role: 'assistant', content }
        : { role: 'assistant', content, tool_calls: callIds.map((id) => toolCallOf(id)) },
  },
})

export const toolCall = (callId: string, name = 'run'): EventInput<'tool/call'> => ({
  type: 'tool/call',
  data: { callId, name, arguments: '{}' },
})

export const toolResult = (
  callId: string,
  content: string,
  sourceEventSeqs?: readonly number[],
): EventInput<'tool/result'> => ({
  type: 'tool/result',
  data: { message: { role: 'tool', tool_call_id: callId, content } },
  ...(sourceEventSeqs === undefined ? {} : { sourceEventSeqs }),
})

export const turnStart = (turn: number): EventInput<'turn/start'> => ({ type: 'turn/start', data: { turn } })

export const turnEnd = (turn: number): EventInput<'turn/end'> => ({
  type: 'turn/end',
  data: { turn, reason: 'completed' },
})

/** Roles of a message list, for compact assertions. */
export const roles = (messages: readonly WireMessage[]): string[] => messages.map((message) => message.role)

/** `role:content` (or `tool:<id>:content`) per message, for compact assertions. */
export const describeMessages = (messages: readonly WireMessage[]): string[] =>
  messages.map((message) =>
    message.role === 'tool'
      ? `tool:${message.tool_call_id}:${message.content}`
      : `${message.role}:${typeof message.content === 'string' ? message.content : JSON.stringify(message.content)}`,
  )
