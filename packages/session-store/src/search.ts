/**
 * `store.search`: checks the options, takes candidate lines from the backend's `search`
 * capability (an index) or, without one, from a streaming scan of every session through
 * the port, decodes each with the core's checks, runs the one matcher and pages the hits.
 * Memory: one page of hits, one batch of candidates (the scan: one line) and the list of
 * session ids.
 */
import type { LoggedEvent } from '@agent-ledger/session-events'

import { invalidOption, isAborted, throwIfAborted } from './checks.ts'
import { decodeEventLine } from './event-codec.ts'
import { assertSessionId } from './header.ts'
import type { SearchCandidate } from './port.ts'
import type { CoreContext } from './scan.ts'
import {
  compileQuery,
  decodeCursor,
  encodeCursor,
  parseQuery,
  SEARCH_FIELDS,
  searchableFields,
  snippetOf,
} from './search-query.ts'
import type { SearchPosition } from './search-query.ts'
import { SessionStoreError, SessionStoreErrorCode } from './session-store-error.ts'
import type { SearchHit, SearchOptions, SearchPage, SearchUnsearched } from './store-api.ts'
import type { SessionKeyState } from './encryption.ts'
import { readHeader } from './scan.ts'

const DEFAULT_LIMIT = 50
const MAX_LIMIT = 1000
const MAX_SESSION_IDS = 1000
/** Candidates asked of an index per call. */
const CANDIDATE_BATCH = 256
/** Sessions per listing page while the scan gathers ids (the listing's maximum). */
const LIST_PAGE = 1000

interface Checked {
  readonly limit: number
  readonly after: SearchPosition | null
  readonly sessionIds: readonly string[] | null
}

function checkOptions(options: SearchOptions): Checked {
  if (typeof options !== 'object' || options === null) throw invalidOption('options', 'an object', options)
  const limit = options.limit ?? DEFAULT_LIMIT
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    throw invalidOption('limit', `an integer from 1 to ${MAX_LIMIT}`, limit)
  }
  const after = options.cursor === undefined || options.cursor === null ? null : decodeCursor(options.cursor)
  let sessionIds: string[] | null = null
  if (options.sessionIds !== undefined) {
    if (!Array.isArray(options.sessionIds) || options.sessionIds.length > MAX_SESSION_IDS) {
      throw invalidOption(
        'sessionIds',
        `an array of at most ${MAX_SESSION_IDS} session ids`,
        options.sessionIds,
      )
    }
    for (const id of options.sessionIds) assertSessionId(id)
    sessionIds = [...new Set(options.sessionIds)].sort(compareIds)
  }
  return { limit, after, sessionIds }
}

function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** True when `hit` comes after `position` in hit order (session id, seq, field). */
function isAfter(position: SearchPosition | null, hit: SearchPosition): boolean {
  if (position === null) return true
  const bySession = compareIds(hit.sessionId, position.sessionId)
  if (bySession !== 0) return bySession > 0
  return hit.seq !== position.seq ? hit.seq > position.seq : hit.field > position.field
}

/**
 * True for an error that ends one session's part of a search (the session is skipped): the
 * session is gone, or its log is damaged (a line code, or one of the backend's `damageCodes`).
 *
 * @param error - What reading the session threw.
 * @param damageCodes - The backend's own damage codes.
 */
export function isMissingOrDamage(error: unknown, damageCodes: readonly string[]): boolean {
  if (!(error instanceof SessionStoreError)) return false
  const code: string = error.code
  return (
    code === SessionStoreErrorCode.SESSION_NOT_FOUND ||
    code === SessionStoreErrorCode.CORRUPT_LINE ||
    code === SessionStoreErrorCode.LINE_TOO_LARGE ||
    damageCodes.includes(code)
  )
}

