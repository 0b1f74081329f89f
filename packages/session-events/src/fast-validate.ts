/**
 * A hand-written fast path in front of the zod schemas of the envelope and of the core
 * events' `data`, for the hot paths that validate every event (a store's append, an import).
 *
 * Each check answers `true` only for a value the zod schema certainly accepts, and `false`
 * for anything else, including valid values it does not know how to prove (a class instance
 * where zod takes any object, a type without a fast check): `parseEvent` then asks zod, which
 * decides and words the error. So the fast path never changes what is accepted or refused,
 * nor an error message; a property test (`test/fast-validate.test.ts`) holds every check to
 * its schema. Keep the two together: a change to a schema in `envelope.ts`, `core-events.ts`,
 * `wire-message.ts` or `turn-end-reason.ts` must change its check here (or remove it).
 */
import type { SurfaceOp } from './envelope.ts'

/** A plain object (prototype `Object.prototype` or null): what every check here starts from. */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const prototype: unknown = Object.getPrototypeOf(value)
  return prototype === Object.prototype || prototype === null
}

/** `z.number().int().nonnegative()` (and `.max(Number.MAX_SAFE_INTEGER)`): a safe integer >= 0. */
function isCount(value: unknown): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

function isOptionalCount(value: unknown): boolean {
  return value === undefined || isCount(value)
}

function isNonEmptyString(value: unknown): boolean {
  return typeof value === 'string' && value.length > 0
}

function isOptionalString(value: unknown): boolean {
  return value === undefined || typeof value === 'string'
}

function isOptionalBoolean(value: unknown): boolean {
  return value === undefined || typeof value === 'boolean'
}

/** The same pattern as the envelope's `isoTimeSchema`. */
const ISO_TIME = /^\d{4,6}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/

/** The envelope's fields, each read once (the value `parseEvent` goes on with). */
export interface FastEnvelope {
  readonly seq: number
  readonly time: string
  readonly type: string
  readonly data: unknown
  readonly surfaceOp?: SurfaceOp | undefined
  readonly sourceEventSeqs?: number[] | undefined
  readonly ignorable?: boolean | undefined
}

/** The last time string {@link isIsoTime} accepted (a writer's clock repeats within a millisecond). */
let lastIsoTime: string | null = null

/** True when `time` has the envelope's ISO-8601 shape (the last accepted one is not matched again). */
function isIsoTime(time: string): boolean {
  if (time === lastIsoTime) return true
  if (!ISO_TIME.test(time)) return false
  lastIsoTime = time
  return true
}

/**
 * The envelope of `value` when `envelopeSchema` certainly accepts it, else `undefined`.
 * Each field is read once; the result holds what was read and checked (as zod's output does).
 */
export function fastEnvelope(value: unknown): FastEnvelope | undefined {
  // zod requires the `data` key (any value, undefined included), as the `in` operator sees it.
  if (!isPlainObject(value) || !('data' in value)) return undefined
  const { seq, time, type, data, surfaceOp, sourceEventSeqs, ignorable } = value
  if (!isCount(seq)) return undefined
  if (typeof time !== 'string' || !isIsoTime(time)) return undefined
  if (typeof type !== 'string' || type.length === 0 || type.length > 200) return undefined
  if (surfaceOp !== undefined && surfaceOp !== 'append') {
    if (!isPlainObject(surfaceOp)) return undefined
    if (surfaceOp['op'] !== 'replace' || !isCount(surfaceOp['startSeq']) || !isCount(surfaceOp['endSeq']))
      return undefined
  }
  if (sourceEventSeqs !== undefined) {
    if (!Array.isArray(sourceEventSeqs)) return undefined
    for (let index = 0; index < sourceEventSeqs.length; index += 1) {
      if (!isCount(sourceEventSeqs[index])) return undefined
    }
  }
  if (!isOptionalBoolean(ignorable)) return undefined
  return {
    seq: seq as number,
    time,
    type,
    data,
    surfaceOp: surfaceOp as SurfaceOp | undefined,
    sourceEventSeqs: sourceEventSeqs as number[] | undefined,
    ignorable: ignorable as boolean | undefined,
  }
}

const TURN_END_REASONS: ReadonlySet<unknown> = new Set([
  'completed',
  'aborted',
  'error',
  'max-tokens',
  'interrupted',
])

