/*
 * The types of the publish-by-link protocol (see publish.ts).
 */

import type { FileHandleOps, FsOps } from './fs-ops.ts'
import type { ByteSource } from './read-log.ts'

/** Named points of the protocol, in order, where {@link PublishHooks.at} is called (crash tests). */
export const PUBLISH_POINTS = [
  'temp-created',
  'temp-written',
  'temp-synced',
  'verified',
  'linked',
  'dir-synced',
  'temp-unlinked',
] as const

/** One of {@link PUBLISH_POINTS}. */
export type PublishPoint = (typeof PUBLISH_POINTS)[number]

/** Test seam: called at each named point; a crash test SIGKILLs its process there. */
export interface PublishHooks {
  /** `renamed`: a `replace` publish renamed the temp file over the target (instead of `linked`). */
  at(point: PublishPoint | 'renamed'): Promise<void> | void
}

/** What the source looked like when it was read; checked again just before the link. */
export interface SourceIdentity {
  /** Absolute path of the source file. */
  readonly path: string
  readonly ino: number
  readonly size: number
  readonly mtimeMs: number
}

/**
 * The store operation a publish serves: it names the error code of a failed step
 * (`CREATE_FAILED`, `FORK_FAILED`, `SALVAGE_FAILED`, `COMPRESS_FAILED`, `MIGRATION_FAILED`).
 */
export type PublishOperation = 'create' | 'fork' | 'salvage' | 'compress' | 'migrate'

/** What {@link publishFile} needs. */
export interface PublishRequest {
  readonly fs: FsOps
  /** The directory to publish into (absolute). */
  readonly directory: string
  /** The target file name inside `directory`, e.g. `session.v4.jsonl`. */
  readonly target: string
  /** Temp-name kind, `[a-z0-9]+` and not starting with `lock` (`migrate`, `compress`, `create`, `salvage`). */
  readonly kind: string
  /** The operation this publish serves, for the code of a failed step; default `migrate`. */
  readonly operation?: PublishOperation
  /** Produces the content, streamed; called once. A `JsonlStoreError` it throws passes through unchanged. */
  readonly content: () => AsyncIterable<Uint8Array>
  /**
   * Validates the staged bytes (read back from disk through the temp's handle); throws to
   * abort the publish (the error becomes the operation's failure code, `step: 'verify'`, with it as cause).
   * Bytes it does not consume are still read and hashed.
   */
  readonly verify?: (staged: ByteSource) => Promise<void>
  /** The file the content was derived from: its identity must be unchanged just before the link. */
  readonly source?: SourceIdentity
  /** `accept-identical-prefix` (default): an existing target that begins with our bytes is accepted; `refuse`: any existing target is a conflict. */
  readonly ifExists?: 'accept-identical-prefix' | 'refuse'
  /** Random hex for temp names (`byteCount` bytes, so `2 * byteCount` hex digits); default `crypto.randomBytes`. Test seam for S7. */
  readonly randomHex?: (byteCount: number) => string
  readonly hooks?: PublishHooks
  /** Prefix of file names in errors (the session id), so they read `<id>/<file>`; default none. */
  readonly display?: string
  /** Keep the temp's read-write handle open and return it (it is the published inode): appends continue through it. */
  readonly keepHandle?: boolean
  /** Write batch and read-back chunk size; default 1 MiB. */
  readonly chunkBytes?: number
  /**
   * Rename the verified temp file over `target` instead of linking it (a compress's reseal:
   * the target's content is replaced by the same events, under the writer lock).
   */
  readonly replace?: boolean
  /** A held writer lock, checked (`assertHeld`) just before the link. */
  readonly lock?: { assertHeld(): Promise<void> }
}

/** What {@link publishFile} did. */
export interface PublishResult {
  /** `published`: our file is now the target; `already-published`: another process published the same bytes first (ours dropped). */
  readonly outcome: 'published' | 'already-published'
  /** The target name. */
  readonly file: string
  /** Absolute target path. */
  readonly path: string
  /** Bytes we staged (the existing target may be longer when `already-published`). */
  readonly size: number
  /** SHA-256 (hex) of the bytes we staged. */
  readonly sha256: string
  /** Inode of the target. */
  readonly ino: number
  /** The read-write handle on the published inode, with `keepHandle` and outcome `published`; otherwise null. */
  readonly handle: FileHandleOps | null
  /** The temp name that was used (already removed). */
  readonly tempFile: string
}
