/** Test lines and requests, free of vitest (worker processes import this too). */
import { createHash, randomBytes } from 'node:crypto'

import type { SessionHeader } from '@agent-ledger/session-events'
import type { CreateRequest } from '@agent-ledger/session-store'

/**
 * A stand-in checksum for test lines: the backend stores lines as opaque text and only
 * relies on the fixed `,"crc":"XXXXXXXX"}` suffix, never on the checksum's value (the core
 * checks CRC-32C). sha256 keeps the test helper dependency-free.
 */
function checksum(body: string): string {
  return createHash('sha256').update(body).digest('hex').slice(0, 8)
}

/** A v4-shaped line: `body` minus its final `}`, then the checksum suffix. */
export function seal(body: string): string {
  return `${body.slice(0, -1)},"crc":"${checksum(body)}"}`
}

/** The checksum at the end of a line. */
export function crcOf(line: string): string {
  return line.slice(-10, -2)
}

/** An event line with `seq` and some text (unicode and escapes included, to prove bytes survive). */
export function eventLine(seq: number, text = `event ${seq}`): string {
  return seal(JSON.stringify({ seq, time: '2026-01-01T00:00:00.000Z', type: 'test/note', data: { text } }))
}

/** Lines `from..from+count-1`. */
export function eventLines(from: number, count: number, tag = ''): string[] {
  return Array.from({ length: count }, (_, index) => eventLine(from + index, `${tag}event ${from + index}`))
}

/** A create request for a session with `seedCount` seed events. */
export function createRequest(
  id: string,
  options: { seedCount?: number; cwd?: string; parentSession?: string } = {},
): CreateRequest {
  const header: Record<string, unknown> = {
    format: 'agent-ledger.session',
    version: 4,
    id,
    createdAt: '2026-01-01T00:00:00.000Z',
  }
  if (options.cwd !== undefined) header.cwd = options.cwd
  if (options.parentSession !== undefined) header.parentSession = options.parentSession
  header.integrity = 'crc32c'
  const lines = eventLines(0, options.seedCount ?? 0)
  const last = lines[lines.length - 1]
  return {
    id,
    headerLine: seal(JSON.stringify(header)),
    header: header as unknown as SessionHeader,
    lines,
    lastCrc: last === undefined ? null : crcOf(last),
  }
}

/** A unique session id per call. */
export function sessionId(prefix = 's'): string {
  return `${prefix}-${randomBytes(5).toString('hex')}`
}
