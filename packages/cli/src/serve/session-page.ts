/**
 * A session as `agent-ledger serve` shows it: the HTML transcript of `export --html` (the
 * same renderer and escaping), one seq range per page, the stats panel, a jump to any seq,
 * and on the last page the live feed (events appended since, rendered the same way).
 */
import type { LoggedEvent } from '@agent-ledger/session-events'
import type { SessionStore } from '@agent-ledger/session-store'

import { headerOfLine } from '../commands/export.ts'
import { errorJson } from '../report-error.ts'
import type { ErrorContext } from '../report-error.ts'
import { StatsCounter } from '../session-stats.ts'
import { analyze } from '../transcript/analyze.ts'
import type { Analysis } from '../transcript/analyze.ts'
import { PageSizer } from '../transcript/budget.ts'
import { EVENT_SHARE, HtmlRenderer, PAGE_BUDGET_BYTES } from '../transcript/html.ts'
import { escapeHtml } from '../transcript/html/text.ts'
import { viewEvent } from '../transcript/view.ts'
import { APP_SCRIPT_PATH, SERVE_STYLE, sessionHref } from './layout.ts'

/** Events on one page of a session. */
const EVENTS_PER_PAGE = 200

/** What a session page needs besides the store. */
export interface SessionPageOptions {
  readonly id: string
  /** The first seq asked for (rounded down to its page), or the page holding `seq`. */
  readonly from: number | null
  readonly seq: number | null
  /** The sessions forked from this one (linked in the bar). */
  readonly forks: readonly string[]
  readonly clock: () => string
  readonly errorContext: ErrorContext
}

/** Most forks the bar links; the rest are counted. */
const MAX_FORK_LINKS = 20

/**
 * The first pass over a whole session: the analysis (call pairing, projection), the stats,
 * and the events `keep` picks (one page's worth: memory stays bounded by the pairing tables
 * and one page, as in `export`).
 */
async function firstPass(
  store: SessionStore,
  id: string,
  keep: (seq: number) => boolean,
): Promise<{
  readonly analysis: Analysis
  readonly counter: StatsCounter
  readonly kept: readonly LoggedEvent[]
}> {
  const stored = await store.backend.readHeader(id)
  const header = headerOfLine(stored.line)
  const counter = new StatsCounter(id)
  const kept: LoggedEvent[] = []
  const analysis = await analyze(
    (async function* () {
      for await (const event of store.readEvents(id)) {
        counter.add(event)
        if (keep(event.seq)) kept.push(event)
        yield event
      }
    })(),
    header,
    () => undefined,
  )
  return { analysis, counter, kept }
}

/** The bar above a served transcript: back to the list, search, pages, jump, live marker. */
function sessionNav({
  id,
  from,
  to,
  total,
  live,
  parent,
  forks,
}: {
  readonly parent: string | null
  readonly forks: readonly string[]
  readonly id: string
  readonly from: number
  readonly to: number
  readonly total: number
  readonly live: boolean
}): string {
  const link = (start: number, label: string): string =>
    `<a href="${escapeHtml(`${sessionHref(id)}?from=${start}`)}">${label}</a>`
  const pages: string[] = []
  if (from > 0) pages.push(link(0, 'first'), link(Math.max(0, from - EVENTS_PER_PAGE), '&larr; previous'))
  if (to < total - 1) {
    const last = Math.floor((total - 1) / EVENTS_PER_PAGE) * EVENTS_PER_PAGE
    pages.push(link(to + 1, 'next &rarr;'), link(last, 'last'))
  }
  const shown = total === 0 ? 'no events' : `events #${from}..#${to} of ${total}`
  const session = (other: string): string =>
    `<a href="${escapeHtml(sessionHref(other))}">${escapeHtml(other)}</a>`
  const family = [
    parent === null ? '' : `fork of ${session(parent)}`,
    forks.length === 0
      ? ''
      : `forks: ${forks.slice(0, MAX_FORK_LINKS).map(session).join(', ')}${forks.length > MAX_FORK_LINKS ? ` and ${forks.length - MAX_FORK_LINKS} more` : ''}`,
  ].filter((part) => part !== '')
  return [
    `<style>${SERVE_STYLE}</style>`,
    `<div class="serve-bar" id="serve" data-session="${escapeHtml(id)}" data-last-seq="${to}" data-live="${live ? '1' : '0'}">`,
    '<a href="/">&larr; sessions</a>',
    `<form class="inline" action="/search" method="get"><input type="search" name="q" placeholder="search every session" aria-label="search"></form>`,
    `<span class="pages">${shown} ${pages.join(' ')}</span>`,
    `<form class="inline" action="${escapeHtml(sessionHref(id))}" method="get"><label>jump to seq <input name="seq" type="number" min="0" max="${Math.max(0, total - 1)}" required></label> <button>go</button></form>`,
    family.length === 0 ? '' : `<span class="family">${family.join('; ')}</span>`,
    live ? '<span id="live" class="live" data-state="connecting">connecting…</span>' : '',
    '</div>',
  ].join('')
}

