/**
 * The Claude Agent SDK's `SessionStore` over an agent-ledger store: each key is one
 * agent-ledger session, each transcript entry one `import/source-record` event holding it
 * verbatim, durable before `append` resolves.
 */
import type {
  SessionKey,
  SessionStore as ClaudeSdkSessionStore,
  SessionStoreEntry,
} from '@anthropic-ai/claude-agent-sdk'
import type { LoggedEvent } from '@agent-ledger/session-events'
import type { OpenWriterOptions, SessionStore, SessionWriter } from '@agent-ledger/session-store'
import { SOURCE_RECORD_EVENT_TYPE } from '@agent-ledger/import'
import type { SourceRecord } from '@agent-ledger/import'

import { ClaudeStoreError, ClaudeStoreErrorCode } from './claude-store-error.ts'
import { checkKey, KEY_METADATA_FIELD, ledgerSessionId, recordedKey, sameKey } from './session-key.ts'
import type { RecordedKey } from './session-key.ts'

/** The `format` of the source records this store writes (the importer's Claude Code format name). */
export const MIRROR_FORMAT = 'claude-code'

/** The `disposition` of a source record this store wrote (an entry the SDK mirrored). */
export const MIRROR_DISPOSITION = 'mirrored'

/** The log-only event `delete` appends: what comes before it is no longer part of the key's transcript. */
export const DELETED_EVENT_TYPE = 'claude-agent-sdk/deleted'

/** Data of a {@link DELETED_EVENT_TYPE} event. */
export interface DeletedMarker {
  /** The key deleted (the main key of a cascade, on each of its subkeys' sessions too). */
  readonly key: RecordedKey
}

/**
 * Options of {@link createClaudeSessionStore}: the core's writer options, given to every
 * `store.openWriter` (and, but `takeover`, `store.create`) this store makes.
 */
export type ClaudeSessionStoreOptions = OpenWriterOptions

/** The SDK's `SessionStore` with every method this package implements, plus `close`. */
export interface LedgerClaudeSessionStore extends Required<
  Pick<ClaudeSdkSessionStore, 'append' | 'load' | 'listSessions' | 'delete' | 'listSubkeys'>
> {
  /** The agent-ledger session id a key is stored under. */
  sessionIdFor(key: SessionKey): string
  /** Waits for pending appends, then closes every writer this store opened (releasing their leases). Idempotent. */
  close(): Promise<void>
}

/** A key's open writer and what the store knows of its transcript. */
interface OpenKey {
  readonly writer: SessionWriter
  /** `uuid`s of the entries visible now (after the last delete): an entry seen again is not appended twice. */
  readonly seen: Set<string>
  /** Source records in the log so far (the next one's `line` is this plus one). */
  lines: number
}

function isNotFound(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'SESSION_NOT_FOUND'
}

function isExists(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'SESSION_EXISTS'
}

function checkEntries(entries: readonly SessionStoreEntry[], key: RecordedKey): void {
  if (!Array.isArray(entries)) {
    throw new ClaudeStoreError({
      code: ClaudeStoreErrorCode.INVALID_ENTRY,
      details: { key },
      message: `Claude session ${key.sessionId}: expected the entries to be an array, found ${typeof entries}`,
    })
  }
  entries.forEach((entry: unknown, index) => {
    const type: unknown =
      typeof entry === 'object' && entry !== null && !Array.isArray(entry)
        ? (entry as { type?: unknown }).type
        : undefined
    if (typeof type !== 'string') {
      throw new ClaudeStoreError({
        code: ClaudeStoreErrorCode.INVALID_ENTRY,
        details: { key, index },
        message: `Claude session ${key.sessionId} entry ${index}: expected an object with a string type, found ${entry === null ? 'null' : Array.isArray(entry) ? 'an array' : typeof entry === 'object' ? `type ${JSON.stringify(type) ?? 'absent'}` : typeof entry}`,
      })
    }
  })
}

/** The entry a source-record event holds, when this store wrote it. */
function mirroredEntry(event: LoggedEvent): SessionStoreEntry | undefined {
  if (event.type !== SOURCE_RECORD_EVENT_TYPE) return undefined
  const data = event.data as Partial<SourceRecord> | null
  if (data?.format !== MIRROR_FORMAT || data.disposition !== MIRROR_DISPOSITION) return undefined
  return data.record as SessionStoreEntry
}

function entryUuid(entry: SessionStoreEntry): string | undefined {
  return typeof entry.uuid === 'string' ? entry.uuid : undefined
}

/** The visible transcript of a session's events: the entries after the last delete marker. */
async function visibleEntries(
  events: AsyncIterable<LoggedEvent>,
): Promise<{ entries: SessionStoreEntry[]; lines: number; last: LoggedEvent | undefined }> {
  let entries: SessionStoreEntry[] = []
  let lines = 0
  let last: LoggedEvent | undefined
  for await (const event of events) {
    last = event
    if (event.type === DELETED_EVENT_TYPE) {
      entries = []
      continue
    }
    const entry = mirroredEntry(event)
    if (entry === undefined) continue
    lines += 1
    entries.push(entry)
  }
  return { entries, lines, last }
}

