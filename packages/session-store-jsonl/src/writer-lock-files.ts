/*
 * Publishing a lock or claim file exclusively (temp + link, never through a symlink), the
 * typed errors of that step, and the removal of leftover claims and temps.
 */
import { constants } from 'node:fs'
import { basename, join } from 'node:path'

import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'
import type { Context, Published } from './writer-lock-types.ts'
import { CLAIM_PREFIX, MAX_TEMP_ATTEMPTS } from './writer-lock-types.ts'
import { errnoOf } from './fs-errors.ts'
import { LOCK_TEMP_PREFIX } from './layout.ts'
import { createTempFile } from './temp-file.ts'

function mapCreateError(context: Context, error: unknown, path: string): unknown {
  const code = errnoOf(error)
  const relative = `${basename(context.directory)}/${basename(path)}`
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
    return new JsonlStoreError({
      code: JsonlErrorCode.ACCESS_DENIED,
      message: `Cannot create the writer lock in ${basename(context.directory)}: expected a writable session directory, found ${code}.`,
      file: relative,
      details: { op: 'create-lock', path: relative, cause: code },
      cause: error,
    })
  }
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new JsonlStoreError({
      code: JsonlErrorCode.DISK_FULL,
      message: `Cannot create the writer lock in ${basename(context.directory)}: the disk is full (${code}).`,
      file: relative,
      details: { op: 'create-lock', cause: code },
      cause: error,
    })
  }
  if (code === 'ENOENT') {
    return new JsonlStoreError({
      code: JsonlErrorCode.SESSION_NOT_FOUND,
      message: `Cannot create the writer lock: the session directory ${basename(context.directory)} does not exist.`,
      file: basename(context.directory),
      details: { op: 'create-lock', cause: code },
      cause: error,
    })
  }
  return error
}

/**
 * Publishes `bytes` at `target` only if nothing is there: temp file (O_EXCL|O_NOFOLLOW,
 * 0600) then link(). Keeps the temp's handle open (it is the published inode).
 */
export async function publishExclusive(context: Context, target: string, bytes: Buffer): Promise<Published> {
  const { fs, directory } = context
  for (let attempt = 0; attempt < MAX_TEMP_ATTEMPTS; attempt += 1) {
    let created: Awaited<ReturnType<typeof createTempFile>>
    try {
      // A pre-created random name (a file or a symlink) draws another (S7).
      created = await createTempFile(fs, {
        directory,
        prefix: `${LOCK_TEMP_PREFIX}-`,
        randomHex: context.options.randomHex,
        access: constants.O_RDWR,
      })
    } catch (error) {
      if (errnoOf(error) === 'EEXIST') break
      throw mapCreateError(context, error, target)
    }
    const { handle, path: temp } = created
    let published = false
    try {
      try {
        await handle.write(bytes, 0)
      } catch (error) {
        throw mapCreateError(context, error, target)
      }
      try {
        await fs.link(temp, target)
        published = true
      } catch (error) {
        const code = errnoOf(error)
        if (code === 'EEXIST') return { kind: 'exists' }
        // ENOENT: our temp vanished (a cleaner removed it); start again with a new one.
        if (code === 'ENOENT') continue
        throw mapCreateError(context, error, target)
      }
    } finally {
      if (!published) await handle.close().catch(() => undefined)
      await fs.unlink(temp).catch(() => undefined)
    }
    return { kind: 'created', handle }
  }
  throw new JsonlStoreError({
    code: JsonlErrorCode.ACCESS_DENIED,
    message: `Cannot create the writer lock in ${basename(directory)}: expected a free random temp name, found ${MAX_TEMP_ATTEMPTS} taken.`,
    file: context.displayFile,
    details: { op: 'create-lock', path: context.displayFile, cause: 'EEXIST' },
  })
}

export function symlinkError(context: Context): JsonlStoreError {
  return new JsonlStoreError({
    code: JsonlErrorCode.SYMLINK_REFUSED,
    message: `The writer lock of session ${basename(context.directory)} is a symbolic link; expected a regular file, and it is never followed.`,
    file: context.displayFile,
    details: { which: 'lock', lockFile: context.lockPath },
  })
}

/**
 * Deletes what crashed lockers left behind, once we hold the lock: claims for tokens that
 * are no longer at `writer.lock` (they grant no right, see the top of this file) and the
 * lock protocol's temp files (`.tmp-lock-*`, `.tmp-lockbreak-*`). Removing a contender's
 * in-flight temp is harmless: its link() then fails with ENOENT and it draws a new name,
 * and its link() could only have failed with EEXIST anyway while we hold the lock.
 */
export async function removeLeftovers(context: Context, ownNonce: string): Promise<void> {
  let names: string[]
  try {
    names = await context.fs.readdir(context.directory)
  } catch {
    return
  }
  for (const name of names) {
    const claim = name.startsWith(CLAIM_PREFIX) && name !== `${CLAIM_PREFIX}${ownNonce}`
    if (claim || name.startsWith('.tmp-lock')) {
      await context.fs.unlink(join(context.directory, name)).catch(() => undefined)
    }
  }
}
