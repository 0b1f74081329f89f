/**
 * `createJsonlStore`: the session core (`createSessionStore` of `@agent-ledger/session-store`)
 * over {@link createJsonlBackend} (which offers the core its native CRC-32C), with the defaults an application on one machine wants.
 */
import { hostname } from 'node:os'

import { createSessionStore } from '@agent-ledger/session-store'
import type { SessionStore, SessionStoreOptions } from '@agent-ledger/session-store'

import { createJsonlBackend } from './backend/jsonl-backend.ts'
import type { JsonlBackendOptions } from './backend/backend-options.ts'
import type { JsonlBackend } from './backend/jsonl-backend.ts'
import type { FsOps } from './fs-ops.ts'
import type { LogEncoding } from './zstd-log-writer.ts'

/** Options of {@link createJsonlStore}: the store root, and the core's options. */
export interface JsonlStoreOptions extends Omit<SessionStoreOptions, 'backend' | 'clock'> {
  /** The store root: one directory per session (absolute; created 0700 on the first create). */
  readonly root: string
  /** The encoding of sessions this store creates (`plain` default, or `zstd`); existing sessions keep theirs. */
  readonly encoding?: LogEncoding | undefined
  /** The file-system seam (fault injection, read progress); default the real one. */
  readonly fs?: FsOps | undefined
  /** The wall clock as ISO-8601; default `new Date().toISOString()`. */
  readonly clock?: (() => string) | undefined
  /**
   * The backend's other options (read limits, writer-lock settings, lease clock, follow poll):
   * see {@link JsonlBackendOptions}. `limits` at the top level are the core's.
   */
  readonly jsonl?: Omit<JsonlBackendOptions, 'root' | 'encoding' | 'fs' | 'registry'> | undefined
}

/** A store over a JSONL root: the core's {@link SessionStore}, its backend typed as the {@link JsonlBackend}. */
export interface JsonlStore extends SessionStore {
  readonly backend: JsonlBackend
}

/**
 * The session store over a directory: `createSessionStore({ backend: createJsonlBackend({ root }) })`
 * with a wall clock and a lease owner naming this host and
 * process (`agent-ledger@<host>:<pid>`, so two processes never take over each other's lease
 * as "the same owner restarting"). Every option of the core can be given.
 *
 * @param options - The root, the encoding of new sessions, and the core's options.
 * @returns The store; `close()` closes the backend too.
 * @throws {@link SessionStoreError} `INVALID_OPTION` (a relative root, an unknown encoding, bad limits).
 */
export function createJsonlStore(options: JsonlStoreOptions): JsonlStore {
  const { root, encoding, fs, jsonl, clock, ...core } = options
  const backend = createJsonlBackend({
    ...jsonl,
    root,
    ...(encoding === undefined ? {} : { encoding }),
    ...(fs === undefined ? {} : { fs }),
    ...(core.registry === undefined ? {} : { registry: core.registry }),
  })
  const store = createSessionStore({
    owner: `agent-ledger@${hostname()}:${process.pid}`,
    ...core,
    backend,
    clock: clock ?? (() => new Date().toISOString()),
  })
  // The store's backend is the one made here: typed as what it is.
  return store as JsonlStore
}
