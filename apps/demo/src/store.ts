/**
 * Where mini-agent keeps its sessions: the core store (`@agent-ledger/session-store`) over a
 * JSONL directory (`createJsonlStore`, the embedded default) or over PostgreSQL. Everything
 * goes through the core's `SessionStore`; what only a directory has (file names, sizes,
 * compress) comes from the JSONL backend's capabilities, found with `asJsonlBackend`.
 */
import { hostname } from 'node:os'
import path from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'

import type { SessionHeader } from '@agent-ledger/session-events'
import { createSessionStore, SessionStoreError } from '@agent-ledger/session-store'
import type {
  AbortSignalLike,
  ListResult,
  SessionStore,
  SessionWriter,
  VerifyReport,
} from '@agent-ledger/session-store'
import { asJsonlBackend, createJsonlStore } from '@agent-ledger/session-store-jsonl'
import type { CompressResult, JsonlBackend } from '@agent-ledger/session-store-jsonl'
import { describeConnection, openPostgresBackend } from '@agent-ledger/session-store-postgres'

/** The store named by `--root`, `--store` or `AGENT_LEDGER_STORE`. */
export type StoreLocation =
  { readonly kind: 'jsonl'; readonly root: string } | { readonly kind: 'postgres'; readonly url: string }

/** Options of {@link openStore}. */
export interface OpenStoreOptions {
  /** The writer lease length (default the core's, 30 s). */
  readonly leaseMs?: number | undefined
  /** A directory store: write new sessions as `session.v4.jsonl.zstd` (one frame per flush). */
  readonly compress?: boolean | undefined
}

/** `agent-ledger`'s lease owner for this process: unique among concurrent writers. */
function owner(): string {
  return `mini-agent@${hostname()}:${process.pid}`
}

/**
 * Opens the store at `location`.
 *
 * @param location - A JSONL root or a PostgreSQL URL.
 * @param options - The lease length; zstd for new sessions of a directory.
 * @returns The core store; close it when done.
 */
export async function openStore(
  location: StoreLocation,
  options: OpenStoreOptions = {},
): Promise<SessionStore> {
  const lease = options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }
  if (location.kind === 'jsonl') {
    return createJsonlStore({
      root: location.root,
      owner: owner(),
      ...lease,
      ...(options.compress === true ? { encoding: 'zstd' as const } : {}),
    })
  }
  const backend = await openPostgresBackend({ connectionString: location.url, applicationName: 'mini-agent' })
  return createSessionStore({
    backend,
    clock: () => new Date().toISOString(),
    owner: owner(),
    ...lease,
    sleep: (ms: number, signal?: AbortSignalLike) =>
      delay(ms, undefined, signal === undefined ? {} : { signal: signal as AbortSignal }).catch(
        () => undefined,
      ),
  })
}

/**
 * The store as messages show it: the root directory, or `postgres user@host:port/database`
 * (never the password).
 *
 * @param location - The store.
 * @returns The text.
 */
export function storeWhere(location: StoreLocation): string {
  return location.kind === 'jsonl' ? location.root : `postgres ${describeConnection(location.url)}`
}

/** The JSONL backend under `store`, or null (a database has no files). */
function filesOf(store: SessionStore): JsonlBackend | null {
  return asJsonlBackend(store.backend)
}

/**
 * Where a session is: its log file (any encoding), or `session <id> in postgres ...`.
 *
 * @param store - The store.
 * @param location - Where it is.
 * @param id - The session.
 * @returns The text.
 */
export async function sessionPlace(
  store: SessionStore,
  location: StoreLocation,
  id: string,
): Promise<string> {
  const jsonl = filesOf(store)
  if (jsonl === null) return `session ${id} in ${storeWhere(location)}`
  return path.join(jsonl.root, (await jsonl.capabilities.files.sessionFiles(id)).current)
}

/**
 * How `agent-ledger` names the session: `[<session dir>]` or `[<id>, '--store', <url>]`.
 *
 * @param store - The store.
 * @param location - Where it is.
 * @param id - The session.
 * @returns The CLI arguments.
 */
export function cliSession(store: SessionStore, location: StoreLocation, id: string): readonly string[] {
  const jsonl = filesOf(store)
  if (jsonl !== null) return [jsonl.capabilities.files.sessionDirectory(id)]
  return location.kind === 'postgres' ? [id, '--store', location.url] : [id]
}

