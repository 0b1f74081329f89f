import type { LoggedEvent } from '@agent-ledger/session-events'

import { contentText, coreEvent } from './describe-event.ts'
import { terminalSafe } from './terminal-text.ts'

/**
 * The whole text of one event, for `agent-ledger cat --seq N` (what a transcript cut
 * short points to): message content, reasoning, each tool call's arguments, a compaction
 * summary, or the data of any other event as JSON. Each part under a `--- label ---` line;
 * control and bidi characters made visible, newlines kept.
 *
 * @param event - A logged event.
 * @returns The text, ending with a newline.
 */
export function fullEventText(event: LoggedEvent): string {
  const parts: [string, string][] = []
  const known = coreEvent(event)
  switch (known?.type) {
    case 'system/message':
    case 'user/message':
    case 'tool/result':
      parts.push(['content', contentText(known.data.message)])
      break
    case 'assistant/message': {
      const message = known.data.message
      if (message.role === 'assistant' && message.reasoning_content) {
        parts.push(['reasoning', message.reasoning_content])
      }
      parts.push(['content', contentText(message)])
      if (message.role === 'assistant') {
        for (const call of message.tool_calls ?? []) {
          parts.push([`arguments of ${call.function.name} (${call.id})`, call.function.arguments])
        }
      }
      break
    }
    case 'tool/call':
      parts.push([`arguments of ${known.data.name} (${known.data.callId})`, known.data.arguments])
      break
    case 'compaction/summary':
      parts.push(['summary', known.data.summary])
      break
    default:
      parts.push(['data', JSON.stringify(event.data, null, 2) ?? 'null'])
  }
  return parts
    .map(
      ([label, text]) =>
        `--- ${terminalSafe(label)} ---\n${terminalSafe(text, { multiline: true })}${text.endsWith('\n') ? '' : '\n'}`,
    )
    .join('')
}
