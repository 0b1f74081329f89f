/**
 * Opens a store from a target string, in a test or in a child process: a `postgres://` URL is
 * the core store on PostgreSQL, anything else the core store over a JSONL root (tooling/adapters/store-target.ts,
 * shared with the other framework adapter). No vitest import: the crash child uses it too.
 */
import { createSessionStore as createCoreStore } from '@agent-ledger/session-store'
import type { SessionStore } from '@agent-ledger/session-store'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { openPostgresBackend } from '@agent-ledger/session-store-postgres'

import { openStoreAtWith } from '../../../tooling/adapters/store-target.ts'
import type { TargetStore } from '../../../tooling/adapters/store-target.ts'

/**
 * Opens the store over a JSONL root (`createJsonlStore`), or over the PostgreSQL server of a URL.
 *
 * @param target - A directory or a `postgres://` URL.
 * @returns The store and how to close it.
 */
export function openStoreAt(target: string): Promise<TargetStore<SessionStore>> {
  return openStoreAtWith<SessionStore, Awaited<ReturnType<typeof openPostgresBackend>>>(target, {
    owner: 'claude-agent-sdk-test',
    createJsonlStore,
    createCoreStore,
    openPostgresBackend,
  })
}
