import type { EventRegistry, MigratedFrom } from '@agent-ledger/session-events'

import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import type { LineLimits } from '../line-codec.ts'

/** Where a record came from in the on-disk source generation (for errors). */
export interface RecordOrigin {
  /** The source file, relative to the store root. */
  readonly file: string
  /** 1-based line number in the source. */
  readonly line: number
  /** Byte offset of the line in the source. */
  readonly offset: number
  /** The record's seq in the source's own numbering. */
  readonly seq: number
}

/** One event of a generation being migrated, in some format version. */
export interface VersionedRecord {
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

/**
 * A generation as a stream: its header, then its events in batches (one batch per read
 * chunk, so memory stays bounded by a chunk). Single use: iterate `records` once.
 */
export interface VersionedStream {
  /** The format version of the header and the records. */
  readonly version: number
  /** The header object (v0: the header event; v1+: the header line's object without its checksum). */
  readonly header: Record<string, unknown>
  /** The header line in that version's encoding, without its `\n`. */
  readonly headerLine: Buffer
  /** The events after the header, in seq order, in batches. */
  readonly records: AsyncIterable<readonly VersionedRecord[]>
}

/** What an edge knows besides its input stream. */
export interface EdgeContext {
  /** The session id (the directory name): the header's `id`. */
  readonly sessionId: string
  /** The on-disk source of the whole migration, recorded as the new header's `migratedFrom`. */
  readonly migratedFrom: MigratedFrom
  /** The source file as errors name it (relative to the store root, e.g. `abc/session.jsonl`). */
  readonly sourceFile: string
  /** The known event types (core plus plugins). */
  readonly registry: EventRegistry
  readonly limits: LineLimits
  /**
   * True: check every output event with `parseEvent` and the line limits, and throw a
   * typed error naming the source line (read-only migration). False: skip it, because the
   * publish step validates the staged file with the store's own scanner.
   */
  readonly validate: boolean
}

/**
 * One step of the migration chain: a streaming transform from format `from` to format
 * `to`. `migrate` must not read ahead more than a batch: memory stays bounded.
 */
export interface MigrationEdge {
  readonly from: number
  readonly to: number
  /** One line for logs and the CLI, e.g. "v0 (seed chapter) to v4". */
  readonly description: string
  /**
   * Maps the header now and returns a stream whose records are mapped as they are read.
   *
   * @param input - The source stream, of version `from`.
   * @param context - Session id, migratedFrom, registry, limits, validation switch.
   * @returns The stream of version `to`.
   * @throws {@link JsonlStoreError} (`INVALID_HEADER`, `INVALID_EVENT`, `UNKNOWN_EVENT_TYPE`, `LINE_TOO_LARGE`) from the header now, from records while iterating.
   */
  migrate(input: VersionedStream, context: EdgeContext): VersionedStream
}

/**
 * Finds the chain of registered edges from one version to another: the shortest sequence
 * of edges where each starts at the version the previous one ends at. Edges may skip
 * versions that were never written (v0 to v4); a future v4 to v5 edge extends the chain.
 *
 * @param from - The source version.
 * @param to - The target version.
 * @param edges - The registered edges.
 * @returns The edges to apply, in order (empty when `from === to`).
 * @throws {@link JsonlStoreError} `NO_MIGRATION_PATH` (details `from`, `to`, `edges`) when none exists.
 */
export function findMigrationPath(
  from: number,
  to: number,
  edges: readonly MigrationEdge[],
): MigrationEdge[] {
  if (from === to) return []
  const previous = new Map<number, MigrationEdge>()
  const queue: number[] = [from]
  const seen = new Set<number>([from])
  while (queue.length > 0) {
    const version = queue.shift()!
    for (const edge of edges) {
      if (edge.from !== version || seen.has(edge.to)) continue
      seen.add(edge.to)
      previous.set(edge.to, edge)
      if (edge.to === to) {
        const path: MigrationEdge[] = []
        let cursor = to
        while (cursor !== from) {
          const step = previous.get(cursor)!
          path.unshift(step)
          cursor = step.from
        }
        return path
      }
      queue.push(edge.to)
    }
  }
  throw new JsonlStoreError({
    code: JsonlErrorCode.NO_MIGRATION_PATH,
    message: `Cannot migrate format v${from} to v${to}: expected a chain of registered migration edges, found none (registered: ${edges.map((edge) => `${edge.from}->${edge.to}`).join(', ') || 'none'}).`,
    file: '',
    details: { from, to, edges: edges.map((edge) => `${edge.from}->${edge.to}`) },
  })
}

/**
 * Applies a chain of edges to a stream (each edge maps the previous edge's output).
 *
 * @param input - The source stream.
 * @param path - Edges from {@link findMigrationPath}.
 * @param context - Shared by every edge.
 * @returns The final stream (the input itself for an empty path).
 */
export function applyMigrationPath(
  input: VersionedStream,
  path: readonly MigrationEdge[],
  context: EdgeContext,
): VersionedStream {
  let stream = input
  for (const edge of path) {
    if (stream.version !== edge.from) {
      throw new RangeError(`Migration edge ${edge.from}->${edge.to} applied to a v${stream.version} stream`)
    }
    stream = edge.migrate(stream, context)
  }
  return stream
}
