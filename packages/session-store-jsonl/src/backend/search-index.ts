/**
 * The JSONL backend's `capabilities.search`: a sidecar index per session (`search.index`,
 * records and signatures from `@agent-ledger/session-store/search-index`) that narrows the
 * lines a search reads. Only the file work is here:
 *
 * - a search reads the index in chunks, checks every record, the binding (log name, header
 *   line length and CRC) and that the last indexed line is still where the index says (seq,
 *   crc, its own checksum); reads only the blocks whose signature holds the query's
 *   trigrams, and in them only the lines holding every fragment;
 * - what the index does not cover yet is caught up in the same pass (the store's scanner,
 *   every check; each closed block appended with one `O_APPEND` write, never fsynced: the
 *   index is derived from the log) once at least 8 KB are new, else read
 *   raw and, only when a line may match, scanned with every check;
 * - a stale index (a rolled-back or replaced log) is replaced by a header-only one and
 *   rebuilt; a torn or corrupt record ends the chain there and the file is replaced by its
 *   valid prefix (temp file and rename); so an index costs time, never a missed line.
 *
 * `.zstd` logs, older generations and encrypted sessions are not indexed: they are read
 * through the backend's own `read` (an encrypted one yields one line, so the core reports it
 * `unsearched`).
 */
import { isSessionId } from '@agent-ledger/session-events'
import { join } from 'node:path'

import type {
  SearchCandidate,
  SearchCandidateQuery,
  SearchCapability,
  StoredLine,
} from '@agent-ledger/session-store'
import { fragmentBits, isMissingOrDamage } from '@agent-ledger/session-store/search-index'

import type { FileHandleOps } from '../fs-ops.ts'
import { isOlderGeneration } from './older-read.ts'
import { openLog } from './open-log.ts'
import { JSONL_DAMAGE_CODES, throwIfAborted, toPortError } from './port-errors.ts'
import { ChainCache } from './search-index-cache.ts'
import { nativeCrc32c as crc32c } from '../line-codec.ts'
import { BLOCK_BYTES, NEWLINE, RACY_MS, SessionIndex, statKey } from './search-index-file.ts'
import type { Known, SearchIndexContext, Wanted } from './search-index-file.ts'

/** Sessions read at once by one call. */
const SESSIONS_AHEAD = 8

/**
 * The capability.
 *
 * @param context - File system, root, limits and the backend's reads.
 * @returns `capabilities.search` of the JSONL backend.
 */
export function searchCapability(context: Omit<SearchIndexContext, 'known' | 'chains'>): SearchCapability {
  const full = { ...context, known: new Map<string, Known>(), chains: new ChainCache() }
  return { candidates: (query) => candidates(full, query) }
}

async function candidates(
  context: SearchIndexContext,
  query: SearchCandidateQuery,
): Promise<{ readonly candidates: readonly SearchCandidate[]; readonly done: boolean }> {
  context.assertOpen()
  const found: SearchCandidate[] = []
  const needles = query.fragments.map((fragment) => Buffer.from(fragment, 'latin1'))
  const bits = fragmentBits(query.fragments)
  const ids = await sessionIds(context, query)
  // Sessions are read SESSIONS_AHEAD at a time (each is a few small reads: the waits overlap),
  // their candidates taken in id order; a session read ahead of a full page is wasted work.
  const ahead: Promise<StoredLine[] | Error>[] = []
  const start = (id: string): Promise<StoredLine[] | Error> => {
    const fromSeq = id === query.from?.sessionId ? query.from.seq : 0
    const wanted = { needles, bits, fromSeq, limit: query.limit, signal: query.signal }
    return sessionCandidates(context, id, wanted).catch((error: unknown) =>
      error instanceof Error ? error : new Error(String(error)),
    )
  }
  for (let index = 0; index < ids.length; index += 1) {
    while (ahead.length < SESSIONS_AHEAD && index + ahead.length < ids.length)
      ahead.push(start(ids[index + ahead.length]!))
    const id = ids[index]!
    const result = await ahead.shift()!
    throwIfAborted(query.signal, 'Searching sessions')
    if (result instanceof Error) {
      // As the core's scan: a session deleted since the listing, or damage, is skipped.
      if (isMissingOrDamage(result, JSONL_DAMAGE_CODES)) continue
      await Promise.all(ahead)
      throw toPortError(result, { sessionId: id, action: `search session ${id}` })
    }
    for (const stored of result) {
      found.push({ sessionId: id, stored })
      if (found.length === query.limit) {
        await Promise.all(ahead)
        return { candidates: found, done: false }
      }
    }
  }
  return { candidates: found, done: true }
}

