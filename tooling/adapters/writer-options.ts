/**
 * The writer-options cases both adapters share: the core's writer options reach
 * `store.create` and `store.openWriter` through the adapter's open call (the lease owner and
 * length, takeover of a live lease with the old writer fenced, the abort signal). Each adapter
 * passes its open call, how its old handle tries one more write, and the memory store's
 * constructors (`tooling/` depends on no agent-ledger package).
 */
import { describe, expect, it } from 'vitest'

/** The memory backend's `head`, as the cases read it. */
interface HeadReader {
  head(id: string): Promise<{ readonly owner?: string | null | undefined }>
}

/** What {@link describeWriterOptions} needs from an adapter. */
export interface WriterOptionsAdapter<TStore, THandle extends { close(): Promise<void> }> {
  /** The adapter's open function, named in the test titles. */
  readonly name: string
  /** A fresh memory store whose own owner is `store-owner`, and its backend. */
  readonly newStore: () => {
    readonly backend: HeadReader
    readonly store: TStore & { close(): Promise<void> }
  }
  /** Opens the adapter's session with the core's writer options. */
  readonly open: (
    store: TStore,
    id: string,
    options: { owner?: string; leaseMs?: number; takeover?: boolean; signal?: AbortSignal },
  ) => Promise<THandle>
  /** One more durable write through a handle (it must fail `FENCED` once another owner took over). */
  readonly writeLate: (handle: THandle) => Promise<unknown>
}

/** Registers the shared writer-options cases for one adapter. */
export function describeWriterOptions<TStore, THandle extends { close(): Promise<void> }>(
  adapter: WriterOptionsAdapter<TStore, THandle>,
): void {
  describe(`${adapter.name} writer options`, () => {
    it('creates and reopens under the owner given; a second owner is refused, then takes over with takeover', async () => {
      const { backend, store } = adapter.newStore()
      const first = await adapter.open(store, 's', { owner: 'worker-1', leaseMs: 60_000 })
      expect((await backend.head('s')).owner).toBe('worker-1')
      await expect(adapter.open(store, 's', { owner: 'worker-2' })).rejects.toMatchObject({
        code: 'SESSION_LOCKED',
      })
      const second = await adapter.open(store, 's', { owner: 'worker-2', takeover: true })
      expect((await backend.head('s')).owner).toBe('worker-2')
      await expect(adapter.writeLate(first)).rejects.toMatchObject({ code: 'FENCED' })
      await second.close()
      await store.close()
    })

    it('an aborted signal stops the open with ABORTED and creates nothing', async () => {
      const { backend, store } = adapter.newStore()
      const controller = new AbortController()
      controller.abort(new Error('stop'))
      await expect(adapter.open(store, 'a', { signal: controller.signal })).rejects.toMatchObject({
        code: 'ABORTED',
      })
      await expect(backend.head('a')).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' })
      await store.close()
    })
  })
}
