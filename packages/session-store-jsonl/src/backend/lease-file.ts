/*
 * The fencing epoch of a JSONL session: `writer.lease` beside `writer.lock`.
 *
 * The writer lock (`../writer-lock.ts`) says who may write now; it is never fsynced and dies
 * with its process. The port also needs a fencing token that only grows, across restarts and
 * power loss: `writer.lease` holds `{ epoch, owner, nonce, leaseMs, expiresAt }`, where
 * `nonce` is the nonce of the lock taken with that epoch. It is only written by the lock
 * holder: temp file (O_EXCL, 0600), write, fsync, rename over `writer.lease`, directory
 * fsync, so after any crash it holds the old or the new record, whole. Every acquire writes
 * epoch + 1 durably before the lease is granted; every append checks, before the write and
 * again before the ack, that the lock still carries our nonce and the file still our epoch.
 * The epoch check is one `lstat` while the name still points at the inode the holder wrote
 * and holds open ({@link OwnLeaseFile}), else a full read of the record.
 */
import { constants } from 'node:fs'
import { join } from 'node:path'

import { SessionStoreErrorCode } from '@agent-ledger/session-store'

import { errnoOf } from '../fs-errors.ts'
import { namesFile, readFully } from '../fs-ops.ts'
import type { FileHandleOps, FsOps } from '../fs-ops.ts'
import { replaceFile } from '../temp-file.ts'
import { portError, toPortError } from './port-errors.ts'

/** Name of the lease file inside a session directory. */
const LEASE_FILE_NAME = 'writer.lease'

/** What `writer.lease` holds. */
export interface LeaseRecord {
  /** The session's epoch: the number of leases ever granted. */
  readonly epoch: number
  /** The owner the last lease was granted to. */
  readonly owner: string
  /** Nonce of the writer lock taken with this epoch (the lease is live only while `writer.lock` carries it). */
  readonly nonce: string
  readonly leaseMs: number
  /** When the lease expires unless renewed, in ms since the epoch (the backend's clock). */
  readonly expiresAt: number
}

const MAX_LEASE_BYTES = 4096

function isRecord(value: unknown): value is LeaseRecord {
  if (typeof value !== 'object' || value === null) return false
  const record = value as Record<string, unknown>
  return (
    Number.isSafeInteger(record['epoch']) &&
    (record['epoch'] as number) >= 0 &&
    typeof record['owner'] === 'string' &&
    typeof record['nonce'] === 'string' &&
    Number.isSafeInteger(record['leaseMs']) &&
    typeof record['expiresAt'] === 'number' &&
    Number.isFinite(record['expiresAt'])
  )
}

/**
 * Reads `writer.lease`.
 *
 * @param fs - The file-system seam.
 * @param directory - The session directory.
 * @param id - The session id (for messages).
 * @returns The record, or null when there is none (epoch 0: never acquired).
 * @throws {@link SessionStoreError} `BACKEND_FAILED` when the file is unreadable or not a lease record
 *   (an epoch is never guessed: a lower one could un-fence an old writer).
 */
export async function readLease(fs: FsOps, directory: string, id: string): Promise<LeaseRecord | null> {
  const file = `${id}/${LEASE_FILE_NAME}`
  let handle: FileHandleOps
  try {
    handle = await fs.open(join(directory, LEASE_FILE_NAME), constants.O_RDONLY | constants.O_NOFOLLOW)
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') return null
    throw toPortError(error, { sessionId: id, action: `read ${file}` })
  }
  try {
    return await readRecord(handle, file, id)
  } finally {
    await handle.close().catch(() => undefined)
  }
}

/** The record in an open `writer.lease`. */
async function readRecord(handle: FileHandleOps, file: string, id: string): Promise<LeaseRecord> {
  let text: string
  try {
    const buffer = Buffer.alloc(MAX_LEASE_BYTES + 1)
    text = buffer.toString('utf8', 0, await readFully(handle, buffer))
  } catch (error) {
    throw toPortError(error, { sessionId: id, action: `read ${file}` })
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    value = undefined
  }
  if (!isRecord(value)) {
    throw portError(SessionStoreErrorCode.BACKEND_FAILED, {
      sessionId: id,
      message: `${file} is not a lease record: expected {"epoch","owner","nonce","leaseMs","expiresAt"}, found ${JSON.stringify(text.slice(0, 80))}; the epoch is never guessed, so writes are refused until it is repaired.`,
      location: { file },
      details: { file },
    })
  }
  return value
}

/**
 * `writer.lease` as its holder last wrote it, held open: the fast form of the fence check.
 * The file is only ever replaced whole (temp + rename, {@link writeLease}), never written in
 * place, and the open descriptor keeps its inode from being freed and reused; so while the
 * name still points at this inode, the file still holds this record and its epoch.
 */
export interface OwnLeaseFile {
  readonly handle: FileHandleOps
  readonly dev: number
  readonly ino: number
}

/**
 * Opens `writer.lease` right after this holder wrote `record` (under the writer lock) and
 * keeps it open, when it holds exactly that record.
 *
 * @returns The open file and its identity, or null when it holds another record or cannot be
 *   opened (then every fence check reads the file whole).
 */
export async function openOwnLease(
  fs: FsOps,
  where: { readonly directory: string; readonly id: string },
  record: LeaseRecord,
): Promise<OwnLeaseFile | null> {
  const { directory, id } = where
  let handle: FileHandleOps
  try {
    handle = await fs.open(join(directory, LEASE_FILE_NAME), constants.O_RDONLY | constants.O_NOFOLLOW)
  } catch {
    return null
  }
  try {
    const [found, stats] = await Promise.all([
      readRecord(handle, `${id}/${LEASE_FILE_NAME}`, id),
      handle.stat(),
    ])
    if (found.epoch === record.epoch && found.nonce === record.nonce) {
      return { handle, dev: stats.dev, ino: stats.ino }
    }
  } catch {
    // Unreadable now: no fast form; the full read decides each time.
  }
  await handle.close().catch(() => undefined)
  return null
}

/**
 * Whether `writer.lease` is still the file held open in `own` (one `lstat`); false means
 * "read it whole", never "fenced".
 */
export async function isOwnLease(fs: FsOps, directory: string, own: OwnLeaseFile | null): Promise<boolean> {
  return own !== null && (await namesFile(fs, join(directory, LEASE_FILE_NAME), own))
}

/**
 * Replaces `writer.lease` durably (temp, fsync, rename, directory fsync). Call it only while
 * holding the session's writer lock.
 *
 * @param fs - The file-system seam.
 * @param target - Directory, session id and the random-hex source for the temp name.
 * @param record - The new record.
 * @throws {@link SessionStoreError} `DISK_FULL`, `BACKEND_FAILED`; the old record stays in place.
 */
export async function writeLease(
  fs: FsOps,
  target: { readonly directory: string; readonly id: string; readonly randomHex: (bytes: number) => string },
  record: LeaseRecord,
): Promise<void> {
  const { directory, id } = target
  const file = `${id}/${LEASE_FILE_NAME}`
  const action = `write ${file}`
  try {
    await replaceFile(fs, {
      directory,
      name: LEASE_FILE_NAME,
      tempPrefix: '.tmp-lease-',
      randomHex: target.randomHex,
      bytes: Buffer.from(`${JSON.stringify(record)}\n`, 'utf8'),
    })
  } catch (error) {
    throw toPortError(error, { sessionId: id, action, file })
  }
}
