/**
 * The stores an adapter test runs over: the core store over JSONL, on its in-memory backend and
 * the core store on PostgreSQL (tooling/adapters/stores.ts, shared with the other framework
 * adapter).
 */
import { createMemoryBackend, createSessionStore as createCoreStore } from '@agent-ledger/session-store'
import type { SessionStore } from '@agent-ledger/session-store'

import { adapterStoreKinds } from '../../../tooling/adapters/stores.ts'
import { openStoreAt } from './store-target.ts'

/** JSONL, memory and PostgreSQL as `[name, kind]` rows for `describe.each`; the cross-process ones (JSONL, PostgreSQL). */
export const { storeKinds, crossProcessStoreKinds } = adapterStoreKinds<SessionStore>({
  tag: 'claude',
  openStoreAt,
  memoryStore: () => {
    const store = createCoreStore({
      backend: createMemoryBackend(),
      clock: () => new Date().toISOString(),
      owner: 'claude-agent-sdk-test',
    })
    return { store, close: () => store.close() }
  },
})
