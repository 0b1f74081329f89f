/**
 * The events a mirrored session holds, and how a session's events are read back: the
 * verbatim entries (`import/source-record`, the source of truth), the model-visible events
 * mapped from them, the SDK's summary of each batch and where the mapping stopped.
 */
import type { SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk'
import { SOURCE_RECORD_EVENT_TYPE } from '@agent-ledger/import'
import type { SourceRecord } from '@agent-ledger/import'
import type { LoggedEvent } from '@agent-ledger/session-events'

/** The `format` of the source records this store writes (the importer's Claude Code format name). */
export const MIRROR_FORMAT = 'claude-code'

/** The `disposition` of a source record this store wrote (an entry the SDK mirrored). */
export const MIRROR_DISPOSITION = 'mirrored'

/** Prefix of this package's own log-only event types. */
const OWN_EVENT_PREFIX = 'claude-agent-sdk/'

/** The log-only event ending each batch of a main transcript: the SDK's folded summary (`foldSessionSummary`). */
export const SUMMARY_EVENT_TYPE = 'claude-agent-sdk/summary'

/** Data of a {@link SUMMARY_EVENT_TYPE} event: the SDK's opaque summary state, verbatim. */
export interface SummaryRecord {
  readonly data: Record<string, unknown>
}

/** The log-only event written once when the model-visible mapping of a transcript stops. */
export const MAPPING_STOPPED_EVENT_TYPE = 'claude-agent-sdk/mapping-stopped'

/** Data of a {@link MAPPING_STOPPED_EVENT_TYPE} event. */
export interface MappingStopped {
  /** The entry (from 1, in the transcript's order) of the batch whose mapping did not extend the earlier one. */
  readonly line: number
  /** Why, for a reader (a branch switch, an event the log refused). */
  readonly reason: string
}

/**
 * The log-only event written when opening a key's writer repaired its log (the core closes a
 * turn, or answers a call, left open by a writer that stopped): the repair events are the
 * log's, not the mapping's, and the mapping goes on after them.
 */
export const REPAIRED_EVENT_TYPE = 'claude-agent-sdk/repaired'

/** Data of a {@link REPAIRED_EVENT_TYPE} event. */
export interface Repaired {
  /** Seqs of the core's repair events. */
  readonly seqs: readonly number[]
}

/** The entry a source-record event holds, when this store wrote it. */
function mirroredEntry(event: LoggedEvent): SessionStoreEntry | undefined {
  if (event.type !== SOURCE_RECORD_EVENT_TYPE) return undefined
  const data = event.data as Partial<SourceRecord> | null
  if (data?.format !== MIRROR_FORMAT || data.disposition !== MIRROR_DISPOSITION) return undefined
  return data.record as SessionStoreEntry
}

/** What a mirrored session's events say. */
export interface MirrorContents {
  /** The entries, in append order (what `load` returns). */
  readonly entries: SessionStoreEntry[]
  /** Seqs of the model-visible events, in order. */
  readonly mappedSeqs: number[]
  /** Whether a {@link MAPPING_STOPPED_EVENT_TYPE} event is there. */
  readonly stopped: boolean
  /** The last summary's data, if a batch wrote one. */
  readonly summary: Record<string, unknown> | undefined
}

/** Reads a mirrored session's events. */
export async function readMirror(events: AsyncIterable<LoggedEvent>): Promise<MirrorContents> {
  const contents: MirrorContents & { stopped: boolean; summary: Record<string, unknown> | undefined } = {
    entries: [],
    mappedSeqs: [],
    stopped: false,
    summary: undefined,
  }
  const repaired = new Set<number>()
  for await (const event of events) {
    const entry = mirroredEntry(event)
    if (entry !== undefined) contents.entries.push(entry)
    else if (event.type === SUMMARY_EVENT_TYPE) contents.summary = (event.data as SummaryRecord).data
    else if (event.type === MAPPING_STOPPED_EVENT_TYPE) contents.stopped = true
    else if (event.type === REPAIRED_EVENT_TYPE) {
      for (const seq of (event.data as Repaired).seqs) repaired.add(seq)
    } else if (event.type !== SOURCE_RECORD_EVENT_TYPE && !event.type.startsWith(OWN_EVENT_PREFIX)) {
      contents.mappedSeqs.push(event.seq)
    }
  }
  return { ...contents, mappedSeqs: contents.mappedSeqs.filter((seq) => !repaired.has(seq)) }
}

/** Only the entries of a mirrored session (what `load` returns), without the rest. */
export async function readEntries(events: AsyncIterable<LoggedEvent>): Promise<SessionStoreEntry[]> {
  const entries: SessionStoreEntry[] = []
  for await (const event of events) {
    const entry = mirroredEntry(event)
    if (entry !== undefined) entries.push(entry)
  }
  return entries
}