/**
 * The last stored line of a session (exact text, whatever the backend or encoding): what a
 * crash left behind.
 *
 * @param store - The store.
 * @param id - The session.
 * @returns The line (the header line when the session holds no event).
 */
export async function lastStoredLine(store: SessionStore, id: string): Promise<string> {
  const head = await store.backend.head(id)
  for await (const stored of store.backend.read(id, { fromSeq: Math.max(0, head.nextSeq - 1) })) {
    return stored.line
  }
  return (await store.backend.readHeader(id)).line
}

/**
 * `verify`, with where the session was read from: its log file and size, or the database.
 *
 * @param store - The store.
 * @param location - Where it is.
 * @param id - The session.
 * @returns The report, the detail text, and the log file read (relative to the root; null: a database).
 */
export async function verifySession(
  store: SessionStore,
  location: StoreLocation,
  id: string,
): Promise<VerifyReport & { readonly detail: string; readonly file: string | null }> {
  const report = await store.verify(id)
  const jsonl = filesOf(store)
  if (jsonl === null) return { ...report, detail: storeWhere(location), file: null }
  const files = await jsonl.capabilities.files.sessionFiles(id)
  const current = files.files.find((entry) => entry.current)
  return { ...report, detail: `${current?.bytes ?? '?'} bytes, file ${files.current}`, file: files.current }
}

/**
 * Every session of the store, page by page, with a size (directory) or event count (database).
 *
 * @param store - The store.
 * @returns The sessions and the problems (sessions that could not be summarized).
 */
export async function listSessions(store: SessionStore): Promise<{
  readonly sessions: { readonly id: string; readonly header: SessionHeader; readonly size: string }[]
  readonly problems: { readonly id: string; readonly error: unknown }[]
}> {
  const jsonl = filesOf(store)
  const sessions: { id: string; header: SessionHeader; size: string }[] = []
  const problems: { id: string; error: unknown }[] = []
  let cursor: string | null = null
  do {
    const page: ListResult = await store.list({ limit: 1000, ...(cursor === null ? {} : { cursor }) })
    for (const session of page.sessions) {
      let size = `${session.events ?? '?'} events`
      if (jsonl !== null) {
        const files = await jsonl.capabilities.files.sessionFiles(session.id)
        size = `${files.files.find((entry) => entry.current)?.bytes ?? '?'} bytes  ${files.current}`
      }
      sessions.push({ id: session.id, header: session.header, size })
    }
    problems.push(...page.problems)
    cursor = page.cursor
  } while (cursor !== null)
  return { sessions, problems }
}

/**
 * Compresses a cold session's log into large zstd frames, when the store is a directory.
 *
 * @param store - The store.
 * @param id - The session (no writer open).
 * @param options - `onlyZstd`: leave a plain log alone (reseal only a log already compressed).
 * @returns What compress did, or null (a database store, or a plain log with `onlyZstd`).
 */
export async function compressSession(
  store: SessionStore,
  id: string,
  options: { readonly onlyZstd?: boolean } = {},
): Promise<CompressResult | null> {
  const jsonl = filesOf(store)
  if (jsonl === null) return null
  if (options.onlyZstd === true && (await jsonl.capabilities.files.sessionFiles(id)).encoding !== 'zstd') {
    return null
  }
  const result = await jsonl.capabilities.compress.compress(id)
  // The JSONL backend's compress reports the file store's CompressResult as its details.
  return result.details as unknown as CompressResult
}

/**
 * What the backend repaired when the writer opened: a quarantined torn tail, in one line.
 *
 * @param writer - A writer fresh from `openWriter`.
 * @returns The line, or null when nothing was torn.
 */
export function tornTailRepair(writer: Pick<SessionWriter, 'recovery'>): string | null {
  const torn = writer.recovery.backendRepairs.find((repair) => repair.kind === 'torn-tail')
  if (torn === undefined) return null
  return `torn tail of ${torn.droppedBytes ?? '?'} bytes quarantined in ${torn.quarantinedTo ?? '?'}`
}

/**
 * True when `error` means the session does not exist.
 *
 * @param error - Anything thrown.
 * @returns Whether it is `SESSION_NOT_FOUND`.
 */
export function isNotFound(error: unknown): boolean {
  return SessionStoreError.is(error, 'SESSION_NOT_FOUND')
}
