/*
 * Readers of generation formats, as migration sources: v0 (`src/v0`) and v4 (the store's
 * own scanner). Both read a source chunk by chunk ({@link GenerationChunks}); pass 1
 * ({@link scanGeneration}) validates the whole source (and fixes its last seq and tail
 * before anything is written), pass 2 ({@link streamGeneration}) reads the good prefix again.
 */
import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import { scanLogChunks } from '../read-log.ts'
import type { ByteSource } from '../read-log.ts'
import { readV0Chunks } from '../v0/read-v0.ts'
import type { GenerationChunks, GenerationReadOptions, SourceRecord, SourceScan } from './source-record.ts'

/** The format versions migration can read. */
export const READABLE_VERSIONS: readonly number[] = [0, 4]

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

/** Format v4: `session.v4.jsonl` through the store's own scanner (a read-mode migration that finds v4 current reads it as it is). */
async function* readV4Chunks(source: ByteSource, options: GenerationReadOptions): GenerationChunks {
  const { file, registry } = options
  let headerLine: Buffer | null = null
  let batch: SourceRecord[] = []
  const chunks = scanLogChunks(source, {
    limits: options.limits,
    registry,
    file,
    onHeader: (_header, location) => {
      headerLine = Buffer.from(location.bytes)
      return false
    },
    onEvent: (event, location) => {
      batch.push({
        event: event as unknown as Record<string, unknown>,
        line: Buffer.from(location.bytes),
        kind: event.ignorable === true && !registry.has(event.type) ? 'ignorable' : 'known',
        origin: { file, line: location.line, offset: location.offset, seq: event.seq },
      })
    },
  })
  for (;;) {
    const step = await chunks.next()
    const out = batch
    batch = []
    yield out
    if (step.done === true) {
      const { header, stats, ...outcome } = step.value
      return {
        version: 4,
        header: header as unknown as Record<string, unknown> | null,
        headerLine,
        headerMissing: outcome.headerMissing,
        lastSeq: outcome.lastSeq,
        goodEndOffset: outcome.goodEndOffset,
        bytesRead: outcome.bytesRead,
        tornTail: outcome.tornTail,
        damage: outcome.damage,
        events: stats.events,
        ignoredUnknown: stats.ignoredUnknown,
      }
    }
  }
}

/**
 * Reads a source generation of a readable version ({@link READABLE_VERSIONS}: v0, else v4).
 *
 * @param version - The generation's format version.
 * @param source - Its bytes (pass 2: the good prefix only).
 * @param options - File name, limits, registry.
 * @returns Its records in batches, then its scan.
 */
export function readGeneration(
  version: number,
  source: ByteSource,
  options: GenerationReadOptions,
): GenerationChunks {
  return version === 0 ? readV0Chunks(source, options) : readV4Chunks(source, options)
}

/**
 * Pass 1: reads a whole source and returns what it found.
 *
 * @param chunks - The source, from {@link readGeneration}.
 * @param onChunk - Called after each chunk with the events read so far.
 * @returns The scan.
 */
export async function scanGeneration(
  chunks: GenerationChunks,
  onChunk?: (eventsDone: number) => void,
): Promise<SourceScan> {
  let done = 0
  for (;;) {
    const step = await chunks.next()
    if (step.done === true) return step.value
    done += step.value.length
    onChunk?.(done)
  }
}

/**
 * Pass 2: the records of the good prefix again, in non-empty batches; throws when the bytes
 * no longer read like pass 1 saw them (damage, another last seq).
 *
 * @param chunks - The good prefix, from {@link readGeneration}.
 * @param scan - Pass 1's scan.
 * @param file - The source file, as errors name it.
 * @returns The batches.
 */
export async function* streamGeneration(
  chunks: GenerationChunks,
  scan: SourceScan,
  file: string,
): AsyncGenerator<readonly SourceRecord[], void, undefined> {
  try {
    for (;;) {
      const step = await chunks.next()
      if (step.done !== true) {
        if (step.value.length > 0) yield step.value
        continue
      }
      if (step.value.damage !== null) throw step.value.damage
      if (step.value.lastSeq !== scan.lastSeq) {
        throw sourceChangedError(file, { expectedLastSeq: scan.lastSeq, foundLastSeq: step.value.lastSeq })
      }
      return
    }
  } finally {
    await chunks.return(undefined as never).catch(() => undefined)
  }
}
