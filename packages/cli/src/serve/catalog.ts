/**
 * The session list of `agent-ledger serve`: every session's header from the store's listing
 * (cheap: header lines, no log read), filtered and sorted, one page at a time. Filters and
 * sorts the headers answer (source, cwd, dates, forked, size) cost nothing more; the ones
 * that need the log itself (tokens, duration, open turn, damaged) scan each listed session
 * once with the `stats` counter and keep the counts until the session changes.
 */
import type { SessionStore, SessionSummary } from '@agent-ledger/session-store'
import { SessionStoreError } from '@agent-ledger/session-store'

import { filesOf } from '../session-path.ts'
import { StatsCounter } from '../session-stats.ts'
import type { SessionStats } from '../session-stats.ts'
import { listAllSessions } from '../store-target.ts'

/** Sessions on one page of the list. */
export const LIST_PAGE_SIZE = 50

/** What the list can be sorted by; `tokens` and `duration` scan the logs. */
export const SORTS = ['newest', 'oldest', 'size', 'tokens', 'duration'] as const
export type Sort = (typeof SORTS)[number]

/** Status filters; `open-turn` and `damaged` scan the logs, `forked` reads the header. */
export const STATUSES = ['any', 'open-turn', 'damaged', 'forked'] as const
export type Status = (typeof STATUSES)[number]

/** The query of the list page, from its URL. */
export interface ListQuery {
  /** `any`, `native`, `imported`, or an importer's format name (`claude-code`, `codex`, ...). */
  readonly source: string
  readonly cwd: string
  /** `YYYY-MM-DD` (inclusive) or empty. */
  readonly from: string
  readonly to: string
  readonly status: Status
  readonly sort: Sort
  /** 1-based. */
  readonly page: number
}

/** One row of the list. */
export interface SessionRow {
  readonly id: string
  readonly createdAt: string
  readonly updatedAt: string | null
  readonly cwd: string | null
  /** `native`, or the importer's format name. */
  readonly source: string
  readonly parent: string | null
  /** Log bytes (a directory store) or null. */
  readonly bytes: number | null
  /** Event count when the backend lists it (a database), or from a scan. */
  readonly events: number | null
  /** Set when the row was scanned. */
  readonly scan: ScanFacts | null
}

/** What a scan of one log adds. */
export interface ScanFacts {
  readonly tokens: number
  readonly durationMs: number
  readonly openTurn: boolean
  /** The damage's code, or null. */
  readonly damage: string | null
  readonly events: number
}

/** One page of the list, and what it cost. */
export interface ListPage {
  readonly rows: readonly SessionRow[]
  /** Sessions that matched the filters (all pages). */
  readonly matched: number
  readonly pages: number
  /** Sessions the listing could not summarize (a refused header...): id and error code. */
  readonly problems: readonly { readonly id: string; readonly code: string }[]
  /** The formats seen, for the source filter. */
  readonly sources: readonly string[]
  /** True when the query needed every log read (cached per session until it changes). */
  readonly scanned: boolean
}

/** The source of a session: its importer's format, or `native`. */
function sourceOf(summary: SessionSummary): string {
  const source = summary.header.metadata?.['source']
  if (typeof source === 'object' && source !== null && !Array.isArray(source)) {
    const format = (source as Record<string, unknown>)['format']
    return typeof format === 'string' ? format : 'imported'
  }
  return 'native'
}

function needsScan(query: ListQuery): boolean {
  return (
    query.sort === 'tokens' ||
    query.sort === 'duration' ||
    query.status === 'open-turn' ||
    query.status === 'damaged'
  )
}

/** A date filter's bound: the day's first or last millisecond, or null when empty or not a date. */
function dayBound(day: string, end: boolean): number | null {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) return null
  const start = Date.parse(`${day}T00:00:00.000Z`)
  return Number.isNaN(start) ? null : end ? start + 86_400_000 - 1 : start
}

/** The list of one store, with the scans it has made. */
export class Catalog {
  readonly #store: SessionStore
  readonly #files: boolean
  /** Scan facts by session id, with the version (updatedAt, bytes, events) they were made at. */
  readonly #scans = new Map<string, { readonly version: string; readonly facts: ScanFacts }>()

  /**
   * @param store - The core store.
   * @param files - True for a directory store (log sizes come from its files).
   */
  constructor(store: SessionStore, files: boolean) {
    this.#store = store
    this.#files = files
  }

