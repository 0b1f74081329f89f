/*
 * The migration step from format v0 (the seed chapter's `session.jsonl`) to v4.
 *
 * Header: the v0 header EVENT becomes the v4 header LINE: `id` from the session directory,
 * `createdAt` from the header event's `time`, `cwd`, `parentSession`, `seeded`,
 * `inheritedEventCount`, `delegationDepth` from its `data` when they have the v4 types,
 * every other `data` member (model, title, a mistyped cwd...) under `metadata`, then
 * `migratedFrom {file, version: 0, sha256, lastSeq, bytes}` and `integrity: "crc32c"`.
 *
 * Events: v0 seq n becomes v4 seq n - 1 (the header no longer takes a seq), and every seq
 * reference moves with it: `sourceEventSeqs`, a replace `surfaceOp`'s `startSeq`/`endSeq`,
 * `compaction/start`'s `startSeq`/`endSeq`, `compaction/end`'s `replacementSeq`. The seqs
 * inside `session/end-seed` and `session/salvage` name another session and are kept;
 * plugin events' data is copied as is (their seq fields, if any, are not known here).
 * `surfaceOp` "append" (string or `{op:"append"}`) becomes absent, the v4 default.
 * `compactionId`, required by v4, is filled when missing: `v0-<v4 seq of the compaction/start>`,
 * shared by the summary and end that follow it. No event is ever invented: an unmatched
 * compaction stays unmatched, a dangling tool call stays dangling (repair happens when the
 * v4 generation is opened for write).
 *
 * Ignorable unknown events (RELIABILITY V5) are carried byte for byte: the v4 line is the
 * v0 line with its top-level `seq` value rewritten, the whitespace around the object
 * dropped, and the checksum member appended. (A line whose `seq` key is spelled with
 * escapes is re-serialized instead.) Unknown events without `ignorable` were refused by the
 * v0 reader (V6). A top-level `crc` member in a v0 event is refused: it is v4's checksum slot.
 * Other unknown top-level members of known events are kept, after the envelope members.
 */
import {
  parseEvent,
  SESSION_FORMAT_NAME,
  sessionHeaderSchema,
  SessionEventsError,
} from '@agent-ledger/session-events'

import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import { encodeJsonLine, INTEGRITY_CRC32C } from '../line-codec.ts'
import type { MigrationSource, Settings } from './migration-context.ts'
import { copyMembers, defineMember, own, spliceTopLevelSeq } from './raw-line.ts'
import type { SourceRecord } from './source-record.ts'

/**
 * What the step knows besides the source's records. `validate` true: check every output
 * event with `parseEvent` and the line limits, and throw a typed error naming the source line
 * (read-only migration); false: skip it, because the publish step validates the staged file
 * with the store's own scanner.
 */
interface StepContext {
  readonly settings: Settings
  readonly source: MigrationSource
  readonly validate: boolean
}

const ENVELOPE = new Set(['seq', 'time', 'type', 'data', 'surfaceOp', 'sourceEventSeqs', 'ignorable'])

/** Header `data` members of v0 that become v4 header fields, with the check of their v4 type. */
const HEADER_FIELDS: readonly (readonly [string, (value: unknown) => boolean])[] = [
  ['cwd', (value) => typeof value === 'string'],
  ['parentSession', (value) => typeof value === 'string'],
  ['seeded', (value) => typeof value === 'boolean'],
  ['inheritedEventCount', (value) => Number.isSafeInteger(value) && (value as number) >= 0],
  ['delegationDepth', (value) => Number.isSafeInteger(value) && (value as number) >= 0],
]

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function minusOne(value: unknown): unknown {
  return typeof value === 'number' ? value - 1 : value
}

/**
 * Builds the v4 header of a migrated v0 session.
 *
 * @param v0Header - The v0 header event (line 1).
 * @param context - Session id and migratedFrom.
 * @returns The v4 header object, members in the store's canonical order.
 */
