/*
 * The types and checks of the publish-by-link protocol (see publish.ts): the typed failure of a step,
 * the read-back verification of the staged bytes, the source identity check, the
 * comparison with a target another process published first.
 */
import { createHash } from 'node:crypto'
import { constants } from 'node:fs'

import { DISK_FULL_CODES, errnoOf } from './fs-errors.ts'
import { readFully } from './fs-ops.ts'
import type { FileHandleOps, FsOps } from './fs-ops.ts'
import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'
import { readFileChunks } from './read-log.ts'
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

export const FAILURE_CODES: Readonly<Record<PublishOperation, JsonlErrorCode>> = {
  create: JsonlErrorCode.CREATE_FAILED,
  fork: JsonlErrorCode.FORK_FAILED,
  salvage: JsonlErrorCode.SALVAGE_FAILED,
  compress: JsonlErrorCode.COMPRESS_FAILED,
  migrate: JsonlErrorCode.MIGRATION_FAILED,
}

/** A failure at one step, before or after the target name appeared. */
export function failed(
  step: string,
  error: unknown,
  context: {
    readonly file: string
    readonly code: JsonlErrorCode
    readonly details?: Record<string, unknown>
  },
): JsonlStoreError {
  const cause = JsonlStoreError.is(error)
    ? error.code === JsonlErrorCode.DISK_FULL
      ? typeof error.details['cause'] === 'string'
        ? error.details['cause']
        : 'ENOSPC'
      : error.code
    : (errnoOf(error) ?? 'unknown')
  // A full disk is DISK_FULL wherever it happens (retryable once space is freed), with the same details.
  const diskFull = DISK_FULL_CODES.has(cause)
  return new JsonlStoreError({
    code: diskFull ? JsonlErrorCode.DISK_FULL : context.code,
    message: `Publishing ${context.file} failed at step ${step}: expected it to succeed, found ${cause}${diskFull ? ' (the disk or the file size limit is full)' : ''}${context.details?.['published'] === true ? ' (the file was published)' : '; nothing was published'}.`,
    file: context.file,
    details: { step, cause, published: false, poisoned: false, ...context.details },
    cause: error,
  })
}

export async function verifyStaged(
  request: PublishRequest,
  staged: {
    temp: FileHandleOps
    size: number
    sha256: string
    chunkBytes: number
    file: string
    code: JsonlErrorCode
  },
): Promise<void> {
  const { temp, size, sha256, chunkBytes, file, code } = staged
  const hash = createHash('sha256')
  let bytesRead = 0
  const chunks = readFileChunks(temp, { chunkBytes, end: size })
  async function* hashed(): AsyncGenerator<Buffer, void, undefined> {
    for await (const chunk of chunks) {
      hash.update(chunk)
      bytesRead += chunk.length
      yield chunk
    }
  }
  const source = hashed()
  // The validator may stop early (a `break` calls `return()`): hand it a view that cannot close the hashing generator.
  const view: ByteSource = { [Symbol.asyncIterator]: () => ({ next: () => source.next() }) }
  try {
    if (request.verify !== undefined) await request.verify(view)
    // Whatever the validator did not consume is still read and hashed.
    for await (const _chunk of source) {
      // drain
    }
  } catch (error) {
    throw failed('verify', error, { file, code })
  }
  const found = hash.digest('hex')
  if (bytesRead !== size || found !== sha256) {
    throw failed('verify', new Error('staged bytes differ from the written bytes'), {
      file,
      code,
      details: {
        cause: 'STAGED_BYTES_DIFFER',
        expectedBytes: size,
        foundBytes: bytesRead,
        expectedSha256: sha256,
        foundSha256: found,
      },
    })
  }
}

