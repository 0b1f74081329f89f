import { Readable } from 'node:stream'

import type { LoggedEvent, SessionHeader, SessionHeaderInput } from '@agent-ledger/session-events'
import { createProjection } from '@agent-ledger/session-projection'
import type { Projection } from '@agent-ledger/session-projection'

import { assertSessionId } from '../session-id.ts'
import type { SessionWriter } from '../session-writer.ts'
import { linesFacts, linesFactsBuilder } from '../checkpoint-writer.ts'
import type { LinesFacts } from '../checkpoint-writer.ts'
import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import { LOG_FILE_NAME } from '../layout.ts'
import { encodeJsonLine } from '../line-codec.ts'
import type { ByteSource } from '../read-log.ts'
import type { LogEncoding } from '../zstd-log-writer.ts'
import { logAdapter } from '../log-adapter.ts'
import { ensureRoot, ensureSessionDirectory, checkedEncoding } from './context.ts'
import type { StoreContext } from './context.ts'
import { buildHeader, encodeSeed, assertSeedMatchesHeader } from './header-seed.ts'
import type { SeedTally } from './header-seed.ts'
import { publishNewSession } from './publish-new.ts'
import { checkpointWriter, newWriter, repairAndReturn } from './open-writer.ts'

/** A create's seed: an array of events, or a stream of event batches (published at its end). */
type SeedInput = readonly LoggedEvent[] | AsyncIterable<readonly LoggedEvent[]>

/** The part of an `AbortSignal` a create reads. */
interface CreateSignal {
  readonly aborted: boolean
  readonly reason?: unknown
}

/** What {@link create} publishes. */
export interface CreateInput {
  readonly id: string
  readonly header?: Partial<SessionHeaderInput>
  readonly seed?: SeedInput
  readonly encoding?: LogEncoding
  readonly signal?: CreateSignal | undefined
}

/** The seed as the publish streams it, and what it held once streamed. */
interface SeedBody {
  readonly body: () => ByteSource
  readonly expected: { readonly lines: number; readonly lastLine: Buffer | null }
  /** The writer's checkpoint facts (call after the publish). */
  facts(size: number): LinesFacts
  /** An error the caller's stream threw, rethrown unchanged. */
  readonly streamError: () => unknown
}

/**
 * `store.create` (and a fork, which is a create with a seed): validates the header and the
 * seed, publishes the log by link, then opens it for write with loop-repair's closers.
 *
 * A streamed seed is validated, encoded and folded batch by batch while the publish writes
 * it into its temp file; the `session/end-seed` rule is checked after the last batch, before
 * the temp file is fsynced, read back and linked. Nothing is published on an error of the
 * stream (rethrown unchanged), an abort (`ABORTED`) or a crash midway.
 *
 * @param operation - `create`, or `fork` (names the failure code: `CREATE_FAILED`, `FORK_FAILED`).
 */
export async function create(
  ctx: StoreContext,
  request: CreateInput,
  operation: 'create' | 'fork' = 'create',
): Promise<SessionWriter> {
  const id = assertSessionId(request.id)
  const encoding = checkedEncoding(request.encoding ?? ctx.encoding)
  const header = buildHeader(ctx, id, request.header ?? {})
  const projection = createProjection({ registry: ctx.registry })
  const seed = request.seed ?? []
  abortCheck(id, request.signal)
  const prepared = isStream(seed)
    ? streamedSeed(ctx, { id, header, projection, seed, signal: request.signal })
    : arraySeed(ctx, { id, header, projection, seed })
  const adapter = await logAdapter(id, encoding, ctx.limits)
  await ensureRoot(ctx, true)
  const directory = await ensureSessionDirectory(ctx, id)
  let published
  try {
    published = await publishNewSession(ctx, {
      id,
      directory,
      operation,
      header,
      adapter,
      body: prepared.body,
      expected: prepared.expected,
    })
  } catch (error) {
    const streamError = prepared.streamError()
    throw streamError === undefined ? error : streamError
  }
  const writer = newWriter(ctx, {
    id,
    adapter,
    header,
    directory,
    handle: published.handle,
    lock: published.lock,
    projection,
    durableOffset: published.size,
    recovery: { tornTail: null, quarantineFile: null, repairs: [], headerMissing: false },
    checkpoints: checkpointWriter(ctx, {
      id,
      directory,
      handle: published.handle,
      header,
      ...prepared.facts(published.size),
      coveredSeq: -1,
    }),
  })
  return repairAndReturn(ctx, writer)
}

