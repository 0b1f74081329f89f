import type { SessionHeader } from '@agent-ledger/session-events'

import type { ErrorJson } from '../report-error.ts'
import type { SessionStats } from '../session-stats.ts'
import type { EventView } from './view.ts'

/** What a transcript shows above the events. */
export interface TranscriptMeta {
  readonly id: string
  /** The session as the user named it on the command line (for commands the page prints). */
  readonly session: string
  readonly header: SessionHeader | null
  /** The log file, as displayed. */
  readonly file: string
  readonly events: number
  /** Unanswered tool calls at the end of the log. */
  readonly pending: number
  /** When the export was made (ISO-8601). */
  readonly exportedAt: string
  /** What `agent-ledger stats` counts for the session (the HTML summary panel), when known. */
  readonly stats?: SessionStats
  /**
   * The importer's `import/source-record` events (each source line kept verbatim): how many
   * the log holds, and whether the transcript shows them (`--source-records`); hidden by default.
   */
  readonly sourceRecords: { readonly count: number; readonly shown: boolean }
}

/** What a transcript shows below the events. */
export interface TranscriptFooter {
  /** Damage that stopped the read after the good prefix, or null. */
  readonly damage: ErrorJson | null
}

/** Turns event views into one output format, as a stream of text pieces. */
export interface TranscriptRenderer {
  begin(meta: TranscriptMeta): string
  event(view: EventView): string
  end(footer: TranscriptFooter): string
}
