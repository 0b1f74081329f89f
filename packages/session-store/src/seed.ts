/**
 * Seeds, once for every backend: checking a create request's seed events and the
 * `session/end-seed` rule, and planning a forked session's lines (the parent's exact
 * prefix lines, then the closers and the marker encoded here).
 */
import type { LoggedEvent, SessionHeader } from '@agent-ledger/session-events'
import { createProjection, planFork } from '@agent-ledger/session-projection'
import type { ForkSeed, Projection } from '@agent-ledger/session-projection'

import type { EncryptionHeader, SessionCipher } from './encryption.ts'
import { encodeEvent } from './event-codec.ts'
import { buildHeader } from './header.ts'
import type { SignalOptions, StoredLine } from './port.ts'
import { scanSession } from './scan.ts'
import type { CoreContext } from './scan.ts'
import { SessionStoreError, SessionStoreErrorCode } from './session-store-error.ts'
import type { LineLocation } from './session-store-error.ts'
import { describe } from './checks.ts'

/** True for a streamed seed (an async iterable that is not an array). */
export function isSeedStream(seed: unknown): seed is AsyncIterable<readonly LoggedEvent[]> {
  return (
    !Array.isArray(seed) &&
    typeof seed === 'object' &&
    seed !== null &&
    typeof (seed as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === 'function'
  )
}

/** What the `session/end-seed` rule needs to know about a whole seed. */
interface SeedSummary {
  readonly count: number
  readonly markers: number
  readonly firstMarker: LoggedEvent | null
  readonly lastType: string | null
}

/**
 * Checks and encodes seed events batch by batch (seqs dense from 0 across batches), folding
 * each into `projection`; {@link SeedEncoder.finish} applies the `session/end-seed` rule to
 * the whole seed. Memory holds one batch's lines; the rule needs only counts.
 */
export class SeedEncoder {
  readonly #context: CoreContext
  readonly #id: string
  readonly #header: SessionHeader
  readonly #projection: Projection
  readonly #cipher: SessionCipher | null
  #count = 0
  #markers = 0
  #firstMarker: LoggedEvent | null = null
  #lastType: string | null = null
  #lastLine: string | null = null
  #chars = 0

  constructor(
    context: CoreContext,
    request: {
      readonly id: string
      readonly header: SessionHeader
      readonly projection: Projection
      /** The new session's data key when the store encrypts, else null. */
      readonly cipher: SessionCipher | null
    },
  ) {
    this.#context = context
    this.#id = request.id
    this.#header = request.header
    this.#projection = request.projection
    this.#cipher = request.cipher
  }

  /** Events encoded so far. */
  get count(): number {
    return this.#count
  }

  /** The last line encoded, or null before the first. */
  get lastLine(): string | null {
    return this.#lastLine
  }

  /** Characters of the lines encoded so far, a newline each included. */
  get chars(): number {
    return this.#chars
  }

  /**
   * Checks and encodes one batch.
   *
   * @returns The batch's lines.
   * @throws {@link SessionStoreError} `INVALID_SEED` (not an array, a seq out of order), the event codes.
   */
  encode(batch: unknown): string[] {
    const id = this.#id
    if (!Array.isArray(batch)) {
      throw new SessionStoreError({
        code: SessionStoreErrorCode.INVALID_SEED,
        sessionId: id,
        message:
          this.#count === 0
            ? `Cannot create session ${id}: seed must be an array of events or an async iterable of event arrays, found ${describe(batch)}.`
            : `Cannot create session ${id}: every streamed seed batch must be an array of events, found ${describe(batch)} after ${this.#count} events; nothing was published.`,
      })
    }
    const lines: string[] = []
    for (const event of batch as readonly LoggedEvent[]) {
      const index = this.#count
      const found = (event as { seq?: unknown } | null)?.seq
      if (found !== index) {
        throw new SessionStoreError({
          code: SessionStoreErrorCode.INVALID_SEED,
          sessionId: id,
          seq: index,
          message: `Cannot create session ${id}: seed event ${index} must have seq ${index} (dense from 0), found ${describe(found)}.`,
          details: { expected: index, found: typeof found === 'number' ? found : null },
        })
      }
      const time = (event as { time?: unknown }).time
      const prepared = encodeEvent(
        event,
        { seq: index, time: time as string },
        {
          ...this.#context,
          sessionId: id,
          projection: this.#projection,
          role: 'seed event',
          cipher: this.#cipher,
        },
      )
      this.#projection.apply(prepared.event)
      lines.push(prepared.line)
      this.#lastLine = prepared.line
      this.#chars += prepared.line.length + 1
      this.#count += 1
      this.#lastType = event.type
      if (event.type === 'session/end-seed') {
        this.#markers += 1
        this.#firstMarker ??= event
      }
    }
    return lines
  }

  /** Applies the `session/end-seed` rule to the whole seed (call after the last batch). */
  finish(): void {
    checkSeedMarker(this.#id, this.#header, {
      count: this.#count,
      markers: this.#markers,
      firstMarker: this.#firstMarker,
      lastType: this.#lastType,
    })
  }
}

