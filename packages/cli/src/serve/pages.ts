/**
 * The list and search pages of `agent-ledger serve`, as HTML strings (every store text
 * escaped with the export's `escapeHtml`).
 */
import type { SearchHit, SearchPage } from '@agent-ledger/session-store'

import { duration } from '../session-stats.ts'
import { formatBytes, formatCount } from '../terminal-text.ts'
import { escapeHtml } from '../transcript/html/text.ts'
import { LIST_PAGE_SIZE, SORTS, STATUSES } from './catalog.ts'
import type { ListPage, ListQuery, Sort, Status } from './catalog.ts'
import { appPage, sessionHref } from './layout.ts'

/** The list query of a URL; unknown values fall back to the defaults. */
export function listQueryOf(url: URL): ListQuery {
  const get = (name: string): string => url.searchParams.get(name) ?? ''
  const sort = get('sort')
  const status = get('status')
  const page = Number.parseInt(get('page'), 10)
  return {
    source: get('source') === '' ? 'any' : get('source'),
    cwd: get('cwd'),
    from: get('from'),
    to: get('to'),
    status: (STATUSES as readonly string[]).includes(status) ? (status as Status) : 'any',
    sort: (SORTS as readonly string[]).includes(sort) ? (sort as Sort) : 'newest',
    page: Number.isSafeInteger(page) && page > 0 ? page : 1,
  }
}

function queryString(query: ListQuery, page: number): string {
  const params = new URLSearchParams()
  if (query.source !== 'any') params.set('source', query.source)
  if (query.cwd !== '') params.set('cwd', query.cwd)
  if (query.from !== '') params.set('from', query.from)
  if (query.to !== '') params.set('to', query.to)
  if (query.status !== 'any') params.set('status', query.status)
  if (query.sort !== 'newest') params.set('sort', query.sort)
  if (page > 1) params.set('page', String(page))
  const text = params.toString()
  return text === '' ? '/' : `/?${text}`
}

function option(value: string, label: string, selected: string): string {
  return `<option value="${escapeHtml(value)}"${value === selected ? ' selected' : ''}>${escapeHtml(label)}</option>`
}

const SORT_LABELS: Record<Sort, string> = {
  newest: 'newest first',
  oldest: 'oldest first',
  size: 'size',
  tokens: 'tokens (scans logs)',
  duration: 'duration (scans logs)',
}
const STATUS_LABELS: Record<Status, string> = {
  any: 'any',
  'open-turn': 'open turn (scans logs)',
  damaged: 'damaged (scans logs)',
  forked: 'forked',
}

/**
 * The session list page.
 *
 * @param query - The filters, sort and page asked for.
 * @param page - What the catalog found.
 * @param where - The store as the page names it.
 */
export function listPage(query: ListQuery, page: ListPage, where: string): string {
  const sources = ['any', 'native', 'imported', ...page.sources.filter((source) => source !== 'native')]
  const filters = [
    '<form class="filters" method="get" action="/">',
    `<label>source<select name="source">${[...new Set(sources)].map((source) => option(source, source, query.source)).join('')}</select></label>`,
    `<label>cwd contains<input name="cwd" value="${escapeHtml(query.cwd)}"></label>`,
    `<label>created from<input type="date" name="from" value="${escapeHtml(query.from)}"></label>`,
    `<label>created to<input type="date" name="to" value="${escapeHtml(query.to)}"></label>`,
    `<label>status<select name="status">${STATUSES.map((status) => option(status, STATUS_LABELS[status], query.status)).join('')}</select></label>`,
    `<label>sort<select name="sort">${SORTS.map((sort) => option(sort, SORT_LABELS[sort], query.sort)).join('')}</select></label>`,
    '<button type="submit">apply</button>',
    '</form>',
  ].join('')
  const rows = page.rows.map((row) => {
    const size =
      row.bytes !== null
        ? formatBytes(row.bytes)
        : row.events !== null
          ? `${formatCount(row.events)} events`
          : '?'
    const badges = [
      row.parent === null ? '' : `<span class="badge">fork of ${escapeHtml(row.parent)}</span>`,
      row.scan?.openTurn === true ? '<span class="badge">open turn</span>' : '',
      row.scan?.damage != null ? `<span class="badge error">${escapeHtml(row.scan.damage)}</span>` : '',
    ].join(' ')
    const scanned =
      row.scan === null
        ? '<td class="num"></td><td class="num"></td>'
        : `<td class="num">${formatCount(row.scan.tokens)}</td><td class="num">${escapeHtml(duration(row.scan.durationMs))}</td>`
    return `<tr data-session="${escapeHtml(row.id)}"><td><a href="${escapeHtml(sessionHref(row.id))}">${escapeHtml(row.id)}</a> ${badges}</td><td>${escapeHtml(row.createdAt)}</td><td>${escapeHtml(row.source)}</td><td>${escapeHtml(row.cwd ?? '')}</td><td class="num">${escapeHtml(size)}</td>${scanned}</tr>`
  })
  const current = Math.min(query.page, page.pages)
  const pager = [
    current > 1
      ? `<a rel="prev" href="${escapeHtml(queryString(query, current - 1))}">&larr; previous</a>`
      : '',
    `<span>page ${current} of ${page.pages} (${formatCount(page.matched)} session${page.matched === 1 ? '' : 's'}, ${LIST_PAGE_SIZE} a page)</span>`,
    current < page.pages
      ? `<a rel="next" href="${escapeHtml(queryString(query, current + 1))}">next &rarr;</a>`
      : '',
  ].join('')
  const problems =
    page.problems.length === 0
      ? ''
      : `<details><summary>${page.problems.length} session(s) could not be listed</summary><ul>${page.problems.map((problem) => `<li><code>${escapeHtml(problem.id)}</code>: ${escapeHtml(problem.code)}</li>`).join('')}</ul></details>`
  const body = [
    `<p class="note">Store ${escapeHtml(where)}. ${page.scanned ? 'This view read every listed log (tokens, duration, open turns and damage come from the events; counts are kept until a session changes).' : 'Listed from the session headers only (no log is read).'}</p>`,
    filters,
    `<table class="sessions"><thead><tr><th>session</th><th>created</th><th>source</th><th>cwd</th><th>size</th><th>tokens</th><th>duration</th></tr></thead><tbody>${rows.join('')}</tbody></table>`,
    rows.length === 0 ? '<p class="note">No session matches.</p>' : '',
    `<div class="pager">${pager}</div>`,
    problems,
  ].join('\n')
  return appPage('Sessions', body)
}