/** Every session id from `from` on (sorted), or the requested ones. */
async function scanIds(
  context: CoreContext,
  checked: Checked,
  signal: SearchOptions['signal'],
): Promise<readonly string[]> {
  const first = checked.after?.sessionId
  const keep = (id: string): boolean => first === undefined || id >= first
  if (checked.sessionIds !== null) return checked.sessionIds.filter(keep)
  const ids: string[] = []
  let cursor: string | undefined
  for (;;) {
    const page = await context.backend.list({ limit: LIST_PAGE, cursor, signal })
    for (const entry of page.entries) if (keep(entry.id)) ids.push(entry.id)
    if (page.cursor === null) break
    cursor = page.cursor
  }
  return [...new Set(ids)].sort(compareIds)
}

/** The streaming scan: every durable line of every session, in hit order. */
async function* scanCandidates(
  context: CoreContext,
  checked: Checked,
  signal: SearchOptions['signal'],
): AsyncGenerator<SearchCandidate> {
  const damageCodes = context.backend.damageCodes ?? []
  for (const sessionId of await scanIds(context, checked, signal)) {
    const fromSeq = sessionId === checked.after?.sessionId ? checked.after.seq : 0
    try {
      for await (const stored of context.backend.read(sessionId, { fromSeq, signal })) {
        yield { sessionId, stored }
      }
    } catch (error) {
      // A session deleted since the listing, or damage: its good lines were searched.
      if (isAborted(signal) || !isMissingOrDamage(error, damageCodes)) throw error
    }
  }
}

/** The index's candidates, batch by batch. */
async function* indexCandidates(
  context: CoreContext,
  checked: Checked & {
    readonly fragments: readonly string[]
    /** Told each batch's sessions before they are yielded. */
    readonly onBatch: (sessionIds: ReadonlySet<string>) => void
  },
  signal: SearchOptions['signal'],
): AsyncGenerator<SearchCandidate> {
  const capability = context.backend.capabilities.search
  if (capability === undefined) return
  let from = checked.after === null ? null : { sessionId: checked.after.sessionId, seq: checked.after.seq }
  // The first batch is the page: a query whose candidates are hits (a rare word) stops
  // reading sessions once it is full, where a batch of CANDIDATE_BATCH would read on past it.
  let limit = Math.min(CANDIDATE_BATCH, checked.limit)
  for (;;) {
    const batch = await capability.candidates({
      fragments: checked.fragments,
      from,
      sessionIds: checked.sessionIds,
      limit,
      signal,
    })
    limit = CANDIDATE_BATCH
    checked.onBatch(new Set(batch.candidates.map((candidate) => candidate.sessionId)))
    yield* batch.candidates
    const last = batch.candidates.at(-1)
    if (batch.done || last === undefined) return
    from = { sessionId: last.sessionId, seq: last.stored.seq + 1 }
  }
}

function decoded(
  context: CoreContext,
  candidate: SearchCandidate,
  keys: SessionKeyState,
): LoggedEvent | null {
  const { sessionId, stored } = candidate
  try {
    return decodeEventLine(stored, {
      ...context,
      keys,
      sessionId,
      expectedSeq: stored.seq,
      lastGoodSeq: stored.seq - 1,
    })
  } catch (error) {
    if (error instanceof SessionStoreError) return null // a damaged line is not searchable
    throw error
  }
}

/**
 * Runs one page of a search.
 *
 * @param context - The store's backend and checks.
 * @param query - The query text.
 * @param options - Limit, cursor, sessions, signal.
 * @returns The page.
 */
