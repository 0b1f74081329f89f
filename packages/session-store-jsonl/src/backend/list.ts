/**
 * Listing sessions of a JSONL root: a directory listing, one `stat` per session for the
 * order, and a header read only for the sessions of the page. Keyset pagination on
 * (log mtime desc, id asc); one broken session is an entry with `problem`, never a failed listing.
 * A session with only an older generation (v0) is listed with its migrated header, read
 * through the in-memory migration (which scans the v0 file).
 */
import { isSessionId } from '@agent-ledger/session-events'
import { join } from 'node:path'

import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type {
  ListEntry,
  ListPage,
  ListQuery,
  SessionStoreErrorLike,
  StoredHeader,
} from '@agent-ledger/session-store'

import { errnoOf } from '../fs-errors.ts'
import { listGenerations } from '../generations.ts'
import { locateSessionLog } from '../zstd-session.ts'
import { readHeaderLine } from './line-scan.ts'
import { portError, throwIfAborted, toPortError } from './port-errors.ts'
import { checkRoot, directoryIn } from './session-dirs.ts'
import { openLog } from './open-log.ts'
import { readOlderHeader } from './older-read.ts'
import type { OlderReadContext } from './older-read.ts'

/** What {@link listSessions} needs (the registry: an older generation's header is its migrated one). */
export type ListContext = OlderReadContext

interface Cursor {
  readonly u: number
  readonly i: string
}

interface Candidate {
  readonly id: string
  /** Log mtime in ms (the order key); 0 when unknown (listed last). */
  readonly u: number
  readonly problem?: SessionStoreErrorLike
  /** Only an older generation (v0 `session.jsonl`): listed with its migrated header, as reads see it. */
  readonly older?: true
}

function parseCursor(cursor: string): Cursor {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown
    if (
      typeof value === 'object' &&
      value !== null &&
      typeof (value as Cursor).u === 'number' &&
      typeof (value as Cursor).i === 'string'
    ) {
      return value as Cursor
    }
  } catch {
    // fall through
  }
  throw portError(SessionStoreErrorCode.INVALID_OPTION, {
    message: `List cursor ${JSON.stringify(cursor)} was not made by the JSONL backend: expected the cursor of a previous page.`,
    details: { option: 'cursor' },
  })
}

function makeCursor(candidate: Candidate): string {
  return Buffer.from(JSON.stringify({ u: candidate.u, i: candidate.id }), 'utf8').toString('base64url')
}

/** Most recently updated first, then by id. */
function compare(a: Candidate, b: Candidate): number {
  if (a.u !== b.u) return a.u > b.u ? -1 : 1
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0
}

/**
 * A session that vanished between the root's listing and its own reads: deleted meanwhile
 * (renamed to its tombstone), so it is not listed at all rather than listed as a problem.
 */
function vanished(error: unknown): boolean {
  if (errnoOf(error) === 'ENOENT') return true
  return SessionStoreError.is(
    toPortError(error, { action: 'list a session' }),
    SessionStoreErrorCode.SESSION_NOT_FOUND,
  )
}

async function candidateOf(context: ListContext, id: string): Promise<Candidate | null> {
  const { fs, root } = context
  try {
    // A symlink is a problem entry (SYMLINK_REFUSED); anything else that is not a directory is no session.
    const directory = await directoryIn(fs, root, id)
    const generations = await listGenerations(fs, directory)
    if (generations.length === 0) return null
    if (!generations.some((generation) => generation.version === 4)) {
      const newest = generations.reduce((a, b) => (b.version > a.version ? b : a))
      return { id, u: (await fs.lstat(join(directory, newest.file))).mtimeMs, older: true }
    }
    const log = await locateSessionLog({ fs, directory, id, mode: 'read', limits: context.limits })
    const logStats = await fs.lstat(join(directory, log.name))
    return { id, u: logStats.mtimeMs }
  } catch (error) {
    if (vanished(error)) return null
    return { id, u: 0, problem: toPortError(error, { sessionId: id, action: `list session ${id}` }) }
  }
}

