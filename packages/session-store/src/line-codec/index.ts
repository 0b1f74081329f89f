/**
 * @packageDocumentation
 * The one v4 line codec, for backend and tool authors (`@agent-ledger/session-store/line-codec`):
 * a line's checksum (CRC-32C suffix), its encoding from JSON text and its per-line checks
 * (length, depth, JSON object, checksum). The core reads and writes every line through it; a
 * file backend decodes the lines it reads through it too, once, and hands the core the
 * checked object (`StoredLine.checked`). `parseHeaderLine` and `decodeEventLine` are the
 * core's one check of a stored header line and of an event line (seq, type, payload), for a backend that checks a log on its own (a JSONL
 * compress or migration read-back). See docs/decisions/2026-12-02-one-line-codec.md and
 * docs/decisions/2026-12-03-jsonl-scans-through-the-core-codec.md.
 */
export {
  canonicalEvent,
  checksumJson,
  decodeLine,
  jsonDepth,
  lineCrc,
  mayNestDeeper,
  suffixCrc,
  valueDepth,
  verifyLineBytes,
  verifyLineChecksum,
} from '../line-codec.ts'
export type { DecodedLine, EncodedLine, LineLimits } from '../line-codec.ts'
export { decodeEventLine } from '../event-codec.ts'
export type { DecodeContext } from '../event-codec.ts'
export { parseHeaderLine } from '../header.ts'
export type { ParseHeaderOptions } from '../header.ts'
