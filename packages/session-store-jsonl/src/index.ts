/**
 * @packageDocumentation
 * The durable JSONL session log of agent-ledger, as a backend of the session core
 * (`@agent-ledger/session-store`): one directory per session, checksummed v4 lines (CRC-32C
 * per line, still valid JSONL), appends acknowledged only after fdatasync, a cross-process
 * writer lock with a durable lease epoch, torn-tail quarantine and repair on acquire, plain
 * or Zstandard logs, and the capabilities the core discovers (follow, checkpoints, compress,
 * migrate, quarantine, file views). The format is specified in FORMAT.md. This is the only
 * agent-ledger package that touches the file system.
 *
 * The root exports `createJsonlStore({ root })` (the core over the backend), the backend
 * itself, the types of its capabilities, its errors, the file-system seam and its limits.
 * What a tool author needs to work on the bytes (line codec, scanner, zstd frame reader,
 * generations, publish, migration, file names) is the documented subpath
 * `@agent-ledger/session-store-jsonl/format`.
 */
export { createJsonlStore } from './jsonl-store.ts'
export type { JsonlStore, JsonlStoreOptions } from './jsonl-store.ts'
export { asJsonlBackend, createJsonlBackend } from './backend/jsonl-backend.ts'
export type { JsonlBackend, JsonlCapabilities } from './backend/jsonl-backend.ts'
export type { JsonlBackendOptions, WriteOpenCheck } from './backend/backend-options.ts'
export type { JsonlFilesCapability } from './backend/files.ts'
export type {
  SessionFileEntry,
  SessionFileKind,
  SessionFiles,
  SessionHeaderRead,
  SessionLockInfo,
} from './session-files.ts'
export type { CompressResult } from './compress-types.ts'
export type { MigrationReport } from './backend/maintenance.ts'
export type { TornTail } from './log-scanner.ts'
export { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'
export { nodeFsOps } from './fs-ops.ts'
export type { FileHandleOps, FsOps } from './fs-ops.ts'
export { DEFAULT_STORE_LIMITS } from './limits.ts'
export type { StoreLimits } from './limits.ts'
export type { LockOptions } from './writer-lock.ts'
export type { LogEncoding } from './zstd-log-writer.ts'
export type { JsonlCompressCapability, JsonlCompressOptions } from './backend/maintenance.ts'
export type { JsonlDeleteCapability, JsonlDeleteOptions } from './backend/delete.ts'
