/**
 * Opening a store the CLI was pointed at: the spec types and `openStore`, the one way a
 * command gets a store (the core's `SessionStore`, over a directory or a database). No
 * dependency on the command context, so the context can use it.
 */
import { hostname } from 'node:os'
import { setTimeout as delay } from 'node:timers/promises'

import type { EventRegistry } from '@agent-ledger/session-events'
import { createSessionStore } from '@agent-ledger/session-store'
import type { SessionEncryption, SessionStore, SessionStoreOptions } from '@agent-ledger/session-store'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import type { FsOps } from '@agent-ledger/session-store-jsonl'
import { openPostgresBackend } from '@agent-ledger/session-store-postgres'

import type { SessionLocation } from './session-path.ts'

/** A store named by `--store`, `AGENT_LEDGER_STORE`, a `copy` argument or a session directory's parent. */
export type StoreSpec =
  | { readonly kind: 'jsonl'; readonly root: string; readonly shown: string }
  | { readonly kind: 'postgres'; readonly url: string; readonly shown: string }

/** A `<session>` argument resolved: a session id in a store (and its files, when the store is a directory). */
export interface SessionTarget {
  readonly id: string
  /** The core store holding the session (closed when the command ends). */
  readonly store: SessionStore
  /** How messages name the store: the root directory as displayed, or `postgres user@host:port/database` (never the password). */
  readonly where: string
  /** The session's files when the store is a JSONL directory; null for a database. */
  readonly location: SessionLocation | null
}

/** Options of {@link openStore}. */
export interface OpenStoreOptions {
  /** The clock (ISO-8601): the CLI's, or an import's source times. */
  readonly clock: () => string
  /** Apply pending PostgreSQL schema migrations (write commands); read commands refuse an old schema. */
  readonly migrate: boolean
  /** Known event types (default: the core types). */
  readonly registry?: EventRegistry | undefined
  /** Where the store's warnings go (one sentence each). */
  readonly onWarning?: SessionStoreOptions['onWarning']
  /** A directory store: the file-system seam (read progress). */
  readonly fs?: FsOps | undefined
  /** Encryption at rest (`AGENT_LEDGER_KEY_FILE`/`AGENT_LEDGER_KEYS` and `AGENT_LEDGER_KEY_STORE`): reads decrypt, new sessions are sealed. */
  readonly encryption?: SessionEncryption | undefined
}

/**
 * Opens the store of a spec as the CLI uses it: the core store over the JSONL backend or
 * the PostgreSQL backend, a lease owner naming this host and process, and a sleep for
 * polling followers. Projection checkpoints are not used on open: an inspection tool reads
 * every log in full, so damage anywhere is reported and what is shown is the replay of what
 * is stored.
 *
 * @param spec - The store.
 * @param options - Clock, schema migration, registry, warnings, file-system seam.
 * @returns The store (the caller closes it).
 * @throws the backend's connection and option errors.
 */
export async function openStore(spec: StoreSpec, options: OpenStoreOptions): Promise<SessionStore> {
  const common = {
    clock: options.clock,
    owner: `agent-ledger-cli@${hostname()}:${process.pid}`,
    checkpoint: { enabled: false },
    ...(options.registry === undefined ? {} : { registry: options.registry }),
    ...(options.onWarning === undefined ? {} : { onWarning: options.onWarning }),
    ...(options.encryption === undefined ? {} : { encryption: options.encryption }),
  }
  if (spec.kind === 'jsonl') {
    return createJsonlStore({
      root: spec.root,
      ...common,
      ...(options.fs === undefined ? {} : { fs: options.fs }),
    })
  }
  const backend = await openPostgresBackend({
    connectionString: spec.url,
    applicationName: 'agent-ledger-cli',
    migrate: options.migrate,
  })
  return createSessionStore({
    backend,
    ...common,
    sleep: (ms, signal) =>
      delay(ms, undefined, signal === undefined ? {} : { signal: signal as AbortSignal }).catch(
        () => undefined,
      ),
  })
}
