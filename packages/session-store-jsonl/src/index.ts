/**
 * @packageDocumentation
 * The durable JSONL session log of agent-ledger: one directory per session, checksummed
 * v4 lines (CRC-32C per line, still valid JSONL), buffered appends acknowledged only after
 * fdatasync, a cross-process writer lock, torn-tail quarantine and repair on open, typed
 * errors for damage in the middle, salvage and fork into new sessions. The format is
 * specified in FORMAT.md. This is the only agent-ledger package that touches the file system.
 *
 * The root exports what an agent builder needs. What a tool author needs to work on the bytes
 * (line codec, scanner, zstd frame reader, checkpoint codec, generations, publish, migration,
 * file names) is the documented subpath `@agent-ledger/session-store-jsonl/format`.
 */
export { createSessionStore } from './session-store.ts'
export type {
  SalvageReport,
  SessionReadResult,
  SessionReadStats,
  SessionStore,
  SessionStoreOptions,
  SessionSummary,
  VerifyReport,
} from './store/api.ts'
export type { MigrationReport } from './store-generations.ts'
export type { FollowOptions } from './follow-session.ts'
export type {
  SessionFileEntry,
  SessionFileKind,
  SessionFiles,
  SessionHeaderRead,
  SessionLockInfo,
} from './session-files.ts'
export type { SessionWriter, StoreLogger, WriterRecovery } from './session-writer.ts'
export { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'
export { nodeFsOps } from './fs-ops.ts'
export type { FileHandleOps, FsOps } from './fs-ops.ts'
export { DEFAULT_FLUSH_POLICY, DEFAULT_STORE_LIMITS } from './limits.ts'
export type { FlushPolicy, StoreLimits } from './limits.ts'
export type { LockOptions } from './writer-lock.ts'
export { assertSessionId } from './session-id.ts'
export type { TornTail } from './log-scanner.ts'
export { DEFAULT_REDACTION_POLICY, DEFAULT_SECRET_PATTERNS } from './redaction.ts'
export type { RedactionPolicy } from './redaction.ts'
export { DEFAULT_CHECKPOINT_OPTIONS } from './checkpoint-options.ts'
export type { CheckpointOptions } from './checkpoint-options.ts'
export type { CheckpointUse } from './checkpoint-open.ts'
export type { MigrationProgress } from './migration/migrate-session.ts'
export type { CompressOptions, CompressProgress, CompressResult } from './compress-session.ts'
export type { ZstdLogStats } from './zstd-log-reader.ts'
export type { LogEncoding } from './zstd-log-writer.ts'
export { asJsonlBackend, createJsonlBackend } from './backend/jsonl-backend.ts'
export type { JsonlBackend, JsonlBackendOptions, JsonlCapabilities } from './backend/jsonl-backend.ts'
export type { JsonlFilesCapability } from './backend/files.ts'
export type { JsonlCompressCapability, JsonlCompressOptions } from './backend/maintenance.ts'
export { createJsonlStore } from './jsonl-store.ts'
export type { JsonlStore, JsonlStoreOptions } from './jsonl-store.ts'
