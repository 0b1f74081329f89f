/*
 * Publish-by-link: how a new file (a migrated generation, a compressed copy, a new or
 * salvaged session) appears in a session directory complete or not at all, never replacing
 * anything (RELIABILITY rule 7, rows M1-M6, V4, S7).
 *
 *   1. temp file `.tmp-<kind>-<16 hex>`: O_RDWR|O_CREAT|O_EXCL|O_NOFOLLOW, 0600 (fchmod when
 *      the umask narrowed it); EEXIST (a pre-created file or symlink) draws a fresh name.
 *   2. write the content, streamed, in large batches; sha256 computed on the way.
 *   3. fsync the temp file.
 *   4. VERIFY: read the staged bytes back through the temp's own handle, hand them to the
 *      caller's validator (the store's scanner), and check they hash to what was written.
 *   5. check the source is unchanged since it was read (stat identity: ino, size, mtime).
 *   6. link(temp, target): never rename, which would replace an existing target.
 *      EEXIST: another process published first. Accepted only when the existing file
 *      begins with exactly the bytes we staged (compared streaming); otherwise
 *      MIGRATION_CONFLICT. Either way our temp is removed.
 *   7. fsync the directory (the new name is durable; only now may anything be acked in it).
 *   8. unlink the temp name, fsync the directory.
 *
 * On any failure before step 7 completes, the temp file is removed and nothing is
 * published. A failed directory fsync after the link also unlinks the new name (if it is
 * still our inode), so the source stays current, and reports `poisoned`: the caller stops
 * writing and reopens (an fsync error is never retried, RELIABILITY rule 6).
 */
import { createHash, randomBytes } from 'node:crypto'
import { constants } from 'node:fs'
import { join } from 'node:path'

import { errnoOf } from './fs-errors.ts'
import type { FileHandleOps, FsOps } from './fs-ops.ts'
import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'
import { LOCK_TEMP_PREFIX, TEMP_PREFIX } from './layout.ts'
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
  at(point: PublishPoint): Promise<void> | void
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

const FAILURE_CODES: Readonly<Record<PublishOperation, JsonlErrorCode>> = {
  create: JsonlErrorCode.CREATE_FAILED,
  fork: JsonlErrorCode.FORK_FAILED,
  salvage: JsonlErrorCode.SALVAGE_FAILED,
  compress: JsonlErrorCode.COMPRESS_FAILED,
  migrate: JsonlErrorCode.MIGRATION_FAILED,
}

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
  /**
   * Open the temp file `O_APPEND` (a session's log handle: should two writers ever coexist,
   * both lines land and the next open reports `SEQ_CONFLICT` instead of an overwrite).
   */
  readonly appendOnly?: boolean
  /** Write batch and read-back chunk size; default 1 MiB. */
  readonly chunkBytes?: number
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

const MAX_TEMP_ATTEMPTS = 16
const DEFAULT_CHUNK_BYTES = 1024 * 1024
const KIND_PATTERN = /^[a-z0-9]+$/
const HEX16 = /^[0-9a-f]{16}$/

function defaultRandomHex(byteCount: number): string {
  return randomBytes(byteCount).toString('hex')
}

const DISK_FULL_CAUSES: ReadonlySet<string> = new Set(['ENOSPC', 'EDQUOT', 'EFBIG'])

/** A failure at one step, before or after the target name appeared. */
function failed(
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
  const diskFull = DISK_FULL_CAUSES.has(cause)
  return new JsonlStoreError({
    code: diskFull ? JsonlErrorCode.DISK_FULL : context.code,
    message: `Publishing ${context.file} failed at step ${step}: expected it to succeed, found ${cause}${diskFull ? ' (the disk or the file size limit is full)' : ''}${context.details?.['published'] === true ? ' (the file was published)' : '; nothing was published'}.`,
    file: context.file,
    details: { step, cause, published: false, poisoned: false, ...context.details },
    cause: error,
  })
}

/** Errors a content producer or a caller-supplied check may throw and that pass through unchanged. */
function isTyped(error: unknown): boolean {
  return JsonlStoreError.is(error)
}

