import { formatBytes, formatCount } from '../../terminal-text.ts'
import type { TranscriptFooter, TranscriptMeta, TranscriptRenderer } from '../render.ts'
import { placeholderMeaning } from '../view.ts'
import type { CallView, EventView } from '../view.ts'
import { Landmarks } from './landmarks.ts'
import { renderMarkdown } from './markdown.ts'
import { STYLE } from './style.ts'
import { summaryPanel } from './summary.ts'
import { collapsible, cut, escapeHtml, pre, shellWord, sizeLabel, truncationNotice } from './text.ts'

/** The default size of a page: a 100 MB session still gives a file under 5 MB. */
const DEFAULT_PAGE_BUDGET_BYTES = 4_500_000

/** Most characters of one text on the page while the page is small, then once it is large. */
const FULL_ITEM_CHARS = 16_000
const BRIEF_ITEM_CHARS = 600

/** Options of {@link HtmlRenderer}. */
export interface HtmlRendererOptions {
  /** The page's size budget in bytes (default {@link DEFAULT_PAGE_BUDGET_BYTES}). */
  readonly budgetBytes?: number
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
 * arguments are collapsed behind `<details>`; an index lists turns, repairs, errors,
 * compactions and forks. The page keeps to a size budget: each text is capped (16 kB,
 * then 600 characters once three quarters of the budget are used) with a notice naming the
 * `agent-ledger cat --seq N` command that prints it whole, and the events after the budget
 * is spent are left out with a notice saying how to read them.
 */
export class HtmlRenderer implements TranscriptRenderer {
  readonly #budget: number
  readonly #landmarks = new Landmarks()
  #session = ''
  #inTurn = false
  /** Bytes written so far. */
  #used = 0
  /** First seq left out for the budget, and how many were. */
  #stoppedAt: number | null = null
  #skipped = 0
  #lastSeq: number | null = null
  /** Seqs linked before they were rendered (a call's result, a hidden message's summary). */
  readonly #forward = new Set<number>()

  constructor(options: HtmlRendererOptions = {}) {
    this.#budget = options.budgetBytes ?? DEFAULT_PAGE_BUDGET_BYTES
  }

  /** A link to an event; links ahead are remembered, so a page cut short still lands them. */
  #anchor(seq: number): string {
    if (this.#lastSeq === null || seq > this.#lastSeq) this.#forward.add(seq)
    return `<a class="seq" href="#e${seq}">#${seq}</a>`
  }

  #count(html: string): string {
    this.#used += Buffer.byteLength(html)
    return html
  }

  /** Events are written until this many bytes; the rest is the index and the closing notice. */
  get #eventLimit(): number {
    return Math.floor(this.#budget * 0.85)
  }

  /** Most characters one text may take now. */
  #itemCap(): number {
    const room = this.#eventLimit - this.#used
    const cap = this.#used < this.#budget * 0.6 ? FULL_ITEM_CHARS : BRIEF_ITEM_CHARS
    return Math.max(0, Math.min(cap, Math.floor(room / 4)))
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
    return `<li><strong>${escapeHtml(call.name)}</strong> <code>${escapeHtml(call.id)}</code>: ${started}; ${answer}${this.#collapsible(call.arguments, seq, 'arguments')}</li>`
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
    rows.push(['exported', meta.exportedAt])
    return this.#count(
      [
        '<!DOCTYPE html>',
        '<html lang="en">',
        '<head>',
        '<meta charset="utf-8">',
        `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`,
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="color-scheme" content="light dark">',
        `<title>Session ${escapeHtml(meta.id)} - agent-ledger</title>`,
        `<style>${STYLE}</style>`,
        '</head>',
        '<body>',
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
    if (this.#stoppedAt !== null || this.#used >= this.#eventLimit) {
      this.#stoppedAt ??= view.seq
      this.#skipped += 1
      return ''
    }
    this.#forward.delete(view.seq)
    return this.#count(this.#render(view))
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
      parts.push(
        this.#stoppedAt === null
          ? '<p class="log-only">(the turn is still open at the end of the log)</p></section>'
          : '</section>',
      )
      this.#inTurn = false
    }
    if (this.#stoppedAt !== null) {
      const session = shellWord(this.#session)
      this.#landmarks.add(
        'limit',
        'not-shown',
        `#${this.#stoppedAt}..#${this.#lastSeq ?? this.#stoppedAt} (${formatCount(this.#skipped)} events)`,
      )
      // Links made to events the page left out land on this notice.
      const targets = [...this.#forward].filter((seq) => seq >= this.#stoppedAt!)
      const landings = targets.map((seq) => `<span id="e${seq}"></span>`).join('')
      parts.push(
        `<article class="event budget" id="not-shown">${landings}<header><span class="role">${formatCount(this.#skipped)} more event(s) not shown</span></header><p class="note">This page stops at event #${this.#stoppedAt} to stay under its ${formatBytes(this.#budget)} size budget; events #${this.#stoppedAt}..#${this.#lastSeq ?? this.#stoppedAt} are in the log but not on this page. Read them with <code>${escapeHtml(`agent-ledger cat ${session} --from ${this.#stoppedAt}`)}</code>, one in full with <code>${escapeHtml(`agent-ledger cat ${session} --seq N`)}</code>, or export the whole transcript without a size limit with <code>${escapeHtml(`agent-ledger export ${session} --format md`)}</code>.</p></article>`,
      )
    }
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
