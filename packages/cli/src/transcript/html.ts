import { visibleControls } from '../terminal-text.ts'
import type { TranscriptFooter, TranscriptMeta, TranscriptRenderer } from './render.ts'
import { placeholderMeaning } from './view.ts'
import type { CallView, EventView } from './view.ts'

/**
 * Escapes text for HTML element content and attribute values: `& < > " '` become
 * references, and control/bidi characters become visible escapes. Every piece of text
 * from a log goes through this, so a tool output holding `<script>` renders as text.
 *
 * @param text - Untrusted text.
 * @returns HTML-safe text.
 */
function escapeHtml(text: string): string {
  return visibleControls(text)
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;')
}

/** A `<pre>` block; the newline after `<pre>` keeps a leading newline of the text (the parser drops one). */
function pre(text: string, className = 'text'): string {
  return `<pre class="${className}">\n${escapeHtml(text)}</pre>`
}

const STYLE = `
:root { color-scheme: light; --muted: #6b7280; --line: #d1d5db; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 62rem; padding: 1.5rem; color: #111827; background: #f9fafb; }
h1 { font-size: 1.4rem; margin: 0 0 .5rem; word-break: break-all; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: 0 0 1.5rem; font-size: .9rem; }
dl.meta dt { color: var(--muted); }
dl.meta dd { margin: 0; word-break: break-all; }
section.turn { border-left: 3px solid var(--line); padding-left: 1rem; margin: 1.25rem 0; }
h2 { font-size: 1.05rem; margin: 1rem 0 .5rem; }
.event { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: .5rem .75rem; margin: .6rem 0; }
.event > header { display: flex; flex-wrap: wrap; gap: .5rem; align-items: baseline; font-size: .85rem; color: var(--muted); }
.event > header .role { font-weight: 600; color: #111827; }
.seq { font-family: ui-monospace, monospace; }
.note { font-size: .85rem; color: var(--muted); margin: .35rem 0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, monospace; margin: .4rem 0; padding: .5rem; background: #f3f4f6; border-radius: 4px; }
.role-user { border-left: 4px solid #2563eb; }
.role-assistant { border-left: 4px solid #059669; }
.role-system { border-left: 4px solid #7c3aed; }
.role-tool { border-left: 4px solid #6b7280; }
.error { border-left-color: #dc2626; }
.badge { display: inline-block; font-size: .75rem; font-weight: 600; padding: 0 .4rem; border-radius: 999px; background: #e5e7eb; color: #111827; }
.badge.error { background: #fee2e2; color: #991b1b; }
.badge.placeholder { background: #ffedd5; color: #9a3412; }
.badge.hidden { background: #e5e7eb; color: #4b5563; }
.badge.summary { background: #e0e7ff; color: #3730a3; }
.placeholder-box { border: 2px solid #f97316; background: #fff7ed; border-radius: 4px; padding: .35rem .6rem; margin: .4rem 0; font-size: .9rem; }
.hidden-event { opacity: .55; filter: grayscale(1); background: #f3f4f6; }
.compaction { border: 2px dashed #6366f1; background: #eef2ff; }
.summary-message { outline: 2px solid #6366f1; }
.calls { margin: .4rem 0 0; padding-left: 1.1rem; }
.calls li { margin: .3rem 0; }
.fork { border: 2px solid #0ea5e9; background: #f0f9ff; }
.salvage, .damage { border: 2px solid #dc2626; background: #fef2f2; }
.log-only { font-size: .85rem; color: var(--muted); margin: .3rem 0 .3rem .25rem; }
a { color: #1d4ed8; }
`

function anchor(seq: number): string {
  return `<a class="seq" href="#e${seq}">#${seq}</a>`
}

function callItem(call: CallView): string {
  const started = call.started === null ? 'never started' : `started at ${anchor(call.started)}`
  let answer: string
  if (call.outcome === null) {
    answer =
      '<span class="badge placeholder">no result in the log</span> the next write open answers it with a placeholder'
  } else {
    const flags =
      call.outcome.code !== null
        ? ` <span class="badge ${call.outcome.isError ? 'placeholder' : ''}">${escapeHtml(call.outcome.code)}</span>`
        : call.outcome.isError
          ? ' <span class="badge error">error</span>'
          : ''
    answer = `result at ${anchor(call.outcome.resultSeq)}${flags}`
  }
  return `<li><strong>${escapeHtml(call.name)}</strong> <code>${escapeHtml(call.id)}</code>: ${started}; ${answer}${pre(call.arguments, 'arguments')}</li>`
}

