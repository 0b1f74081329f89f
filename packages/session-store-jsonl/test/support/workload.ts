/**
 * A seeded, realistic agent workload for the crash tests (W1, W2): turns with user
 * messages, assistant replies with 0-3 tool calls (ids sometimes reused across turns, as
 * some providers do), `tool/call` before each result, long tool outputs now and then, and
 * text with quotes, backslashes, newlines, non-ASCII and raw U+2028/U+2029.
 *
 * The same seed always gives the same events, so a parent can regenerate what a killed
 * child wrote. The crash tests use a fixed clock and {@link WORKLOAD_HEADER}, so the bytes are reproducible too.
 */
import type { EventInput, WireToolCall } from '@agent-ledger/session-events'

/** mulberry32: the same small seeded generator as the power-loss recorder. */
function seeded(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let value = state
    value = Math.imul(value ^ (value >>> 15), value | 1)
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61)
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296
  }
}

const ALPHABET = [
  ...'abcdefghijklmnopqrstuvwxyz     0123456789',
  '"',
  '\\',
  '\n',
  '\t',
  'é',
  'ß',
  '中',
  '文',
  '😀',
  '\u2028',
  '\u2029',
  '{',
  '}',
  ':',
]

function text(random: () => number, maxLength: number): string {
  const length = Math.floor(random() * maxLength)
  let result = ''
  for (let index = 0; index < length; index += 1) result += ALPHABET[Math.floor(random() * ALPHABET.length)]!
  return result
}

/**
 * The workload for `seed`, generated lazily (an endless sequence of events).
 *
 * @param seed - Any integer.
 * @returns Event inputs, valid in order for a fresh session.
 */
export function* workloadEvents(seed: number): Generator<EventInput, never> {
  const random = seeded(seed)
  yield {
    type: 'system/message',
    data: { message: { role: 'system', content: `You are test agent ${seed}.` } },
  }
  let turn = 0
  let unique = 0
  for (;;) {
    turn += 1
    yield { type: 'turn/start', data: { turn } }
    yield { type: 'user/message', data: { message: { role: 'user', content: text(random, 200) } } }
    const rounds = 1 + Math.floor(random() * 3)
    for (let round = 0; round < rounds; round += 1) {
      const callCount = round === rounds - 1 ? 0 : 1 + Math.floor(random() * 3)
      const calls: WireToolCall[] = []
      for (let index = 0; index < callCount; index += 1) {
        unique += 1
        const id = random() < 0.3 ? `call-${index + 1}` : `call-${seed}-${unique}`
        calls.push({
          id,
          type: 'function',
          function: { name: 'read_file', arguments: JSON.stringify({ path: `src/${unique}.ts` }) },
        })
      }
      yield {
        type: 'assistant/message',
        data: {
          message:
            calls.length === 0
              ? { role: 'assistant', content: text(random, 400) }
              : { role: 'assistant', content: random() < 0.5 ? null : text(random, 80), tool_calls: calls },
          usage: {
            prompt_tokens: Math.floor(random() * 10_000),
            completion_tokens: Math.floor(random() * 1000),
          },
        },
      }
      for (const call of calls) {
        yield {
          type: 'tool/call',
          data: { callId: call.id, name: call.function.name, arguments: call.function.arguments },
        }
        const long = random() < 0.1
        yield {
          type: 'tool/result',
          data: {
            message: {
              role: 'tool',
              tool_call_id: call.id,
              content: long ? text(random, 1000).repeat(8) : text(random, 300),
            },
          },
        }
      }
    }
    yield { type: 'turn/end', data: { turn, reason: 'completed' } }
  }
}

/**
 * The first `count` events of the workload for `seed`.
 *
 * @param seed - Any integer.
 * @param count - How many events to produce.
 * @returns Event inputs, valid in order for a fresh session.
 */
export function workload(seed: number, count: number): EventInput[] {
  const events: EventInput[] = []
  if (count <= 0) return events
  for (const event of workloadEvents(seed)) {
    events.push(event)
    if (events.length >= count) break
  }
  return events
}

/** The header fields the crash tests create sessions with (a fixed `createdAt`, so bytes are reproducible). */
export const WORKLOAD_HEADER = { createdAt: '2026-01-01T00:00:00.000Z' } as const