/** Checks and encodes seed events (seqs dense from 0), folding them into `projection`. */
export function encodeSeed(
  context: CoreContext,
  request: {
    readonly id: string
    readonly header: SessionHeader
    readonly seed: readonly LoggedEvent[]
    readonly projection: Projection
    readonly cipher: SessionCipher | null
  },
): string[] {
  const encoder = new SeedEncoder(context, request)
  const lines = encoder.encode(request.seed)
  encoder.finish()
  return lines
}

/**
 * The seed's lines as a stream of batches for the backend: each event batch is checked,
 * encoded and folded when the backend asks for it; the `session/end-seed` rule is checked
 * after the last, so a seed that breaks it fails the create before anything is published.
 */
export async function* encodeSeedStream(
  encoder: SeedEncoder,
  seed: AsyncIterable<readonly LoggedEvent[]>,
): AsyncGenerator<readonly string[], void, undefined> {
  for await (const batch of seed) yield encoder.encode(batch)
  encoder.finish()
}

/**
 * A seeded header needs a seed holding exactly one `session/end-seed` marker that agrees with
 * it, and a marker needs a seeded header. Events after the marker are the new session's own (an importer's fork publishes them in
 * the same create), as the JSONL store accepts them.
 */
function checkSeedMarker(id: string, header: SessionHeader, seed: SeedSummary): void {
  if (header.seeded !== true) {
    if (seed.markers === 0) return
    // A marker says "the seed ends here" of a header that says it has no seed: one of the two is wrong.
    throw new SessionStoreError({
      code: SessionStoreErrorCode.INVALID_SEED,
      sessionId: id,
      message: `Cannot create session ${id}: the seed holds ${seed.markers} session/end-seed event(s) but the header is not seeded; expected seeded: true with the marker, or no marker.`,
      details: { field: 'seeded', expected: true, found: header.seeded ?? null, markers: seed.markers },
    })
  }
  const last = seed.firstMarker
  if (seed.markers !== 1 || last === null) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.INVALID_SEED,
      sessionId: id,
      message: `Cannot create session ${id}: a seeded header needs a seed holding exactly one session/end-seed event, found ${seed.markers === 0 ? `${seed.count} seed event(s) and no marker` : `${seed.markers} markers`}.`,
      details: {
        expected: 'session/end-seed',
        found: seed.markers === 0 ? seed.lastType : seed.markers,
      },
    })
  }
  const data = last.data as { parentSession?: string; boundarySeq?: number }
  if (
    header.parentSession !== undefined &&
    data.parentSession !== undefined &&
    data.parentSession !== header.parentSession
  ) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.INVALID_SEED,
      sessionId: id,
      message: `Cannot create session ${id}: the header's parentSession is ${describe(header.parentSession)} but the seed's session/end-seed names ${describe(data.parentSession)}.`,
      details: { expected: header.parentSession, found: data.parentSession },
    })
  }
  if (
    header.inheritedEventCount !== undefined &&
    data.boundarySeq !== undefined &&
    data.boundarySeq + 1 !== header.inheritedEventCount
  ) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.INVALID_SEED,
      sessionId: id,
      message: `Cannot create session ${id}: the header's inheritedEventCount is ${header.inheritedEventCount} but the seed's session/end-seed has boundarySeq ${data.boundarySeq} (expected ${header.inheritedEventCount - 1}).`,
      details: { expected: header.inheritedEventCount - 1, found: data.boundarySeq },
    })
  }
}

/** What {@link planForkedSession} needs. */
export interface ForkPlanRequest extends SignalOptions {
  readonly id: string
  readonly to: string
  readonly atSeq: number
  readonly openTurn: 'close' | 'refuse' | undefined
  /** The child header's creation time. */
  readonly createdAt: string
  /** The child's data key when the store encrypts (then the prefix is sealed again under it), else null. */
  readonly child: { readonly header: EncryptionHeader; readonly cipher: SessionCipher } | null
}

/** A planned fork: the child's header, its projection, and its lines split at the boundary. */
export interface ForkPlan {
  readonly header: SessionHeader
  readonly headerLine: string
  readonly projection: Projection
  /** The parent's exact lines 0..atSeq (sealed again under the child's key when either is encrypted). */
  readonly prefixLines: readonly string[]
  /** True when `prefixLines` are the parent's exact lines (a server-side copy may then make them). */
  readonly verbatim: boolean
  /** The closers and the `session/end-seed` marker, encoded for the child. */
  readonly tailLines: readonly string[]
}

