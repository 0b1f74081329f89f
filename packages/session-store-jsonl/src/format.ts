/**
 * @packageDocumentation
 * `@agent-ledger/session-store-jsonl/format`: the on-disk format for tool authors, beside
 * the store and backend of the package root. The v4 line codec (CRC-32C per line), the
 * streaming line splitter and scanner (headers and events checked by the core's codec), generation file names and the publish-by-link protocol, migration (v0 to v4), the Zstandard
 * layer (codec, structural frame scanner, bounded frame decoding, frame writer) and the
 * log file names. FORMAT.md specifies what these read and write.
 */
export { resolveLimits } from './limits.ts'
export type { WriterLock } from './writer-lock.ts'
export { LOG_FILE_NAME, LOG_FILE_PATTERN } from './layout.ts'
export {
  CRC_SUFFIX_BYTES,
  crc32cHex,
  decodeLine,
  encodeEventLine,
  encodeJsonLine,
  findEmbeddedValidLine,
  INTEGRITY_CRC32C,
  verifyLineChecksum,
} from './line-codec.ts'
export type { DecodedLine, LineFailureReason, LineLimits } from './line-codec.ts'
export { LineSplitter } from './line-splitter.ts'
export type { LineSink, UnterminatedTail } from './line-splitter.ts'
export { LogScanner } from './log-scanner.ts'
export type { LineLocation, ScannerOptions, ScanOutcome, ScanStats } from './log-scanner.ts'
export { readFileChunks, scanLog, scanLogChunks } from './read-log.ts'
export type { ByteSource, ScanLogOptions } from './read-log.ts'
export type { ScanResume } from './log-scanner.ts'
export {
  assertGenerationVersion,
  compareGenerations,
  generationFileName,
  listGenerations,
  parseGenerationFileName,
  peekHeaderVersion,
  pickCurrentGeneration,
} from './generations.ts'
export type {
  CurrentGeneration,
  GenerationEncoding,
  GenerationFile,
  HeaderVersionPeek,
} from './generations.ts'
export { publishFile, removeStaleTemps } from './publish.ts'
export { PUBLISH_POINTS } from './publish-checks.ts'
export type {
  PublishHooks,
  PublishPoint,
  PublishRequest,
  PublishResult,
  SourceIdentity,
} from './publish-checks.ts'
export { migrateSession } from './migration/migrate-session.ts'
export { detectGenerationFork } from './migration/generation-fork.ts'
export type { GenerationForkCheck } from './migration/generation-fork.ts'
export type {
  MigrateReadOptions,
  MigrateSessionOptions,
  MigrateWriteOptions,
  MigrationReadResult,
  MigrationSource,
  MigrationWriteResult,
} from './migration/migration-context.ts'
export { compressSession } from './compress-session.ts'
export type { CompressContext } from './compress-types.ts'
export {
  RETAIN_BYTES,
  scanZstdLog,
  scanZstdLogChunks,
  SEALED_FRAME_MIN_BYTES,
  zstdPlainSource,
  zstdStoreError,
} from './zstd-log-reader.ts'
export type { ZstdReadLimits, ZstdScanOptions, ZstdScanOutcome } from './zstd-log-reader.ts'
export {
  encodeZstdLines,
  encodeZstdLogStart,
  encodeZstdStream,
  ZSTD_FLUSH_LEVEL,
  ZSTD_FRAME_BYTES,
  ZSTD_SEAL_LEVEL,
} from './zstd-log-writer.ts'
export { compareEncodings, locateSessionLog, sessionLog, ZSTD_LOG_FILE_NAME } from './zstd-session.ts'
export type { LocateRequest, SessionLog } from './zstd-session.ts'
export { loadWasmZstdCodec, loadZstdCodec } from './zstd/zstd-codec.ts'
export type { ZstdCodec, ZstdDecompressLimits } from './zstd/zstd-codec.ts'
export { scanFrames, ZstdFrameScanner } from './zstd/scan-frames.ts'
export type { ZstdScannedFrame, ZstdScanResult, ZstdScanSummary, ZstdScanTail } from './zstd/scan-frames.ts'
export { DEFAULT_COMPRESSION_LEVEL, encodeFrames } from './zstd/encode-frames.ts'
export type { EncodedFrame, EncodedFrames, EncodeFramesOptions } from './zstd/encode-frames.ts'
export {
  findNextFrame,
  isFrameMagicAt,
  parseFrameAt,
  ZSTD_BLOCK_SIZE_MAX,
  ZSTD_MAGIC_BYTES,
} from './zstd/frame-format.ts'
export type { ZstdBlockExtent, ZstdFrameInfo, ZstdFrameParse } from './zstd/frame-format.ts'
export {
  DEFAULT_MAX_FRAME_OUTPUT_BYTES,
  DEFAULT_MAX_WINDOW_BYTES,
  inspectFrame,
  planFeeds,
} from './zstd/inspect-frame.ts'
export type { ZstdFramePlan } from './zstd/inspect-frame.ts'
export { ZstdFrameError, ZstdFrameErrorCode } from './zstd/zstd-frame-error.ts'
export type { ZstdCorruptReason, ZstdFrameErrorOptions, ZstdTornPart } from './zstd/zstd-frame-error.ts'