function isUsage(value: unknown): boolean {
  if (value === undefined) return true
  if (!isPlainObject(value)) return false
  return (
    isOptionalCount(value['prompt_tokens']) &&
    isOptionalCount(value['completion_tokens']) &&
    isOptionalCount(value['total_tokens']) &&
    isOptionalCount(value['cached_tokens'])
  )
}

/** `{type: 'text', text}` parts only (an image part goes to zod). */
function isTextParts(value: unknown): boolean {
  if (!Array.isArray(value)) return false
  for (let index = 0; index < value.length; index += 1) {
    const part: unknown = value[index]
    if (!isPlainObject(part) || part['type'] !== 'text' || typeof part['text'] !== 'string') return false
  }
  return true
}

function isToolCalls(value: unknown): boolean {
  if (value === undefined) return true
  if (!Array.isArray(value)) return false
  for (let index = 0; index < value.length; index += 1) {
    const call: unknown = value[index]
    if (!isPlainObject(call) || !isNonEmptyString(call['id']) || call['type'] !== 'function') return false
    const fn = call['function']
    if (!isPlainObject(fn) || !isNonEmptyString(fn['name']) || typeof fn['arguments'] !== 'string')
      return false
  }
  return true
}

function messageOf(data: unknown, role: string): Record<string, unknown> | undefined {
  if (!isPlainObject(data)) return undefined
  const message = data['message']
  return isPlainObject(message) && message['role'] === role ? message : undefined
}

/** Fast checks of core `data` schemas, by type. */
const CORE_DATA_CHECKS: Readonly<Record<string, (data: unknown) => boolean>> = {
  'turn/start': (data) => isPlainObject(data) && isCount(data['turn']),
  'turn/end': (data) => isPlainObject(data) && isCount(data['turn']) && TURN_END_REASONS.has(data['reason']),
  'system/message': (data) => {
    const message = messageOf(data, 'system')
    return (
      message !== undefined && typeof message['content'] === 'string' && isOptionalString(message['name'])
    )
  },
  'user/message': (data) => {
    const message = messageOf(data, 'user')
    if (message === undefined) return false
    const content = message['content']
    return (typeof content === 'string' || isTextParts(content)) && isOptionalString(message['name'])
  },
  'assistant/message': (data) => {
    const message = messageOf(data, 'assistant')
    if (message === undefined) return false
    const content = message['content']
    return (
      (content === null || typeof content === 'string') &&
      isToolCalls(message['tool_calls']) &&
      isOptionalString(message['reasoning_content']) &&
      isOptionalString(message['name']) &&
      isUsage((data as Record<string, unknown>)['usage']) &&
      isOptionalBoolean((data as Record<string, unknown>)['interrupted'])
    )
  },
  'tool/call': (data) =>
    isPlainObject(data) &&
    isNonEmptyString(data['callId']) &&
    isNonEmptyString(data['name']) &&
    typeof data['arguments'] === 'string',
  'tool/result': (data) => {
    const message = messageOf(data, 'tool')
    if (message === undefined) return false
    const code = (data as Record<string, unknown>)['code']
    return (
      isNonEmptyString(message['tool_call_id']) &&
      typeof message['content'] === 'string' &&
      isOptionalBoolean((data as Record<string, unknown>)['isError']) &&
      (code === undefined || isNonEmptyString(code))
    )
  },
  'compaction/start': (data) =>
    isPlainObject(data) &&
    isNonEmptyString(data['compactionId']) &&
    isCount(data['startSeq']) &&
    isCount(data['endSeq']) &&
    isOptionalString(data['reason']),
  'compaction/summary': (data) =>
    isPlainObject(data) &&
    isNonEmptyString(data['compactionId']) &&
    typeof data['summary'] === 'string' &&
    isUsage(data['usage']),
  'compaction/end': (data) =>
    isPlainObject(data) &&
    isNonEmptyString(data['compactionId']) &&
    isCount(data['replacementSeq']) &&
    isCount(data['hiddenCount']),
}

/**
 * True when the core schema of `type` certainly accepts `data`; false when it does not or
 * when this fast path cannot tell (a plugin type, a rare core type, an image part...).
 */
export function fastCoreData(type: string, data: unknown): boolean {
  const check = Object.prototype.hasOwnProperty.call(CORE_DATA_CHECKS, type)
    ? CORE_DATA_CHECKS[type]
    : undefined
  return check !== undefined && check(data)
}
