/**
 * The chains of `search.index` files a backend has read, kept in memory (see
 * `search-index-file.ts`): a search that finds a sidecar with the same inode, size, mtime and
 * ctime as when it was read tests the cached signatures instead of opening the file again.
 * Only files whose timestamps were older than `RACY_MS` when read are kept (a change within
 * the file system's timestamp tick would not show), and only chains that needed no rewrite.
 * The entry is what the file said, nothing more: the checks of the chain against the log
 * (its last line, the tail) run on every search as they do for a chain read from disk.
 *
 * Bounded: at most {@link CHAIN_CACHE_BYTES} of signatures and block fields, least recently
 * used evicted first; a chain larger than the budget is never kept.
 */
import { SIGNATURE_BYTES } from '@agent-ledger/session-store/search-index'
import type { ChainEnd, IndexBlock } from '@agent-ledger/session-store/search-index'

/** Bytes of cached chains per backend: a 1 GB store's sidecars take about 39 MB. */
const CHAIN_CACHE_BYTES = 64 * 1024 * 1024
/** What one block costs beside its signature (its six numbers, the object). */
const BLOCK_OVERHEAD_BYTES = 96

/** One sidecar's valid chain as read. */
export interface CachedChain {
  /** The sidecar's `statKey` when it was read. */
  readonly indexKey: string
  readonly indexTime: number
  readonly end: ChainEnd
  /** Every block of the chain, in order (duplicates skipped). */
  readonly blocks: readonly IndexBlock[]
  /** Their signatures, {@link SIGNATURE_BYTES} each, in the same order. */
  readonly signatures: Uint8Array
  /** Records of the file (the header included). */
  readonly keep: number
}

function costOf(chain: CachedChain): number {
  return chain.blocks.length * (SIGNATURE_BYTES + BLOCK_OVERHEAD_BYTES) + BLOCK_OVERHEAD_BYTES
}

/** Least recently used chains, by session id, within a byte budget. */
export class ChainCache {
  readonly #entries = new Map<string, CachedChain>()
  readonly #budget: number
  #bytes = 0

  /** @param budget - Most bytes kept (default {@link CHAIN_CACHE_BYTES}). */
  constructor(budget = CHAIN_CACHE_BYTES) {
    this.#budget = budget
  }

  /** Bytes held now. */
  get bytes(): number {
    return this.#bytes
  }

  /**
   * The chain of session `id` read from a sidecar whose state is `indexKey`, or undefined.
   *
   * @param id - The session.
   * @param indexKey - The sidecar's `statKey` now.
   */
  get(id: string, indexKey: string): CachedChain | undefined {
    const entry = this.#entries.get(id)
    if (entry === undefined) return undefined
    this.#entries.delete(id)
    if (entry.indexKey !== indexKey) {
      this.#bytes -= costOf(entry)
      return undefined
    }
    this.#entries.set(id, entry)
    return entry
  }

  /**
   * Keeps session `id`'s chain (replacing what was kept), evicting the least recently used.
   *
   * @param id - The session.
   * @param chain - What its sidecar held.
   */
  set(id: string, chain: CachedChain): void {
    this.delete(id)
    const cost = costOf(chain)
    if (cost > this.#budget) return
    for (const [oldest, entry] of this.#entries) {
      if (this.#bytes + cost <= this.#budget) break
      this.#entries.delete(oldest)
      this.#bytes -= costOf(entry)
    }
    this.#entries.set(id, chain)
    this.#bytes += cost
  }

  /** Forgets session `id`'s chain. */
  delete(id: string): void {
    const entry = this.#entries.get(id)
    if (entry === undefined) return
    this.#entries.delete(id)
    this.#bytes -= costOf(entry)
  }
}
