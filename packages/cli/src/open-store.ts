/**
 * Opening a store the CLI was pointed at: the spec types and the backend and core store
 * factories (no dependency on the command context, so the context can use them).
 */
import { hostname } from 'node:os'
import { setTimeout as delay } from 'node:timers/promises'

import type { EventRegistry } from '@agent-ledger/session-events'
import { createSessionStore as createCoreStore } from '@agent-ledger/session-store'
import type { SessionBackend, SessionStore as CoreStore } from '@agent-ledger/session-store'
import { createJsonlBackend } from '@agent-ledger/session-store-jsonl'
import { openPostgresBackend } from '@agent-ledger/session-store-postgres'

import type { SessionLocation } from './session-path.ts'

/** A store named by `--store`, `AGENT_LEDGER_STORE` or a `copy` argument. */
export type StoreSpec =
  | { readonly kind: 'jsonl'; readonly root: string; readonly shown: string }
  | { readonly kind: 'postgres'; readonly url: string; readonly shown: string }

/** A `<session>` argument resolved: a JSONL session (files) or a session in a database store. */
export type SessionTarget =
  | { readonly kind: 'jsonl'; readonly location: SessionLocation }
  | {
      readonly kind: 'database'
      readonly id: string
      /** The core store over the database backend (closed when the command ends). */
      readonly store: CoreStore
      /** `postgres user@host:port/database`: what messages show, never the password. */
      readonly where: string
    }

/** Options of {@link openBackend}. */
export interface OpenBackendOptions {
  /** Apply pending PostgreSQL schema migrations (write commands); read commands refuse an old schema. */
  readonly migrate: boolean
}

/**
 * Opens the backend of a store spec (the caller closes it, or the core store that owns it does).
 *
 * @param spec - The store.
 * @param options - Whether a PostgreSQL schema may be migrated.
 * @returns The backend.
 */
export async function openBackend(spec: StoreSpec, options: OpenBackendOptions): Promise<SessionBackend> {
  if (spec.kind === 'jsonl') return createJsonlBackend({ root: spec.root })
  return openPostgresBackend({
    connectionString: spec.url,
    applicationName: 'agent-ledger-cli',
    migrate: options.migrate,
  })
}

/**
 * A core store over a backend, as the CLI uses it: its clock, a lease owner naming this
 * host and process, and a sleep for polling followers.
 *
 * @param backend - The backend (owned by the store from now on).
 * @param clock - ISO-8601 wall clock.
 * @param registry - Known event types (default: the core types).
 * @returns The store.
 */
export function coreStore(backend: SessionBackend, clock: () => string, registry?: EventRegistry): CoreStore {
  return createCoreStore({
    backend,
    clock,
    ...(registry === undefined ? {} : { registry }),
    owner: `agent-ledger-cli@${hostname()}:${process.pid}`,
    sleep: (ms, signal) =>
      delay(ms, undefined, signal === undefined ? {} : { signal: signal as AbortSignal }).catch(
        () => undefined,
      ),
  })
}