/**
 * Publishes a file by link (see the protocol at the top of this source file): temp file,
 * streamed write, fsync, verification by reading back, source identity check, `link()`
 * (never a rename), directory fsync, temp removal, directory fsync.
 *
 * **When to use**: any new file in a session directory (migration, compression, creation,
 * salvage). Call it under the session's writer lock; the lock-free race (two publishers)
 * is still safe: exactly one link wins, the other accepts identical bytes or conflicts.
 *
 * **Gotchas**: with outcome `already-published` there is no handle (ours was another inode);
 * open the target by name. The verification reads back through the page cache: it catches
 * software faults (a wrong encoder, a short write), not media faults.
 *
 * @param request - Target, content, verification, source identity and seams.
 * @returns What was published.
 * @throws {@link JsonlStoreError} the operation's failure code (`MIGRATION_FAILED` by default,
 *   `CREATE_FAILED`, `FORK_FAILED`, `SALVAGE_FAILED`, `COMPRESS_FAILED`; details `step`, `cause`,
 *   `published`, `poisoned`), `DISK_FULL` for a full disk at any step,
 *   `MIGRATION_CONFLICT` (details `reason`, `firstDifferenceOffset`), `SYMLINK_REFUSED` (a symlink at
 *   the target), `LOCK_LOST`; any typed error thrown by `content`.
 */