export async function checkSource(
  fs: FsOps,
  source: SourceIdentity,
  { file, code }: { readonly file: string; readonly code: JsonlErrorCode },
): Promise<void> {
  let found: { ino: number; size: number; mtimeMs: number } | null = null
  try {
    const stats = await fs.lstat(source.path)
    found = { ino: stats.ino, size: stats.size, mtimeMs: stats.mtimeMs }
  } catch (error) {
    if (errnoOf(error) !== 'ENOENT') throw failed('check-source', error, { file, code })
  }
  if (found?.ino === source.ino && found.size === source.size && found.mtimeMs === source.mtimeMs) return
  const expected = { ino: source.ino, size: source.size, mtimeMs: source.mtimeMs }
  throw new JsonlStoreError({
    code,
    message: `Publishing ${file} failed at step check-source: expected the source unchanged since it was read (${JSON.stringify(expected)}), found ${found === null ? 'it removed' : JSON.stringify(found)}; nothing was published.`,
    file,
    details: {
      step: 'check-source',
      cause: 'SOURCE_CHANGED',
      published: false,
      poisoned: false,
      expected,
      found,
    },
  })
}

/**
 * The target existed at link time: accept it only when it begins with exactly our staged
 * bytes (then make it durable), else conflict.
 *
 * @returns The existing target's inode.
 */
export async function acceptExisting(
  request: PublishRequest,
  context: {
    temp: FileHandleOps
    size: number
    chunkBytes: number
    file: string
    code: JsonlErrorCode
    targetPath: string
  },
): Promise<number> {
  const { fs } = request
  const { temp, size, chunkBytes, file, code, targetPath } = context
  const conflict = (details: Record<string, unknown>, message: string): JsonlStoreError =>
    new JsonlStoreError({ code: JsonlErrorCode.MIGRATION_CONFLICT, message, file, details })
  if (request.ifExists === 'refuse') {
    throw conflict(
      { reason: 'exists' },
      `Cannot publish ${file}: expected no file there, found one (another process published first).`,
    )
  }
  let stats
  try {
    stats = await fs.lstat(targetPath)
  } catch (error) {
    throw failed('compare-existing', error, { file, code })
  }
  if (stats.isSymbolicLink()) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.SYMLINK_REFUSED,
      message: `Cannot publish ${file}: expected a regular file or no file there, found a symbolic link (never followed).`,
      file,
      details: { which: 'target' },
    })
  }
  if (!stats.isFile()) {
    throw conflict(
      { reason: 'not-a-file' },
      `Cannot publish ${file}: expected a regular file or no file there, found another kind of entry.`,
    )
  }
  let existing: FileHandleOps
  try {
    existing = await fs.open(targetPath, constants.O_RDONLY | constants.O_NOFOLLOW)
  } catch (error) {
    throw failed('compare-existing', error, { file, code })
  }
  try {
    const difference = await firstDifference(temp, existing, { size, chunkBytes })
    if (difference !== -1) {
      throw conflict(
        {
          reason: 'different-bytes',
          firstDifferenceOffset: difference,
          existingBytes: stats.size,
          stagedBytes: size,
        },
        `Cannot publish ${file}: another process published it first and its bytes differ from ours at offset ${difference} (expected it to begin with our ${size} bytes); ours was dropped.`,
      )
    }
    // The winner may have crashed between its link and its directory fsync: make what we accept durable.
    try {
      await existing.sync()
      await fs.fsyncDirectory(request.directory)
    } catch (error) {
      throw failed('fsync-dir', error, { file, code, details: { poisoned: true, published: true } })
    }
    return (await existing.stat()).ino
  } catch (error) {
    if (JsonlStoreError.is(error)) throw error
    throw failed('compare-existing', error, { file, code })
  } finally {
    await existing.close().catch(() => undefined)
  }
}

/** Offset of the first byte where `existing` differs from the first `size` bytes of `staged` (-1: identical prefix). */
async function firstDifference(
  staged: FileHandleOps,
  existing: FileHandleOps,
  options: { size: number; chunkBytes: number },
): Promise<number> {
  const left = Buffer.allocUnsafe(options.chunkBytes)
  const right = Buffer.allocUnsafe(options.chunkBytes)
  let position = 0
  while (position < options.size) {
    const want = Math.min(options.chunkBytes, options.size - position)
    const leftCount = await readFully(staged, left.subarray(0, want), position)
    const rightCount = await readFully(existing, right.subarray(0, want), position)
    const limit = Math.min(leftCount, rightCount)
    for (let index = 0; index < limit; index += 1) {
      if (left[index] !== right[index]) return position + index
    }
    if (rightCount < want || leftCount < want) return position + limit
    position += want
  }
  return -1
}
