/**
 * A backend wrapper that counts what is read through the port's `read`: the evidence that a
 * framework adapter resumes a session from its checkpoint instead of reading it from seq 0.
 * Shared by the adapters' resume tests; like the other helpers here it imports no
 * agent-ledger package (the backend is typed by the one method it wraps).
 */

/** One `read` call through the port and the lines it yielded. */
interface PortRead {
  readonly id: string
  readonly fromSeq: number
  readonly lines: number
}

/** What was read through the wrapped backend since the last {@link ReadCounter.reset}. */
export interface ReadCounter {
  /** Every `read` call, in call order. */
  readonly reads: readonly PortRead[]
  /** Lines (events) yielded by all of them. */
  readonly events: () => number
  /** The lowest `fromSeq` asked for, or null when nothing was read. */
  readonly lowestFromSeq: () => number | null
  readonly reset: () => void
}

/** The one port method the counter wraps. */
interface ReadingBackend {
  read(id: string, options: { readonly fromSeq?: number | undefined }): AsyncIterable<unknown>
}

/**
 * Wraps `backend` so that every line its `read` yields is counted; everything else (head,
 * leases, checkpoints, close...) goes to the backend itself.
 *
 * @param backend - Any `SessionBackend`.
 * @returns The wrapped backend (same type) and its counter.
 */
export function countingBackend<TBackend extends ReadingBackend>(
  backend: TBackend,
): { readonly backend: TBackend; readonly counter: ReadCounter } {
  const reads: PortRead[] = []
  const counter: ReadCounter = {
    reads,
    events: () => reads.reduce((sum, read) => sum + read.lines, 0),
    lowestFromSeq: () => (reads.length === 0 ? null : Math.min(...reads.map((read) => read.fromSeq))),
    reset: () => void reads.splice(0),
  }
  async function* counted(
    id: string,
    options: { readonly fromSeq?: number | undefined },
  ): AsyncGenerator<unknown> {
    const entry = { id, fromSeq: options.fromSeq ?? 0, lines: 0 }
    reads.push(entry)
    for await (const line of backend.read(id, options)) {
      entry.lines += 1
      yield line
    }
  }
  const wrapped = new Proxy(backend, {
    get(target, property) {
      if (property === 'read') return counted
      const value = Reflect.get(target, property, target) as unknown
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    },
  })
  return { backend: wrapped, counter }
}