function migrateV0Header(
  v0Header: Readonly<Record<string, unknown>>,
  context: StepContext,
): Record<string, unknown> {
  const data = own(v0Header, 'data') as Record<string, unknown>
  const header: Record<string, unknown> = {
    format: SESSION_FORMAT_NAME,
    version: 4,
    id: context.settings.sessionId,
    createdAt: own(v0Header, 'time'),
  }
  const mapped = new Set<string>(['version'])
  for (const [key, valid] of HEADER_FIELDS) {
    const value = own(data, key)
    if (value !== undefined && valid(value)) {
      header[key] = value
      mapped.add(key)
    }
  }
  const metadata: Record<string, unknown> = {}
  let hasMetadata = false
  for (const key of Object.keys(data)) {
    if (mapped.has(key)) continue
    defineMember(metadata, key, data[key])
    hasMetadata = true
  }
  if (hasMetadata) header['metadata'] = metadata
  const { file, version, sha256, lastSeq, bytes } = context.source.migratedFrom
  header['migratedFrom'] = { file, version, sha256, lastSeq, bytes }
  header['integrity'] = INTEGRITY_CRC32C
  return header
}

/** State carried across events: the compaction a summary or end belongs to. */
interface StepState {
  pendingCompactionId: string | null
}

function mapData(event: { type: string; data: unknown; seq: number }, state: StepState): unknown {
  const { type, data, seq } = event
  if (!isObject(data)) return data
  switch (type) {
    case 'compaction/start': {
      const id = own(data, 'compactionId') ?? `v0-${seq}`
      state.pendingCompactionId = typeof id === 'string' ? id : null
      return copyMembers(data, {
        compactionId: id,
        startSeq: minusOne(own(data, 'startSeq')),
        endSeq: minusOne(own(data, 'endSeq')),
      })
    }
    case 'compaction/summary':
      if (Object.hasOwn(data, 'compactionId')) return data
      return copyMembers(data, { compactionId: state.pendingCompactionId ?? `v0-${seq}` })
    case 'compaction/end': {
      const id = own(data, 'compactionId') ?? state.pendingCompactionId ?? `v0-${seq}`
      state.pendingCompactionId = null
      return copyMembers(data, { compactionId: id, replacementSeq: minusOne(own(data, 'replacementSeq')) })
    }
    default:
      return data
  }
}

function mapSurfaceOp(surfaceOp: unknown): unknown {
  if (surfaceOp === 'append') return undefined
  if (!isObject(surfaceOp)) return surfaceOp
  const op = own(surfaceOp, 'op')
  if (op === 'append') return undefined
  if (op !== 'replace') return surfaceOp
  return copyMembers(surfaceOp, {
    startSeq: minusOne(own(surfaceOp, 'startSeq')),
    endSeq: minusOne(own(surfaceOp, 'endSeq')),
  })
}

function refuse(
  record: SourceRecord,
  parts: { code: JsonlErrorCode; message: string; details: Record<string, unknown> },
  cause?: unknown,
): JsonlStoreError {
  const { origin } = record
  return new JsonlStoreError({
    code: parts.code,
    message: parts.message,
    file: origin.file,
    line: origin.line,
    offset: origin.offset,
    seq: origin.seq,
    lastGoodSeq: origin.seq - 1,
    details: parts.details,
    cause,
  })
}

