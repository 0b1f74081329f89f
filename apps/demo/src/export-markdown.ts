import { isRepairCode } from '@agent-ledger/loop-repair'
import type { LoggedEvent, SessionHeader, WireMessage } from '@agent-ledger/session-events'

function fence(text: string, language = 'text'): string {
  let ticks = '```'
  while (text.includes(ticks)) ticks += '`'
  return `${ticks}${language}\n${text}${text.endsWith('\n') ? '' : '\n'}${ticks}`
}

function inlineCode(text: string): string {
  const oneLine = text.replace(/\n/g, ' ')
  const longestRun = Math.max(0, ...(oneLine.match(/`+/g) ?? []).map((run) => run.length))
  const ticks = '`'.repeat(longestRun + 1)
  const pad = oneLine.startsWith('`') || oneLine.endsWith('`') ? ' ' : ''
  return `${ticks}${pad}${oneLine}${pad}${ticks}`
}

function contentText(message: WireMessage): string {
  if (typeof message.content === 'string') return message.content
  if (message.content === null) return ''
  return message.content
    .map((part) => (part.type === 'text' ? part.text : `[image: ${part.image_url.url}]`))
    .join('\n')
}

function quote(text: string): string {
  return text
    .split('\n')
    .map((line) => (line === '' ? '>' : `> ${line}`))
    .join('\n')
}

/**
 * Renders a session as a readable Markdown transcript: turns, user and assistant messages,
 * tool calls with their results, repair placeholders, compactions and fork seeds clearly
 * marked. Every event of the log appears (log-only ones as notes), in seq order; messages
 * later hidden by a compaction are still shown, marked as hidden.
 *
 * Pure: a function of the events (and the optional header), so the same log always gives the
 * same text. This is the seam where `agent-ledger export --format md` can replace it.
 *
 * @param events - The session's events in seq order, e.g. from `store.readEvents(id)`.
 * @param header - The session header, for the title block; optional.
 * @returns The Markdown text, ending with a newline.
 */
export function exportMarkdown(events: Iterable<LoggedEvent>, header?: SessionHeader): string {
  const all = [...events]
  const hidden = new Map<number, string>()
  for (const event of all) {
    if (event.surfaceOp !== undefined && event.surfaceOp !== 'append') {
      for (const seq of event.sourceEventSeqs ?? [])
        hidden.set(seq, `hidden by the compaction at seq ${event.seq}`)
    }
  }
  const out: string[] = []
  out.push(`# Session ${header?.id ?? '(unknown id)'}`, '')
  if (header !== undefined) {
    out.push(`- format: ${header.format} v${header.version}`, `- created: ${header.createdAt}`)
    if (header.cwd !== undefined) out.push(`- workspace: \`${header.cwd}\``)
    if (header.parentSession !== undefined) {
      out.push(
        `- forked from: \`${header.parentSession}\` (${header.inheritedEventCount ?? '?'} events inherited)`,
      )
    }
    out.push('')
  }
  out.push(`${all.length} events.`, '')
  const note = (event: LoggedEvent): string => {
    const mark = hidden.get(event.seq)
    return `seq ${event.seq}${mark === undefined ? '' : `, ${mark}`}`
  }
  for (const event of all) {
    const data = event.data as Record<string, unknown>
    switch (event.type) {
      case 'turn/start':
        out.push(`## Turn ${String(data.turn)}`, '', `_seq ${event.seq} · ${event.time}_`, '')
        break
      case 'turn/end':
        out.push(`_Turn ${String(data.turn)} ended: **${String(data.reason)}** (seq ${event.seq})._`, '')
        break
      case 'system/message':
        out.push(`**System** (${note(event)}):`, '', quote(contentText(data.message as WireMessage)), '')
        break
      case 'user/message': {
        const replaces = event.surfaceOp !== undefined && event.surfaceOp !== 'append'
        const title = replaces ? '**Compaction summary, shown to the model instead of' : '**User**'
        const range =
          replaces && typeof event.surfaceOp === 'object'
            ? ` seq ${event.surfaceOp.startSeq}..${event.surfaceOp.endSeq}**`
            : ''
        out.push(
          `${title}${range} (${note(event)}):`,
          '',
          quote(contentText(data.message as WireMessage)),
          '',
        )
        break
      }
      case 'assistant/message': {
        const message = data.message as WireMessage
        const text = contentText(message)
        out.push(`**Assistant** (${note(event)}):`, '')
        if (text !== '') out.push(text, '')
        const calls = message.role === 'assistant' ? (message.tool_calls ?? []) : []
        for (const call of calls) {
          out.push(
            `- calls \`${call.function.name}\` (id \`${call.id}\`) with ${inlineCode(call.function.arguments)}`,
          )
        }
        if (calls.length > 0) out.push('')
        break
      }
      case 'tool/call':
        out.push(
          `_Tool \`${String(data.name)}\` started (call \`${String(data.callId)}\`, seq ${event.seq})._`,
          '',
        )
        break
      case 'tool/result': {
        const message = data.message as WireMessage
        const callId = message.role === 'tool' ? message.tool_call_id : '?'
        if (isRepairCode(data.code)) {
          out.push(
            `> **Repair placeholder \`${data.code}\`** for call \`${callId}\` (${note(event)}): written on resume, the tool's real result was never recorded.`,
            '',
          )
        }
        const status = data.isError === true ? 'error' : 'result'
        out.push(
          `**Tool ${status}** for \`${callId}\` (${note(event)}):`,
          '',
          fence(contentText(message)),
          '',
        )
        break
      }
      case 'compaction/start':
        out.push(
          `---`,
          '',
          `_Compaction \`${String(data.compactionId)}\` of seq ${String(data.startSeq)}..${String(data.endSeq)} started (seq ${event.seq}); the original events stay in the log._`,
          '',
        )
        break
      case 'compaction/summary':
        out.push(`_Compaction summary recorded (seq ${event.seq})._`, '')
        break
      case 'compaction/end':
        out.push(
          `_Compaction \`${String(data.compactionId)}\` ended: ${String(data.hiddenCount)} messages hidden from the model (seq ${event.seq})._`,
          '',
          '---',
          '',
        )
        break
      case 'session/end-seed':
        out.push(
          '---',
          '',
          `_Everything above was inherited from session \`${String(data.parentSession)}\` up to its seq ${String(data.boundarySeq)}; this session's own events follow (seq ${event.seq})._`,
          '',
          '---',
          '',
        )
        break
      default:
        out.push(`_Event \`${event.type}\` (seq ${event.seq}):_ \`${JSON.stringify(event.data)}\``, '')
    }
  }
  return `${out.join('\n').trimEnd()}\n`
}
