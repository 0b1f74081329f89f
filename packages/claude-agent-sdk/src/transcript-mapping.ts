/**
 * The model-visible events of a mirrored transcript: the importer's Claude Code mapping
 * (`importSource` of `@agent-ledger/import`, live mode) applied to the entries, its own
 * verbatim records left out (the mirror keeps every entry verbatim already). Derived, never
 * the source of truth: `load` reads the verbatim entries only.
 */
import type { SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk'
import { importSource, SOURCE_RECORD_EVENT_TYPE } from '@agent-ledger/import'
import type { SurfaceOp } from '@agent-ledger/session-events'

/** A mapped event whose citations are indexes into the mapped list (not seqs of any one session). */
interface MappedEvent {
  readonly type: string
  readonly data: unknown
  /** Indexes (into the mapped list) of the earlier events it answers (a tool result's call). */
  readonly sources?: readonly number[]
  /** A replace surface op's range, as indexes into the mapped list. */
  readonly replaces?: readonly [number, number]
  readonly ignorable?: boolean
  /** Canonical text (type, data, citations as indexes): equal for the same mapping of the same entries. */
  readonly key: string
}

/** The mapped events, or why the entries could not be mapped (`stopped`). */
export type TranscriptMapping =
  | { readonly events: readonly MappedEvent[]; readonly stopped?: undefined }
  | { readonly events: readonly MappedEvent[]; readonly stopped: string }

/** The digest the importer records of its source (the mirror records none: the entries are in the log). */
const NO_DIGEST = '0'.repeat(64)

/**
 * Maps a transcript's entries as a live import of them would (a prefix of what the complete
 * transcript gives, so a mapping of more entries extends the mapping of fewer, but after a
 * branch switch: see the package README).
 *
 * @param entries - The visible transcript, in order.
 * @param sessionId - The SDK's session id (the importer's fallback source id).
 */
export async function mapTranscript(
  entries: readonly SessionStoreEntry[],
  sessionId: string,
): Promise<TranscriptMapping> {
  let sessions
  try {
    ;({ sessions } = await importSource(
      () => ({
        [Symbol.asyncIterator]: () => {
          let index = 0
          return {
            next: () =>
              Promise.resolve(
                index < entries.length
                  ? { done: false as const, value: JSON.stringify(entries[index++]) }
                  : { done: true as const, value: undefined },
              ),
          }
        },
      }),
      {
        file: `claude-agent-sdk:${sessionId}`,
        sha256: NO_DIGEST,
        from: 'claude-code',
        verbatim: 'unmapped',
        sourceName: sessionId,
        live: true,
        lenient: true,
      },
    ))
  } catch (error) {
    return { events: [], stopped: `the importer refused the transcript: ${describe(error)}` }
  }
  const main = sessions.find((session) => session.role === 'main') ?? sessions[0]
  if (main === undefined) return { events: [] }
  const index = new Map<number, number>()
  const events: MappedEvent[] = []
  for (const event of main.events) {
    if (event.type === SOURCE_RECORD_EVENT_TYPE) continue
    const at = (seq: number): number | undefined => index.get(seq)
    const sources = event.sourceEventSeqs?.map(at)
    const op: SurfaceOp | undefined = event.surfaceOp
    const replaces = typeof op === 'object' ? [at(op.startSeq), at(op.endSeq)] : undefined
    if (sources?.includes(undefined) === true || replaces?.includes(undefined) === true) {
      return { events, stopped: `a ${event.type} event cites an event that is not model-visible` }
    }
    index.set(event.seq, events.length)
    const mapped = {
      type: event.type,
      data: event.data,
      ...(sources === undefined ? {} : { sources: sources as number[] }),
      ...(replaces === undefined ? {} : { replaces: replaces as [number, number] }),
      ...(event.ignorable === true ? { ignorable: true } : {}),
    }
    events.push({ ...mapped, key: JSON.stringify(mapped) })
  }
  return { events }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