export async function searchSessions(
  context: CoreContext,
  query: string,
  options: SearchOptions = {},
): Promise<SearchPage> {
  const matcher = compileQuery(parseQuery(query))
  const checked = checkOptions(options)
  const { signal } = options
  const what = 'Searching sessions'
  throwIfAborted(signal, what, 'no hits were returned')
  if (checked.sessionIds !== null && checked.sessionIds.length === 0) return { hits: [], nextCursor: null }
  const hits: SearchHit[] = []
  const headers = sessionKeys(context, signal)
  // An index sees stored text only: a store that can open encrypted sessions scans them instead.
  const source =
    context.backend.capabilities.search === undefined || context.keys.encryption !== null
      ? scanCandidates(context, checked, signal)
      : indexCandidates(
          context,
          { ...checked, fragments: matcher.query.fragments, onBatch: headers.prefetch },
          signal,
        )
  const unsearched: SearchUnsearched[] = []
  const page = (nextCursor: string | null): SearchPage =>
    unsearched.length === 0 ? { hits, nextCursor } : { hits, nextCursor, unsearched }
  try {
    for await (const candidate of source) {
      throwIfAborted(signal, what, 'no hits were returned')
      const keys = await headers.keysOf(candidate.sessionId)
      if (keys === 'gone') continue
      if (keys !== null && keys.cipher === null) {
        if (!unsearched.some((entry) => entry.sessionId === candidate.sessionId)) {
          unsearched.push({
            sessionId: candidate.sessionId,
            code: 'KEY_UNAVAILABLE',
            keyId: keys.header.keyId,
          })
        }
        continue
      }
      // A sealed line's stored text is ciphertext: only a plain one can be ruled out unread.
      if (keys === null && !matcher.lineMayMatch(candidate.stored.line)) continue
      const event = decoded(context, candidate, keys)
      if (event === null) continue
      for (const { field, text } of searchableFields(event)) {
        const position = {
          sessionId: candidate.sessionId,
          seq: event.seq,
          field: SEARCH_FIELDS.indexOf(field),
        }
        if (!isAfter(checked.after, position)) continue
        const span = matcher.match(text)
        if (span === null) continue
        hits.push({
          sessionId: candidate.sessionId,
          seq: event.seq,
          eventType: event.type,
          field,
          ...snippetOf(text, span),
          at: event.time,
        })
        if (hits.length === checked.limit) {
          return page(encodeCursor(position))
        }
      }
    }
    return page(null)
  } finally {
    headers.stop()
  }
}

/** Header reads a batch's prefetch keeps in flight at once. */
const HEADERS_AHEAD = 8

/**
 * The key state of each session a search reads, its header read once per search: null for a
 * plain session, `gone` for one deleted since it was listed or indexed (or whose header is
 * damaged). `prefetch` starts the header reads of a batch's sessions, {@link HEADERS_AHEAD}
 * at a time, so a page of hits in many sessions waits for about one round trip per
 * {@link HEADERS_AHEAD} sessions instead of one per session.
 */
function sessionKeys(
  context: CoreContext,
  signal: SearchOptions['signal'],
): {
  keysOf: (sessionId: string) => Promise<SessionKeyState | 'gone'>
  prefetch: (sessionIds: ReadonlySet<string>) => void
  /** Ends the prefetch (the search returned): no read starts after it. */
  stop: () => void
} {
  const known = new Map<string, Promise<SessionKeyState | 'gone'>>()
  let stopped = false
  const read = (sessionId: string): Promise<SessionKeyState | 'gone'> =>
    readHeader(context, sessionId, { signal, keyRequired: false }).then(
      ({ keys }) => keys,
      (error: unknown) => {
        // Deleted since, or a damaged header: as the scan does, not searchable, not fatal.
        if (!isAborted(signal) && isMissingOrDamage(error, context.backend.damageCodes ?? []))
          return 'gone' as const
        throw error
      },
    )
  const keysOf = (sessionId: string): Promise<SessionKeyState | 'gone'> => {
    let state = known.get(sessionId)
    if (state === undefined) {
      state = read(sessionId)
      known.set(sessionId, state)
    }
    return state
  }
  const prefetch = (sessionIds: ReadonlySet<string>): void => {
    const waiting = [...sessionIds].filter((id) => !known.has(id))
    const next = (): void => {
      const id = stopped ? undefined : waiting.shift()
      if (id === undefined || known.has(id)) return id === undefined ? undefined : next()
      // A failure is reported when the search awaits this session; a page that ends first never does.
      keysOf(id).then(next, next)
    }
    for (let lane = 0; lane < HEADERS_AHEAD; lane += 1) next()
  }
  return {
    keysOf,
    prefetch,
    stop: () => {
      stopped = true
    },
  }
}
