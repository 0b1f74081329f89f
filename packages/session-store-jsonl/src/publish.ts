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
 *   6. link(temp, target): never rename, which would replace an existing target (except
 *      with `replace`, for a reseal under the writer lock: rename over the target, then 7).
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
import { createHash } from 'node:crypto'
import { constants } from 'node:fs'
import type { Stats } from 'node:fs'
import { basename, join } from 'node:path'

import { errnoOf } from './fs-errors.ts'
import { JsonlStoreError } from './jsonl-store-error.ts'
import { namesFile } from './fs-ops.ts'
import type { FileHandleOps, FsOps } from './fs-ops.ts'
import { LOCK_TEMP_PREFIX, TEMP_PREFIX } from './layout.ts'
import { createTempFile, defaultRandomHex } from './temp-file.ts'
import type { PublishPoint, PublishRequest, PublishResult } from './publish-checks.ts'
import { FAILURE_CODES, failed, verifyStaged, checkSource, acceptExisting } from './publish-checks.ts'

const DEFAULT_CHUNK_BYTES = 1024 * 1024
const KIND_PATTERN = /^[a-z0-9]+$/
const HEX16 = /^[0-9a-f]{16}$/

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
  const randomHex = (byteCount: number): string => {
    const hex = (request.randomHex ?? defaultRandomHex)(byteCount)
    if (!HEX16.test(hex))
      throw new RangeError(
        `publishFile: randomHex(8) must return 16 lowercase hex digits, found ${JSON.stringify(hex)}`,
      )
    return hex
  }
  const at = async (point: PublishPoint | 'renamed'): Promise<void> => {
    await request.hooks?.at(point)
  }

  // 1. The temp file (S7: a pre-created name draws fresh randomness).
  let created: Awaited<ReturnType<typeof createTempFile>>
  try {
    created = await createTempFile(fs, {
      directory,
      prefix: `${TEMP_PREFIX}${kind}-`,
      randomHex,
      access: constants.O_RDWR,
    })
  } catch (error) {
    if (error instanceof RangeError) throw error
    throw failed('create-temp', error, { file, code })
  }
  const { handle: temp, path: tempPath } = created
  const tempName = basename(tempPath)
  let handleOpen = true
  const closeHandle = async (): Promise<void> => {
    if (!handleOpen) return
    handleOpen = false
    await temp.close().catch(() => undefined)
  }
  // Before the link, or after a link that failed or was withdrawn (the rename of `replace` and a
  // published link remove the temp name themselves).
  const removeTemp = async (): Promise<void> => {
    await closeHandle()
    await fs.unlink(tempPath).catch(() => undefined)
    await fs.fsyncDirectory(directory).catch(() => undefined)
  }

  let size = 0
  let sha256: string
  let tempStats: Stats
  try {
    try {
      tempStats = await temp.stat()
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
    const flush = async (): Promise<void> => {
      await writeBatch(batch.subarray(0, filled))
      batch = Buffer.allocUnsafe(chunkBytes)
      filled = 0
    }
    try {
      // A `for await` returns the producer's iterator when a write fails.
      for await (const chunk of request.content()) {
        if (filled > 0 && filled + chunk.byteLength > chunkBytes) await flush()
        if (chunk.byteLength >= chunkBytes) {
          await writeBatch(chunk)
        } else {
          batch.set(chunk, filled)
          filled += chunk.byteLength
        }
      }
      if (filled > 0) await flush()
    } catch (error) {
      // Errors of the content producer or a check pass through unchanged.
      if (JsonlStoreError.is(error)) throw error
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

  if (request.replace === true) return await renameOver()

  // 6. link(): never replaces an existing target.
  try {
    await fs.link(tempPath, targetPath)
  } catch (error) {
    if (errnoOf(error) !== 'EEXIST') {
      await removeTemp()
      throw failed('link', error, { file, code })
    }
    let existingIno: number
    try {
      existingIno = await acceptExisting(request, { temp, size, chunkBytes, file, code, targetPath })
    } finally {
      await removeTemp()
    }
    await at('temp-unlinked')
    return result('already-published', existingIno, null)
  }
  try {
    return await afterLink()
  } catch (error) {
    // Whatever fails after the link (a step below, or an injected fault at a point) must not
    // leave the temp's handle for the garbage collector (DEP0137).
    await closeHandle()
    throw error
  }

  /** `replace`: 6. rename over the target, 7. fsync the directory (no temp name is left). */
  async function renameOver(): Promise<PublishResult> {
    try {
      await fs.rename(tempPath, targetPath)
    } catch (error) {
      await removeTemp()
      throw failed('rename', error, { file, code })
    }
    try {
      await at('renamed')
      try {
        await fs.fsyncDirectory(directory)
      } catch (error) {
        throw failed('fsync-dir', error, { file, code, details: { published: true, poisoned: true } })
      }
      await at('dir-synced')
    } finally {
      await closeHandle()
    }
    return result('published', tempStats.ino, null)
  }

  function result(outcome: PublishResult['outcome'], ino: number, kept: FileHandleOps | null): PublishResult {
    return {
      outcome,
      file: target,
      path: targetPath,
      size,
      sha256,
      ino,
      handle: kept,
      tempFile: tempName,
    }
  }

  async function afterLink(): Promise<PublishResult> {
    await at('linked')

    // 7. The new name is durable.
    try {
      await fs.fsyncDirectory(directory)
    } catch (error) {
      // Nothing may be acked in a name that is not durable: withdraw it (if it is still ours) and poison.
      if (await namesFile(fs, targetPath, tempStats)) await fs.unlink(targetPath).catch(() => undefined)
      await removeTemp()
      throw failed('fsync-dir', error, { file, code, details: { poisoned: true } })
    }
    await at('dir-synced')

    // 8. Drop the temp name (it shares the target's inode: nlink 2 until now).
    try {
      await fs.unlink(tempPath)
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
    return result('published', tempStats.ino, request.keepHandle === true ? temp : null)
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
