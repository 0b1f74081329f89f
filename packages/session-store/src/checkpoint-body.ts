/**
 * The body of a core projection checkpoint: the opaque bytes a backend stores in
 * `CheckpointRecord.body`. The backend binds it by `(seq, eventCrc, headerCrc,
 * registryDigest)`; the body carries its own version and checksum, so a damaged or
 * foreign row is recognised, never trusted.
 *
 * Layout: one UTF-8 JSON line `{"format","checkpointVersion","payloadCrc32c"}`, `\n`, then
 * the UTF-8 JSON payload `{seq, logChars, maxDepth, maxLineLength, snapshot}` whose
 * CRC-32C (hex) is `payloadCrc32c`. `snapshot` is `Projection.snapshot()`.
 */
import type { EventRegistry } from '@agent-ledger/session-events'
import type { ProjectionSnapshot } from '@agent-ledger/session-projection'

import type { Crc32c } from './crc32c.ts'
import type { CheckpointSkipReason } from './checkpoint-options.ts'

/** Globals of every runtime the core targets; declared here so the core needs no DOM or Node typings. */
declare const TextEncoder: new () => { encode(input: string): Uint8Array }
declare const TextDecoder: new (
  label: string,
  options: { fatal: boolean },
) => { decode(input: Uint8Array): string }

/** The `format` member of a core checkpoint body. */
export const CORE_CHECKPOINT_FORMAT = 'agent-ledger.core-checkpoint'
/** The body layout this build writes and reads; any other is ignored (`old-version`, `newer-version`). */
export const CORE_CHECKPOINT_VERSION = 1

/** The decoded payload of a checkpoint body. */
export interface CheckpointPayload {
  /** The last event the snapshot covers. */
  readonly seq: number
  /** The log's size up to and including event `seq` (lines with their `\n`, UTF-16 code units). */
  readonly logChars: number
  /** The writer's limits: a reader with smaller ones replays instead. */
  readonly maxDepth: number
  readonly maxLineLength: number
  readonly snapshot: ProjectionSnapshot
}

/** A body that cannot be used, and why. */
export interface BodyRefusal {
  readonly reason: CheckpointSkipReason
  readonly message: string
}

const HEX = (value: number): string => (value >>> 0).toString(16).padStart(8, '0')
/** The first line is short: past this many bytes without `\n` the body is not ours. */
const MAX_PREAMBLE_BYTES = 256

/**
 * The digest of a registry's known event types (sorted, joined with `\n`): a checkpoint
 * built with other types is ignored.
 *
 * @param registry - The store's registry.
 * @param crc32c - The store's CRC-32C.
 * @returns `crc32c:<8 hex>:<count>`.
 */
export function registryDigest(registry: EventRegistry, crc32c: Crc32c): string {
  const types = [...registry.types].sort()
  return `crc32c:${HEX(crc32c(new TextEncoder().encode(types.join('\n'))))}:${types.length}`
}

/**
 * Encodes a checkpoint body.
 *
 * @param payload - The snapshot and its binding.
 * @param crc32c - The store's CRC-32C.
 * @returns The bytes to store.
 */
export function encodeCheckpointBody(payload: CheckpointPayload, crc32c: Crc32c): Uint8Array {
  const encoder = new TextEncoder()
  const data = encoder.encode(JSON.stringify(payload))
  const preamble = encoder.encode(
    `${JSON.stringify({ format: CORE_CHECKPOINT_FORMAT, checkpointVersion: CORE_CHECKPOINT_VERSION, payloadCrc32c: HEX(crc32c(data)) })}\n`,
  )
  const body = new Uint8Array(preamble.byteLength + data.byteLength)
  body.set(preamble, 0)
  body.set(data, preamble.byteLength)
  return body
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

function parseJson(bytes: Uint8Array): unknown {
  return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as unknown
}

/**
 * Decodes and checks a checkpoint body (format, version, checksum, payload shape). The
 * snapshot itself is validated by `restoreProjection`.
 *
 * @param body - The stored bytes.
 * @param crc32c - The store's CRC-32C.
 * @returns The payload, or why it cannot be used.
 */
export function decodeCheckpointBody(body: Uint8Array, crc32c: Crc32c): CheckpointPayload | BodyRefusal {
  const newline = body.subarray(0, MAX_PREAMBLE_BYTES + 1).indexOf(0x0a)
  if (newline < 0) {
    return {
      reason: 'decode',
      message: `expected a "${CORE_CHECKPOINT_FORMAT}" first line, found none in the first ${MAX_PREAMBLE_BYTES} bytes`,
    }
  }
  let preamble: unknown
  try {
    preamble = parseJson(body.subarray(0, newline))
  } catch {
    return { reason: 'decode', message: 'expected a JSON first line, found bytes that do not parse' }
  }
  if (!isRecord(preamble) || preamble.format !== CORE_CHECKPOINT_FORMAT) {
    return {
      reason: 'decode',
      message: `expected format "${CORE_CHECKPOINT_FORMAT}", found ${JSON.stringify(isRecord(preamble) ? preamble.format : preamble) ?? 'nothing'}`,
    }
  }
  const version = preamble.checkpointVersion
  if (version !== CORE_CHECKPOINT_VERSION) {
    const older = typeof version === 'number' && version < CORE_CHECKPOINT_VERSION
    return {
      reason: older ? 'old-version' : 'newer-version',
      message: `expected checkpointVersion ${CORE_CHECKPOINT_VERSION}, found ${JSON.stringify(version) ?? 'none'}`,
    }
  }
  const data = body.subarray(newline + 1)
  const crc = HEX(crc32c(data))
  if (preamble.payloadCrc32c !== crc) {
    return {
      reason: 'checksum',
      message: `expected payload CRC-32C ${JSON.stringify(preamble.payloadCrc32c) ?? 'none'}, found ${crc}`,
    }
  }
  let payload: unknown
  try {
    payload = parseJson(data)
  } catch {
    return { reason: 'decode', message: 'expected a JSON payload, found bytes that do not parse' }
  }
  if (
    !isRecord(payload) ||
    !isCount(payload.seq) ||
    !isCount(payload.logChars) ||
    !isCount(payload.maxDepth) ||
    !isCount(payload.maxLineLength) ||
    !isRecord(payload.snapshot)
  ) {
    return {
      reason: 'schema',
      message: 'expected a payload {seq, logChars, maxDepth, maxLineLength, snapshot}, found another shape',
    }
  }
  return payload as unknown as CheckpointPayload
}
