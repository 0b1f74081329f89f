/**
 * The stores an adapter test runs over: the JSONL store, the core store on its in-memory
 * backend, and the core store on PostgreSQL (one server per run from
 * tooling/pg/global-setup.ts; skipped with one line locally when no server binaries exist,
 * a failure under CI=true).
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { createMemoryBackend, createSessionStore as createCoreStore } from '@agent-ledger/session-store'
import { inject } from 'vitest'

import type { LedgerStore } from '../src/index.ts'
// For the types of inject('pgUrl') and inject('pgSkipReason').
import type {} from '../../../tooling/pg/global-setup.ts'
import { openStoreAt } from './store-target.ts'

/** One store, opened for one test. */
interface OpenedStore {
  readonly store: LedgerStore
  /** What a child process passes to `openStoreAt` to open the same store; null: in-process only. */
  readonly target: string | null
  /** A session id unique to this run (the PostgreSQL server may be shared between runs). */
  readonly id: (name: string) => string
  /**
   * What the store holds for a session, as text that only grows while the log is append-only:
   * the JSONL file's bytes; for the core stores, every event read back, one JSON line each.
   */
  readonly snapshot: (id: string) => Promise<string>
  /** Closes the store and removes what it wrote. */
  readonly close: () => Promise<void>
}

/** Every event of a session read back through the store, one JSON text per line. */
async function eventLines(store: LedgerStore, id: string): Promise<string> {
  let text = ''
  for await (const event of store.readEvents(id)) text += `${JSON.stringify(event)}\n`
  return text
}

/** A kind of store: its name, why it is skipped here (or null), and how to open one. */
export interface StoreKind {
  readonly name: string
  readonly skip: string | null
  /** True when another process can open the same store (a crash child): not the memory backend. */
  readonly crossProcess: boolean
  readonly open: () => Promise<OpenedStore>
}

const pgUrl = inject('pgUrl')

/** JSONL, the core's memory backend and PostgreSQL, as `[name, kind]` rows for `describe.each`. */
export const storeKinds: readonly (readonly [string, StoreKind])[] = [
  {
    name: 'JSONL',
    skip: null,
    crossProcess: true,
    open: async () => {
      const root = mkdtempSync(join(tmpdir(), 'agent-ledger-agents-jsonl-'))
      const { store } = await openStoreAt(root)
      return {
        store,
        target: root,
        id: (name: string) => name,
        snapshot: (id: string) => Promise.resolve(readFileSync(join(root, id, 'session.v4.jsonl'), 'latin1')),
        close: () => Promise.resolve(rmSync(root, { recursive: true, force: true })),
      }
    },
  },
  {
    name: 'memory (core)',
    skip: null,
    crossProcess: false,
    open: () => {
      const store = createCoreStore({
        backend: createMemoryBackend(),
        clock: () => new Date().toISOString(),
        owner: 'openai-agents-test',
      })
      return Promise.resolve({
        store,
        target: null,
        id: (name: string) => name,
        snapshot: (id: string) => eventLines(store, id),
        close: () => store.close(),
      })
    },
  },
  {
    name: 'PostgreSQL (core)',
    skip: pgUrl === null ? (inject('pgSkipReason') ?? 'no PostgreSQL server') : null,
    crossProcess: true,
    open: async () => {
      const target = pgUrl!
      const { store, close } = await openStoreAt(target)
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
].map((kind) => [kind.name, kind] as const)

/** The stores a second process can open: JSONL and PostgreSQL. */
export const crossProcessStoreKinds = storeKinds.filter(([, kind]) => kind.crossProcess)
