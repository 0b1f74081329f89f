/*
 * Readers of generation formats, as migration sources. Each reader has two passes: `scan`
 * validates the whole source (and fixes its last seq and tail before anything is written),
 * `stream` reads the good prefix again as a {@link VersionedStream} for the edges.
 */
import type { EventRegistry } from '@agent-ledger/session-events'

import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import type { LineLimits } from '../line-codec.ts'
import type { TornTail } from '../log-scanner.ts'
import { scanLogChunks } from '../read-log.ts'
import type { ByteSource } from '../read-log.ts'
import { readV0Chunks } from '../v0/read-v0.ts'
import type { VersionedRecord, VersionedStream } from './migration-edge.ts'

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

/** What a reader needs. */
interface GenerationReadOptions {
  /** The source file as errors name it. */
  readonly file: string
  readonly limits: LineLimits
  readonly registry: EventRegistry
}

/** A source format: its two passes. */
export interface GenerationReader {
  readonly version: number
  /**
   * Validates a whole source.
   *
   * @param source - Its bytes.
   * @param options - File name, limits, registry, and a progress callback called after each chunk.
   */
  scan(
    source: ByteSource,
    options: GenerationReadOptions & { readonly onChunk?: (eventsDone: number) => void },
  ): Promise<SourceScan>
  /**
   * Reads the good prefix again as a stream. `source` must end at `scan.goodEndOffset`. The
   * records iterator throws when the bytes no longer match the scan (damage, another last seq).
   *
   * @param source - The bytes of the good prefix.
   * @param options - File name, limits, registry, and the scan of pass 1.
   */
  stream(source: ByteSource, options: GenerationReadOptions & { readonly scan: SourceScan }): VersionedStream
}

/**
 * The error pass 2 throws when the source no longer reads like pass 1 saw it.
 *
 * @param file - The source file, as errors name it.
 * @param details - What differed.
 * @returns A `MIGRATION_FAILED{step:'check-source', cause:'SOURCE_CHANGED'}` error.
 */
export function sourceChangedError(file: string, details: Record<string, unknown>): JsonlStoreError {
  return new JsonlStoreError({
    code: JsonlErrorCode.MIGRATION_FAILED,
    message: `Migrating ${file} failed at step check-source: expected the source unchanged since it was scanned, found it changed (${JSON.stringify(details)}); nothing was published.`,
    file,
    details: { step: 'check-source', cause: 'SOURCE_CHANGED', published: false, poisoned: false, ...details },
  })
}

function checkOutcome(
  file: string,
  found: { damage: JsonlStoreError | null; lastSeq: number },
  scan: SourceScan,
): void {
  if (found.damage !== null) throw found.damage
  if (found.lastSeq !== scan.lastSeq) {
    throw sourceChangedError(file, { expectedLastSeq: scan.lastSeq, foundLastSeq: found.lastSeq })
  }
}

/** The end-of-scan outcome both readers produce (v0's and v4's scanners report the same fields). */
interface ScanEnd {
  readonly header: object | null
  readonly headerMissing: boolean
  readonly lastSeq: number
  readonly goodEndOffset: number
  readonly bytesRead: number
  readonly tornTail: TornTail | null
  readonly damage: JsonlStoreError | null
  readonly stats: { readonly events: number; readonly ignoredUnknown: number }
}

function sourceScan(version: number, outcome: ScanEnd, headerLine: Buffer | null): SourceScan {
  return {
    version,
    header: outcome.header as Record<string, unknown> | null,
    headerLine,
    headerMissing: outcome.headerMissing,
    lastSeq: outcome.lastSeq,
    goodEndOffset: outcome.goodEndOffset,
    bytesRead: outcome.bytesRead,
    tornTail: outcome.tornTail,
    damage: outcome.damage,
    events: outcome.stats.events,
    ignoredUnknown: outcome.stats.ignoredUnknown,
  }
}

/** Format v0: `session.jsonl` (see `src/v0`). */
const V0_READER: GenerationReader = Object.freeze<GenerationReader>({
  version: 0,
  async scan(source, options) {
    const chunks = readV0Chunks(source, options)
    let headerLine: Buffer | null = null
    let done = 0
    for (;;) {
      const step = await chunks.next()
      if (step.done === true) {
        return sourceScan(0, step.value, headerLine)
      }
      const first = step.value[0]
      if (first?.kind === 'header') {
        headerLine = Buffer.from(first.bytes)
        done -= 1
      }
      done += step.value.length
      options.onChunk?.(done)
    }
  },
  stream(source, options) {
    const { scan, file } = options
    if (scan.header === null || scan.headerLine === null)
      throw new RangeError('V0_READER.stream needs a scan with a header')
    const chunks = readV0Chunks(source, { file, limits: options.limits, registry: options.registry })
    async function* records(): AsyncGenerator<readonly VersionedRecord[], void, undefined> {
      try {
        for (;;) {
          const step = await chunks.next()
          if (step.done === true) {
            checkOutcome(file, step.value, scan)
            return
          }
          const batch: VersionedRecord[] = []
          for (const record of step.value) {
            if (record.kind === 'header') continue
            batch.push({
              event: record.value,
              line: record.bytes,
              kind: record.kind,
              origin: { file, line: record.line, offset: record.offset, seq: record.value['seq'] as number },
            })
          }
          if (batch.length > 0) yield batch
        }
      } finally {
        await chunks.return(undefined as never).catch(() => undefined)
      }
    }
    return { version: 0, header: scan.header, headerLine: scan.headerLine, records: records() }
  },
})

/** Format v4: `session.v4.jsonl` through the store's own scanner (read with no edge when a read-mode migration finds v4 current; the source of a future v4 to v5 edge). */
const V4_READER: GenerationReader = Object.freeze<GenerationReader>({
  version: 4,
  async scan(source, options) {
    let headerLine: Buffer | null = null
    let events = 0
    const chunks = scanLogChunks(source, {
      limits: options.limits,
      registry: options.registry,
      file: options.file,
      onHeader: (_header, location) => {
        headerLine = Buffer.from(location.bytes)
        return false
      },
      onEvent: () => {
        events += 1
      },
    })
    for (;;) {
      const step = await chunks.next()
      if (step.done === true) {
        return sourceScan(4, step.value, headerLine)
      }
      options.onChunk?.(events)
    }
  },
  stream(source, options) {
    const { scan, file, registry } = options
    if (scan.header === null || scan.headerLine === null)
      throw new RangeError('V4_READER.stream needs a scan with a header')
    let batch: VersionedRecord[] = []
    const chunks = scanLogChunks(source, {
      limits: options.limits,
      registry,
      file,
      onEvent: (event, location) => {
        batch.push({
          event: event as unknown as Record<string, unknown>,
          line: Buffer.from(location.bytes),
          kind: event.ignorable === true && !registry.has(event.type) ? 'ignorable' : 'known',
          origin: { file, line: location.line, offset: location.offset, seq: event.seq },
        })
      },
    })
    async function* records(): AsyncGenerator<readonly VersionedRecord[], void, undefined> {
      for (;;) {
        const step = await chunks.next()
        if (batch.length > 0) {
          const out = batch
          batch = []
          yield out
        }
        if (step.done === true) {
          checkOutcome(file, step.value, scan)
          return
        }
      }
    }
    return { version: 4, header: scan.header, headerLine: scan.headerLine, records: records() }
  },
})

/** The source formats migration can read, by version. */
export const GENERATION_READERS: ReadonlyMap<number, GenerationReader> = new Map([
  [0, V0_READER],
  [4, V4_READER],
])
