/*
 * The store's two ways of making a new file in a session directory that nobody else can have
 * prepared: a file created exclusively (0600, never through a symlink; a temp file under a
 * random name, a quarantine copy, a release claim), and the durable replace of a small file
 * through a temp file (temp, write, fsync, rename, directory fsync). Publishing a file that
 * must never replace anything (link, verify) is `publish.ts`; the writer lock's own link
 * protocol is `writer-lock-record.ts`; both take their temp file from here.
 */
import { randomBytes } from 'node:crypto'
import { constants } from 'node:fs'
import { join } from 'node:path'

import { errnoOf } from './fs-errors.ts'
import type { FileHandleOps, FsOps } from './fs-ops.ts'

/**
 * `byteCount` random bytes as lowercase hex: the default source of temp names and nonces.
 *
 * @param byteCount - Bytes of randomness.
 * @returns `2 * byteCount` hex digits.
 */
export function defaultRandomHex(byteCount: number): string {
  return randomBytes(byteCount).toString('hex')
}

/** Temp names tried before giving up (each collision means someone pre-created a random name). */
const MAX_TEMP_ATTEMPTS = 16

/**
 * Creates a new file in `directory` with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600 whatever the
 * umask, under the first of the names `name(0)`, `name(1)`... that is free: a taken name (a
 * file or a symlink someone pre-created, S7) draws the next one.
 *
 * @param fs - The file-system seam.
 * @param where - The directory, the names to try and how many, and the access mode (`O_WRONLY`
 *   default, or `O_RDWR`).
 * @returns The open file and its path (the caller removes it), or null when every name was taken.
 * @throws The errno error of the open or the fchmod (the file is removed first).
 */
export async function createExclusiveFile(
  fs: FsOps,
  where: {
    readonly directory: string
    readonly name: (attempt: number) => string
    readonly attempts: number
    readonly access?: number
  },
): Promise<{ readonly handle: FileHandleOps; readonly path: string } | null> {
  for (let attempt = 0; attempt < where.attempts; attempt += 1) {
    const path = join(where.directory, where.name(attempt))
    let handle: FileHandleOps
    try {
      handle = await fs.open(
        path,
        (where.access ?? constants.O_WRONLY) | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
        0o600,
      )
    } catch (error) {
      if (errnoOf(error) === 'EEXIST') continue
      throw error
    }
    try {
      // The open's mode is masked by the umask (S1).
      if (((await handle.stat()).mode & 0o777) !== 0o600) await handle.chmod(0o600)
    } catch (error) {
      await handle.close().catch(() => undefined)
      await fs.unlink(path).catch(() => undefined)
      throw error
    }
    return { handle, path }
  }
  return null
}

/**
 * Creates `<prefix><16 hex>` in `directory` ({@link createExclusiveFile}, random names).
 *
 * @param fs - The file-system seam.
 * @param where - The directory, the name prefix (`.tmp-lease-`...), the random-hex source and
 *   the access mode (`O_WRONLY` default, or `O_RDWR`).
 * @returns The open temp file and its path; the caller removes it.
 * @throws The errno error of the open or the fchmod; an `EEXIST` error when 16 names were taken.
 */
export async function createTempFile(
  fs: FsOps,
  where: {
    readonly directory: string
    readonly prefix: string
    readonly randomHex: (byteCount: number) => string
    readonly access?: number
  },
): Promise<{ readonly handle: FileHandleOps; readonly path: string }> {
  const created = await createExclusiveFile(fs, {
    ...where,
    name: () => `${where.prefix}${where.randomHex(8)}`,
    attempts: MAX_TEMP_ATTEMPTS,
  })
  if (created !== null) return created
  const taken: NodeJS.ErrnoException = new Error(
    `EEXIST: expected a free random temp name ${where.prefix}<hex>, found ${MAX_TEMP_ATTEMPTS} taken`,
  )
  taken.code = 'EEXIST'
  throw taken
}

/**
 * Replaces `directory/name` durably with `bytes`: a temp file (`<tempPrefix><hex>`), one write,
 * fsync, close, `rename` over the name, directory fsync. A crash leaves the old file or the new
 * one, whole. For files that are only ever replaced whole by their one writer (the lease, the
 * checkpoint).
 *
 * @param fs - The file-system seam.
 * @param target - Directory, file name, temp prefix, random-hex source and the bytes.
 * @throws The file-system error (the temp file is removed first when the rename did not happen).
 */
export async function replaceFile(
  fs: FsOps,
  target: {
    readonly directory: string
    readonly name: string
    readonly tempPrefix: string
    readonly randomHex: (byteCount: number) => string
    readonly bytes: Uint8Array
  },
): Promise<void> {
  const { directory } = target
  const { handle, path } = await createTempFile(fs, {
    directory,
    prefix: target.tempPrefix,
    randomHex: target.randomHex,
  })
  let renamed = false
  try {
    try {
      await handle.write(target.bytes, 0)
      await handle.sync()
    } finally {
      await handle.close()
    }
    await fs.rename(path, join(directory, target.name))
    renamed = true
    await fs.fsyncDirectory(directory)
  } catch (error) {
    if (!renamed) await fs.unlink(path).catch(() => undefined)
    throw error
  }
}
