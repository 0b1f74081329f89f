/**
 * Where mini-agent keeps its sessions: a JSONL directory (the embedded default, through
 * `@agent-ledger/session-store-jsonl`) or a PostgreSQL database (through the core store
 * `@agent-ledger/session-store` over `@agent-ledger/session-store-postgres`). The agent loop,
 * the resume and the demo story only use what both have in common, described here.
 */
import { readFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import path from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'

import type { PendingToolCall, RepairAction } from '@agent-ledger/loop-repair'
import type { LoggedEvent, SessionHeader, SessionHeaderInput } from '@agent-ledger/session-events'
import type { Projection } from '@agent-ledger/session-projection'
import { createSessionStore as createCoreStore, SessionStoreError } from '@agent-ledger/session-store'
import type { AbortSignalLike, ListResult, SessionStore as CoreStore } from '@agent-ledger/session-store'
import { createSessionStore, JsonlStoreError } from '@agent-ledger/session-store-jsonl'
import type {
  SessionStore as JsonlStore,
  SessionWriter as JsonlWriter,
} from '@agent-ledger/session-store-jsonl'
import { describeConnection, openPostgresBackend } from '@agent-ledger/session-store-postgres'

import type { AgentLog } from './agent.ts'

/** The store named by `--root`, `--store` or `AGENT_LEDGER_STORE`. */
export type StoreLocation =
  { readonly kind: 'jsonl'; readonly root: string } | { readonly kind: 'postgres'; readonly url: string }

/** What mini-agent uses of an open session writer (both stores' writers have it). */
export interface AgentWriter extends AgentLog {
  readonly id: string
  readonly header: SessionHeader
  readonly projection: Projection
  readonly recovery: { readonly repairs: readonly RepairAction[] }
  close(): Promise<void>
}

/** A session's state as `verify` reports it, in words both stores can give. */
interface AgentVerify {
  readonly status: 'ok' | 'torn-tail' | 'damaged'
  readonly events: number
  readonly lastSeq: number
  /** Where it was read from: a file and its size, or the database. */
  readonly detail: string
}

/** The sessions of a store, as mini-agent uses them. */
export interface AgentStore {
  readonly kind: StoreLocation['kind']
  /** The root directory, or `postgres user@host:port/database` (never the password). */
  readonly where: string
  /** The JSONL store when this is one (compress, file names), else null. */
  readonly jsonl: JsonlStore | null
  create(request: {
    readonly id: string
    readonly header: Partial<SessionHeaderInput>
    readonly compress: boolean
  }): Promise<AgentWriter>
  /** Opens for write: lease (or lock), repair; `takeover` forces a PostgreSQL lease held by a dead writer. */
  openWriter(id: string, options?: { readonly takeover?: boolean }): Promise<AgentWriter>
  openReader(
    id: string,
  ): Promise<{ readonly lastSeq: number; readonly pendingToolCalls: readonly PendingToolCall[] }>
  readEvents(id: string): AsyncIterable<LoggedEvent>
  fork(id: string, options: { readonly to: string; readonly atSeq: number }): Promise<AgentWriter>
  verify(id: string): Promise<AgentVerify>
  /** Every session (id, header, and a size or event count for display). */
  list(): Promise<{
    readonly sessions: { readonly id: string; readonly header: SessionHeader; readonly size: string }[]
    readonly problems: { readonly id: string; readonly error: unknown }[]
  }>
  /** The last stored line of a session (exact text), for showing what a crash left. */
  lastLine(id: string): Promise<string>
  /** Where a session is: its log file, or `session <id> in postgres ...`. */
  location(id: string): Promise<string>
  /** How `agent-ledger` names the session: `[<session dir>]` or `[<id>, '--store', <url>]`. */
  cliSession(id: string): readonly string[]
  /** True when `error` means the session does not exist. */
  isNotFound(error: unknown): boolean
  close(): Promise<void>
}

/** `agent-ledger`'s lease owner for this process: unique among concurrent writers. */
function owner(): string {
  return `mini-agent@${hostname()}:${process.pid}`
}

function jsonlStore(root: string): AgentStore {
  const store = createSessionStore({ root })
  const withId = (writer: JsonlWriter): AgentWriter => writer
  return {
    kind: 'jsonl',
    where: root,
    jsonl: store,
    create: async (request) =>
      withId(
        await store.create({
          id: request.id,
          encoding: request.compress ? 'zstd' : 'plain',
          header: request.header,
        }),
      ),
    openWriter: async (id) => withId(await store.openWriter(id)),
    openReader: (id) => store.openReader(id),
    readEvents: (id) => store.readEvents(id),
    fork: async (id, options) => withId(await store.fork(id, options)),
    verify: async (id) => {
      const report = await store.verify(id)
      return { ...report, detail: `${report.bytes} bytes, file ${report.file}` }
    },
    list: async () => {
      const listing = await store.list()
      return {
        sessions: listing.sessions.map((session) => ({
          id: session.id,
          header: session.header,
          size: `${session.bytes} bytes  ${session.file}`,
        })),
        problems: listing.problems,
      }
    },
    lastLine: async (id) => {
      const current = path.join(root, (await store.sessionFiles(id)).current)
      if (current.endsWith('.jsonl'))
        return (await readFile(current, 'utf8')).trimEnd().split('\n').at(-1) ?? ''
      // A compressed log: the last event as read (its line text is inside a zstd frame).
      let last = ''
      for await (const event of store.readEvents(id)) last = JSON.stringify(event)
      return last
    },
    location: async (id) => path.join(root, (await store.sessionFiles(id)).current),
    cliSession: (id) => [store.sessionDirectory(id)],
    isNotFound: (error) => JsonlStoreError.is(error) && error.code === 'SESSION_NOT_FOUND',
    close: () => Promise.resolve(),
  }
}

async function postgresStore(url: string, options: { readonly leaseMs?: number }): Promise<AgentStore> {
  const backend = await openPostgresBackend({ connectionString: url, applicationName: 'mini-agent' })
  const store: CoreStore = createCoreStore({
    backend,
    clock: () => new Date().toISOString(),
    owner: owner(),
    ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
    sleep: (ms: number, signal?: AbortSignalLike) =>
      delay(ms, undefined, signal === undefined ? {} : { signal: signal as AbortSignal }).catch(
        () => undefined,
      ),
  })
  const where = `postgres ${describeConnection(url)}`
  return {
    kind: 'postgres',
    where,
    jsonl: null,
    create: (request) => store.create({ id: request.id, header: request.header }),
    openWriter: (id, open) => store.openWriter(id, { takeover: open?.takeover === true }),
    openReader: (id) => store.openReader(id),
    readEvents: (id) => store.readEvents(id),
    fork: (id, fork) => store.fork(id, fork),
    verify: async (id) => ({ ...(await store.verify(id)), detail: where }),
    list: async () => {
      const sessions: { id: string; header: SessionHeader; size: string }[] = []
      const problems: { id: string; error: unknown }[] = []
      let cursor: string | null = null
      do {
        const page: ListResult = await store.list({ limit: 1000, ...(cursor === null ? {} : { cursor }) })
        for (const session of page.sessions) {
          sessions.push({ id: session.id, header: session.header, size: `${session.events ?? '?'} events` })
        }
        problems.push(...page.problems)
        cursor = page.cursor
      } while (cursor !== null)
      return { sessions, problems }
    },
    lastLine: async (id) => {
      const head = await backend.head(id)
      for await (const stored of backend.read(id, { fromSeq: Math.max(0, head.nextSeq - 1) })) {
        return stored.line
      }
      return (await backend.readHeader(id)).line
    },
    location: (id) => Promise.resolve(`session ${id} in ${where}`),
    cliSession: (id) => [id, '--store', url],
    isNotFound: (error) => SessionStoreError.is(error, 'SESSION_NOT_FOUND'),
    close: () => store.close(),
  }
}

/**
 * Opens the store at `location`.
 *
 * @param location - A JSONL root or a PostgreSQL URL.
 * @param options - `leaseMs`: the PostgreSQL writer lease (default 30 s).
 * @returns The store; close it when done.
 */
export async function openAgentStore(
  location: StoreLocation,
  options: { readonly leaseMs?: number } = {},
): Promise<AgentStore> {
  return location.kind === 'jsonl' ? jsonlStore(location.root) : postgresStore(location.url, options)
}