  /**
   * One page of the list for a query.
   *
   * @param query - Filters, sort and page.
   * @param signal - Aborts the listing and scans.
   */
  async page(query: ListQuery, signal?: AbortSignal): Promise<ListPage> {
    const listing = await listAllSessions(this.#store)
    const problems = listing.problems.map((problem) => ({ id: problem.id, code: problem.error.code }))
    const rows: SessionRow[] = []
    for (const summary of listing.sessions) rows.push(await this.#row(summary))
    const sources = [...new Set(rows.map((row) => row.source))].sort()
    const from = dayBound(query.from, false)
    const to = dayBound(query.to, true)
    const cwd = query.cwd.trim()
    let matched = rows.filter((row) => {
      if (query.source === 'native' && row.source !== 'native') return false
      if (query.source === 'imported' && row.source === 'native') return false
      if (!['any', 'native', 'imported'].includes(query.source) && row.source !== query.source) return false
      if (cwd !== '' && !(row.cwd ?? '').includes(cwd)) return false
      const created = Date.parse(row.createdAt)
      if (from !== null && !(created >= from)) return false
      if (to !== null && !(created <= to)) return false
      if (query.status === 'forked' && row.parent === null) return false
      return true
    })
    const scanned = needsScan(query)
    if (scanned) {
      const withScans: SessionRow[] = []
      for (const row of matched) withScans.push({ ...row, scan: await this.#scan(row, signal) })
      matched = withScans.filter((row) => {
        if (query.status === 'open-turn') return row.scan?.openTurn === true
        if (query.status === 'damaged') return row.scan?.damage !== null
        return true
      })
    }
    const created = (row: SessionRow): number => Date.parse(row.createdAt) || 0
    const size = (row: SessionRow): number => row.bytes ?? row.events ?? 0
    const key: Record<Sort, (row: SessionRow) => number> = {
      newest: (row) => -created(row),
      oldest: created,
      size: (row) => -size(row),
      tokens: (row) => -(row.scan?.tokens ?? 0),
      duration: (row) => -(row.scan?.durationMs ?? 0),
    }
    const by = key[query.sort]
    matched.sort((a, b) => by(a) - by(b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    const pages = Math.max(1, Math.ceil(matched.length / LIST_PAGE_SIZE))
    const page = Math.min(Math.max(1, query.page), pages)
    return {
      rows: matched.slice((page - 1) * LIST_PAGE_SIZE, page * LIST_PAGE_SIZE),
      matched: matched.length,
      pages,
      problems,
      sources,
      scanned,
    }
  }

  /**
   * The sessions forked from `id` (their header names it as the parent), from the listing.
   *
   * @param id - The parent session.
   */
  async forksOf(id: string): Promise<string[]> {
    const listing = await listAllSessions(this.#store)
    return listing.sessions
      .filter((summary) => summary.header.parentSession === id)
      .map((summary) => summary.id)
      .sort()
  }

  async #row(summary: SessionSummary): Promise<SessionRow> {
    let bytes: number | null = null
    if (this.#files) {
      try {
        const files = await filesOf(this.#store).sessionFiles(summary.id)
        bytes = files.files.find((entry) => entry.current)?.bytes ?? null
      } catch (error) {
        if (!SessionStoreError.is(error)) throw error
      }
    }
    return {
      id: summary.id,
      createdAt: summary.header.createdAt,
      updatedAt: summary.updatedAt ?? null,
      cwd: summary.header.cwd ?? null,
      source: sourceOf(summary),
      parent: summary.header.parentSession ?? null,
      bytes,
      events: summary.events ?? null,
      scan: null,
    }
  }

  /** The scan facts of a row: from the cache when the session has not changed since. */
  async #scan(row: SessionRow, signal: AbortSignal | undefined): Promise<ScanFacts> {
    const version = `${row.updatedAt ?? ''}|${row.bytes ?? ''}|${row.events ?? ''}`
    const cached = this.#scans.get(row.id)
    if (cached !== undefined && cached.version === version) return cached.facts
    const counter = new StatsCounter(row.id)
    let damage: string | null = null
    try {
      for await (const event of this.#store.readEvents(row.id, { signal })) counter.add(event)
    } catch (error) {
      if (!SessionStoreError.is(error) || signal?.aborted === true) throw error
      damage = error.code
    }
    const stats: SessionStats = counter.finish()
    const facts: ScanFacts = {
      tokens: stats.inputTokens + stats.outputTokens,
      durationMs: stats.durationMs,
      openTurn: stats.perTurn.at(-1)?.durationMs === null,
      damage,
      events: stats.events,
    }
    this.#scans.set(row.id, { version, facts })
    return facts
  }
}
