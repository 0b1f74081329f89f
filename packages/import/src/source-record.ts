import { defineEventType } from '@agent-ledger/session-events'
import type { EventTypeDefinition } from '@agent-ledger/session-events'
import { z } from 'zod'

/** The type of the log-only event that keeps one source record verbatim. */
export const SOURCE_RECORD_EVENT_TYPE = 'import/source-record'

/**
 * `import/source-record`: one record of the imported source, kept verbatim so nothing of the
 * user's history is lost and a re-export to the source format stays possible. Always written
 * with `ignorable: true`: a reader that does not register this type keeps it as is, and it
 * never affects the surface.
 */
export const sourceRecordSchema = z.object({
  /** The source format (`claude-code`, `codex`, `pi`, `openhands`). */
  format: z.string().min(1),
  /** 1-based line of the record in the source (the element number for a JSON array source). */
  line: z.number().int().positive(),
  /** The record's place (from 1) on a line that held several records with no newline between them (a writer bug); absent otherwise. */
  part: z.number().int().positive().optional(),
  /**
   * The record as parsed from the line, when `JSON.stringify` of it gives the line's bytes
   * back; absent otherwise (`text` holds the line).
   */
  record: z.unknown().optional(),
  /**
   * The line's text as the source holds it (without its terminator): a line that was not JSON
   * (lenient mode, disposition `malformed`), or a JSON line that `JSON.stringify` of its record
   * would change (`19.0` written by Codex, Python's `", "` separators or `\u` escapes).
   */
  text: z.string().optional(),
  /** Why the record is only kept here: `mapped` (it also produced events), `log-only`, `malformed`, `off-path`... */
  disposition: z.string().min(1),
})
export type SourceRecord = z.infer<typeof sourceRecordSchema>

declare module '@agent-ledger/session-events' {
  interface SessionEventMap {
    'import/source-record': SourceRecord
  }
}

/** The plugin definition of `import/source-record`, for `createEventRegistry([...])`. */
export const sourceRecordEventType: EventTypeDefinition<'import/source-record'> = defineEventType(
  'import/source-record',
  sourceRecordSchema as z.ZodType<SourceRecord>,
)