/** A snippet with its match marked (both halves escaped). */
function marked(hit: SearchHit): string {
  const { start, end } = hit.match
  const safe = start >= 0 && end >= start && end <= hit.snippet.length
  if (!safe) return escapeHtml(hit.snippet)
  return `${escapeHtml(hit.snippet.slice(0, start))}<mark>${escapeHtml(hit.snippet.slice(start, end))}</mark>${escapeHtml(hit.snippet.slice(end))}`
}

/** The link of a hit: the session page holding the seq, scrolled to it. */
function hitHref(hit: Pick<SearchHit, 'sessionId' | 'seq'>): string {
  return `${sessionHref(hit.sessionId)}?seq=${hit.seq}#seq-${hit.seq}`
}

/**
 * The search page: the box, the hits in context (linked to their seq), the next page.
 *
 * @param query - What was searched (empty: the page shows only the box).
 * @param result - The hits and the next cursor, or null when nothing was searched.
 * @param refused - The store's message when it refused the query.
 */
export function searchPage(query: string, result: SearchPage | null, refused?: string): string {
  if (result === null) {
    const note =
      refused === undefined
        ? 'Search message text, tool names, arguments and results across every session: words match anywhere (any case), all of them in one field; "quoted words" match in order.'
        : `The store refused this search: ${escapeHtml(refused)}`
    return appPage('Search', `<p class="note">${note}</p>`, query)
  }
  const hits = result.hits.map(
    (hit) =>
      `<li><a href="${escapeHtml(hitHref(hit))}"><code>${escapeHtml(hit.sessionId)}</code> #${hit.seq}</a> <span class="badge">${escapeHtml(hit.eventType)}</span> <span class="note">${escapeHtml(hit.field)}${hit.at === undefined ? '' : ` · ${escapeHtml(hit.at)}`}</span><p class="snippet">${marked(hit)}</p></li>`,
  )
  const next =
    result.nextCursor === null
      ? ''
      : `<div class="pager"><a rel="next" href="${escapeHtml(`/search?${new URLSearchParams({ q: query, cursor: result.nextCursor }).toString()}`)}">more hits &rarr;</a></div>`
  const body = [
    `<p class="note">${hits.length === 0 ? 'No hits' : `${hits.length} hit${hits.length === 1 ? '' : 's'}${result.nextCursor === null ? '' : ' on this page'}`} for <strong>${escapeHtml(query)}</strong>.</p>`,
    `<ol class="hits">${hits.join('')}</ol>`,
    ...(result.unsearched ?? []).map(
      (skipped) =>
        `<p class="note">Not searched: <code>${escapeHtml(skipped.sessionId)}</code> is encrypted under key <code>${escapeHtml(skipped.keyId)}</code> and its data key is unavailable.</p>`,
    ),
    next,
  ].join('\n')
  return appPage(`Search: ${query}`, body, query)
}
