import { SOURCE_RECORD_EVENT_TYPE } from '@agent-ledger/import'

import { formatBytes, formatCount } from '../../terminal-text.ts'
import type { PagePlan } from '../budget.ts'
import type { DiffLine } from '../edits.ts'
import type { TranscriptFooter, TranscriptMeta, TranscriptRenderer } from '../render.ts'
import { placeholderMeaning } from '../view.ts'
import type { CallView, EventView } from '../view.ts'
import { Landmarks } from './landmarks.ts'
import { renderMarkdown } from './markdown.ts'
import { STYLE } from './style.ts'
import { summaryPanel } from './summary.ts'
import { collapsible, cut, escapeHtml, pre, shellWord, sizeLabel, truncationNotice } from './text.ts'

/** The size of a page: a 100 MB session still gives a file under 5 MB. */
export const PAGE_BUDGET_BYTES = 4_500_000

/** Events are written until this share of the budget; the rest is the index and the notices. */
export const EVENT_SHARE = 0.85

/** Most characters of one text once the page is past its event share (an estimate was short). */
const FLOOR_ITEM_CHARS = 240

/** Options of {@link HtmlRenderer}. */
export interface HtmlRendererOptions {
  /** The page's plan (`PageSizer.plan` of the first pass): the text cap, and the events left out. */
  readonly plan: PagePlan
  /**
   * A page `agent-ledger serve` sends rather than a file: the app's own script (same origin,
   * no inline script; the server's Content-Security-Policy allows `'self'` only) and the
   * navigation shown above the transcript (HTML the caller escaped). Default: none (the
   * self-contained export, no script at all).
   */
  readonly frame?: { readonly script: string; readonly nav: string } | undefined
}

type MessageView = Extract<EventView, { kind: 'message' }>

/** First words of a text on one line, for the index. */
function words(text: string, max = 60): string {
  const line = text.replace(/\s+/g, ' ').trim()
  return line.length <= max ? line : `${cut(line, max - 1)}…`
}

/**
 * Renders one self-contained HTML page: inline CSS, no script, no network (a CSP forbids
 * both). User and assistant text is Markdown (raw HTML off); long tool outputs and
 * arguments are collapsed behind `<details>`; file edits are diffs; each tool call shows
 * the start of its result; an index lists turns, repairs, errors, compactions and forks.
 * The importer's source records are hidden unless `sourceRecords.shown` (a count says so).
 * The page keeps to its plan (budget.ts): each text is capped with a notice naming the
 * `agent-ledger cat --seq N` command that prints it whole, and when even short texts do not
 * fit, the middle of the log is left out (never its end) with a notice saying how to read it.
 */
export class HtmlRenderer implements TranscriptRenderer {
  readonly #budget = PAGE_BUDGET_BYTES
  readonly #plan: PagePlan
  readonly #frame: HtmlRendererOptions['frame']
  readonly #landmarks = new Landmarks()
  #session = ''
  #inTurn = false
  #showSourceRecords = false
  /** Bytes written so far. */
  #used = 0
  /** Events of the plan's gap left out, and whether its notice was written. */
  #skipped = 0
  #gapWritten = false
  #lastSeq: number | null = null
  /** Seqs linked before they were rendered (a call's result, a hidden message's summary). */
  readonly #forward = new Set<number>()

  constructor(options: HtmlRendererOptions) {
    this.#plan = options.plan
    this.#frame = options.frame
  }