/** A listed session's entry from its header line, with the fields the filters compare. */
function headerEntry(
  base: { readonly id: string; readonly updatedAt?: string },
  header: StoredHeader,
): ListEntry & { cwd?: unknown; parent?: unknown } {
  let parsed: Record<string, unknown> = {}
  try {
    const value = JSON.parse(header.line) as unknown
    if (typeof value === 'object' && value !== null) parsed = value as Record<string, unknown>
  } catch {
    // The core reports a header it cannot parse; the filters see no fields.
  }
  return {
    ...base,
    headerLine: header.line,
    location: header.location,
    cwd: Object.hasOwn(parsed, 'cwd') ? parsed['cwd'] : undefined,
    parent: Object.hasOwn(parsed, 'parentSession') ? parsed['parentSession'] : undefined,
  }
}

async function entryOf(
  context: ListContext,
  candidate: Candidate,
): Promise<(ListEntry & { cwd?: unknown; parent?: unknown }) | null> {
  const updatedAt = Number.isFinite(candidate.u) ? new Date(candidate.u).toISOString() : undefined
  const base = { id: candidate.id, ...(updatedAt === undefined ? {} : { updatedAt }) }
  if (candidate.problem !== undefined) return { ...base, problem: candidate.problem }
  try {
    if (candidate.older === true) return headerEntry(base, await readOlderHeader(context, candidate.id))
    const opened = await openLog(context, candidate.id)
    try {
      return headerEntry(base, await readHeaderLine(opened.adapter, opened.handle, candidate.id))
    } finally {
      await opened.handle.close().catch(() => undefined)
    }
  } catch (error) {
    if (vanished(error)) return null
    return {
      ...base,
      problem: toPortError(error, { sessionId: candidate.id, action: `list session ${candidate.id}` }),
    }
  }
}

/**
 * One page of the sessions under the root.
 *
 * @param context - File system, root and limits.
 * @param query - Cursor, limit, filters and signal.
 * @returns The page.
 * @throws {@link SessionStoreError} `INVALID_OPTION` (limit, cursor), `ABORTED`, `BACKEND_FAILED` (an unreadable root).
 */
export async function listSessions(context: ListContext, query: ListQuery): Promise<ListPage> {
  throwIfAborted(query.signal, 'Listing sessions')
  if (!Number.isSafeInteger(query.limit) || query.limit <= 0) {
    throw portError(SessionStoreErrorCode.INVALID_OPTION, {
      message: `List limit must be a positive integer, found ${String(query.limit)}.`,
      details: { option: 'limit' },
    })
  }
  const cursor = query.cursor === undefined ? undefined : parseCursor(query.cursor)
  if (!(await checkRoot(context.fs, context.root, false))) return { entries: [], cursor: null }
  let names: string[]
  try {
    names = await context.fs.readdir(context.root)
  } catch (error) {
    throw toPortError(error, { action: `list the store root ${context.root}` })
  }
  const filter = query.filter ?? {}
  const since = filter.updatedSince === undefined ? undefined : Date.parse(filter.updatedSince)
  const candidates: Candidate[] = []
  for (const name of names) {
    if (!isSessionId(name)) continue
    throwIfAborted(query.signal, 'Listing sessions')
    const candidate = await candidateOf(context, name)
    if (candidate === null) continue
    if (since !== undefined && !(candidate.u >= since)) continue
    if (cursor !== undefined && compare(candidate, { id: cursor.i, u: cursor.u }) <= 0) continue
    candidates.push(candidate)
  }
  candidates.sort(compare)
  const entries: ListEntry[] = []
  let last: Candidate | undefined
  for (const candidate of candidates) {
    throwIfAborted(query.signal, 'Listing sessions')
    const found = await entryOf(context, candidate)
    if (found === null) continue
    const { cwd, parent, ...entry } = found
    if (filter.cwd !== undefined && cwd !== filter.cwd) continue
    if (filter.parentSession !== undefined && parent !== filter.parentSession) continue
    if (entries.length === query.limit) return { entries, cursor: makeCursor(last!) }
    entries.push(entry)
    last = candidate
  }
  return { entries, cursor: null }
}