function messageArticle(view: Extract<EventView, { kind: 'message' }>): string {
  const classes = ['event', `role-${view.role}`]
  const badges: string[] = []
  const notes: string[] = []
  if (!view.visible) {
    classes.push('hidden-event')
    badges.push('<span class="badge hidden">hidden</span>')
    notes.push(
      view.hiddenBy !== null
        ? `<p class="note">Replaced by ${anchor(view.hiddenBy)}: still in the log, no longer sent to the model.</p>`
        : '<p class="note">Not projected: the model never received this message (an orphan or duplicate result).</p>',
    )
  }
  if (view.replaces !== null) {
    classes.push('summary-message')
    badges.push('<span class="badge summary">compaction summary</span>')
    notes.push(
      `<p class="note">Replaces messages ${anchor(view.replaces.startSeq)}..${anchor(view.replaces.endSeq)} (${view.replaces.sources.length} hidden: ${view.replaces.sources.map(anchor).join(', ')}).</p>`,
    )
  }
  const result = view.result
  if (result !== null) {
    if (result.isError) {
      classes.push('error')
      badges.push('<span class="badge error">error</span>')
    }
    notes.push(
      result.target === null
        ? `<p class="note">Answers <code>${escapeHtml(result.callId)}</code>: no matching call (not projected).</p>`
        : `<p class="note">Answers <strong>${escapeHtml(result.target.name)}</strong> <code>${escapeHtml(result.callId)}</code> asked at ${anchor(result.target.assistantSeq)}.</p>`,
    )
    if (result.placeholder) {
      badges.push(
        `<span class="badge placeholder">repair placeholder ${escapeHtml(result.code ?? '')}</span>`,
      )
      notes.push(
        `<div class="placeholder-box"><strong>Repair placeholder ${escapeHtml(result.code ?? '')}</strong>: ${escapeHtml(placeholderMeaning(result.code))}.</div>`,
      )
    } else if (result.code !== null) {
      badges.push(`<span class="badge">${escapeHtml(result.code)}</span>`)
    }
  }
  if (view.interrupted) notes.push('<p class="note">The reply was interrupted.</p>')
  let body = ''
  if (view.reasoning !== null && view.reasoning !== '') {
    body += `<details><summary>Reasoning</summary>${pre(view.reasoning, 'reasoning')}</details>`
  }
  if (view.text !== '' || view.calls.length === 0) body += pre(view.text, 'content')
  if (view.calls.length > 0) body += `<ul class="calls">${view.calls.map(callItem).join('')}</ul>`
  const role = { system: 'System', user: 'User', assistant: 'Assistant', tool: 'Tool result' }[view.role]
  return `<article class="${classes.join(' ')}" id="e${view.seq}"><header><span class="role">${role}</span>${anchor(view.seq)}<time>${escapeHtml(view.time)}</time>${badges.join('')}</header>${notes.join('')}${body}</article>\n`
}

/** Renders one self-contained HTML page: inline CSS, no script, no network (a CSP forbids both). */
export class HtmlRenderer implements TranscriptRenderer {
  #inTurn = false

  begin(meta: TranscriptMeta): string {
    const header = meta.header
    const rows: [string, string][] = [['log', meta.file]]
    if (header !== null) {
      rows.push(['format', `${header.format} v${header.version}`], ['created', header.createdAt])
      if (header.cwd !== undefined) rows.push(['cwd', header.cwd])
      if (header.parentSession !== undefined) rows.push(['forked from', header.parentSession])
    } else {
      rows.push(['header', 'none (a crash during creation?)'])
    }
    rows.push(['events', String(meta.events)])
    if (meta.pending > 0)
      rows.push([
        'pending',
        `${meta.pending} tool call(s) without a result: the next write open answers them`,
      ])
    rows.push(['exported', meta.exportedAt])
    return [
      '<!DOCTYPE html>',
      '<html lang="en">',
      '<head>',
      '<meta charset="utf-8">',
      `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`,
      '<meta name="viewport" content="width=device-width, initial-scale=1">',
      `<title>Session ${escapeHtml(meta.id)} - agent-ledger</title>`,
      `<style>${STYLE}</style>`,
      '</head>',
      '<body>',
      `<h1>Session ${escapeHtml(meta.id)}</h1>`,
      `<dl class="meta">${rows.map(([key, value]) => `<dt>${escapeHtml(key)}</dt><dd>${escapeHtml(value)}</dd>`).join('')}</dl>`,
      '<main>',
      '',
    ].join('\n')
  }

