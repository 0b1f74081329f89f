/**
 * Opens an adapter test's store from a target string, in a test or in a child process: a
 * `postgres://` URL is the core store on PostgreSQL, anything else the core store over a
 * JSONL root (`createJsonlStore`). No vitest
 * import: the crash children use it too, with the same lease owner as the parent (a
 * restarted worker takes its own lease over at once). The adapter passes the constructors
 * in (`tooling/` depends on no agent-ledger package).
 */

/** A store opened from a target, and how to close it. */
export interface TargetStore<TStore> {
  readonly store: TStore
  readonly close: () => Promise<void>
}

/** The constructors `openStoreAtWith` uses, from the adapter's own dev dependencies. */
export interface StoreModules<TStore, TBackend> {
  /** The lease owner of every core store in the adapter's tests (parent and crash child alike). */
  readonly owner: string
  /** `createJsonlStore` of `@agent-ledger/session-store-jsonl`. */
  readonly createJsonlStore: (options: {
    readonly root: string
    readonly owner: string
  }) => TStore & { close(): Promise<void> }
  /** `createSessionStore` of `@agent-ledger/session-store`. */
  readonly createCoreStore: (options: {
    readonly backend: TBackend
    readonly clock: () => string
    readonly owner: string
  }) => TStore & { close(): Promise<void> }
  /** `openPostgresBackend` of `@agent-ledger/session-store-postgres`. */
  readonly openPostgresBackend: (options: { readonly connectionString: string }) => Promise<TBackend>
}

/**
 * Opens the store over a JSONL root, or over the PostgreSQL server of a URL.
 *
 * @param target - A directory or a `postgres://` URL.
 * @param modules - The adapter's constructors and lease owner.
 * @returns The store and how to close it.
 */
export async function openStoreAtWith<TStore, TBackend>(
  target: string,
  modules: StoreModules<TStore, TBackend>,
): Promise<TargetStore<TStore>> {
  if (/^postgres(ql)?:\/\//.test(target)) {
    const backend = await modules.openPostgresBackend({ connectionString: target })
    const store = modules.createCoreStore({
      backend,
      clock: () => new Date().toISOString(),
      owner: modules.owner,
    })
    return { store, close: () => store.close() }
  }
  const store = modules.createJsonlStore({ root: target, owner: modules.owner })
  return { store, close: () => store.close() }
}