function migrateRecord(record: SourceRecord, state: StepState, context: StepContext): SourceRecord {
  const value = record.event
  const v0Seq = value['seq'] as number
  const seq = v0Seq - 1
  const { origin } = record
  if (Object.hasOwn(value, 'crc')) {
    throw refuse(record, {
      code: JsonlErrorCode.INVALID_EVENT,
      message: `Line ${origin.line} of ${origin.file} cannot be migrated: expected no top-level "crc" member (it is the v4 checksum slot), found one.`,
      details: { field: 'crc', reason: 'reserved-member' },
    })
  }
  let event: Record<string, unknown>
  let line: Buffer
  if (record.kind === 'ignorable') {
    event = copyMembers(value, { seq })
    // The line passed the UTF-8 check: its text converts back to the same bytes.
    const encoded = encodeJsonLine(
      spliceTopLevelSeq(record.line, seq)?.toString('utf8') ?? JSON.stringify(event),
    )
    line = encoded.subarray(0, encoded.length - 1)
  } else {
    const type = value['type'] as string
    // The envelope members have fixed names (never `__proto__`): plain assignment is safe and fast.
    event = {
      seq,
      time: own(value, 'time'),
      type,
      data: mapData({ type, data: own(value, 'data'), seq }, state),
    }
    const surfaceOp = mapSurfaceOp(own(value, 'surfaceOp'))
    if (surfaceOp !== undefined) event['surfaceOp'] = surfaceOp
    const sources = own(value, 'sourceEventSeqs')
    if (sources !== undefined)
      event['sourceEventSeqs'] = Array.isArray(sources) ? sources.map(minusOne) : sources
    if (Object.hasOwn(value, 'ignorable')) event['ignorable'] = value['ignorable']
    // Unknown top-level members (any name, `__proto__` included) are defined, never assigned.
    for (const key of Object.keys(value)) {
      if (!ENVELOPE.has(key)) defineMember(event, key, value[key])
    }
    const encoded = encodeJsonLine(JSON.stringify(event))
    line = encoded.subarray(0, encoded.length - 1)
  }
  if (context.validate) validate({ event, line, record, context })
  return { event, line, kind: record.kind, origin }
}

function validate(input: {
  event: Record<string, unknown>
  line: Buffer
  record: SourceRecord
  context: StepContext
}): void {
  const { event, line, record, context } = input
  const { origin } = record
  if (line.length > context.settings.limits.maxLineBytes) {
    throw refuse(record, {
      code: JsonlErrorCode.LINE_TOO_LARGE,
      message: `Line ${origin.line} of ${origin.file} is too large once migrated: expected at most ${context.settings.limits.maxLineBytes} bytes, found ${line.length}.`,
      details: { reason: 'too-large', bytes: line.length, limit: context.settings.limits.maxLineBytes },
    })
  }
  try {
    parseEvent(event, context.settings.registry)
  } catch (error) {
    if (!SessionEventsError.is(error)) throw error
    const unknown = error.code === 'UNKNOWN_EVENT_TYPE'
    throw refuse(
      record,
      {
        code: unknown ? JsonlErrorCode.UNKNOWN_EVENT_TYPE : JsonlErrorCode.INVALID_EVENT,
        message: `Line ${origin.line} of ${origin.file} cannot be migrated to v4: ${error.message}.`,
        details: { field: error.field ?? null, type: error.type ?? null, migratedSeq: event['seq'] },
      },
      error,
    )
  }
}

/**
 * The v0 to v4 step (see the mapping at the top of this source file). A future v5 adds its
 * own step after this one (docs/decisions/2026-12-03-one-migration-step.md).
 *
 * @param v0Header - The v0 header event (line 1), as the v0 reader validated it.
 * @param context - The migration's settings, its source (recorded as `migratedFrom`), and whether to validate.
 * @returns The v4 header, its line (no `\n`), and the mapping of each v0 record, in order.
 * @throws {@link JsonlStoreError} `INVALID_HEADER` from the header now; `migrate` throws
 *   `INVALID_EVENT`, `UNKNOWN_EVENT_TYPE`, `LINE_TOO_LARGE` naming the source line.
 */
export function v0ToV4(
  v0Header: Readonly<Record<string, unknown>>,
  context: StepContext,
): { header: Record<string, unknown>; headerLine: Buffer; migrate: (record: SourceRecord) => SourceRecord } {
  const header = migrateV0Header(v0Header, context)
  const parsed = sessionHeaderSchema.safeParse(header)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const field = issue === undefined ? '' : issue.path.map(String).join('.')
    throw new JsonlStoreError({
      code: JsonlErrorCode.INVALID_HEADER,
      message: `The v0 header of ${context.source.file} cannot be migrated: field "${field}": ${issue?.message ?? 'invalid value'}.`,
      file: context.source.file,
      line: 1,
      offset: 0,
      details: { field },
    })
  }
  const encoded = encodeJsonLine(JSON.stringify(header))
  const state: StepState = { pendingCompactionId: null }
  return {
    header,
    headerLine: encoded.subarray(0, encoded.length - 1),
    migrate: (record) => migrateRecord(record, state, context),
  }
}
