/**
 * The Claude Agent SDK's `SessionStore` over an agent-ledger store: each key is one
 * agent-ledger session, each transcript entry one `import/source-record` event holding it
 * verbatim, followed by the model-visible events the importer's Claude Code mapping derives
 * from the entries, durable before `append` resolves.
 */
import { foldSessionSummary } from '@anthropic-ai/claude-agent-sdk'
import type {
  SessionKey,
  SessionStore as ClaudeSdkSessionStore,
  SessionStoreEntry,
  SessionSummaryEntry,
} from '@anthropic-ai/claude-agent-sdk'
import type { EventInput, LoggedEvent } from '@agent-ledger/session-events'
import { openOrCreateWriter } from '@agent-ledger/session-store'
import type { OpenWriterOptions, SessionStore, SessionWriter } from '@agent-ledger/session-store'
import { SOURCE_RECORD_EVENT_TYPE } from '@agent-ledger/import'
import type { SourceRecord } from '@agent-ledger/import'

import { ClaudeStoreError, ClaudeStoreErrorCode } from './claude-store-error.ts'
import {
  MAPPING_STOPPED_EVENT_TYPE,
  MIRROR_DISPOSITION,
  MIRROR_FORMAT,
  readEntries,
  readMirror,
  REPAIRED_EVENT_TYPE,
  SUMMARY_EVENT_TYPE,
} from './mirror-events.ts'
import type { MappingStopped, Repaired, SummaryRecord } from './mirror-events.ts'
import { checkKey, KEY_METADATA_FIELD, ledgerSessionId, recordedKey, sameKey } from './session-key.ts'
import type { RecordedKey } from './session-key.ts'
import { TranscriptMapper } from './transcript-mapping.ts'
import type { MappingStep } from './transcript-mapping.ts'

/**
 * Options of {@link createClaudeSessionStore}: the core's writer options, given to every
 * `store.openWriter` (and, but `takeover`, `store.create`) this store makes.
 */
export type ClaudeSessionStoreOptions = OpenWriterOptions

/** The SDK's `SessionStore` with every method this package implements, plus `close`. */
export interface LedgerClaudeSessionStore extends Required<
  Pick<
    ClaudeSdkSessionStore,
    'append' | 'load' | 'listSessions' | 'listSessionSummaries' | 'delete' | 'listSubkeys'
  >
> {
  /** The agent-ledger session id a key is stored under. */
  sessionIdFor(key: SessionKey): string
  /** Waits for pending appends, then closes every writer this store opened (releasing their leases). Idempotent. */
  close(): Promise<void>
}

/** A key's open writer and what the store knows of its transcript. */
interface OpenKey {
  readonly writer: SessionWriter
  /** The transcript so far (what `load` returns): the mapping is derived from it. */
  entries: SessionStoreEntry[]
  /** `uuid`s of the stored entries: an entry seen again is not appended twice. */
  readonly seen: Set<string>
  /** The mapping of the transcript, kept between batches (each batch maps its own entries). */
  readonly mapper: TranscriptMapper
  /** Seqs of the model-visible events written so far, in order (what later mapped events cite). */
  mappedSeqs: readonly number[]
  /** The mapping stopped (a branch switch, a refused event): entries are mirrored verbatim only. */
  stopped: boolean
  /** Set when reopening found a log the mapping does not reproduce: the next batch records the stop. */
  pendingStop: string | undefined
  /** The SDK's running summary of a main transcript (`undefined` before its first batch, and for subkeys). */
  summary: SessionSummaryEntry | undefined
}