/**
 * Renders one page of a session.
 *
 * @param store - The core store.
 * @param options - The session, the page asked for, the clock and the error context.
 * @returns The page's HTML.
 * @throws the store's errors (`SESSION_NOT_FOUND`...) other than a damaged log (damage is shown on the last page).
 */
export async function sessionPage(store: SessionStore, options: SessionPageOptions): Promise<string> {
  const { id } = options
  const asked = Math.max(0, options.seq ?? options.from ?? 0)
  const wanted = Math.floor(asked / EVENTS_PER_PAGE) * EVENTS_PER_PAGE
  const inPage = (start: number) => (seq: number) => seq >= start && seq < start + EVENTS_PER_PAGE
  const { analysis, counter, kept } = await firstPass(store, id, inPage(wanted))
  const total = analysis.events
  const lastPage = total === 0 ? 0 : Math.floor((total - 1) / EVENTS_PER_PAGE) * EVENTS_PER_PAGE
  const from = Math.min(lastPage, wanted)
  const to = Math.min(total - 1, from + EVENTS_PER_PAGE - 1)
  const onLastPage = to >= total - 1
  // Past the end: the last page, read again (its events were not kept on the first pass).
  let page = kept
  if (from !== wanted && to >= from) {
    const reread: LoggedEvent[] = []
    page = reread
    try {
      for await (const event of store.readEvents(id, { fromSeq: from, toSeq: to })) reread.push(event)
    } catch (error) {
      // The first pass recorded the damage; a second read stops at the same place.
      if (analysis.damage === null) throw error
    }
  }
  const sizer = new PageSizer({ showSourceRecords: false })
  for (const event of page) sizer.add(event)
  const renderer = new HtmlRenderer({
    plan: sizer.plan(Math.floor(PAGE_BUDGET_BYTES * EVENT_SHARE)),
    frame: {
      script: APP_SCRIPT_PATH,
      nav: sessionNav({
        id,
        from,
        to,
        total,
        live: onLastPage,
        parent: analysis.header?.parentSession ?? null,
        forks: options.forks,
      }),
    },
  })
  const parts = [
    renderer.begin({
      id,
      session: id,
      header: analysis.header,
      file: `session ${id}`,
      events: total,
      pending: analysis.pending.length,
      exportedAt: options.clock(),
      stats: counter.finish(),
      sourceRecords: { count: 0, shown: false },
    }),
  ]
  for (const event of page) parts.push(renderer.event(viewEvent(event, analysis)))
  const damage =
    onLastPage && analysis.damage !== null ? errorJson(analysis.damage, options.errorContext) : null
  parts.push(renderer.end({ damage }))
  return parts.join('')
}

/**
 * The events after `afterSeq`, rendered as the session page renders them (for the live feed).
 *
 * @param store - The core store.
 * @param id - The session.
 * @param afterSeq - The last seq the browser has.
 * @returns The HTML of the newer events and the last seq they reach (`afterSeq` when none).
 */
export async function liveFragment(
  store: SessionStore,
  id: string,
  afterSeq: number,
): Promise<{ readonly html: string; readonly lastSeq: number }> {
  const { analysis, kept: newer } = await firstPass(store, id, (seq) => seq > afterSeq)
  if (newer.length === 0) return { html: '', lastSeq: afterSeq }
  const sizer = new PageSizer({ showSourceRecords: false })
  for (const event of newer) sizer.add(event)
  const renderer = new HtmlRenderer({ plan: sizer.plan(Math.floor(PAGE_BUDGET_BYTES * EVENT_SHARE)) })
  renderer.begin({
    id,
    session: id,
    header: analysis.header,
    file: `session ${id}`,
    events: analysis.events,
    pending: 0,
    exportedAt: '',
    sourceRecords: { count: 0, shown: false },
  })
  const html = newer.map((event) => renderer.event(viewEvent(event, analysis))).join('')
  return { html, lastSeq: newer.at(-1)!.seq }
}
