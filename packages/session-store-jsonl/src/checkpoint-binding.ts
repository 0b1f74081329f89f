import { createHash } from 'node:crypto'

import type { EventRegistry, SessionHeader } from '@agent-ledger/session-events'

import type { CheckpointBinding } from './checkpoint-format.ts'
import type { FileHandleOps } from './fs-ops.ts'
import { CRC_SUFFIX_BYTES, decodeLine } from './line-codec.ts'
import type { LineLimits } from './line-codec.ts'
import type { LogFormat } from './log-format.ts'

const NEWLINE = 0x0a
const HEADER_READ_BYTES = 4096

/** The header line as it is on disk, and what a checkpoint binds of it. */
export interface HeaderFacts {
  /** The decoded header. */
  readonly header: SessionHeader
  /** Byte offset just after the header's `\n`. */
  readonly headerEndOffset: number
  /** The `crc` member of the header line. */
  readonly headerCrc: string
  /** SHA-256 of the header line, `\n` included. */
  readonly headerSha256: string
}

/**
 * The `crc` member of a checksummed line (the 8 hex digits inside its fixed suffix), or
 * null when the line does not end with a well-formed suffix.
 *
 * @param line - One line without its `\n`.
 * @returns 8 lowercase hex digits, or null.
 */
export function lineCrcMember(line: Uint8Array): string | null {
  if (line.length < CRC_SUFFIX_BYTES + 1) return null
  const text = Buffer.from(line.buffer, line.byteOffset + line.length - 10, 8).toString('latin1')
  return /^[0-9a-f]{8}$/.test(text) ? text : null
}

const digests = new WeakMap<EventRegistry, string>()

/**
 * SHA-256 of a registry's known types, sorted, one per line (memoized per registry).
 *
 * @param registry - The event registry.
 * @returns 64 lowercase hex digits.
 */
export function registryDigest(registry: EventRegistry): string {
  let digest = digests.get(registry)
  if (digest === undefined) {
    digest = createHash('sha256')
      .update([...registry.types].sort().join('\n'))
      .digest('hex')
    digests.set(registry, digest)
  }
  return digest
}

/**
 * Reads the first line of a log (bounded by `maxLineBytes`) without its `\n`.
 *
 * @param handle - The open log.
 * @param maxLineBytes - Longest line to read.
 * @returns The line and its length with the `\n`, or null when there is no complete first line.
 */
async function readFirstLine(
  handle: FileHandleOps,
  maxLineBytes: number,
): Promise<{ readonly line: Buffer; readonly endOffset: number } | null> {
  const pieces: Buffer[] = []
  let position = 0
  let chunkBytes = HEADER_READ_BYTES
  for (;;) {
    const buffer = Buffer.allocUnsafe(chunkBytes)
    const count = await handle.read(buffer, 0, chunkBytes, position)
    if (count === 0) return null
    const chunk = buffer.subarray(0, count)
    const newline = chunk.indexOf(NEWLINE)
    if (newline !== -1) {
      pieces.push(chunk.subarray(0, newline))
      const line = Buffer.concat(pieces)
      return { line, endOffset: line.length + 1 }
    }
    pieces.push(chunk)
    position += count
    if (position > maxLineBytes) return null
    chunkBytes = Math.min(chunkBytes * 2, 8 * 1024 * 1024)
  }
}

/**
 * Reads and decodes a log's header line and computes what a checkpoint binds of it.
 *
 * @param handle - The open log.
 * @param context - The line format, limits and the file name for errors.
 * @returns The facts, or null when the first line is missing, torn or refused (a full scan then reports why).
 */
