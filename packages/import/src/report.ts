/** One finding about the source: a dropped record part, an orphan result, a skipped line. */
export interface ImportDiagnostic {
  /** Stable code: `ORPHAN_TOOL_RESULT`, `DUPLICATE_TOOL_RESULT`, `MALFORMED_LINE`, `TORN_LINE`, `INVALID_RECORD`, `BROKEN_PARENT`... */
  readonly code: string
  /** 1-based line of the source record concerned (0 when it is about the whole source). */
  readonly line: number
  readonly message: string
}

/** What an import did, counted: every lossy mapping, every repair, every dropped piece. */
export interface ImportReport {
  readonly format: string
  /** The source format's version as recorded in the source (`2.1.38`, `0.104.0-alpha.1`, `3`), or `unknown`. */
  readonly formatVersion: string
  /** Lines (or array elements) read, blank lines included. */
  lines: number
  /** Records parsed (non-blank lines that were JSON objects). */
  records: number
  /** Non-JSON lines skipped in lenient mode (each also in `diagnostics` and kept verbatim). */
  malformedLines: number
  /** Sessions built: the main session plus forks and sidechains. */
  sessions: number
  /** Of `sessions`, those made from another branch of a tree (`parentSession` set, seeded at the branch point). */
  forks: number
  /** Of `sessions`, sub-agent (sidechain) sessions. */
  sidechains: number
  /** Events built, over every session (inherited seed events of forks are counted in the fork too). */
  events: number
  /** Surface messages built in the main session, by role. */
  messages: { system: number; user: number; assistant: number; tool: number }
  /** Assistant tool calls in the main session. */
  toolCalls: number
  /** Turns in the main session. */
  turns: number
  /** Compactions in the main session. */
  compactions: number
  /** Repair events in the main session, by code (`TOOL_OUTCOME_UNKNOWN`, `TOOL_NOT_STARTED`, `CLOSE_TURN`). */
  repairs: Record<string, number>
  /** Lossy mappings, by what was lost (`claude.signature`, `codex.encrypted_content`...), over every record read once. */
  lossy: Record<string, number>
  /** Records kept only as `import/source-record` events (log-only: progress, snapshots, duplicates...), by kind. */
  logOnly: Record<string, number>
  /** Findings, in source order (at most {@link MAX_DIAGNOSTICS}; `diagnosticsDropped` counts the rest). */
  diagnostics: ImportDiagnostic[]
  diagnosticsDropped: number
}

/** How many diagnostics a report lists before it only counts them. */
export const MAX_DIAGNOSTICS = 200

/** A fresh, empty report. */
export function createReport(format: string, formatVersion: string): ImportReport {
  return {
    format,
    formatVersion,
    lines: 0,
    records: 0,
    malformedLines: 0,
    sessions: 0,
    forks: 0,
    sidechains: 0,
    events: 0,
    messages: { system: 0, user: 0, assistant: 0, tool: 0 },
    toolCalls: 0,
    turns: 0,
    compactions: 0,
    repairs: {},
    lossy: {},
    logOnly: {},
    diagnostics: [],
    diagnosticsDropped: 0,
  }
}

/** Adds `by` to `counter[key]`. */
export function bump(counter: Record<string, number>, key: string, by = 1): void {
  counter[key] = (counter[key] ?? 0) + by
}

/** Appends a diagnostic, or counts it once the list is full. */
export function addDiagnostic(report: ImportReport, diagnostic: ImportDiagnostic): void {
  if (report.diagnostics.length < MAX_DIAGNOSTICS) report.diagnostics.push(diagnostic)
  else report.diagnosticsDropped += 1
}
