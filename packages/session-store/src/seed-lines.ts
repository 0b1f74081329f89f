/**
 * A create request's seed lines as batches, for backends: one loop serves an array seed and
 * a streamed one, with the checks every backend makes between batches (the abort signal,
 * the batch's shape) and what it needs at the publish (the line count, the last line's
 * checksum).
 */
import { describe, throwIfAborted } from './checks.ts'
import { lineCrc } from './line-codec.ts'
import type { CreateRequest } from './port.ts'
import { SessionStoreError, SessionStoreErrorCode } from './session-store-error.ts'

/** The batches of one create's seed, and what they held once consumed. */
export interface SeedBatches extends AsyncIterable<readonly string[]> {
  /** Lines yielded so far (the seed's length once the iteration ended). */
  readonly count: number
  /** The last line yielded so far, or null. */
  readonly lastLine: string | null
  /**
   * The error the caller's stream threw, if it did: a backend whose write machinery wraps
   * errors rethrows this one unchanged (the port's contract).
   */
  readonly streamError: unknown
  /**
   * The head's `lastCrc` once the iteration ended: the request's for an array seed; for a
   * streamed one the checksum of the last line, checked against the request's when given.
   *
   * @throws {@link SessionStoreError} `INVALID_OPTION` when a given `lastCrc` is not the last line's.
   */
  lastCrc(): string | null
}

/**
 * Wraps `request.lines` as batches (an array is one batch). Iterate it once. Before each
 * batch is handed over, and after the last, `request.signal` is checked (`ABORTED`).
 *
 * @param request - The create request.
 * @param action - What is being done, for messages (`Creating session x`).
 * @returns The batches; empty batches are skipped.
 * @throws {@link SessionStoreError} while iterating: `ABORTED`, `INVALID_OPTION` (a streamed batch
 *   that is not an array of strings); the stream's own errors pass through unchanged.
 */
export function seedBatches(request: CreateRequest, action: string): SeedBatches {
  const source = request.lines
  let count = 0
  let lastLine: string | null = null
  let streamError: unknown
  let consumed = false
  const batches = async function* (): AsyncGenerator<readonly string[], void, undefined> {
    if (consumed) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.INVALID_OPTION,
        sessionId: request.id,
        message: `${action}: the seed stream can be consumed once, found a second pass over it.`,
      })
    }
    consumed = true
    throwIfAborted(request.signal, action)
    if (Array.isArray(source)) {
      const lines = source as readonly string[]
      if (lines.length > 0) {
        count = lines.length
        lastLine = lines.at(-1)!
        yield lines
      }
      return
    }
    const iterator = (source as AsyncIterable<readonly string[]>)[Symbol.asyncIterator]()
    try {
      for (;;) {
        let step: IteratorResult<readonly string[]>
        try {
          step = await iterator.next()
        } catch (error) {
          streamError = error
          throw error
        }
        throwIfAborted(request.signal, action)
        if (step.done === true) return
        const batch = step.value
        if (!Array.isArray(batch) || batch.some((line) => typeof line !== 'string')) {
          throw new SessionStoreError({
            code: SessionStoreErrorCode.INVALID_OPTION,
            sessionId: request.id,
            message: `${action}: every streamed seed batch must be an array of line strings, found ${Array.isArray(batch) ? 'an array holding a non-string' : describe(typeof batch)} after ${count} lines; nothing was published.`,
            details: { option: 'lines', after: count },
          })
        }
        if (batch.length === 0) continue
        count += batch.length
        lastLine = (batch as readonly string[]).at(-1)!
        yield batch as readonly string[]
      }
    } finally {
      // The consumer stopped early (a failed write): let the producer clean up.
      if (streamError === undefined) await iterator.return?.().catch(() => undefined)
    }
  }
  return {
    [Symbol.asyncIterator]: () => batches(),
    get count() {
      return count
    },
    get lastLine() {
      return lastLine
    },
    get streamError() {
      return streamError
    },
    lastCrc() {
      if (Array.isArray(source)) {
        const lines = source as readonly string[]
        return request.lastCrc ?? (lines.length === 0 ? null : lineCrc(lines.at(-1)!))
      }
      const found = lastLine === null ? null : lineCrc(lastLine)
      if (request.lastCrc !== undefined && request.lastCrc !== found) {
        throw new SessionStoreError({
          code: SessionStoreErrorCode.INVALID_OPTION,
          sessionId: request.id,
          message: `${action}: lastCrc must be the checksum of the last streamed line, expected ${describe(found)}, found ${describe(request.lastCrc)}; nothing was published.`,
          details: { option: 'lastCrc', expected: found, found: request.lastCrc },
        })
      }
      return found
    },
  }
}