  event(view: EventView): string {
    switch (view.kind) {
      case 'turn-start': {
        const close = this.#inTurn ? '</section>\n' : ''
        this.#inTurn = true
        return `${close}<section class="turn" id="e${view.seq}"><h2>Turn ${view.turn} <span class="note">${anchor(view.seq)} ${escapeHtml(view.time)}</span></h2>\n`
      }
      case 'turn-end': {
        const line = `<p class="log-only" id="e${view.seq}">${anchor(view.seq)} turn ${view.turn} ended: <strong>${escapeHtml(view.reason)}</strong></p>\n`
        if (!this.#inTurn) return line
        this.#inTurn = false
        return `${line}</section>\n`
      }
      case 'message':
        return messageArticle(view)
      case 'tool-started':
        return `<p class="log-only" id="e${view.seq}">${anchor(view.seq)} tool <strong>${escapeHtml(view.name)}</strong> started (call <code>${escapeHtml(view.callId)}</code>)</p>\n`
      case 'compaction-start':
        return `<article class="event compaction" id="e${view.seq}"><header><span class="role">compaction ${escapeHtml(view.compactionId)} started</span>${anchor(view.seq)}<time>${escapeHtml(view.time)}</time></header><p class="note">Hides messages ${anchor(view.startSeq)}..${anchor(view.endSeq)}${view.reason === null ? '' : ` (reason: ${escapeHtml(view.reason)})`}. ${view.replacementSeq === null ? '<strong>It never finished</strong> (a crash mid-compaction: harmless, nothing was hidden).' : `Summary at ${anchor(view.replacementSeq)}.`}</p></article>\n`
      case 'compaction-summary':
        return `<article class="event compaction" id="e${view.seq}"><header><span class="role">compaction ${escapeHtml(view.compactionId)} summary</span>${anchor(view.seq)}<time>${escapeHtml(view.time)}</time></header>${pre(view.summary)}</article>\n`
      case 'compaction-end':
        return `<article class="event compaction" id="e${view.seq}"><header><span class="role">compaction ${escapeHtml(view.compactionId)} ended</span>${anchor(view.seq)}<time>${escapeHtml(view.time)}</time></header><p class="note">${view.hiddenCount} message(s) replaced by ${anchor(view.replacementSeq)}; the originals stay in the log (shown greyed).</p></article>\n`
      case 'seed-end':
        return `<article class="event fork" id="e${view.seq}"><header><span class="role">fork point</span>${anchor(view.seq)}</header><p class="note">The events above were inherited${view.parent === null ? '' : ` from <code>${escapeHtml(view.parent)}</code>`}${view.boundarySeq === null ? '' : ` (cut at its seq ${view.boundarySeq})`}.</p></article>\n`
      case 'salvage':
        return `<article class="event salvage" id="e${view.seq}"><header><span class="role">salvaged</span>${anchor(view.seq)}</header><p class="note">From <code>${escapeHtml(view.sourceSession)}</code>: events up to seq ${view.lastGoodSeq} kept, bytes from offset ${view.droppedFromOffset} dropped (${escapeHtml(view.reason)}).</p></article>\n`
      case 'other':
        return `<article class="event" id="e${view.seq}"><header><span class="role">${escapeHtml(view.type)}</span>${anchor(view.seq)}<time>${escapeHtml(view.time)}</time>${view.ignorable ? '<span class="badge">ignorable, unknown to this reader</span>' : ''}</header>${pre(view.json, 'json')}</article>\n`
    }
  }

  end(footer: TranscriptFooter): string {
    const parts: string[] = []
    if (this.#inTurn) {
      parts.push('<p class="log-only">(the turn is still open at the end of the log)</p></section>')
      this.#inTurn = false
    }
    if (footer.damage !== null) {
      const where = [
        footer.damage.line === undefined ? '' : `line ${footer.damage.line}`,
        footer.damage.offset === undefined ? '' : `offset ${footer.damage.offset}`,
      ]
        .filter((part) => part !== '')
        .join(', ')
      parts.push(
        `<article class="event damage"><header><span class="role">the log is damaged here</span><span class="badge error">${escapeHtml(footer.damage.code)}</span>${escapeHtml(where)}</header><p class="note">Nothing after this point could be read.</p>${pre(footer.damage.message)}</article>`,
      )
    }
    parts.push('</main>', '</body>', '</html>', '')
    return parts.join('\n')
  }
}