export async function publishFile(request: PublishRequest): Promise<PublishResult> {
  const { fs, directory, target, kind } = request
  if (!KIND_PATTERN.test(kind) || kind.startsWith('lock')) {
    throw new RangeError(
      `publishFile: kind must match [a-z0-9]+ and not start with "lock", found ${JSON.stringify(kind)}`,
    )
  }
  const display = (name: string): string =>
    request.display === undefined ? name : `${request.display}/${name}`
  const file = display(target)
  const code = FAILURE_CODES[request.operation ?? 'migrate']
  const targetPath = join(directory, target)
  const chunkBytes = request.chunkBytes ?? DEFAULT_CHUNK_BYTES
  const randomHex = request.randomHex ?? defaultRandomHex
  const at = async (point: PublishPoint): Promise<void> => {
    await request.hooks?.at(point)
  }

  // 1. The temp file.
  let handle: FileHandleOps | undefined
  let tempName = ''
  for (let attempt = 0; attempt < MAX_TEMP_ATTEMPTS && handle === undefined; attempt += 1) {
    const hex = randomHex(8)
    if (!HEX16.test(hex))
      throw new RangeError(
        `publishFile: randomHex(8) must return 16 lowercase hex digits, found ${JSON.stringify(hex)}`,
      )
    tempName = `${TEMP_PREFIX}${kind}-${hex}`
    try {
      handle = await fs.open(
        join(directory, tempName),
        constants.O_RDWR |
          constants.O_CREAT |
          constants.O_EXCL |
          constants.O_NOFOLLOW |
          (request.appendOnly === true ? constants.O_APPEND : 0),
        0o600,
      )
    } catch (error) {
      // S7: a pre-created name (a file or a symlink) gives EEXIST: draw fresh randomness.
      if (errnoOf(error) === 'EEXIST') continue
      throw failed('create-temp', error, { file, code })
    }
  }
  if (handle === undefined) {
    throw new JsonlStoreError({
      code,
      message: `Publishing ${file} failed at step create-temp: expected a free random temp name, found ${MAX_TEMP_ATTEMPTS} taken; nothing was published.`,
      file,
      details: {
        step: 'create-temp',
        cause: 'EEXIST',
        published: false,
        poisoned: false,
        attempts: MAX_TEMP_ATTEMPTS,
      },
    })
  }
  const tempPath = join(directory, tempName)
  const temp = handle
  let tempPresent = true
  let handleOpen = true
  const closeHandle = async (): Promise<void> => {
    if (!handleOpen) return
    handleOpen = false
    await temp.close().catch(() => undefined)
  }
  const removeTemp = async (): Promise<void> => {
    await closeHandle()
    if (!tempPresent) return
    await fs.unlink(tempPath).then(
      () => {
        tempPresent = false
      },
      (error: unknown) => {
        if (errnoOf(error) === 'ENOENT') tempPresent = false
      },
    )
    await fs.fsyncDirectory(directory).catch(() => undefined)
  }

  let size = 0
  let sha256: string
  let tempIno: number
  try {
    try {
      const stats = await temp.stat()
      tempIno = stats.ino
      if ((stats.mode & 0o777) !== 0o600) await temp.chmod(0o600)
    } catch (error) {
      throw failed('create-temp', error, { file, code })
    }
    await at('temp-created')

    // 2. The content, in large batches, hashed on the way.
    const hash = createHash('sha256')
    let batch = Buffer.allocUnsafe(chunkBytes)
    let filled = 0
    const writeBatch = async (bytes: Uint8Array): Promise<void> => {
      try {
        await temp.write(bytes, size)
      } catch (error) {
        throw failed('write-temp', error, { file, code })
      }
      hash.update(bytes)
      size += bytes.byteLength
    }
    let iterator: AsyncIterator<Uint8Array> | undefined
    try {
      iterator = request.content()[Symbol.asyncIterator]()
      for (;;) {
        const step = await iterator.next()
        if (step.done === true) break
        const chunk = step.value
        if (chunk.byteLength >= chunkBytes) {
          if (filled > 0) {
            await writeBatch(batch.subarray(0, filled))
            batch = Buffer.allocUnsafe(chunkBytes)
            filled = 0
          }
          await writeBatch(chunk)
          continue
        }
        if (filled + chunk.byteLength > chunkBytes) {
          await writeBatch(batch.subarray(0, filled))
          batch = Buffer.allocUnsafe(chunkBytes)
          filled = 0
        }
        batch.set(chunk, filled)
        filled += chunk.byteLength
      }
      if (filled > 0) await writeBatch(batch.subarray(0, filled))
    } catch (error) {
      await iterator?.return?.().catch(() => undefined)
      if (isTyped(error)) throw error
      throw failed('write-temp', error, { file, code })
    }
    sha256 = hash.digest('hex')
    await at('temp-written')

    // 3. fsync the temp file.
    try {
      await temp.sync()
    } catch (error) {
      throw failed('fsync-temp', error, { file, code })
    }
    await at('temp-synced')

    // 4. Verify what is on disk.
    await verifyStaged(request, { temp, size, sha256, chunkBytes, file, code })
    await at('verified')

    // 5. The source is unchanged since it was read.
    if (request.source !== undefined) await checkSource(fs, request.source, { file, code })
    if (request.lock !== undefined) await request.lock.assertHeld()
  } catch (error) {
    await removeTemp()
    throw error
  }

  // 6. link(): never replaces an existing target.
  try {
    await fs.link(tempPath, targetPath)
  } catch (error) {
    if (errnoOf(error) !== 'EEXIST') {
      await removeTemp()
      throw failed('link', error, { file, code })
    }
    try {
      const existingIno = await acceptExisting(request, { temp, size, chunkBytes, file, code, targetPath })
      await removeTemp()
      await at('temp-unlinked')
      return {
        outcome: 'already-published',
        file: target,
        path: targetPath,
        size,
        sha256,
        ino: existingIno,
        handle: null,
        tempFile: tempName,
      }
    } catch (conflict) {
      await removeTemp()
      throw conflict
    }
  }
  try {
    return await afterLink()
  } catch (error) {
    // Whatever fails after the link (a step below, or an injected fault at a point) must not
    // leave the temp's handle for the garbage collector (DEP0137).
    await closeHandle()
    throw error
  }

  async function afterLink(): Promise<PublishResult> {
    await at('linked')

    // 7. The new name is durable.
    try {
      await fs.fsyncDirectory(directory)
    } catch (error) {
      // Nothing may be acked in a name that is not durable: withdraw it (if it is still ours) and poison.
      await withdrawTarget(fs, targetPath, tempIno)
      await removeTemp()
      throw failed('fsync-dir', error, { file, code, details: { poisoned: true } })
    }
    await at('dir-synced')

    // 8. Drop the temp name (it shares the target's inode: nlink 2 until now).
    try {
      await fs.unlink(tempPath)
      tempPresent = false
    } catch (error) {
      await closeHandle()
      throw failed('unlink-temp', error, {
        file,
        code,
        details: { published: true, tempFile: display(tempName) },
      })
    }
    try {
      await fs.fsyncDirectory(directory)
    } catch (error) {
      await closeHandle()
      throw failed('fsync-dir-after-unlink', error, {
        file,
        code,
        details: { published: true, poisoned: true },
      })
    }
    await at('temp-unlinked')
    if (request.keepHandle !== true) await closeHandle()
    return {
      outcome: 'published',
      file: target,
      path: targetPath,
      size,
      sha256,
      ino: tempIno,
      handle: request.keepHandle === true ? temp : null,
      tempFile: tempName,
    }
  }
}

