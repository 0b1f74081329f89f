/**
 * @packageDocumentation
 * The agent-ledger session core: the store API written once over a small backend port
 * ({@link SessionBackend}), an in-memory backend, and (from the `/conformance` subpath)
 * the backend conformance suite. No I/O of its own, no clock, no randomness.
 */
export { SessionStoreError, SessionStoreErrorCode } from './session-store-error.ts'
export type {
  AnySessionStoreErrorCode,
  BackendErrorCode,
  BackendErrorCodeMap,
  LineLocation,
  SessionStoreErrorOptions,
} from './session-store-error.ts'
export type {
  AbortSignalLike,
  AcquireOptions,
  AcquireRepair,
  AcquireResult,
  AppendBatch,
  ArrayCreateRequest,
  BackendCapabilities,
  BackendProgress,
  CheckedLine,
  CheckpointCapability,
  CheckpointRecord,
  CompressCapability,
  CreateRequest,
  DeleteCapability,
  DeleteOptions,
  DeleteResult,
  FollowCapability,
  ForkCapability,
  HeadScan,
  ListEntry,
  ListFilter,
  ListPage,
  ListQuery,
  MaintenanceOptions,
  MigrateCapability,
  QuarantineCapability,
  QuarantineRecord,
  ReadOptions,
  SearchCandidate,
  SearchCandidateQuery,
  SearchCapability,
  SeedLines,
  ServerForkRequest,
  SessionBackend,
  SessionHead,
  SessionStoreErrorLike,
  SignalOptions,
  StoredHeader,
  StoredLine,
  TornTailInfo,
  UnreadableCheckpoint,
  WriterLease,
} from './port.ts'
export { createSessionStore } from './store.ts'
export { openOrCreateWriter } from './open-or-create.ts'
export type { OpenedWriter, OpenOrCreateOptions } from './open-or-create.ts'
export { assertSessionId } from './header.ts'
export { seedBatches } from './seed-lines.ts'
export type { SeedBatches } from './seed-lines.ts'
export type {
  CompressedSession,
  CreateSessionRequest,
  FollowOptions,
  ForkOptions,
  ListOptions,
  ListResult,
  OpenWriterOptions,
  PrunedSession,
  PrunePolicy,
  PruneReport,
  PruneSkip,
  ReadEventsOptions,
  SalvageReport,
  SearchHit,
  SearchOptions,
  SearchPage,
  SearchUnsearched,
  SessionReadResult,
  SessionStore,
  SessionStoreOptions,
  SessionSummary,
  VerifyReport,
  WriterLeaseOptions,
} from './store-api.ts'
export type { CloseOptions, SessionWriter, WriterRecovery, WriterState } from './writer.ts'
export { DEFAULT_CHECKPOINT_OPTIONS } from './checkpoint-options.ts'
export type {
  CheckpointOptions,
  CheckpointSkipReason,
  CheckpointUse,
  ResolvedCheckpointOptions,
  SessionStoreWarning,
} from './checkpoint-options.ts'
export { CORE_CHECKPOINT_FORMAT, CORE_CHECKPOINT_VERSION } from './checkpoint-body.ts'
export { createMemoryBackend, createMemoryStorage } from './memory-backend.ts'
export type { MemoryBackend, MemoryBackendOptions, MemoryStorage, MemoryTestHooks } from './memory-backend.ts'
export { DEFAULT_LIMITS } from './event-codec.ts'
export type { StoreLimits } from './event-codec.ts'
export { crc32c } from './crc32c.ts'
export type { Crc32c } from './crc32c.ts'
export { lineCrc, verifyLineChecksum } from './line-codec.ts'
export { ENCRYPTION_SCHEME, lineAad } from './encryption.ts'
export type { EncryptionHeader, SessionCipher, SessionEncryption } from './encryption.ts'
export { DEFAULT_REDACTION_POLICY, DEFAULT_SECRET_PATTERNS } from './redaction.ts'
export type { RedactionPolicy } from './redaction.ts'
