import { isCoreEventType } from '@agent-ledger/session-events'
import type { CoreEventType, LoggedEvent, SessionEvent, WireMessage } from '@agent-ledger/session-events'

import { preview, terminalSafe, truncate } from './terminal-text.ts'

/** The readable text of a message's content (parts joined; images shown as `[image: url]`). */
export function contentText(message: WireMessage): string {
  const content = message.content
  if (content === null) return ''
  if (typeof content === 'string') return content
  return content
    .map((part) => (part.type === 'text' ? part.text : `[image: ${part.image_url.url}]`))
    .join('\n')
}

function field(data: unknown, name: string): unknown {
  return typeof data === 'object' && data !== null && Object.hasOwn(data, name)
    ? (data as Record<string, unknown>)[name]
    : undefined
}

function messageOf(event: LoggedEvent): WireMessage | undefined {
  const message = field(event.data, 'message')
  return typeof message === 'object' && message !== null ? (message as WireMessage) : undefined
}

function describeData(event: LoggedEvent): string {
  const data = event.data
  switch (event.type) {
    case 'turn/start':
      return `turn ${String(field(data, 'turn'))}`
    case 'turn/end':
      return `turn ${String(field(data, 'turn'))} ${terminalSafe(String(field(data, 'reason')))}`
    case 'system/message':
    case 'user/message': {
      const message = messageOf(event)
      return message === undefined ? '' : preview(contentText(message))
    }
    case 'assistant/message': {
      const message = messageOf(event)
      if (message === undefined || message.role !== 'assistant') return ''
      const parts: string[] = []
      if (message.content !== null && message.content !== '') parts.push(preview(message.content))
      for (const call of message.tool_calls ?? []) {
        parts.push(`call ${terminalSafe(call.function.name)}(${terminalSafe(truncate(call.id, 40))})`)
      }
      if (field(data, 'interrupted') === true) parts.push('(interrupted)')
      return parts.join(' ')
    }
    case 'tool/call':
      return `${terminalSafe(String(field(data, 'name')))}(${terminalSafe(truncate(String(field(data, 'callId')), 40))}) args ${preview(String(field(data, 'arguments')), 60)}`
    case 'tool/result': {
      const message = messageOf(event)
      const callId = message?.role === 'tool' ? message.tool_call_id : '?'
      const flags: string[] = []
      if (field(data, 'isError') === true) flags.push('error')
      const code = field(data, 'code')
      if (typeof code === 'string') flags.push(terminalSafe(code))
      const shown = flags.length === 0 ? '' : ` [${flags.join(' ')}]`
      return `for ${terminalSafe(truncate(callId, 40))}${shown} ${message === undefined ? '' : preview(contentText(message))}`
    }
    case 'compaction/start':
      return `${terminalSafe(String(field(data, 'compactionId')))} hides ${String(field(data, 'startSeq'))}..${String(field(data, 'endSeq'))}`
    case 'compaction/summary':
      return `${terminalSafe(String(field(data, 'compactionId')))} ${preview(String(field(data, 'summary')))}`
    case 'compaction/end':
      return `${terminalSafe(String(field(data, 'compactionId')))} replacement #${String(field(data, 'replacementSeq'))}, ${String(field(data, 'hiddenCount'))} hidden`
    case 'session/end-seed': {
      const parent = field(data, 'parentSession')
      const boundary = field(data, 'boundarySeq')
      return `end of inherited events${typeof parent === 'string' ? ` from ${terminalSafe(parent)}` : ''}${typeof boundary === 'number' ? ` (cut at seq ${boundary})` : ''}`
    }
    case 'session/salvage':
      return `salvaged from ${terminalSafe(String(field(data, 'sourceSession')))}: kept up to seq ${String(field(data, 'lastGoodSeq'))}, dropped from offset ${String(field(data, 'droppedFromOffset'))} (${terminalSafe(String(field(data, 'reason')))})`
    default:
      return preview(JSON.stringify(data) ?? '', 100)
  }
}

/**
 * One readable line for an event: `#12 2025-01-01T10:00:00.000Z assistant/message "text" call read_file(c1)`,
 * plus the replace range, the cited seqs and the ignorable flag. Terminal-safe.
 *
 * @param event - A logged event.
 * @returns The line, without `\n`.
 */
export function describeEvent(event: LoggedEvent): string {
  let line = `#${event.seq} ${terminalSafe(event.time)} ${terminalSafe(event.type)}`
  const summary = describeData(event)
  if (summary !== '') line += ` ${summary}`
  const op = event.surfaceOp
  if (typeof op === 'object') line += ` [replaces ${op.startSeq}..${op.endSeq}]`
  if (event.sourceEventSeqs !== undefined && event.sourceEventSeqs.length > 0) {
    const seqs = event.sourceEventSeqs
    const shown = seqs.length > 8 ? `${seqs.slice(0, 8).join(',')},…(${seqs.length})` : seqs.join(',')
    line += ` <- ${shown}`
  }
  if (event.ignorable === true) line += ' (ignorable)'
  return line
}

/**
 * Narrows a logged event to the core event union (events reach the CLI validated by the
 * store's reader, so the check is on `type` only); null for plugin and ignorable unknown events.
 *
 * @param event - A logged event.
 * @returns The typed event, or null.
 */
export function coreEvent(event: LoggedEvent): SessionEvent<CoreEventType> | null {
  return isCoreEventType(event.type) ? (event as SessionEvent<CoreEventType>) : null
}
