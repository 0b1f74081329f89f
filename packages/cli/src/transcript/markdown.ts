import { SOURCE_RECORD_EVENT_TYPE } from '@agent-ledger/import'

import { terminalSafe } from '../terminal-text.ts'
import type { TranscriptFooter, TranscriptMeta, TranscriptRenderer } from './render.ts'
import { placeholderMeaning } from './view.ts'
import type { CallView, EventView } from './view.ts'
import type { DiffLine } from './edits.ts'

/** Untrusted text, safe to print (control and bidi characters made visible), newlines kept. */
function safe(text: string): string {
  return terminalSafe(text, { multiline: true })
}

/** A fenced block longer than any backtick run inside, so the text cannot close it. */
function fence(text: string): string {
  const longest = Math.max(2, ...(text.match(/`+/g) ?? []).map((run) => run.length))
  const ticks = '`'.repeat(longest + 1)
  return `${ticks}text\n${safe(text)}${text.endsWith('\n') ? '' : '\n'}${ticks}\n`
}

/** An inline code span that holds any text on one line. */
function code(text: string): string {
  const oneLine = terminalSafe(text)
  const longest = Math.max(0, ...(oneLine.match(/`+/g) ?? []).map((run) => run.length))
  const ticks = '`'.repeat(longest + 1)
  const pad = oneLine.startsWith('`') || oneLine.endsWith('`') || oneLine === '' ? ' ' : ''
  return `${ticks}${pad}${oneLine}${pad}${ticks}`
}

/** A fenced `diff` block: each line marked `+`, `-` or a space; file and hunk lines as they are. */
function diffFence(lines: readonly DiffLine[]): string {
  const body = lines
    .map((line) => `${{ file: '', hunk: '', add: '+', del: '-', ctx: ' ' }[line.kind]}${line.text}`)
    .join('\n')
  const longest = Math.max(2, ...(body.match(/`+/g) ?? []).map((run) => run.length))
  const ticks = '`'.repeat(longest + 1)
  return `${ticks}diff\n${safe(body)}\n${ticks}\n`
}

function callLine(call: CallView): string {
  const started = call.started === null ? 'never started' : `started at #${call.started}`
  const answer =
    call.outcome === null
      ? '**no result in the log**: the next write open answers it with a placeholder'
      : `result at #${call.outcome.resultSeq}${call.outcome.code !== null ? ` (${code(call.outcome.code)})` : call.outcome.isError ? ' (error)' : ''}`
  const shown = call.diff === null ? fence(call.arguments) : diffFence(call.diff)
  const result =
    call.outcome === null
      ? ''
      : `\n  result${call.outcome.chars > call.outcome.preview.length ? ` (first ${call.outcome.preview.length} of ${call.outcome.chars} characters; whole at #${call.outcome.resultSeq})` : ''}:\n\n${fence(call.outcome.preview)}`
  return `- tool call ${code(call.name)} id ${code(call.id)}: ${started}; ${answer}\n\n${shown}${result}`
}

function hiddenNote(view: Extract<EventView, { kind: 'message' }>): string {
  if (view.visible) return ''
  return view.hiddenBy !== null
    ? `> _Hidden: replaced by #${view.hiddenBy}; still in the log, no longer sent to the model._\n\n`
    : '> _Not projected: the model never received this message (an orphan or duplicate result)._\n\n'
}

function messageBlock(view: Extract<EventView, { kind: 'message' }>): string {
  const role = view.role === 'tool' ? 'Tool result' : `${view.role[0]!.toUpperCase()}${view.role.slice(1)}`
  let title = `### #${view.seq} ${role}`
  if (!view.visible) title += ' (hidden)'
  if (view.replaces !== null) title += ' (compaction summary)'
  let out = `${title}\n\n_${safe(view.time)}_\n\n${hiddenNote(view)}`
  if (view.replaces !== null) {
    out += `> **Replaces** messages #${view.replaces.startSeq}..#${view.replaces.endSeq} (${view.replaces.sources.length} hidden: ${view.replaces.sources.map((seq) => `#${seq}`).join(', ')}).\n\n`
  }
  const result = view.result
  if (result !== null) {
    const target =
      result.target === null
        ? `answers ${code(result.callId)} (no matching call: not projected)`
        : `answers ${code(result.target.name)} call ${code(result.callId)} from #${result.target.assistantSeq}`
    out += `${target}${result.isError ? ' — **error**' : ''}\n\n`
    if (result.placeholder) {
      out += `> **Repair placeholder ${code(result.code ?? '')}**: ${placeholderMeaning(result.code)}.\n\n`
    } else if (result.code !== null) {
      out += `code ${code(result.code)}\n\n`
    }
  }
  if (view.interrupted) out += '_The reply was interrupted._\n\n'
  if (view.reasoning !== null && view.reasoning !== '') out += `Reasoning:\n\n${fence(view.reasoning)}\n`
  if (view.text !== '' || view.calls.length === 0) out += `${fence(view.text)}\n`
  for (const call of view.calls) out += `${callLine(call)}\n`
  return out
}

/**
 * Renders a transcript as Markdown: untrusted text only inside fences and code spans; file
 * edits as `diff` blocks; each call with the start of its result; the importer's source
 * records hidden unless `sourceRecords.shown` (a line counts them). No size budget.
 */
export class MarkdownRenderer implements TranscriptRenderer {
  #showSourceRecords = false

  begin(meta: TranscriptMeta): string {
    this.#showSourceRecords = meta.sourceRecords.shown
    const header = meta.header
    const lines = [`# Session ${code(meta.id)}`, '']
    lines.push(`- log: ${code(meta.file)}`)
    if (header !== null) {
      lines.push(`- format: ${code(`${header.format} v${header.version}`)}`)
      lines.push(`- created: ${code(header.createdAt)}`)
      if (header.cwd !== undefined) lines.push(`- cwd: ${code(header.cwd)}`)
      if (header.parentSession !== undefined) lines.push(`- forked from: ${code(header.parentSession)}`)
    } else {
      lines.push('- header: none (a crash during creation?)')
    }
    lines.push(`- events: ${meta.events}`)
    if (meta.pending > 0) {
      lines.push(`- **${meta.pending} tool call(s) without a result**: the next write open answers them`)
    }
    if (meta.sourceRecords.count > 0) {
      lines.push(
        meta.sourceRecords.shown
          ? `- source records: ${meta.sourceRecords.count} shown (the importer's verbatim copies of the source lines)`
          : `- source records: ${meta.sourceRecords.count} hidden (the importer's verbatim copies of the source lines; export with \`--source-records\` to show them)`,
      )
    }
    lines.push(`- exported: ${safe(meta.exportedAt)}`, '')
    return `${lines.join('\n')}\n`
  }

  event(view: EventView): string {
    if (view.kind === 'other' && view.type === SOURCE_RECORD_EVENT_TYPE && !this.#showSourceRecords) return ''
    switch (view.kind) {
      case 'turn-start':
        return `## Turn ${view.turn}\n\n_#${view.seq} started ${safe(view.time)}_\n\n`
      case 'turn-end':
        return `_#${view.seq} turn ${view.turn} ended: **${safe(view.reason)}**_\n\n---\n\n`
      case 'message':
        return messageBlock(view)
      case 'tool-started':
        return `_#${view.seq} tool ${code(view.name)} started (call ${code(view.callId)})_\n\n`
      case 'compaction-start':
        return `> **Compaction ${code(view.compactionId)} started** at #${view.seq}: hides messages #${view.startSeq}..#${view.endSeq}${view.reason === null ? '' : ` (reason: ${code(view.reason)})`}. ${view.replacementSeq === null ? '**It never finished** (a crash mid-compaction: harmless, nothing was hidden).' : `Summary at #${view.replacementSeq}.`}\n\n`
      case 'compaction-summary':
        return `> **Compaction ${code(view.compactionId)} summary** (#${view.seq}):\n\n${fence(view.summary)}\n`
      case 'compaction-end':
        return `> **Compaction ${code(view.compactionId)} ended** at #${view.seq}: ${view.hiddenCount} message(s) replaced by #${view.replacementSeq}.\n\n`
      case 'seed-end':
        return `---\n\n> **Fork point** (#${view.seq}): the events above were inherited${view.parent === null ? '' : ` from ${code(view.parent)}`}${view.boundarySeq === null ? '' : ` (cut at its seq ${view.boundarySeq})`}.\n\n---\n\n`
      case 'salvage':
        return `> **Salvaged** (#${view.seq}) from ${code(view.sourceSession)}: events up to seq ${view.lastGoodSeq} kept, bytes from offset ${view.droppedFromOffset} dropped (${code(view.reason)}).\n\n`
      case 'other':
        return `_#${view.seq} ${code(view.type)}${view.ignorable ? ' (ignorable, unknown to this reader)' : ''}_\n\n${fence(view.json)}\n`
    }
  }

  end(footer: TranscriptFooter): string {
    if (footer.damage === null) return ''
    return `---\n\n> **The log is damaged here** (${code(footer.damage.code)}${footer.damage.line === undefined ? '' : ` line ${footer.damage.line}`}${footer.damage.offset === undefined ? '' : `, offset ${footer.damage.offset}`}): nothing after this point could be read.\n\n${fence(footer.damage.message)}`
  }
}
