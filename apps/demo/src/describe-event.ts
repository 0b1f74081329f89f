import type { LoggedEvent, WireMessage } from '@agent-ledger/session-events'

function shorten(text: string, max: number): string {
  const oneLine = text.replace(/\s+/g, ' ').trim()
  return oneLine.length > max ? `${oneLine.slice(0, max - 1)}…` : oneLine
}

/** Quoted and shortened: for free text (messages, tool output). */
function clip(text: string, max = 72): string {
  return JSON.stringify(shorten(text, max))
}

function contentText(message: WireMessage): string {
  if (typeof message.content === 'string') return message.content
  if (message.content === null) return ''
  return message.content.map((part) => (part.type === 'text' ? part.text : '[image]')).join(' ')
}

function describeData(event: LoggedEvent): string {
  const data = event.data as Record<string, unknown>
  switch (event.type) {
    case 'turn/start':
      return `turn ${String(data.turn)} starts`
    case 'turn/end':
      return `turn ${String(data.turn)} ends: ${String(data.reason)}`
    case 'system/message':
    case 'user/message': {
      const message = data.message as WireMessage
      const replace =
        event.surfaceOp !== undefined && event.surfaceOp !== 'append' ? ' (replaces earlier messages)' : ''
      return `${message.role}: ${clip(contentText(message))}${replace}`
    }
    case 'assistant/message': {
      const message = data.message as WireMessage
      const calls = message.role === 'assistant' ? (message.tool_calls ?? []) : []
      const text = contentText(message)
      const said = text === '' ? '' : clip(text, calls.length > 0 ? 48 : 72)
      const wants = calls.map((call) => `${call.function.name} ${call.function.arguments}`).join(', ')
      return calls.length === 0
        ? `assistant: ${said}`
        : `assistant: ${said}${said === '' ? '' : ' '}→ ${shorten(wants, 60)}`
    }
    case 'tool/call':
      return `${String(data.name)} ${shorten(String(data.arguments), 56)} (durable before it runs)`
    case 'tool/result': {
      const message = data.message as WireMessage
      const code = typeof data.code === 'string' ? ` [${data.code}]` : ''
      const status = data.isError === true ? 'error' : 'ok'
      return `${status}${code}: ${clip(contentText(message), 60)}`
    }
    case 'compaction/start':
      return `compaction ${String(data.compactionId)} of seq ${String(data.startSeq)}..${String(data.endSeq)} starts`
    case 'compaction/summary':
      return `summary: ${clip(String(data.summary), 60)}`
    case 'compaction/end':
      return `compaction ${String(data.compactionId)} ends: ${String(data.hiddenCount)} messages hidden, replaced by seq ${String(data.replacementSeq)}`
    case 'session/end-seed':
      return `end of the seed inherited from ${String(data.parentSession)} (boundary seq ${String(data.boundarySeq)})`
    default:
      return clip(JSON.stringify(event.data))
  }
}

/**
 * One line describing a logged event, for the console: seq, type and the gist of its data.
 *
 * @param event - Any logged event (core, plugin or ignored unknown).
 * @returns A single line without a trailing newline.
 */
export function describeEvent(event: LoggedEvent): string {
  return `seq ${String(event.seq).padStart(3)}  ${event.type.padEnd(18)} ${describeData(event)}`
}
