/**
 * A hand-off from a producer that pushes batches (an import sink, written to batch by batch)
 * to a consumer that pulls them (a store's create, whose seed is an async iterable): one
 * batch in flight, so memory holds what the importer is building plus what the store is
 * writing. Written by hand: the few lines here are simpler than adapting a stream library's
 * back-pressure to "resolve when the consumer took it, reject when the consumer died".
 */

interface Waiter<T> {
  resolve(step: IteratorResult<T>): void
  reject(error: Error): void
}

/**
 * A single-slot channel: `push` resolves once the consumer is done with the batch (it asks
 * for the next one, or the channel ends), so the producer builds the next batch only then:
 * one batch alive at a time, as when each batch was appended and flushed in turn.
 */
export class SeedChannel<T> implements AsyncIterable<T> {
  #slot: { readonly value: T; readonly taken: () => void } | null = null
  /** Resolves the push of the batch the consumer holds, when it asks for the next. */
  #release: (() => void) | null = null
  #waiter: Waiter<T> | null = null
  #ended = false
  #failure: { readonly error: Error } | null = null
  #iterated = false

  /**
   * Hands a batch to the consumer.
   *
   * @returns A promise resolved when the consumer is done with it (it asked for the next).
   * @throws Error when the channel was ended or failed, or a batch is already waiting.
   */
  push(value: T): Promise<void> {
    if (this.#ended || this.#failure !== null) {
      return Promise.reject(new Error('SeedChannel: push after the channel was ended'))
    }
    if (this.#slot !== null)
      return Promise.reject(new Error('SeedChannel: push before the last batch was taken'))
    return new Promise<void>((taken) => {
      const waiter = this.#waiter
      if (waiter !== null) {
        this.#waiter = null
        this.#release = taken
        waiter.resolve({ done: false, value })
        return
      }
      this.#slot = { value, taken }
    })
  }

  /** No more batches: the consumer's iteration ends after the waiting one. */
  end(): void {
    this.#ended = true
    this.#releaseHeld()
    this.#settleWaiter()
  }

  /** The producer failed: the consumer's next pull throws `error` (so it publishes nothing). */
  fail(error: Error): void {
    if (this.#failure !== null) return
    this.#failure = { error }
    this.#releaseHeld()
    this.#slot?.taken()
    this.#slot = null
    this.#settleWaiter()
  }

  #releaseHeld(): void {
    const release = this.#release
    this.#release = null
    release?.()
  }

  #settleWaiter(): void {
    const waiter = this.#waiter
    if (waiter === null) return
    if (this.#failure !== null) {
      this.#waiter = null
      waiter.reject(this.#failure.error)
    } else if (this.#ended && this.#slot === null) {
      this.#waiter = null
      waiter.resolve({ done: true, value: undefined })
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    if (this.#iterated) throw new Error('SeedChannel: iterated twice')
    this.#iterated = true
    return {
      next: () => {
        this.#releaseHeld()
        if (this.#failure !== null) return Promise.reject(this.#failure.error)
        const slot = this.#slot
        if (slot !== null) {
          this.#slot = null
          this.#release = slot.taken
          return Promise.resolve({ done: false, value: slot.value })
        }
        if (this.#ended) return Promise.resolve({ done: true, value: undefined })
        return new Promise<IteratorResult<T>>((resolve, reject) => {
          this.#waiter = { resolve, reject }
        })
      },
      // The consumer stopped (its write failed): later pushes are refused.
      return: () => {
        this.#ended = true
        this.#releaseHeld()
        this.#slot?.taken()
        this.#slot = null
        return Promise.resolve({ done: true, value: undefined })
      },
    }
  }
}
