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

/**
 * One build of a fork (see {@link FormatInput.fork}). The first, `probe`, finds how many
 * leading events the fork shares with its parent: its builder counts nothing into the report
 * and `step` returns false once that is known (stop there: return the builder unfinished).
 * The second is the real one: `step` hands full batches over and always returns true.
 */
export interface ForkPass {
  readonly probe: boolean
  /** The builder to build the fork with (`counts`: as {@link FormatInput.newBuilder}). */
  newBuilder(counts?: (line: number) => boolean): SessionBuilder
  /** Call after each record with the fork's builder; false: stop building. */
  step(builder: SessionBuilder): Promise<boolean>
}

/**
 * Maps records appended to a live source into the session a live import built, as a one-shot
 * live import of the grown source would (the scanner has seen the record first).
 */
export interface LiveContinuation {
  /** Maps the record; or says why it cannot be appended (then the source is imported again whole). */
  add(record: { readonly line: number; readonly value: Record<string, unknown> }): string | undefined
}

/** What a format module's first pass learned about the source (the main session's header facts). */
export interface FormatFacts {
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
}

/**
 * The first pass over a source: sees every record once, in file order, and keeps what the
 * mapping needs to know before it starts (header facts; a tree's node index).
 */
export interface FormatScanner {
  add(parsed: ParsedLine): void
  facts(): FormatFacts
}

/** What a format module gets for its second pass (the mapping). */
export interface FormatInput {
  /** The records again, from the start, in file order (re-read from the source, or held from the first pass). */
  replay(): AsyncIterable<ParsedLine>
  readonly report: ImportReport
  /**
   * A new builder; `counts(line)` false for lines another session already counted;
   * `trackDigests` for a session that forks branch from (its events may leave memory).
   */
  newBuilder(
    counts?: (line: number) => boolean,
    options?: { readonly trackDigests?: boolean },
  ): SessionBuilder
  /**
   * Called after each record with a session that is built in file order (a main session, a
   * sidechain): hands its events to the caller's sink once a batch is full. Forks are handed
   * over through {@link FormatInput.fork}.
   */
  pump(session: FormatSession): Promise<void>
  /**
   * A main session or sidechain is complete (finished): its last batch goes to the sink now,
   * before the next session starts. A session the format returns without closing it is
   * closed after `map` returns.
   */
  close(session: FormatSession): Promise<void>
  /**
   * Builds a fork of a closed session (`forkOf`) and hands it over in batches, never whole:
   * `build` runs twice, from the start of the source each time (see {@link ForkPass}). A fork
   * the format returns built (without this) is seeded and handed over after `map` returns.
   */
  fork(
    session: Omit<FormatSession, 'builder'>,
    build: (pass: ForkPass) => Promise<SessionBuilder>,
  ): Promise<FormatSession>
  /**
   * Following a live source: how the session built (the main one) goes on with records
   * appended to the source later, without reading it again. A format that does not call it
   * is imported again whole on every change.
   */
  continueLive(session: FormatSession, continuation: LiveContinuation): void
  readonly file: string
  readonly lenient: boolean
  /**
   * Following a source still being written: the mapping stops where the source stops, without
   * closing what is still open (no flush of a message still being merged, no repair closers,
   * no forks): what it built is a prefix of what the complete source will give.
   */
  readonly live: boolean
}

/** What a first pass may know of the source besides its records. */
interface ScanContext {
  /** The source's name without its extension (`<session uuid>` for a Claude Code transcript), if the caller gave one. */
  readonly sourceName?: string | undefined
}

/** A format module: a first pass (scanner), then the mapping. */
export interface FormatModule {
  scanner(context: ScanContext): FormatScanner
  /** Main session first, then forks and sidechains in the order they were built. */
  map(input: FormatInput, scanner: FormatScanner): Promise<readonly FormatSession[]>
}

/** What maps the records of a one-session format, in source order. */
export interface RecordMapper {
  handle(line: number, value: Record<string, unknown>): void
  /** Closes what the source left open (not called while following a live source). */
  finish(): void
}

/**
 * A format whose source is one session mapped record by record as it streams (Codex,
 * OpenHands): malformed lines go to the builder, every record to the mapper.
 */
export function streamedFormat(
  scanner: () => FormatScanner,
  mapper: (builder: SessionBuilder) => RecordMapper,
): FormatModule {
  return {
    scanner,
    async map(input) {
      const builder = input.newBuilder()
      const session: FormatSession = { key: '', role: 'main', builder }
      const records = mapper(builder)
      for await (const parsed of input.replay()) {
        if ('malformed' in parsed) {
          builder.line = parsed.line
          builder.malformed(parsed.malformed)
        } else records.handle(parsed.line, parsed.value)
        await input.pump(session)
      }
      if (input.live) {
        input.continueLive(session, {
          add: ({ line, value }) => {
            records.handle(line, value)
            return undefined
          },
        })
      } else records.finish()
      return [session]
    },
  }
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
