/**
 * Opens a store from a target string, in a test or in a child process: a `postgres://` URL is
 * the core store on PostgreSQL, anything else a JSONL root. No vitest import: the crash child
 * uses it too, with the same lease owner as the parent (a restarted worker takes its own
 * lease over at once).
 */
import { createSessionStore as createCoreStore } from '@agent-ledger/session-store'
import { createSessionStore as createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { openPostgresBackend } from '@agent-ledger/session-store-postgres'

import type { LedgerStore } from '../src/index.ts'

/** The lease owner of every core store in these tests (parent and crash child alike). */
const OWNER = 'ai-sdk-test'

/** A store opened from a target, and how to close it. */
export interface TargetStore {
  readonly store: LedgerStore
  readonly close: () => Promise<void>
}

/** Opens the JSONL store at a root, or the core store on the PostgreSQL server of a URL. */
export async function openStoreAt(target: string): Promise<TargetStore> {
  if (/^postgres(ql)?:\/\//.test(target)) {
    const backend = await openPostgresBackend({ connectionString: target })
    const store = createCoreStore({ backend, clock: () => new Date().toISOString(), owner: OWNER })
    return { store, close: () => store.close() }
  }
  return { store: createJsonlStore({ root: target }), close: () => Promise.resolve() }
}