function isNotFound(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'SESSION_NOT_FOUND'
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

function entryUuid(entry: SessionStoreEntry): string | undefined {
  return typeof entry.uuid === 'string' ? entry.uuid : undefined
}

/**
 * The Claude Agent SDK's `SessionStore` (`options.sessionStore` of `query()`, and the store of
 * `listSessions`, `getSessionMessages`, `deleteSession`, `importSessionToStore`) over an
 * agent-ledger store.
 *
 * - `append` appends one ignorable `import/source-record` event per entry (`{format:
 *   'claude-code', line, record: entry, disposition: 'mirrored'}`), then the model-visible
 *   events the importer's Claude Code mapping adds for them, then (main transcripts) the SDK's
 *   folded summary, and resolves once they are flushed together: acknowledged = durable on
 *   every backend. An entry whose `uuid` is already stored is skipped (the SDK's retries and
 *   re-imports). A failure rejects (the SDK retries, then reports `mirror_error`; its turn
 *   goes on).
 * - `load` returns the entries, deep-equal and in append order; `null` for a key with none.
 * - `listSessions`, `listSessionSummaries`, `listSubkeys` come from `store.list()` and the
 *   header metadata.
 * - `delete` is `store.delete` of the key's session (the main key: its subkeys' too).
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
  /**
   * Per session without an open writer here: the entries this store's last `load` returned (0
   * for none). The first append must find exactly those: a process that loaded a key, then
   * stalled while another owner wrote it (its lease free again), must not append its turn onto
   * the other's; without a load there is no expectation (an import, a fresh session).
   */
  const loaded = new Map<string, number>()
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
    const { writer, created } = await openOrCreateWriter(store, id, {
      ...options,
      header: { metadata: { [KEY_METADATA_FIELD]: key } },
    })
    const found = recordedKey(writer.header.metadata)
    if (found === undefined || !sameKey(found, key)) {
      await writer.close()
      throw new ClaudeStoreError({
        code: ClaudeStoreErrorCode.KEY_MISMATCH,
        details: { id, key, found: found ?? null },
        message: `Claude session ${key.sessionId}: expected agent-ledger session ${id} to record key ${JSON.stringify(key)}, found ${found === undefined ? 'no Claude key in its header' : JSON.stringify(found)}`,
      })
    }
    const state: OpenKey = {
      writer,
      entries: [],
      seen: new Set(),
      mapper: new TranscriptMapper(key.sessionId),
      mappedSeqs: [],
      stopped: false,
      pendingStop: undefined,
      summary: undefined,
    }
    // Kept until a writer opens: a refused append's retries (the SDK makes two) are refused too.
    const expected = loaded.get(id)
    if (!created) {
      try {
        const repairs = writer.recovery.repairs
        if (repairs.length > 0) {
          // The core closed what a stopped writer left open: its events are not the mapping's.
          writer.append({
            type: REPAIRED_EVENT_TYPE,
            data: { seqs: repairs.map((repair) => repair.resultSeq) } satisfies Repaired,
            ignorable: true,
          } as unknown as EventInput)
          await writer.flush()
        }
        const contents = await readMirror(store.readEvents(id))
        if (expected !== undefined && contents.entries.length !== expected)
          throw moved(key, id, { loaded: expected, found: contents.entries.length })
        await restore(state, key, contents)
      } catch (error) {
        await writer.close().catch(() => undefined)
        throw error
      }
    }
    loaded.delete(id)
    open.set(id, state)
    return state
  }

  /** The refusal of a first append that finds another transcript than the last load returned. */
  const moved = (
    key: RecordedKey,
    id: string,
    counts: { readonly loaded: number; readonly found: number },
  ): ClaudeStoreError =>
    new ClaudeStoreError({
      code: ClaudeStoreErrorCode.TRANSCRIPT_MOVED,
      details: { id, key, ...counts },
      message: `Claude session ${key.sessionId}: expected the transcript this store loaded (${counts.loaded} entries) before appending, found ${counts.found} (another writer wrote it since); load it again`,
    })

  /** What an open key knows, from its session's events (a writer opened on an existing transcript). */
  const restore = async (
    state: OpenKey,
    key: RecordedKey,
    contents: Awaited<ReturnType<typeof readMirror>>,
  ): Promise<void> => {
    state.entries = contents.entries
    for (const entry of contents.entries) {
      const uuid = entryUuid(entry)
      if (uuid !== undefined) state.seen.add(uuid)
    }
    state.stopped = contents.stopped
    if (contents.summary !== undefined && key.subpath === undefined) {
      state.summary = { sessionId: key.sessionId, mtime: 0, data: contents.summary }
    }
    if (state.stopped) return
    state.mappedSeqs = contents.mappedSeqs
    // The mapping is deterministic: mapped again from the same entries, its first events are the ones logged.
    state.pendingStop = await state.mapper.restore(contents.entries, contents.mappedSeqs.length)
  }

  /** Forgets a key's writer after a failed write (its buffer is dropped: the SDK retries the batch). */
  const discard = async (id: string, state: OpenKey): Promise<void> => {
    if (open.get(id) === state) open.delete(id)
    await state.writer.close({ discardUnflushed: true }).catch(() => undefined)
  }

  /**
   * Buffers the model-visible events a batch adds (its mapping step). Never throws: a mapping
   * the log cannot take stops the mapping (one marker), the verbatim entries go on.
   */
  const bufferMapped = (
    state: OpenKey,
    step: MappingStep | undefined,
    line: number,
  ): { seqs: number[]; stopped: boolean } => {
    const seqs = [...state.mappedSeqs]
    const stop = (reason: string): { seqs: number[]; stopped: boolean } => {
      state.writer.append({
        type: MAPPING_STOPPED_EVENT_TYPE,
        data: { line, reason } satisfies MappingStopped,
        ignorable: true,
      } as unknown as EventInput)
      return { seqs, stopped: true }
    }
    if (state.pendingStop !== undefined) return stop(state.pendingStop)
    if (step === undefined) return { seqs, stopped: state.stopped }
    for (const event of step.events) {
      const seqOf = (index: number): number => seqs[index]!
      try {
        const logged = state.writer.append({
          type: event.type,
          data: event.data,
          ...(event.sources === undefined ? {} : { sourceEventSeqs: event.sources.map(seqOf) }),
          ...(event.replaces === undefined
            ? {}
            : {
                surfaceOp: {
                  op: 'replace',
                  startSeq: seqOf(event.replaces[0]),
                  endSeq: seqOf(event.replaces[1]),
                },
              }),
          ...(event.ignorable === true ? { ignorable: true } : {}),
        } as unknown as EventInput)
        seqs.push(logged.seq)
      } catch (error) {
        return stop(
          `the log refused a mapped ${event.type} event: ${error instanceof Error ? error.message : String(error)}`,
        )
      }
    }
    return step.stopped === undefined ? { seqs, stopped: false } : stop(step.stopped)
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
      const state = await openKey(recorded, id)
      const batch = new Set<string>()
      const added = entries.filter((entry) => {
        const uuid = entryUuid(entry)
        if (uuid === undefined) return true
        if (state.seen.has(uuid) || batch.has(uuid)) return false
        batch.add(uuid)
        return true
      })
      if (added.length === 0) return
      try {
        const first = state.entries.length + 1
        added.forEach((entry, index) => {
          state.writer.append({
            type: SOURCE_RECORD_EVENT_TYPE,
            data: {
              format: MIRROR_FORMAT,
              line: first + index,
              record: entry,
              disposition: MIRROR_DISPOSITION,
            } satisfies SourceRecord,
            ignorable: true,
          } as unknown as EventInput)
        })
        const transcript = (): readonly SessionStoreEntry[] => [...state.entries, ...added]
        const step =
          state.stopped || state.pendingStop !== undefined
            ? undefined
            : await state.mapper.extend(added, transcript)
        const mapped = bufferMapped(state, step, first)
        const summary =
          recorded.subpath === undefined
            ? foldSessionSummary(state.summary, recorded, added, { mtime: 0 })
            : undefined
        if (summary !== undefined) {
          state.writer.append({
            type: SUMMARY_EVENT_TYPE,
            data: { data: summary.data } satisfies SummaryRecord,
            ignorable: true,
          } as unknown as EventInput)
        }
        await state.writer.flush()
        state.entries.push(...added)
        for (const entry of added) {
          const uuid = entryUuid(entry)
          if (uuid !== undefined) state.seen.add(uuid)
        }
        state.mappedSeqs = mapped.seqs
        state.stopped = mapped.stopped
        state.pendingStop = undefined
        state.summary = summary
      } catch (error) {
        await discard(id, state)
        throw error
      }
    })
  }

  const load = async (key: SessionKey): Promise<SessionStoreEntry[] | null> => {
    const recorded = checkKey(key)
    const id = ledgerSessionId(recorded)
    // After the appends already made through this store (append-call order).
    await queues.get(id)
    let entries: SessionStoreEntry[]
    try {
      entries = await readEntries(store.readEvents(id))
    } catch (error) {
      if (!isNotFound(error)) throw error
      entries = []
    }
    // What the next first append must find (a writer open here is this store's own: no check).
    if (!open.has(id)) loaded.set(id, entries.length)
    return entries.length === 0 ? null : entries
  }

  /** Every mirrored session of a project with at least one event, and its last event. */
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
        try {
          for await (const event of events) last = event
        } catch (error) {
          // Deleted between the listing and the read.
          if (isNotFound(error)) continue
          throw error
        }
        if (last === undefined) continue
        found.push({ key, id: summary.id, last })
      }
      cursor = page.cursor
    } while (cursor !== null)
    return found
  }

  /** The store clock's time of an event, as the SDK's `mtime` (integer epoch milliseconds). */
  const mtimeOf = (event: LoggedEvent): number => Math.floor(Date.parse(event.time))

  const listSessions = async (projectKey: string): Promise<{ sessionId: string; mtime: number }[]> => {
    checkKey({ projectKey, sessionId: '-' })
    const sessions = await mirrored(projectKey, undefined)
    return sessions
      .filter(({ key }) => key.subpath === undefined)
      .map(({ key, last }) => ({ sessionId: key.sessionId, mtime: mtimeOf(last) }))
  }

  const listSessionSummaries = async (projectKey: string): Promise<SessionSummaryEntry[]> => {
    checkKey({ projectKey, sessionId: '-' })
    const summaries: SessionSummaryEntry[] = []
    for (const { key, id, last } of await mirrored(projectKey, undefined)) {
      if (key.subpath !== undefined) continue
      // Each batch ends with its summary; a session whose last batch wrote none is read whole.
      const data =
        last.type === SUMMARY_EVENT_TYPE
          ? (last.data as SummaryRecord).data
          : (await readMirror(store.readEvents(id))).summary
      if (data !== undefined) summaries.push({ sessionId: key.sessionId, mtime: mtimeOf(last), data })
    }
    return summaries
  }

  const listSubkeys = async (key: { projectKey: string; sessionId: string }): Promise<string[]> => {
    const recorded = checkKey({ projectKey: key.projectKey, sessionId: key.sessionId })
    const sessions = await mirrored(recorded.projectKey, recorded.sessionId)
    return sessions.flatMap(({ key: found }) => (found.subpath === undefined ? [] : [found.subpath]))
  }

  /** Closes this store's writer of a key (releasing its lease), then deletes its session. */
  const erase = (key: RecordedKey): Promise<void> => {
    const id = ledgerSessionId(key)
    return serialized(id, async () => {
      assertOpen(key)
      loaded.delete(id)
      const state = open.get(id)
      if (state !== undefined) {
        open.delete(id)
        await state.writer.close()
      }
      await store.delete(id, options.signal === undefined ? {} : { signal: options.signal })
    })
  }

  const deleteKey = async (key: SessionKey): Promise<void> => {
    const recorded = checkKey(key)
    assertOpen(recorded)
    if (recorded.subpath === undefined) {
      // Deleting the main transcript deletes its subkeys too (the SDK's contract); them first,
      // so that a crash part way leaves the main key listed and a second delete finishes.
      for (const subpath of await listSubkeys(recorded)) await erase({ ...recorded, subpath })
    }
    await erase(recorded)
  }

  return {
    append,
    load,
    listSessions,
    listSessionSummaries,
    listSubkeys,
    delete: deleteKey,
    sessionIdFor: (key) => ledgerSessionId(checkKey(key)),
    close: async () => {
      closed = true
      loaded.clear()
      await Promise.all([...queues.values()])
      const states = [...open.values()]
      open.clear()
      await Promise.all(states.map((state) => state.writer.close()))
    },
  } satisfies LedgerClaudeSessionStore & ClaudeSdkSessionStore
}
