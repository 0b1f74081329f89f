/*
 * What the readers of a migration source hand the v0 to v4 step and the writer: the events
 * of a generation as records, in batches, and what the validating first pass found.
 */
import type { EventRegistry } from '@agent-ledger/session-events'

import type { JsonlStoreError } from '../jsonl-store-error.ts'
import type { LineLimits } from '../line-codec.ts'
import type { TornTail } from '../log-scanner.ts'

/** Where a record came from in the on-disk source generation (for errors). */
interface RecordOrigin {
  /** The source file, relative to the store root. */
  readonly file: string
  /** 1-based line number in the source. */
  readonly line: number
  /** Byte offset of the line in the source. */
  readonly offset: number
  /** The record's seq in the source's own numbering. */
  readonly seq: number
}

/** One event of a generation being migrated, in its format version (v0 or v4). */
export interface SourceRecord {
  /**
   * The event as that version's reader returns it (the parsed line without any checksum
   * member). Built with own-property copies only: `__proto__` keys stay data.
   */
  readonly event: Record<string, unknown>
  /** The line in that version's encoding, without its `\n` (checksum included when the version has one). */
  readonly line: Buffer
  /** `ignorable`: an unknown type kept verbatim because it carried `ignorable: true` (RELIABILITY V5). */
  readonly kind: 'known' | 'ignorable'
  readonly origin: RecordOrigin
}

/** What the validating first pass over a source generation found. */
export interface SourceScan {
  readonly version: number
  /** The header object (v0: the header event), or null. */
  readonly header: Record<string, unknown> | null
  /** The header line without its `\n` (a copy), or null. */
  readonly headerLine: Buffer | null
  /** True when the source has no valid header line (empty file, torn header). */
  readonly headerMissing: boolean
  /** Seq of the last good event, in the source's numbering (v0: the header is seq 0). */
  readonly lastSeq: number
  /** Byte offset just after the last good line. */
  readonly goodEndOffset: number
  readonly bytesRead: number
  readonly tornTail: TornTail | null
  /** Damage in the middle, or a refused header. */
  readonly damage: JsonlStoreError | null
  /** Events after the header. */
  readonly events: number
  /** Ignorable unknown events among them. */
  readonly ignoredUnknown: number
}

/** What a reader of a source generation needs. */
export interface GenerationReadOptions {
  /** The source file as errors name it (relative to the store root), e.g. `abc/session.jsonl`. */
  readonly file: string
  readonly limits: LineLimits
  /** Known event types (core plus plugins; for v0, besides the v0 vocabulary). */
  readonly registry: EventRegistry
}

/**
 * A source read chunk by chunk: a batch of records per read chunk (possibly empty), then the
 * scan outcome as the return value. Memory: one chunk plus the longest line.
 */
export type GenerationChunks = AsyncGenerator<readonly SourceRecord[], SourceScan, undefined>