  #inGap(seq: number): boolean {
    const gap = this.#plan.gap
    return gap !== null && seq >= gap.from && seq <= gap.to
  }

  /** A link to an event; links ahead are remembered, links into the left-out middle land on its notice. */
  #anchor(seq: number): string {
    if (this.#inGap(seq)) {
      if (!this.#gapWritten) this.#forward.add(seq)
      return `<a class="seq" href="${this.#gapWritten ? '#not-shown' : `#e${seq}`}">#${seq}</a>`
    }
    if (this.#lastSeq === null || seq > this.#lastSeq) this.#forward.add(seq)
    return `<a class="seq" href="#e${seq}">#${seq}</a>`
  }

  #count(html: string): string {
    this.#used += Buffer.byteLength(html)
    return html
  }

  /** Events are written until this many bytes; the rest is the index and the notices. */
  get #eventLimit(): number {
    return Math.floor(this.#budget * EVENT_SHARE)
  }

  /** Most characters one text may take now: the plan's cap, the floor once past the event share. */
  #itemCap(): number {
    return this.#used < this.#eventLimit ? this.#plan.itemCap : Math.min(this.#plan.itemCap, FLOOR_ITEM_CHARS)
  }

  /** A diff, capped at the item cap like any text (lines kept whole). */
  #diff(lines: readonly DiffLine[], seq: number): string {
    const cap = this.#itemCap()
    const rows: string[] = []
    let chars = 0
    let shown = 0
    for (const line of lines) {
      if (chars + line.text.length > cap && shown > 0) break
      chars += line.text.length + 1
      shown += 1
      const mark = { file: '', hunk: '', add: '+', del: '-', ctx: ' ' }[line.kind]
      rows.push(`<span class="diff-${line.kind}">${escapeHtml(`${mark}${line.text}`)}</span>`)
    }
    const rest = lines.length - shown
    const notice =
      rest > 0
        ? `<p class="note truncated">Diff shortened: ${formatCount(rest)} more line(s). Full arguments: <code>${escapeHtml(this.#catCommand(seq))}</code></p>`
        : ''
    return `<pre class="diff">${rows.join('')}</pre>${notice}`
  }

  /** The line under a call: the start of its result. */
  #callResult(call: CallView): string {
    if (call.outcome === null) return ''
    const { preview, chars, isError } = call.outcome
    const more =
      chars > preview.length
        ? ` <span class="note">(${formatCount(chars)} characters, whole at ${this.#anchor(call.outcome.resultSeq)})</span>`
        : ''
    return `<div class="call-result${isError ? ' error' : ''}"><span class="role">result</span>${pre(preview === '' ? '(empty)' : preview, 'preview')}${more}</div>`
  }

  #catCommand(seq: number): string {
    return `agent-ledger cat ${shellWord(this.#session)} --seq ${seq}`
  }

  #collapsible(text: string, seq: number, className: string): string {
    return collapsible(text, { className, cap: this.#itemCap(), fullTextCommand: this.#catCommand(seq) })
  }

  /** Markdown, cut at the item cap with a notice. */
  #markdown(text: string, seq: number): string {
    const cap = this.#itemCap()
    const shown = cut(text, cap)
    const notice =
      shown.length < text.length ? truncationNotice(shown.length, text, this.#catCommand(seq)) : ''
    return `<div class="markdown">${renderMarkdown(shown)}</div>${notice}`
  }

  #callItem(call: CallView, seq: number): string {
    const started =
      call.started === null ? 'never started' : `started (<span class="seq">#${call.started}</span>)`
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
      answer = `result at ${this.#anchor(call.outcome.resultSeq)}${flags}`
    }
    const shown =
      call.diff === null ? this.#collapsible(call.arguments, seq, 'arguments') : this.#diff(call.diff, seq)
    return `<li class="call"><strong>${escapeHtml(call.name)}</strong> <code>${escapeHtml(call.id)}</code>: ${started}; ${answer}${shown}${this.#callResult(call)}</li>`
  }

  #message(view: MessageView): string {
    const id = `e${view.seq}`
    const classes = ['event', `role-${view.role}`]
    const badges: string[] = []
    const notes: string[] = []
    if (!view.visible) {
      classes.push('hidden-event')
      badges.push('<span class="badge hidden">hidden</span>')
      notes.push(
        view.hiddenBy !== null
          ? `<p class="note">Replaced by ${this.#anchor(view.hiddenBy)}: still in the log, no longer sent to the model.</p>`
          : '<p class="note">Not projected: the model never received this message (an orphan or duplicate result).</p>',
      )
    }
    if (view.replaces !== null) {
      classes.push('summary-message')
      badges.push('<span class="badge summary">compaction summary</span>')
      const sources = view.replaces.sources
      const listed = sources
        .slice(0, 20)
        .map((seq) => this.#anchor(seq))
        .join(', ')
      notes.push(
        `<p class="note">Replaces messages ${this.#anchor(view.replaces.startSeq)}..${this.#anchor(view.replaces.endSeq)} (${sources.length} hidden: ${listed}${sources.length > 20 ? ', …' : ''}).</p>`,
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
          : `<p class="note">Answers <strong>${escapeHtml(result.target.name)}</strong> <code>${escapeHtml(result.callId)}</code> asked at ${this.#anchor(result.target.assistantSeq)}.</p>`,
      )
      if (result.placeholder) {
        badges.push(
          `<span class="badge placeholder">repair placeholder ${escapeHtml(result.code ?? '')}</span>`,
        )
        notes.push(
          `<div class="placeholder-box"><strong>Repair placeholder ${escapeHtml(result.code ?? '')}</strong>: ${escapeHtml(placeholderMeaning(result.code))}.</div>`,
        )
        this.#landmarks.add(
          'repairs',
          id,
          `#${view.seq} ${result.code ?? 'placeholder'} (${result.target?.name ?? result.callId})`,
        )
      } else {
        if (result.code !== null) badges.push(`<span class="badge">${escapeHtml(result.code)}</span>`)
        if (result.isError)
          this.#landmarks.add(
            'errors',
            id,
            `#${view.seq} ${result.target?.name ?? result.callId}: ${words(view.text, 40)}`,
          )
      }
    }
    if (view.interrupted) notes.push('<p class="note">The reply was interrupted.</p>')
    if (view.role === 'user' && view.replaces === null)
      this.#landmarks.labelLatestTurn(words(view.text.replace(/[*_`#>[\]]+/g, '')))
    let body = ''
    if (view.reasoning !== null && view.reasoning !== '') {
      const cap = this.#itemCap()
      const shown = cut(view.reasoning, cap)
      const notice =
        shown.length < view.reasoning.length
          ? truncationNotice(shown.length, view.reasoning, this.#catCommand(view.seq))
          : ''
      body += `<details><summary>Reasoning (${escapeHtml(sizeLabel(view.reasoning))})</summary>${pre(shown, 'reasoning')}${notice}</details>`
    }
    if (view.text !== '' || view.calls.length === 0) {
      body +=
        view.role === 'user' || view.role === 'assistant'
          ? this.#markdown(view.text, view.seq)
          : this.#collapsible(view.text, view.seq, view.role === 'tool' ? 'output' : 'content')
    }
    if (view.calls.length > 0) {
      body += `<ul class="calls">${view.calls.map((call) => this.#callItem(call, view.seq)).join('')}</ul>`
    }
    const role = { system: 'System', user: 'User', assistant: 'Assistant', tool: 'Tool result' }[view.role]
    return `<article class="${classes.join(' ')}" id="${id}"><header><span class="role">${role}</span>${this.#anchor(view.seq)}<time>${escapeHtml(view.time)}</time>${badges.join('')}</header>${notes.join('')}${body}</article>\n`
  }

  begin(meta: TranscriptMeta): string {
    this.#session = meta.session
    this.#showSourceRecords = meta.sourceRecords.shown
    const header = meta.header
    const rows: [string, string][] = [['log', meta.file]]
    if (header !== null) {
      rows.push(['format', `${header.format} v${header.version}`], ['created', header.createdAt])
      if (header.cwd !== undefined) rows.push(['cwd', header.cwd])
      if (header.parentSession !== undefined) rows.push(['forked from', header.parentSession])
    } else {
      rows.push(['header', 'none (a crash during creation?)'])
    }
    rows.push(['events', formatCount(meta.events)])
    if (meta.pending > 0) {
      rows.push([
        'pending',
        `${meta.pending} tool call(s) without a result: the next write open answers them`,
      ])
    }
    if (meta.sourceRecords.count > 0) {
      rows.push([
        'source records',
        meta.sourceRecords.shown
          ? `${formatCount(meta.sourceRecords.count)} shown (the importer's verbatim copies of the source lines)`
          : `${formatCount(meta.sourceRecords.count)} hidden (the importer's verbatim copies of the source lines; export with --source-records to show them)`,
      ])
    }
    const { itemCap, gap } = this.#plan
    const budget = formatBytes(this.#budget)
    if (gap !== null) {
      rows.push([
        'page budget',
        `to stay under ${budget}, texts over ${formatCount(itemCap)} characters are shortened and events #${gap.from}..#${gap.to} in the middle are left out; the first and the last turns are here`,
      ])
    } else if (itemCap < 16_000) {
      rows.push([
        'page budget',
        `to stay under ${budget}, texts over ${formatCount(itemCap)} characters are shortened`,
      ])
    }
    rows.push(['exported', meta.exportedAt])
    return this.#count(
      [
        '<!DOCTYPE html>',
        '<html lang="en">',
        '<head>',
        '<meta charset="utf-8">',
        `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'${this.#frame === undefined ? '' : "; script-src 'self'; connect-src 'self'"}">`,
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="color-scheme" content="light dark">',
        `<title>Session ${escapeHtml(meta.id)} - agent-ledger</title>`,
        `<style>${STYLE}</style>`,
        this.#frame === undefined ? '' : `<script src="${escapeHtml(this.#frame.script)}" defer></script>`,
        '</head>',
        '<body>',
        this.#frame?.nav ?? '',
        '<header>',
        `<h1>Session ${escapeHtml(meta.id)}</h1>`,
        `<dl class="meta">${rows.map(([key, value]) => `<dt>${escapeHtml(key)}</dt><dd>${escapeHtml(value)}</dd>`).join('')}</dl>`,
        '<p class="skip"><a href="#index">Index of turns, repairs, errors, compactions and forks</a></p>',
        meta.stats === undefined ? '' : summaryPanel(meta.stats),
        '</header>',
        '<main>',
        '',
      ].join('\n'),
    )
  }

  event(view: EventView): string {
    this.#lastSeq = view.seq
    if (view.kind === 'other' && view.type === SOURCE_RECORD_EVENT_TYPE && !this.#showSourceRecords) return ''
    if (this.#inGap(view.seq)) {
      this.#skipped += 1
      return ''
    }
    const notice =
      this.#plan.gap !== null && !this.#gapWritten && view.seq > this.#plan.gap.to ? this.#gapNotice() : ''
    this.#forward.delete(view.seq)
    return this.#count(notice + this.#render(view))
  }

  /** The notice where the plan's gap was, landing the links made into it. */
  #gapNotice(): string {
    const { from, to } = this.#plan.gap!
    this.#gapWritten = true
    const session = shellWord(this.#session)
    this.#landmarks.add('limit', 'not-shown', `#${from}..#${to} (${formatCount(this.#skipped)} events)`)
    const landings = [...this.#forward]
      .filter((seq) => seq >= from && seq <= to)
      .map((seq) => `<span id="e${seq}"></span>`)
      .join('')
    for (const seq of [...this.#forward]) if (seq <= to) this.#forward.delete(seq)
    return `<article class="event budget" id="not-shown">${landings}<header><span class="role">${formatCount(this.#skipped)} event(s) not shown</span></header><p class="note">To stay under its ${formatBytes(this.#budget)} size budget this page leaves out events #${from}..#${to} from the middle of the log (it keeps the first and the last turns, long texts shortened). Read them with <code>${escapeHtml(`agent-ledger cat ${session} --from ${from} --to ${to}`)}</code>, one in full with <code>${escapeHtml(`agent-ledger cat ${session} --seq N`)}</code>, or export the whole transcript without a size limit with <code>${escapeHtml(`agent-ledger export ${session} --format md`)}</code>.</p></article>\n`
  }

  #render(view: EventView): string {
    const id = `e${view.seq}`
    switch (view.kind) {
      case 'turn-start': {
        const close = this.#inTurn ? '</section>\n' : ''
        this.#inTurn = true
        this.#landmarks.turn(id, `Turn ${view.turn}`)
        return `${close}<section class="turn" id="${id}"><h2>Turn ${view.turn} <span class="note">${this.#anchor(view.seq)} ${escapeHtml(view.time)}</span></h2>\n`
      }
      case 'turn-end': {
        const line = `<p class="log-only" id="${id}">${this.#anchor(view.seq)} turn ${view.turn} ended: <strong>${escapeHtml(view.reason)}</strong></p>\n`
        if (!this.#inTurn) return line
        this.#inTurn = false
        return `${line}</section>\n`
      }
      case 'message':
        return this.#message(view)
      case 'tool-started':
        // The call's own line says it started; a row per start was noise.
        return ''
      case 'compaction-start':
        this.#landmarks.add(
          'compactions',
          id,
          `#${view.seq} ${view.compactionId}: hides ${view.startSeq}..${view.endSeq}`,
        )
        return `<article class="event compaction" id="${id}"><header><span class="role">compaction ${escapeHtml(view.compactionId)} started</span>${this.#anchor(view.seq)}<time>${escapeHtml(view.time)}</time></header><p class="note">Hides messages ${this.#anchor(view.startSeq)}..${this.#anchor(view.endSeq)}${view.reason === null ? '' : ` (reason: ${escapeHtml(view.reason)})`}. ${view.replacementSeq === null ? '<strong>It never finished</strong> (a crash mid-compaction: harmless, nothing was hidden).' : `Summary at ${this.#anchor(view.replacementSeq)}.`}</p></article>\n`
      case 'compaction-summary':
        return `<article class="event compaction" id="${id}"><header><span class="role">compaction ${escapeHtml(view.compactionId)} summary</span>${this.#anchor(view.seq)}<time>${escapeHtml(view.time)}</time></header>${this.#markdown(view.summary, view.seq)}</article>\n`
      case 'compaction-end':
        return `<article class="event compaction" id="${id}"><header><span class="role">compaction ${escapeHtml(view.compactionId)} ended</span>${this.#anchor(view.seq)}<time>${escapeHtml(view.time)}</time></header><p class="note">${view.hiddenCount} message(s) replaced by ${this.#anchor(view.replacementSeq)}; the originals stay in the log (shown greyed).</p></article>\n`
      case 'seed-end':
        this.#landmarks.add(
          'forks',
          id,
          `#${view.seq} fork point${view.parent === null ? '' : ` from ${view.parent}`}`,
        )
        return `<article class="event fork" id="${id}"><header><span class="role">fork point</span>${this.#anchor(view.seq)}</header><p class="note">The events above were inherited${view.parent === null ? '' : ` from <code>${escapeHtml(view.parent)}</code>`}${view.boundarySeq === null ? '' : ` (cut at its seq ${view.boundarySeq})`}.</p></article>\n`
      case 'salvage':
        this.#landmarks.add('forks', id, `#${view.seq} salvaged from ${view.sourceSession}`)
        return `<article class="event salvage" id="${id}"><header><span class="role">salvaged</span>${this.#anchor(view.seq)}</header><p class="note">From <code>${escapeHtml(view.sourceSession)}</code>: events up to seq ${view.lastGoodSeq} kept, bytes from offset ${view.droppedFromOffset} dropped (${escapeHtml(view.reason)}).</p></article>\n`
      case 'other':
        return `<article class="event" id="${id}"><header><span class="role">${escapeHtml(view.type)}</span>${this.#anchor(view.seq)}<time>${escapeHtml(view.time)}</time>${view.ignorable ? '<span class="badge">ignorable, unknown to this reader</span>' : ''}</header>${this.#collapsible(view.json, view.seq, 'json')}</article>\n`
    }
  }

  end(footer: TranscriptFooter): string {
    const parts: string[] = []
    if (this.#inTurn) {
      parts.push('<p class="log-only">(the turn is still open at the end of the log)</p></section>')
      this.#inTurn = false
    }
    // Links to events the page never wrote (hidden source records) land on the end.
    const unlanded = [...this.#forward].map((seq) => `<span id="e${seq}"></span>`).join('')
    if (unlanded !== '') parts.push(unlanded)
    if (footer.damage !== null) {
      const where = [
        footer.damage.line === undefined ? '' : `line ${footer.damage.line}`,
        footer.damage.offset === undefined ? '' : `offset ${footer.damage.offset}`,
      ]
        .filter((part) => part !== '')
        .join(', ')
      this.#landmarks.add('damage', 'damage', `${footer.damage.code}${where === '' ? '' : ` at ${where}`}`)
      parts.push(
        `<article class="event damage" id="damage"><header><span class="role">the log is damaged here</span><span class="badge error">${escapeHtml(footer.damage.code)}</span>${escapeHtml(where)}</header><p class="note">Nothing after this point could be read.</p>${pre(footer.damage.message)}</article>`,
      )
    }
    parts.push('</main>', this.#landmarks.render(), '</body>', '</html>', '')
    return this.#count(parts.join('\n'))
  }
}
