import { constants } from 'node:fs'

import { NOT_REGULAR_ERRNO } from './fs-ops.ts'
import type { FileHandleOps, FsOps } from './fs-ops.ts'
import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'

/**
 * The errno code (`ENOENT`, `ENOSPC`...) of a Node file-system error, or undefined.
 *
 * @param error - Anything thrown.
 * @returns Its string `code`, when it has one.
 */
export function errnoOf(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = error.code
    return typeof code === 'string' ? code : undefined
  }
  return undefined
}

/** Errno codes that mean "no space": the write is retryable once space is freed. */
export const DISK_FULL_CODES: ReadonlySet<string> = new Set(['ENOSPC', 'EFBIG', 'EDQUOT'])
/** Errno codes that mean "not allowed". */
const ACCESS_CODES = new Set(['EACCES', 'EPERM', 'EROFS'])

/** True when {@link toStoreError} has a code of its own for `errno` (not the caller's fallback). */
export function hasStoreCode(errno: string): boolean {
  return (
    errno === 'ELOOP' ||
    errno === NOT_REGULAR_ERRNO ||
    errno === 'ENXIO' ||
    ACCESS_CODES.has(errno) ||
    DISK_FULL_CODES.has(errno)
  )
}

/** What the store was doing when a file-system call failed. */
export interface FsFailure {
  /** The operation, e.g. `open-append`, `mkdir`, `write`, `read`. */
  readonly op: string
  /** The path concerned, relative to the store root. */
  readonly file: string
  /** Which name a symlink was found at (`log`, `session-directory`, `temp`...), for SYMLINK_REFUSED. */
  readonly which?: string
  /** The error code to use when the errno maps to nothing more specific. */
  readonly fallback: JsonlErrorCode
}

/**
 * Maps a file-system error to a typed store error: ELOOP to `SYMLINK_REFUSED`, a refused
 * special file (`ENOTREGULAR`, ENXIO) to `NOT_REGULAR_FILE`, EACCES /
 * EPERM / EROFS to `ACCESS_DENIED`, ENOSPC / EFBIG / EDQUOT to `DISK_FULL`, anything else to
 * `failure.fallback`. A `JsonlStoreError` passes through unchanged.
 *
 * @param error - What was thrown.
 * @param failure - The operation and the path.
 * @returns The error to throw.
 */
export function toStoreError(error: unknown, failure: FsFailure): JsonlStoreError {
  if (JsonlStoreError.is(error)) return error
  const cause = errnoOf(error) ?? 'unknown'
  const { op, file } = failure
  if (cause === 'ELOOP') {
    return new JsonlStoreError({
      code: JsonlErrorCode.SYMLINK_REFUSED,
      message: `Refused to ${op} ${file}: expected a regular file or directory, found a symbolic link (never followed).`,
      file,
      details: { which: failure.which ?? op, op, cause },
      cause: error,
    })
  }
  if (cause === NOT_REGULAR_ERRNO || cause === 'ENXIO') {
    const kind =
      typeof error === 'object' && error !== null && 'kind' in error && typeof error.kind === 'string'
        ? error.kind
        : 'fifo-or-socket'
    return notRegularFile({ file, which: failure.which ?? op, kind, op, cause: error })
  }
  if (ACCESS_CODES.has(cause)) {
    return new JsonlStoreError({
      code: JsonlErrorCode.ACCESS_DENIED,
      message: `Cannot ${op} ${file}: expected permission, found ${cause}.`,
      file,
      details: { op, path: file, cause },
      cause: error,
    })
  }
  if (DISK_FULL_CODES.has(cause)) {
    return new JsonlStoreError({
      code: JsonlErrorCode.DISK_FULL,
      message: `Cannot ${op} ${file}: the disk or the file size limit is full (${cause}).`,
      file,
      details: { op, cause },
      cause: error,
    })
  }
  return new JsonlStoreError({
    code: failure.fallback,
    message: `Cannot ${op} ${file}: the file system reported ${cause}.`,
    file,
    details: { op, cause },
    cause: error,
  })
}

const KIND_WORDS: Readonly<Record<string, string>> = {
  fifo: 'a FIFO (named pipe)',
  socket: 'a socket',
  'character-device': 'a character device',
  'block-device': 'a block device',
  directory: 'a directory',
  symlink: 'a symbolic link',
  'fifo-or-socket': 'a socket or a FIFO (ENXIO)',
}

/**
 * The `NOT_REGULAR_FILE` error for a path the store will not open: refused without
 * blocking, never read or written.
 *
 * @param where - The file (relative to the root), which name it is (`log`, `lock`...), its kind, the operation.
 * @returns The error.
 */
export function notRegularFile(where: {
  readonly file: string
  readonly which: string
  readonly kind: string
  readonly op: string
  readonly cause?: unknown
}): JsonlStoreError {
  const { file, which, kind, op } = where
  return new JsonlStoreError({
    code: JsonlErrorCode.NOT_REGULAR_FILE,
    message: `Refused to ${op} ${file}: expected a regular file, found ${KIND_WORDS[kind] ?? kind}; it was not read or written.`,
    file,
    details: { which, kind, op },
    ...(where.cause === undefined ? {} : { cause: where.cause }),
  })
}

/**
 * Opens a session log for reading without following a symbolic link.
 *
 * @param fs - File system.
 * @param path - Absolute path of the log.
 * @param file - The log as the store names it in errors.
 * @returns The open handle.
 * @throws {@link JsonlStoreError} `SESSION_NOT_FOUND` when it is gone, else as {@link toStoreError} with `READ_FAILED`.
 */
export async function openLogForRead(fs: FsOps, path: string, file: string): Promise<FileHandleOps> {
  try {
    return await fs.open(path, constants.O_RDONLY | constants.O_NOFOLLOW)
  } catch (error) {
    throw toStoreError(error, {
      op: 'open',
      file,
      which: 'log',
      fallback: errnoOf(error) === 'ENOENT' ? JsonlErrorCode.SESSION_NOT_FOUND : JsonlErrorCode.READ_FAILED,
    })
  }
}
