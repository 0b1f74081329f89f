/**
 * A JSONL backend with its `search` capability hidden, so a store over it runs the core's
 * streaming scan (every line read and checked) instead of the `search.index` sidecars: the
 * reference the search-index test compares every hit with, and the bench's scan row.
 */
import type { SessionBackend } from '@agent-ledger/session-store'

/** The same backend with its search capability hidden: the core's scan. */
export function scanning(backend: SessionBackend): SessionBackend {
  return new Proxy(backend, {
    get(target, property) {
      if (property === 'capabilities') return { ...target.capabilities, search: undefined }
      const value: unknown = Reflect.get(target, property, target)
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    },
  })
}
