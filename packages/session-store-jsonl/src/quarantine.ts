import { toStoreError } from './fs-errors.ts'
import type { FileHandleOps, FsOps } from './fs-ops.ts'
import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'
import { isQuarantineFileName, quarantineFileName } from './layout.ts'
import { readFileChunks } from './read-log.ts'
import { createExclusiveFile } from './temp-file.ts'

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
  /** Quarantine files allowed per log: at this many, the repair is refused (`QUARANTINE_FULL`), nothing deleted. */
  readonly keep: number
}

/**
 * Repairs a torn tail without destroying it (RELIABILITY decision 2, T1-T3): copies the
 * bytes from `offset` to the end of the log into a new `<log>.torn-<offset>` file
 * (O_CREAT|O_EXCL|O_NOFOLLOW, 0600), fsyncs it and the directory, then truncates the log
 * to `offset` and fdatasyncs it. Never deletes a quarantine file: with `keep` of them
 * already there, it refuses before touching anything (`QUARANTINE_FULL`, naming them).
 *
 * Crash-safe in any order: a crash before the truncate leaves the tail in place (the next
 * open quarantines it again, under a `-n` name); after it, the bytes are already safe.
 *
 * @param request - The log, the offset and where to put the copy.
 * @returns The quarantine file's name (inside the session directory).
 * @throws {@link JsonlStoreError} `QUARANTINE_FULL`, or mapped from the file-system error (`DISK_FULL`, `ACCESS_DENIED`, `WRITE_FAILED`).
 */
export async function quarantineTail(request: QuarantineRequest): Promise<string> {
  const { fs, directory, id, logName, log, offset } = request
  await assertQuarantineRoom(request)
  let name = ''
  const created = await createExclusiveFile(fs, {
    directory,
    name: (attempt) => (name = quarantineFileName(logName, offset, attempt)),
    attempts: MAX_NAME_ATTEMPTS,
  }).catch((error: unknown) => {
    throw toStoreError(error, {
      op: 'create-quarantine',
      file: `${id}/${name}`,
      which: 'quarantine',
      fallback: JsonlErrorCode.WRITE_FAILED,
    })
  })
  if (created === null) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.WRITE_FAILED,
      message: `Cannot quarantine the torn tail of ${id}/${logName}: expected a free name ${quarantineFileName(logName, offset, 0)}(-n), found ${MAX_NAME_ATTEMPTS} taken.`,
      file: `${id}/${name}`,
      details: { op: 'create-quarantine', cause: 'EEXIST' },
    })
  }
  const { handle } = created
  const display = `${id}/${name}`
  try {
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

/**
 * Refuses a repair when `keep` quarantine files of this log already exist: they are never
 * deleted automatically (each may hold the only copy of bytes someone cares about), so the
 * user inspects and removes them. A name taken by a non-regular file counts too.
 */
async function assertQuarantineRoom(request: QuarantineRequest): Promise<void> {
  const { fs, directory, id, logName, keep } = request
  let names: string[]
  try {
    names = await fs.readdir(directory)
  } catch (error) {
    throw toStoreError(error, { op: 'list', file: id, fallback: JsonlErrorCode.READ_FAILED })
  }
  const existing = names.filter((name) => isQuarantineFileName(logName, name)).sort()
  if (existing.length < keep) return
  const files = existing.map((name) => `${id}/${name}`)
  throw new JsonlStoreError({
    code: JsonlErrorCode.QUARANTINE_FULL,
    message: `Cannot repair the torn tail of ${id}/${logName}: expected fewer than ${keep} quarantine files (limits.maxQuarantineFiles), found ${existing.length}: ${files.join(', ')}. Quarantine files are never deleted automatically: inspect them, keep what matters elsewhere, remove them, then open the session again; nothing was changed.`,
    file: `${id}/${logName}`,
    details: { files, limit: keep },
  })
}