/**
 * Reads the parent up to `atSeq` (every check), plans the fork with `planFork`, and encodes
 * the child's header and the lines after the inherited prefix.
 *
 * @param context - Backend and checks.
 * @param request - Parent, child, boundary, open-turn policy and creation time.
 * @returns The plan; nothing is published.
 * @throws {@link SessionStoreError} `FORK_REFUSED`, the parent's damage or header codes.
 */
export async function planForkedSession(context: CoreContext, request: ForkPlanRequest): Promise<ForkPlan> {
  const { id, to, atSeq } = request
  const prefix: LoggedEvent[] = []
  const prefixLines: string[] = []
  let lastLocation: LineLocation | undefined
  const scan = await scanSession(context, id, {
    toSeq: atSeq,
    signal: request.signal,
    onEvent: (stored: StoredLine, event: LoggedEvent) => {
      prefix.push(event)
      prefixLines.push(stored.line)
      lastLocation = stored.location
    },
  })
  if (scan.damage !== null) throw scan.damage
  let seed: ForkSeed
  try {
    seed = planFork(prefix, {
      boundarySeq: atSeq,
      parentSession: id,
      ...(request.openTurn === undefined ? {} : { openTurn: request.openTurn }),
    })
  } catch (error) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.FORK_REFUSED,
      sessionId: id,
      seq: atSeq,
      // The boundary line when the session reaches it, else the log the prefix was read from.
      location:
        scan.lastSeq === atSeq || lastLocation?.file === undefined
          ? lastLocation
          : { file: lastLocation.file },
      message: `Cannot fork ${id} at seq ${atSeq}: ${error instanceof Error ? error.message : String(error)} (the session has ${scan.lastSeq + 1} events).`,
      details: { projectionCode: (error as { code?: unknown }).code ?? null, lastSeq: scan.lastSeq },
      cause: error,
    })
  }
  const parent = scan.header
  const { header, line: headerLine } = buildHeader(
    {
      ...(parent.cwd === undefined ? {} : { cwd: parent.cwd }),
      ...(parent.delegationDepth === undefined ? {} : { delegationDepth: parent.delegationDepth }),
      ...(parent.metadata === undefined ? {} : { metadata: parent.metadata }),
      parentSession: seed.header.parentSession,
      seeded: seed.header.seeded,
      inheritedEventCount: seed.header.inheritedEventCount,
    },
    {
      id: to,
      createdAt: request.createdAt,
      limits: context.limits,
      crc32c: context.crc32c,
      redaction: context.redaction,
      encryption: request.child?.header,
    },
  )
  const cipher = request.child?.cipher ?? null
  // The inherited prefix keeps its exact lines between plain sessions; an encrypted parent or
  // child gets it sealed under the child's own data key (erasing either key leaves the other whole).
  const verbatim = scan.keys === null && cipher === null
  const carried = verbatim ? prefixLines : carryLines(context, { id: to, cipher, events: prefix })
  const projection = createProjection({ registry: context.registry })
  for (const event of prefix) projection.apply(event)
  const tailLines: string[] = []
  for (const event of seed.events.slice(prefix.length)) {
    const prepared = encodeEvent(
      event,
      { seq: event.seq, time: event.time },
      {
        ...context,
        sessionId: to,
        projection,
        role: 'fork seed event',
        cipher,
      },
    )
    projection.apply(prepared.event)
    tailLines.push(prepared.line)
  }
  const markers = seed.events.filter((event) => event.type === 'session/end-seed')
  checkSeedMarker(to, header, {
    count: seed.events.length,
    markers: markers.length,
    firstMarker: markers[0] ?? null,
    lastType: seed.events.at(-1)?.type ?? null,
  })
  return { header, headerLine, projection, prefixLines: carried, verbatim, tailLines }
}

/**
 * Events already checked (a fork's prefix, a salvaged prefix) encoded again for session `id`:
 * sealed under its data key when it has one, else plain. No redaction (they were redacted
 * when first written) and no history check (they were folded when read).
 *
 * @param context - Registry, limits and CRC.
 * @param target - The new session, its cipher (or null) and the events.
 * @returns The lines.
 */
export function carryLines(
  context: CoreContext,
  target: {
    readonly id: string
    readonly cipher: SessionCipher | null
    readonly events: readonly LoggedEvent[]
  },
): string[] {
  return target.events.map(
    (event) =>
      encodeEvent(
        event,
        { seq: event.seq, time: event.time },
        {
          ...context,
          sessionId: target.id,
          redaction: null,
          projection: undefined,
          role: 'carried event',
          cipher: target.cipher,
        },
      ).line,
  )
}