/** The session ids to search from `from` on, sorted (code-unit order). */
async function sessionIds(context: SearchIndexContext, query: SearchCandidateQuery): Promise<string[]> {
  const first = query.from?.sessionId
  let names: readonly string[]
  if (query.sessionIds !== null) names = query.sessionIds
  else {
    try {
      names = await context.fs.readdir(context.root)
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ENOENT') return []
      throw toPortError(error, { action: `list the store root ${context.root}` })
    }
  }
  return names.filter((name) => (first === undefined || name >= first) && isSessionId(name)).sort()
}

/** The lines of one session that may match, from `fromSeq`, at most `limit`. */
async function sessionCandidates(
  context: SearchIndexContext,
  id: string,
  wanted: Wanted,
): Promise<StoredLine[]> {
  const directory = join(context.root, id)
  const stats = await context.fs.lstat(directory).catch(() => null)
  const directoryKey = stats?.isDirectory() === true ? statKey(stats) : null
  let known = context.known.get(id)
  let handle: FileHandleOps | null = null
  if (known === undefined || known.directoryKey !== directoryKey) {
    context.known.delete(id)
    let opened
    try {
      opened = await openLog(context, id)
    } catch (error) {
      if (isOlderGeneration(error)) return readCandidates(context, id, wanted)
      throw error
    }
    handle = opened.handle
    const header =
      opened.log.encoding === 'plain'
        ? await headerLine(handle, context.limits.maxLineBytes).catch(() => null)
        : null
    if (header === null) {
      // zstd, or no whole header line (the backend's read reports it as the scan sees it).
      await handle.close().catch(() => undefined)
      return readCandidates(context, id, wanted)
    }
    known = {
      directoryKey: directoryKey ?? '',
      binding: {
        log: opened.log.name,
        headerBytes: header.length,
        headerCrc: crc32c(header),
        blockBytes: BLOCK_BYTES,
      },
      encrypted: isEncrypted(header.toString('utf8')),
      checked: null,
    }
    if (directoryKey !== null && context.now() - Math.max(stats!.mtimeMs, stats!.ctimeMs) > RACY_MS) {
      context.known.set(id, known)
    }
  }
  if (known.encrypted) {
    await handle?.close().catch(() => undefined)
    return readCandidates(context, id, wanted)
  }
  const index = new SessionIndex(context, { id, directory, known, handle })
  try {
    return await index.candidates(wanted)
  } finally {
    await index.close()
  }
}

/** Line 1 with its `\n`, or null when the log has no whole one within the line limit. */
async function headerLine(handle: FileHandleOps, maxBytes: number): Promise<Buffer | null> {
  let buffer = Buffer.allocUnsafe(2048)
  for (;;) {
    const count = await handle.read(buffer, 0, buffer.length, 0)
    const end = buffer.subarray(0, count).indexOf(NEWLINE)
    if (end !== -1) return buffer.subarray(0, end + 1)
    if (count < buffer.length || buffer.length >= maxBytes) return null
    buffer = Buffer.allocUnsafe(buffer.length * 4)
  }
}

/** A session that is not indexed: the backend's read, every line filtered (an encrypted one: one line). */
async function readCandidates(
  context: SearchIndexContext,
  id: string,
  wanted: Wanted,
): Promise<StoredLine[]> {
  const header = await context.readHeader(id)
  const encrypted = isEncrypted(header.line)
  const found: StoredLine[] = []
  const fragments = wanted.needles.map((needle) => needle.toString('latin1'))
  for await (const stored of context.read(id, { fromSeq: wanted.fromSeq, signal: wanted.signal })) {
    if (encrypted) return [stored]
    const lower = stored.line.toLowerCase()
    if (fragments.every((fragment) => lower.includes(fragment))) found.push(stored)
    if (found.length >= wanted.limit) break
  }
  return found
}

function isEncrypted(headerLine: string): boolean {
  try {
    const header = JSON.parse(headerLine) as { encryption?: unknown }
    return typeof header === 'object' && header !== null && header.encryption !== undefined
  } catch {
    return false // the core reports a header that is not JSON
  }
}