function isStream(seed: SeedInput): seed is AsyncIterable<readonly LoggedEvent[]> {
  return (
    !Array.isArray(seed) &&
    typeof (seed as { [Symbol.asyncIterator]?: unknown } | null)?.[Symbol.asyncIterator] === 'function'
  )
}

function abortCheck(id: string, signal: CreateSignal | undefined): void {
  if (signal?.aborted !== true) return
  throw new JsonlStoreError({
    code: JsonlErrorCode.ABORTED,
    message: `Creating session ${id} was aborted; nothing was published.`,
    file: `${id}/${LOG_FILE_NAME}`,
    cause: signal.reason,
  })
}

/** An array seed: encoded and checked whole before anything is written (as always). */
function arraySeed(
  ctx: StoreContext,
  request: {
    readonly id: string
    readonly header: SessionHeader
    readonly projection: Projection
    readonly seed: unknown
  },
): SeedBody {
  const { id } = request
  if (!Array.isArray(request.seed)) throw notBatch(id, request.seed, 0)
  const tally: SeedTally = { count: 0, markers: [] }
  const seedLines = encodeSeed(ctx, request.seed as readonly LoggedEvent[], {
    id,
    projection: request.projection,
    tally,
  })
  assertSeedMatchesHeader(id, request.header, tally)
  return {
    body: () => Readable.from(seedLines) as AsyncIterable<Buffer>,
    expected: { lines: seedLines.length, lastLine: seedLines.at(-1) ?? null },
    facts: (size) => linesFacts(seedLines, size, 0),
    streamError: () => undefined,
  }
}

/**
 * A streamed seed: each batch checked, encoded and folded when the publish asks for its
 * bytes; memory holds one batch's lines and the small per-line checkpoint facts.
 */
function streamedSeed(
  ctx: StoreContext,
  request: {
    readonly id: string
    readonly header: SessionHeader
    readonly projection: Projection
    readonly seed: AsyncIterable<readonly LoggedEvent[]>
    readonly signal: CreateSignal | undefined
  },
): SeedBody {
  const { id, projection, signal } = request
  const tally: SeedTally = { count: 0, markers: [] }
  // The plain header line the publish writes first: the offset of the first event line.
  const builder = linesFactsBuilder(encodeJsonLine(JSON.stringify(request.header)).length, 0)
  let lastLine: Buffer | null = null
  let streamError: unknown
  const body = async function* (): AsyncGenerator<Buffer, void, undefined> {
    const iterator = request.seed[Symbol.asyncIterator]()
    try {
      yield* encodeBatches(iterator)
    } finally {
      // Stopped early (a failed write, an abort): let the caller's producer clean up.
      if (streamError === undefined) await iterator.return?.().catch(() => undefined)
    }
    assertSeedMatchesHeader(id, request.header, tally)
  }
  const encodeBatches = async function* (
    iterator: AsyncIterator<readonly LoggedEvent[]>,
  ): AsyncGenerator<Buffer, void, undefined> {
    for (;;) {
      let step: IteratorResult<readonly LoggedEvent[]>
      try {
        step = await iterator.next()
      } catch (error) {
        streamError = error
        throw error
      }
      abortCheck(id, signal)
      if (step.done === true) break
      if (!Array.isArray(step.value)) throw notBatch(id, step.value, tally.count)
      const lines = encodeSeed(ctx, step.value, { id, projection, tally })
      if (lines.length === 0) continue
      for (const line of lines) builder.push(line)
      lastLine = lines.at(-1)!
      // Line by line: the publish gathers them into its own write buffer (no copy of the batch).
      yield* lines
    }
  }
  return {
    body: () => body(),
    expected: {
      get lines() {
        return tally.count
      },
      get lastLine() {
        return lastLine
      },
    },
    facts: () => builder.facts(),
    streamError: () => streamError,
  }
}

function notBatch(id: string, found: unknown, after: number): JsonlStoreError {
  return new JsonlStoreError({
    code: JsonlErrorCode.INVALID_EVENT,
    message: `Cannot create session ${id}: expected the seed to be an array of events or an async iterable of event arrays, found ${Array.isArray(found) ? 'an array' : found === null ? 'null' : typeof found}${after === 0 ? '' : ` after ${after} events`}; nothing was published.`,
    file: `${id}/${LOG_FILE_NAME}`,
    details: { after },
  })
}
