import type { SessionBuilder } from '../builder.ts'
import type { ParsedLine } from '../lines.ts'
import type { ImportReport } from '../report.ts'

/** One session a format module built. */
export interface FormatSession {
  /** `''` for the main session; otherwise the suffix of its id (`fork-1a2b3c4d`, `agent-…`). */
  readonly key: string
  readonly role: 'main' | 'fork' | 'sidechain'
  readonly builder: SessionBuilder
  /** For a fork: the key of the session it branches from (seeded with their common prefix). */
  readonly forkOf?: string
  /** Extra header metadata (the branch's leaf, the agent id...). */
  readonly metadata?: Readonly<Record<string, unknown>>
}

/** What a format module returns. */
export interface FormatOutput {
  /** Version as the source records it, or `unknown`. */
  readonly formatVersion: string
  /** The source's own session id, when it has one (the imported id is derived from it). */
  readonly sourceId: string | undefined
  readonly cwd: string | undefined
  /** The source session this one continues (`forked_from_id`, pi `parentSession`), as a source id. */
  readonly parentSourceId?: string | undefined
  /** 1 for a sub-agent file imported on its own. */
  readonly delegationDepth?: number
  /** Format facts for `header.metadata.source` (model, git branch, originator...). */
  readonly metadata: Readonly<Record<string, unknown>>
  /** Main session first. */
  readonly sessions: readonly FormatSession[]
}

/** What a format module gets. */
export interface FormatInput {
  readonly records: AsyncIterable<ParsedLine>
  readonly report: ImportReport
  /** A new builder; `counts(line)` false for lines another session already counted. */
  newBuilder(counts?: (line: number) => boolean): SessionBuilder
  readonly file: string
  readonly lenient: boolean
}

/** A string field of a record, or undefined. */
export function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined
}

/** An object field of a record, or undefined. */
export function obj(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined
}

/** An array field of a record, or an empty array. */
export function arr(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : []
}

/** A non-negative integer, or undefined. */
export function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined
}
