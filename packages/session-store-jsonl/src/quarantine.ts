import { constants } from 'node:fs'
import { join } from 'node:path'

import { errnoOf, toStoreError } from './fs-errors.ts'
import type { FileHandleOps, FsOps } from './fs-ops.ts'
import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'
import { isQuarantineFileName, quarantineFileName } from './layout.ts'
import { readFileChunks } from './read-log.ts'

/** Names tried for one quarantine file (`.torn-<offset>`, then `-1`, `-2`...) before giving up. */
const MAX_NAME_ATTEMPTS = 64

/** What {@link quarantineTail} needs. */
export interface QuarantineRequest {
  readonly fs: FsOps
  /** The session directory (absolute). */
  readonly directory: string
  /** The session id, for paths in errors. */
  readonly id: string
  /** The log file name. */
  readonly logName: string
  /** The open log (read-write, under the writer lock). */
  readonly log: FileHandleOps
  /** Where the torn bytes start; everything from here to the end of the file is quarantined. */
  readonly offset: number
  readonly chunkBytes: number
  /** Quarantine files kept per log; the oldest beyond this are deleted. */
  readonly keep: number
}

/**
 * Repairs a torn tail without destroying it (RELIABILITY decision 2, T1-T3): copies the
 * bytes from `offset` to the end of the log into a new `<log>.torn-<offset>` file
 * (O_CREAT|O_EXCL|O_NOFOLLOW, 0600), fsyncs it and the directory, prunes old quarantine
 * files, then truncates the log to `offset` and fdatasyncs it.
 *
 * Crash-safe in any order: a crash before the truncate leaves the tail in place (the next
 * open quarantines it again, under a `-n` name); after it, the bytes are already safe.
 *
 * @param request - The log, the offset and where to put the copy.
 * @returns The quarantine file's name (inside the session directory).
 * @throws {@link JsonlStoreError} mapped from the file-system error (`DISK_FULL`, `ACCESS_DENIED`, `WRITE_FAILED`).
 */
export async function quarantineTail(request: QuarantineRequest): Promise<string> {
  const { fs, directory, id, logName, log, offset } = request
  let name = ''
  let handle: FileHandleOps | undefined
  for (let attempt = 0; attempt < MAX_NAME_ATTEMPTS && handle === undefined; attempt += 1) {
    name = quarantineFileName(logName, offset, attempt)
    try {
      handle = await fs.open(
        join(directory, name),
        constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
        0o600,
      )
    } catch (error) {
      if (errnoOf(error) === 'EEXIST') continue
      throw toStoreError(error, {
        op: 'create-quarantine',
        file: `${id}/${name}`,
        which: 'quarantine',
        fallback: JsonlErrorCode.WRITE_FAILED,
      })
    }
  }
  if (handle === undefined) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.WRITE_FAILED,
      message: `Cannot quarantine the torn tail of ${id}/${logName}: expected a free name ${quarantineFileName(logName, offset, 0)}(-n), found ${MAX_NAME_ATTEMPTS} taken.`,
      file: `${id}/${name}`,
      details: { op: 'create-quarantine', cause: 'EEXIST' },
    })
  }
  const display = `${id}/${name}`
  try {
    if (((await handle.stat()).mode & 0o777) !== 0o600) await handle.chmod(0o600)
    let position = 0
    for await (const chunk of readFileChunks(log, { chunkBytes: request.chunkBytes, start: offset })) {
      await handle.write(chunk, position)
      position += chunk.length
    }
    await handle.sync()
  } catch (error) {
    throw toStoreError(error, {
      op: 'write-quarantine',
      file: display,
      fallback: JsonlErrorCode.WRITE_FAILED,
    })
  } finally {
    await handle.close().catch(() => undefined)
  }
  await fs.fsyncDirectory(directory)
  await pruneQuarantine(request)
  try {
    await log.truncate(offset)
    await log.datasync()
  } catch (error) {
    throw toStoreError(error, {
      op: 'truncate',
      file: `${id}/${logName}`,
      fallback: JsonlErrorCode.WRITE_FAILED,
    })
  }
  return name
}

/** Deletes the oldest quarantine files (by mtime, then name) beyond `keep`. */
async function pruneQuarantine(request: QuarantineRequest): Promise<void> {
  const { fs, directory, logName, keep } = request
  const names = (await fs.readdir(directory)).filter((name) => isQuarantineFileName(logName, name))
  if (names.length <= keep) return
  const dated: { name: string; mtime: number }[] = []
  for (const name of names) {
    try {
      const stats = await fs.lstat(join(directory, name))
      if (stats.isFile()) dated.push({ name, mtime: stats.mtimeMs })
    } catch {
      // Gone meanwhile: nothing to prune.
    }
  }
  dated.sort((left, right) => left.mtime - right.mtime || left.name.localeCompare(right.name))
  const excess = dated.slice(0, Math.max(0, dated.length - keep))
  for (const entry of excess) await fs.unlink(join(directory, entry.name)).catch(() => undefined)
  if (excess.length > 0) await fs.fsyncDirectory(directory)
}