/**
 * The Claude Agent SDK's `SessionStore` (`options.sessionStore` of `query()`, and the store of
 * `listSessions`, `getSessionMessages`, `deleteSession`, `importSessionToStore`) over an
 * agent-ledger store.
 *
 * - `append` appends one ignorable `import/source-record` event per entry (`{format:
 *   'claude-code', line, record: entry, disposition: 'mirrored'}`) and resolves once they are
 *   flushed: acknowledged = durable on every backend. An entry whose `uuid` is already in the
 *   transcript is skipped (the SDK's retries and re-imports). A failure rejects (the SDK
 *   retries, then reports `mirror_error`; its turn goes on).
 * - `load` returns the entries after the last delete, deep-equal and in append order; `null`
 *   for a key with none.
 * - `listSessions` / `listSubkeys` come from `store.list()` and the header metadata.
 * - `delete` appends a `claude-agent-sdk/deleted` marker (the main key: on its subkeys too).
 *
 * The writers stay open between appends (one per key): call `close()` when done.
 *
 * @param store - An agent-ledger store (`createJsonlStore`, or `createSessionStore` over any backend).
 * @param options - The core's writer options (`owner`, `leaseMs`, `takeover`, `signal`).
 */
export function createClaudeSessionStore(
  store: SessionStore,
  options: ClaudeSessionStoreOptions = {},
): LedgerClaudeSessionStore {
  const open = new Map<string, OpenKey>()
  const queues = new Map<string, Promise<unknown>>()
  let closed = false

  /** Runs `task` after every earlier task of the same session (append-call order within a process). */
  const serialized = <TResult>(id: string, task: () => Promise<TResult>): Promise<TResult> => {
    const previous = queues.get(id) ?? Promise.resolve()
    const next = previous.then(task, task)
    const settled = next.then(
      () => undefined,
      () => undefined,
    )
    queues.set(id, settled)
    void settled.then(() => {
      if (queues.get(id) === settled) queues.delete(id)
    })
    return next
  }

  const assertOpen = (key: RecordedKey): void => {
    if (!closed) return
    throw new ClaudeStoreError({
      code: ClaudeStoreErrorCode.STORE_CLOSED,
      details: { key },
      message: `Claude session ${key.sessionId}: expected an open store, found it closed`,
    })
  }

  const openKey = async (key: RecordedKey, id: string): Promise<OpenKey> => {
    const cached = open.get(id)
    if (cached !== undefined) return cached
    const { takeover: _takeover, ...lease } = options
    let writer: SessionWriter
    let created = false
    try {
      writer = await store.openWriter(id, options)
    } catch (error) {
      if (!isNotFound(error)) throw error
      try {
        writer = await store.create({ id, header: { metadata: { [KEY_METADATA_FIELD]: key } }, ...lease })
        created = true
      } catch (createError) {
        if (!isExists(createError)) throw createError
        writer = await store.openWriter(id, options)
      }
    }
    const found = recordedKey(writer.header.metadata)
    if (found === undefined || !sameKey(found, key)) {
      await writer.close()
      throw new ClaudeStoreError({
        code: ClaudeStoreErrorCode.KEY_MISMATCH,
        details: { id, key, found: found ?? null },
        message: `Claude session ${key.sessionId}: expected agent-ledger session ${id} to record key ${JSON.stringify(key)}, found ${found === undefined ? 'no Claude key in its header' : JSON.stringify(found)}`,
      })
    }
    const state: OpenKey = { writer, seen: new Set(), lines: 0 }
    if (!created) {
      const { entries, lines } = await visibleEntries(store.readEvents(id))
      state.lines = lines
      for (const entry of entries) {
        const uuid = entryUuid(entry)
        if (uuid !== undefined) state.seen.add(uuid)
      }
    }
    open.set(id, state)
    return state
  }

  /** Forgets a key's writer after a failed write (its buffer is dropped: the SDK retries the batch). */
  const discard = async (id: string, state: OpenKey): Promise<void> => {
    if (open.get(id) === state) open.delete(id)
    await state.writer.close({ discardUnflushed: true }).catch(() => undefined)
  }

  /** Appends events built from the open state, then flushes; on any failure nothing stays buffered. */
  const write = async (
    key: RecordedKey,
    build: (state: OpenKey) => readonly { type: string; data: unknown }[],
    commit: (state: OpenKey) => void,
  ): Promise<void> => {
    const id = ledgerSessionId(key)
    const state = await openKey(key, id)
    try {
      const events = build(state)
      if (events.length === 0) return
      for (const event of events) {
        state.writer.append({ type: event.type, data: event.data, ignorable: true } as Parameters<
          SessionWriter['append']
        >[0])
      }
      await state.writer.flush()
      commit(state)
    } catch (error) {
      await discard(id, state)
      throw error
    }
  }

  // Async so that a refused input is a rejected promise (what the SDK catches), never a throw.
  const append = async (key: SessionKey, entries: SessionStoreEntry[]): Promise<void> => {
    const recorded = checkKey(key)
    checkEntries(entries, recorded)
    assertOpen(recorded)
    if (entries.length === 0) return
    const id = ledgerSessionId(recorded)
    await serialized(id, async () => {
      assertOpen(recorded)
      let added: SessionStoreEntry[] = []
      await write(
        recorded,
        (state) => {
          const batch = new Set<string>()
          added = entries.filter((entry) => {
            const uuid = entryUuid(entry)
            if (uuid === undefined) return true
            if (state.seen.has(uuid) || batch.has(uuid)) return false
            batch.add(uuid)
            return true
          })
          return added.map((entry, index) => ({
            type: SOURCE_RECORD_EVENT_TYPE,
            data: {
              format: MIRROR_FORMAT,
              line: state.lines + index + 1,
              record: entry,
              disposition: MIRROR_DISPOSITION,
            } satisfies SourceRecord,
          }))
        },
        (state) => {
          state.lines += added.length
          for (const entry of added) {
            const uuid = entryUuid(entry)
            if (uuid !== undefined) state.seen.add(uuid)
          }
        },
      )
    })
  }

  const load = async (key: SessionKey): Promise<SessionStoreEntry[] | null> => {
    const recorded = checkKey(key)
    const id = ledgerSessionId(recorded)
    // After the appends already made through this store (append-call order).
    await queues.get(id)
    try {
      const { entries } = await visibleEntries(store.readEvents(id))
      return entries.length === 0 ? null : entries
    } catch (error) {
      if (isNotFound(error)) return null
      throw error
    }
  }

  /** Every mirrored session of a project with a visible transcript, and its last event. */
  const mirrored = async (
    projectKey: string,
    sessionId: string | undefined,
  ): Promise<{ key: RecordedKey; id: string; last: LoggedEvent }[]> => {
    const found: { key: RecordedKey; id: string; last: LoggedEvent }[] = []
    let cursor: string | null = null
    do {
      const page = await store.list(cursor === null ? {} : { cursor })
      for (const summary of page.sessions) {
        const key = recordedKey(summary.header.metadata)
        if (key?.projectKey !== projectKey) continue
        if (sessionId !== undefined && key.sessionId !== sessionId) continue
        await queues.get(summary.id)
        const events =
          summary.events !== undefined && summary.events > 0
            ? store.readEvents(summary.id, { fromSeq: summary.events - 1 })
            : store.readEvents(summary.id)
        let last: LoggedEvent | undefined
        for await (const event of events) last = event
        if (last === undefined || last.type === DELETED_EVENT_TYPE) continue
        found.push({ key, id: summary.id, last })
      }
      cursor = page.cursor
    } while (cursor !== null)
    return found
  }

  const listSessions = async (projectKey: string): Promise<{ sessionId: string; mtime: number }[]> => {
    checkKey({ projectKey, sessionId: '-' })
    const sessions = await mirrored(projectKey, undefined)
    return sessions
      .filter(({ key }) => key.subpath === undefined)
      .map(({ key, last }) => ({ sessionId: key.sessionId, mtime: Math.floor(Date.parse(last.time)) }))
  }

  const listSubkeys = async (key: { projectKey: string; sessionId: string }): Promise<string[]> => {
    const recorded = checkKey({ projectKey: key.projectKey, sessionId: key.sessionId })
    const sessions = await mirrored(recorded.projectKey, recorded.sessionId)
    return sessions.flatMap(({ key: found }) => (found.subpath === undefined ? [] : [found.subpath]))
  }

  const markDeleted = (key: RecordedKey, marker: DeletedMarker): Promise<void> => {
    const id = ledgerSessionId(key)
    return serialized(id, async () => {
      assertOpen(key)
      const events = store.readEvents(id)[Symbol.asyncIterator]()
      try {
        await events.next()
        await events.return?.()
      } catch (error) {
        // Never written: nothing to delete.
        if (isNotFound(error)) return
        throw error
      }
      await write(
        key,
        () => [{ type: DELETED_EVENT_TYPE, data: marker }],
        (state) => state.seen.clear(),
      )
    })
  }

  const deleteKey = async (key: SessionKey): Promise<void> => {
    const recorded = checkKey(key)
    assertOpen(recorded)
    const marker: DeletedMarker = { key: recorded }
    if (recorded.subpath === undefined) {
      // Deleting the main transcript deletes its subkeys too (the SDK's contract).
      for (const subpath of await listSubkeys(recorded)) await markDeleted({ ...recorded, subpath }, marker)
    }
    await markDeleted(recorded, marker)
  }

  return {
    append,
    load,
    listSessions,
    listSubkeys,
    delete: deleteKey,
    sessionIdFor: (key) => ledgerSessionId(checkKey(key)),
    close: async () => {
      closed = true
      await Promise.all([...queues.values()])
      const states = [...open.values()]
      open.clear()
      await Promise.all(states.map((state) => state.writer.close()))
    },
  } satisfies LedgerClaudeSessionStore & ClaudeSdkSessionStore
}
