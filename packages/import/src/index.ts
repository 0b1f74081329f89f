/**
 * @packageDocumentation
 * Pure importers of other agents' session logs into agent-ledger v4 events: Claude Code
 * transcripts (trees, split messages, compactions, sidechains), Codex CLI rollouts, pi-mono
 * sessions (v1 to v3) and OpenHands events (V0 and V1 SDK). Lines in, sessions out (the
 * main one, its forks and sidechains), with an import report counting every lossy mapping.
 * No I/O, no clock, no randomness: the caller reads, decompresses and hashes the file.
 */
export { USER_REJECTED } from './builder.ts'
export { ImportError, ImportErrorCode } from './import-error.ts'
export {
  detectFormat,
  IMPORTER_VERSION,
  importedSessionId,
  importEventRegistry,
  importLive,
  importSource,
  SOURCE_FORMATS,
} from './import-source.ts'
export type {
  ImportBatch,
  ImportedSession,
  ImportOptions,
  ImportResult,
  ImportSink,
  LiveAppend,
  LiveImport,
  SourceFormat,
} from './import-source.ts'
export { createIncrement, planIncrement } from './increment.ts'
export type { Increment, IncrementOutcome, IncrementPlan } from './increment.ts'
export { DEFAULT_MAX_LINE_LENGTH, splitLines } from './lines.ts'
export type { SourceLine, TooLongLine } from './lines.ts'
export { MAX_DIAGNOSTICS } from './report.ts'
export type { ImportDiagnostic, ImportReport } from './report.ts'
export { SOURCE_RECORD_EVENT_TYPE, sourceRecordEventType, sourceRecordSchema } from './source-record.ts'
export type { SourceRecord } from './source-record.ts'
