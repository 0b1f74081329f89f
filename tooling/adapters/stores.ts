/**
 * The stores a framework adapter's tests run over (`@agent-ledger/ai-sdk`,
 * `@agent-ledger/openai-agents`): the core store over a JSONL root, on its in-memory backend,
 * and the core store on PostgreSQL (one server per run from tooling/pg/global-setup.ts;
 * skipped with one line locally when no server binaries exist, a failure under CI=true).
 *
 * Shared by both adapters' `test/stores.ts`. It imports no agent-ledger package (`tooling/`
 * has none as dependencies): each adapter passes its store constructors in, so the stores
 * are typed by the core's `SessionStore`.
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { inject } from 'vitest'

// For the types of inject('pgUrl') and inject('pgSkipReason').
import type {} from '../pg/global-setup.ts'

/** What the helpers need of an adapter's store: reading a session's events back. */
export interface ReadableStore {
  readEvents(id: string): AsyncIterable<unknown>
}

/** A store and how to close it. */
interface ClosableStore<TStore> {
  readonly store: TStore
  readonly close: () => Promise<void>
}

/** One store, opened for one test. */
interface OpenedStore<TStore> extends ClosableStore<TStore> {
  /** What a child process passes to `openStoreAt` to open the same store; null: in-process only. */
  readonly target: string | null
  /** A session id unique to this run (the PostgreSQL server may be shared between runs). */
  readonly id: (name: string) => string
  /**
   * What the store holds for a session, as text that only grows while the log is append-only:
   * the JSONL file's bytes; for the core stores, every event read back, one JSON line each.
   */
  readonly snapshot: (id: string) => Promise<string>
}

/** A kind of store: its name, why it is skipped here (or null), and how to open one. */
export interface StoreKind<TStore> {
  readonly name: string
  readonly skip: string | null
  /** True when another process can open the same store (a crash child): not the memory backend. */
  readonly crossProcess: boolean
  readonly open: () => Promise<OpenedStore<TStore>>
}

/** How an adapter's tests make its stores. */
export interface AdapterStoreFactories<TStore extends ReadableStore> {
  /** The adapter's short name, in temp directory names. */
  readonly tag: string
  /** The adapter's `openStoreAt` (its `test/store-target.ts`): a JSONL root or a `postgres://` URL. */
  readonly openStoreAt: (target: string) => Promise<ClosableStore<TStore>>
  /** The core store on a fresh in-memory backend. */
  readonly memoryStore: () => ClosableStore<TStore>
}

/** Every event of a session read back through the store, one JSON text per line. */
async function eventLines(store: ReadableStore, id: string): Promise<string> {
  let text = ''
  for await (const event of store.readEvents(id)) text += `${JSON.stringify(event)}\n`
  return text
}

/**
 * The three kinds of store, as `[name, kind]` rows for `describe.each`, and the ones a second
 * process can open (JSONL and PostgreSQL).
 *
 * @param factories - The adapter's store constructors.
 * @returns `storeKinds` and `crossProcessStoreKinds`.
 */
export function adapterStoreKinds<TStore extends ReadableStore>(
  factories: AdapterStoreFactories<TStore>,
): {
  readonly storeKinds: readonly (readonly [string, StoreKind<TStore>])[]
  readonly crossProcessStoreKinds: readonly (readonly [string, StoreKind<TStore>])[]
} {
  const pgUrl = inject('pgUrl')
  const kinds: StoreKind<TStore>[] = [
    {
      name: 'JSONL',
      skip: null,
      crossProcess: true,
      open: async () => {
        const root = mkdtempSync(join(tmpdir(), `agent-ledger-${factories.tag}-jsonl-`))
        const { store } = await factories.openStoreAt(root)
        return {
          store,
          target: root,
          id: (name: string) => name,
          snapshot: (id: string) =>
            Promise.resolve(readFileSync(join(root, id, 'session.v4.jsonl'), 'latin1')),
          close: () => Promise.resolve(rmSync(root, { recursive: true, force: true })),
        }
      },
    },
    {
      name: 'memory (core)',
      skip: null,
      crossProcess: false,
      open: () => {
        const { store, close } = factories.memoryStore()
        return Promise.resolve({
          store,
          target: null,
          id: (name: string) => name,
          snapshot: (id: string) => eventLines(store, id),
          close,
        })
      },
    },
    {
      name: 'PostgreSQL (core)',
      skip: pgUrl === null ? (inject('pgSkipReason') ?? 'no PostgreSQL server') : null,
      crossProcess: true,
      open: async () => {
        const target = pgUrl!
        const { store, close } = await factories.openStoreAt(target)
        const run = randomUUID().slice(0, 8)
        return {
          store,
          target,
          id: (name: string) => `${name}-${run}`,
          snapshot: (id: string) => eventLines(store, id),
          close,
        }
      },
    },
  ]
  const storeKinds = kinds.map((kind) => [kind.name, kind] as const)
  return { storeKinds, crossProcessStoreKinds: storeKinds.filter(([, kind]) => kind.crossProcess) }
}

/**
 * A fresh store root in the OS temp directory.
 *
 * @param tag - The adapter's short name.
 * @returns The new directory.
 */
export function tempRoot(tag: string): string {
  return mkdtempSync(join(tmpdir(), `agent-ledger-${tag}-`))
}

/**
 * Every event of a session, in seq order.
 *
 * @param store - The store.
 * @param id - The session.
 * @returns The events.
 */
export async function allEvents<TEvent>(
  store: { readEvents(id: string): AsyncIterable<TEvent> },
  id: string,
): Promise<TEvent[]> {
  const events: TEvent[] = []
  for await (const event of store.readEvents(id)) events.push(event)
  return events
}