async function verifyStaged(
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

async function checkSource(
  fs: FsOps,
  source: SourceIdentity,
  { file, code }: { readonly file: string; readonly code: JsonlErrorCode },
): Promise<void> {
  let found: { ino: number; size: number; mtimeMs: number } | null
  try {
    const stats = await fs.lstat(source.path)
    found = { ino: stats.ino, size: stats.size, mtimeMs: stats.mtimeMs }
  } catch (error) {
    if (errnoOf(error) !== 'ENOENT') throw failed('check-source', error, { file, code })
    found = null
  }
  if (
    found !== null &&
    found.ino === source.ino &&
    found.size === source.size &&
    found.mtimeMs === source.mtimeMs
  )
    return
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
async function acceptExisting(
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
    if (isTyped(error)) throw error
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
    const leftCount = await readFully(staged, left, { length: want, position })
    const rightCount = await readFully(existing, right, { length: want, position })
    const limit = Math.min(leftCount, rightCount)
    for (let index = 0; index < limit; index += 1) {
      if (left[index] !== right[index]) return position + index
    }
    if (rightCount < want || leftCount < want) return position + limit
    position += want
  }
  return -1
}

async function readFully(
  handle: FileHandleOps,
  buffer: Buffer,
  range: { length: number; position: number },
): Promise<number> {
  let total = 0
  while (total < range.length) {
    const count = await handle.read(buffer, total, range.length - total, range.position + total)
    if (count === 0) break
    total += count
  }
  return total
}

/** Removes the target name after a failed directory fsync, but only when it still holds our inode. */
async function withdrawTarget(fs: FsOps, targetPath: string, ino: number): Promise<void> {
  try {
    const stats = await fs.lstat(targetPath)
    if (stats.isFile() && stats.ino === ino) await fs.unlink(targetPath)
  } catch {
    // Gone already, or unreadable: nothing more can be done here; the caller is poisoned.
  }
}

/**
 * Removes temp files a crashed publish left in a session directory (`.tmp-*`, except the
 * writer lock's own `.tmp-lock*` files), then fsyncs the directory if anything was removed.
 *
 * **Gotchas**: call it only while holding the session's writer lock: a live publisher's
 * temp file looks exactly like a leftover. A temp name that shares an inode with a
 * generation (a crash after the link, RELIABILITY M4) is just a second name: removing it
 * leaves the generation with one link.
 *
 * @param fs - The file-system seam.
 * @param directory - The session directory (absolute).
 * @returns The names removed.
 */
export async function removeStaleTemps(fs: FsOps, directory: string): Promise<string[]> {
  const names = await fs.readdir(directory)
  const removed: string[] = []
  for (const name of names) {
    if (!name.startsWith(TEMP_PREFIX) || name.startsWith(LOCK_TEMP_PREFIX)) continue
    try {
      await fs.unlink(join(directory, name))
      removed.push(name)
    } catch {
      // Already gone (another cleaner), or not removable: leave it to the next holder.
    }
  }
  if (removed.length > 0) await fs.fsyncDirectory(directory)
  return removed
}