export async function readHeaderFacts(
  handle: FileHandleOps,
  context: {
    readonly format: LogFormat
    readonly limits: LineLimits
    readonly file: string
    readonly id?: string
  },
): Promise<HeaderFacts | null> {
  const first = await readFirstLine(handle, context.limits.maxLineBytes)
  if (first === null) return null
  const decoded = context.format.decodeHeader(first.line, {
    limits: context.limits,
    file: context.file,
    sessionId: context.id,
  })
  if (decoded.kind !== 'header') return null
  const headerCrc = lineCrcMember(first.line)
  if (headerCrc === null) return null
  const hash = createHash('sha256').update(first.line).update('\n').digest('hex')
  return { header: decoded.header, headerEndOffset: first.endOffset, headerCrc, headerSha256: hash }
}

/**
 * Checks a checkpoint's binding against the log it would be used with: same session, same
 * creation time, same generation file and version, the same header line (CRC and SHA-256),
 * and event N's line still at `[eventOffset, offset)`, starting a line, ending with `\n`,
 * passing its checksum, with seq N and the recorded `crc`. Reads the header (known) and one
 * line; never the prefix in between.
 *
 * @param handle - The open log.
 * @param request - The binding, the header facts of the log, the expected file name and the line limits.
 * @returns null when the binding holds, else what differs (for the warning).
 */
export async function checkBinding(
  handle: FileHandleOps,
  request: {
    readonly binding: CheckpointBinding
    readonly facts: HeaderFacts
    readonly generationFile: string
    readonly limits: LineLimits
    readonly registryDigest: string
  },
): Promise<string | null> {
  const { binding, facts, limits } = request
  const header = facts.header
  if (binding.sessionId !== header.id)
    return `session id ${JSON.stringify(binding.sessionId)} is not the log's`
  if (binding.createdAt !== header.createdAt)
    return `createdAt ${binding.createdAt} is not the log's ${header.createdAt}`
  if (binding.generationFile !== request.generationFile) {
    return `generation ${binding.generationFile} is not the open file ${request.generationFile}`
  }
  if (binding.formatVersion !== header.version)
    return `format version ${binding.formatVersion} is not the log's`
  if (binding.headerCrc !== facts.headerCrc || binding.headerSha256 !== facts.headerSha256) {
    return 'the header line differs (CRC or SHA-256)'
  }
  if (binding.frameOffset !== null) return 'a frame offset is recorded for a plain log'
  if (binding.registryDigest !== request.registryDigest) return 'it was written with other known event types'
  if (binding.maxLineBytes > limits.maxLineBytes || binding.maxDepth > limits.maxDepth) {
    return 'it was written under larger line limits than this reader enforces'
  }
  if (binding.eventOffset < facts.headerEndOffset) return 'event N would start inside the header'
  const length = binding.offset - binding.eventOffset
  if (length - 1 > limits.maxLineBytes) return 'event N would be longer than maxLineBytes'
  // One byte before the line (the previous line's \n) through event N's own \n.
  const buffer = Buffer.allocUnsafe(length + 1)
  let got = 0
  while (got < buffer.length) {
    const count = await handle.read(buffer, got, buffer.length - got, binding.eventOffset - 1 + got)
    if (count === 0) break
    got += count
  }
  if (got < buffer.length) {
    return `the log ends before byte ${binding.offset} (a truncated or replaced log)`
  }
  if (buffer[0] !== NEWLINE || buffer[length] !== NEWLINE) {
    return `no line boundary at bytes ${binding.eventOffset} and ${binding.offset}`
  }
  const line = buffer.subarray(1, length)
  if (line.indexOf(NEWLINE) !== -1)
    return `more than one line between bytes ${binding.eventOffset} and ${binding.offset}`
  if (lineCrcMember(line) !== binding.eventCrc) return `event N's crc is not ${binding.eventCrc}`
  const decoded = decodeLine(line, limits)
  if (!decoded.ok) return `event N's line fails the ${decoded.reason} check`
  const seq = Object.hasOwn(decoded.value, 'seq') ? decoded.value['seq'] : undefined
  if (seq !== binding.seq)
    return `the line at byte ${binding.eventOffset} has seq ${JSON.stringify(seq) ?? 'none'}, not ${binding.seq}`
  return null
}
