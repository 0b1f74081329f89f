import {
  assertJsonValue,
  parseEvent,
  SESSION_FORMAT_NAME,
  SESSION_FORMAT_VERSION,
  sessionHeaderSchema,
  SessionEventsError,
} from '@agent-ledger/session-events'
import type { LoggedEvent, SessionHeader, SessionHeaderInput } from '@agent-ledger/session-events'
import { ProjectionError } from '@agent-ledger/session-projection'
import type { Projection } from '@agent-ledger/session-projection'

import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import { LOG_FILE_NAME } from '../layout.ts'
import { encodeEventLine } from '../line-codec.ts'
import { INTEGRITY_CRC32C } from '../log-format.ts'
import { snapshotJson } from '../json-snapshot.ts'
import { redactJson } from '../redaction.ts'
import type { StoreContext } from './context.ts'

/**
 * A seeded header and its seed agree (FORMAT.md section 3): `seeded: true` needs a seed that
 * holds exactly one `session/end-seed` marker (events after it are the new session's own, as
 * an importer's fork publishes them in one create), naming the header's
 * `parentSession` and, with `inheritedEventCount`, the matching boundary; a marker without
 * `seeded: true` is refused too. Nothing is published otherwise.
 */
export function assertSeedMatchesHeader(id: string, header: SessionHeader, seed: SeedTally): void {
  const markers = seed.markers
  const refuse = (expected: string, found: string): never => {
    throw new JsonlStoreError({
      code: JsonlErrorCode.INVALID_HEADER,
      message: `Cannot create session ${id}: expected ${expected}, found ${found}; nothing was published.`,
      file: `${id}/${LOG_FILE_NAME}`,
      details: { field: 'seeded', seeded: header.seeded ?? null, markers: markers.length },
    })
  }
  if (header.seeded !== true) {
    if (markers.length > 0)
      refuse(
        'no session/end-seed event in the seed of a header without "seeded": true',
        `one at seq ${markers[0]!.seq}`,
      )
    return
  }
  if (markers.length !== 1) {
    refuse(
      'a seed holding its one session/end-seed marker (the header says "seeded": true)',
      markers.length === 0 ? `${seed.count} seed event(s) and no marker` : `${markers.length} markers`,
    )
  }
  const data = markers[0]!.data as { readonly parentSession?: unknown; readonly boundarySeq?: unknown }
  if (header.parentSession !== undefined && data.parentSession !== header.parentSession) {
    refuse(
      `the marker to name parentSession ${JSON.stringify(header.parentSession)}`,
      JSON.stringify(data.parentSession) ?? 'nothing',
    )
  }
  if (
    header.inheritedEventCount !== undefined &&
    typeof data.boundarySeq === 'number' &&
    data.boundarySeq + 1 !== header.inheritedEventCount
  ) {
    refuse(
      `inheritedEventCount ${header.inheritedEventCount} to match the marker's boundarySeq + 1`,
      String(data.boundarySeq + 1),
    )
  }
}

export function buildHeader(
  ctx: StoreContext,
  id: string,
  input: Partial<SessionHeaderInput>,
): SessionHeader {
  if (input.id !== undefined && input.id !== id) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.INVALID_HEADER,
      message: `Cannot create session ${id}: expected header.id to be absent or ${JSON.stringify(id)}, found ${JSON.stringify(input.id)}.`,
      file: `${id}/${LOG_FILE_NAME}`,
      details: { field: 'id' },
    })
  }
  const header: Record<string, unknown> = {
    format: SESSION_FORMAT_NAME,
    version: SESSION_FORMAT_VERSION,
    id,
    createdAt: input.createdAt ?? ctx.clock(),
  }
  for (const key of [
    'cwd',
    'parentSession',
    'seeded',
    'inheritedEventCount',
    'delegationDepth',
    'metadata',
  ] as const) {
    if (input[key] !== undefined) header[key] = input[key]
  }
  if (ctx.redaction !== null) header['redaction'] = { policyVersion: ctx.redaction.policyVersion }
  header['integrity'] = INTEGRITY_CRC32C
  const file = `${id}/${LOG_FILE_NAME}`
  try {
    assertJsonValue(header, { maxDepth: ctx.limits.maxDepth, maxEntries: ctx.limits.maxEntries }, 'header')
  } catch (error) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.INVALID_HEADER,
      message: `Cannot create session ${id}: the header is not plain JSON within the limits (${error instanceof Error ? error.message : String(error)}).`,
      file,
      details: { field: SessionEventsError.is(error) ? (error.field ?? '') : '' },
      cause: error,
    })
  }
  const parsed = sessionHeaderSchema.safeParse(header)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const field = issue === undefined ? '' : issue.path.map(String).join('.')
    throw new JsonlStoreError({
      code: JsonlErrorCode.INVALID_HEADER,
      message: `Cannot create session ${id}: header field "${field}": ${issue?.message ?? 'invalid value'}.`,
      file,
      details: { field },
    })
  }
  return header as SessionHeader
}

/**
 * What the `session/end-seed` rule needs of a whole seed, gathered batch by batch: the event
 * count and the marker events (not the seed).
 */
export interface SeedTally {
  count: number
  readonly markers: LoggedEvent[]
}

/**
 * Checks, redacts and encodes one batch of seed events (a whole array seed, or one batch of
 * a streamed one), folding each into `into.projection` (which checks the seqs) and counting
 * it in `into.tally`.
 *
 * @returns The batch's lines, `\n` included.
 */
export function encodeSeed(
  ctx: StoreContext,
  seed: readonly LoggedEvent[],
  into: { readonly id: string; readonly projection: Projection; readonly tally: SeedTally },
): Buffer[] {
  const { id, projection } = into
  const file = `${id}/${LOG_FILE_NAME}`
  const lines: Buffer[] = []
  for (const original of seed) {
    // Read once (accessors included): what is validated is what is written.
    let event = snapshotJson(original, ctx.limits) as LoggedEvent
    try {
      assertJsonValue(event, { maxDepth: ctx.limits.maxDepth, maxEntries: ctx.limits.maxEntries }, 'event')
      if (ctx.redaction !== null) {
        const redaction = ctx.redaction
        const data = redactJson(event.data, (text) => redaction.redact(text))
        if (data !== event.data) event = { ...event, data } as LoggedEvent
      }
      parseEvent(event, ctx.registry)
      projection.apply(event)
    } catch (error) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.INVALID_EVENT,
        message: `Cannot create session ${id}: seed event seq ${String(event.seq)} is refused (${error instanceof Error ? error.message : String(error)}).`,
        file,
        seq: typeof event.seq === 'number' ? event.seq : undefined,
        details: {
          projectionCode: ProjectionError.is(error) || SessionEventsError.is(error) ? error.code : null,
        },
        cause: error,
      })
    }
    into.tally.count += 1
    if (event.type === 'session/end-seed') into.tally.markers.push(event)
    const line = encodeEventLine(event)
    if (line.length - 1 > ctx.limits.maxEventBytes) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.EVENT_TOO_LARGE,
        message: `Cannot create session ${id}: seed event seq ${event.seq} is too large: expected at most ${ctx.limits.maxEventBytes} bytes, found ${line.length - 1}.`,
        file,
        seq: event.seq,
        details: { bytes: line.length - 1, limit: ctx.limits.maxEventBytes },
      })
    }
    lines.push(line)
  }
  return lines
}
