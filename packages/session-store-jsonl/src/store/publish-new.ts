import { constants } from 'node:fs'
import { join } from 'node:path'

import { SESSION_FORMAT_VERSION } from '@agent-ledger/session-events'
import type { SessionHeader } from '@agent-ledger/session-events'

import { errnoOf, toStoreError } from '../fs-errors.ts'
import type { FileHandleOps } from '../fs-ops.ts'
import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import { LOG_FILE_NAME, TEMP_PREFIX } from '../layout.ts'
import { encodeJsonLine } from '../line-codec.ts'
import type { ByteSource } from '../read-log.ts'
import { acquireWriterLock } from '../writer-lock.ts'
import type { WriterLock } from '../writer-lock.ts'
import { listGenerations } from '../generations.ts'
import { removeStaleTemps } from '../publish.ts'
import { encodeZstdLines, encodeZstdStream } from '../zstd-log-writer.ts'
import { sessionLog } from '../zstd-session.ts'
import type { SessionLog } from '../zstd-session.ts'
import type { ZstdCodec } from '../zstd/zstd-codec.ts'
import type { StoreContext } from './context.ts'

export const MAX_TEMP_ATTEMPTS = 16

/**
 * Publishes a new log: lock, temp file (O_EXCL|O_NOFOLLOW, 0600), header + body, fsync,
 * link() into place, fsync dir, unlink temp, fsync dir. Returns the open handle (the
 * published inode) and the held lock.
 */
export async function publish(
  ctx: StoreContext,
  request: {
    readonly id: string
    readonly directory: string
    readonly kind: string
    readonly header: SessionHeader
    readonly body: readonly Buffer[] | (() => ByteSource)
    /** The log to publish (its encoding decides the bytes). */
    readonly log: SessionLog
    /** The codec, for a `.zstd` log. */
    readonly codec: ZstdCodec | undefined
  },
): Promise<{ handle: FileHandleOps; lock: WriterLock; size: number }> {
  const { id, directory, codec } = request
  const fs = ctx.fs
  const logPath = join(directory, request.log.name)
  const file = request.log.file
  // A session has one log: neither encoding may exist yet.
  const otherPath = join(directory, sessionLog(id, request.log.encoding === 'zstd' ? 'plain' : 'zstd').name)
  await assertAbsent(ctx, id, otherPath)
  await assertAbsent(ctx, id, logPath)
  await assertNoOtherGeneration(ctx, id, directory)
  const lock = await acquireWriterLock(fs, directory, ctx.lock)
  let handle: FileHandleOps | undefined
  let tempPath: string | undefined
  let linked = false
  try {
    await assertAbsent(ctx, id, otherPath)
    await assertAbsent(ctx, id, logPath)
    await removeStaleTemps(ctx.fs, directory)
    for (let attempt = 0; attempt < MAX_TEMP_ATTEMPTS && handle === undefined; attempt += 1) {
      tempPath = join(directory, `${TEMP_PREFIX}${request.kind}-${ctx.randomHex(8)}`)
      try {
        handle = await fs.open(
          tempPath,
          constants.O_RDWR | constants.O_APPEND | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
          0o600,
        )
      } catch (error) {
        // S7: a pre-created name (file or symlink) gives EEXIST: draw fresh randomness.
        if (errnoOf(error) === 'EEXIST') continue
        throw toStoreError(error, {
          op: 'create',
          file: `${id}/.tmp-*`,
          which: 'temp',
          fallback: JsonlErrorCode.WRITE_FAILED,
        })
      }
    }
    if (handle === undefined) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.WRITE_FAILED,
        message: `Cannot create a temp file in ${id}: expected a free random name, found ${MAX_TEMP_ATTEMPTS} taken.`,
        file: `${id}/.tmp-*`,
        details: { op: 'create-temp', cause: 'EEXIST' },
      })
    }
    await fixMode(handle, `${id}/${TEMP_PREFIX}${request.kind}`)
    let size = 0
    try {
      const headerLine = encodeJsonLine(JSON.stringify(request.header))
      // A .zstd log: the header in a frame of its own, then the body as frames of whole lines.
      const start = codec === undefined ? headerLine : encodeZstdLines(codec, headerLine)
      await handle.write(start, 0)
      size = start.length
      if (codec !== undefined && typeof request.body === 'function') {
        for await (const frame of encodeZstdStream(codec, request.body())) {
          await handle.write(frame, size)
          size += frame.length
        }
      } else if (codec !== undefined && request.body.length > 0) {
        const frames = encodeZstdLines(codec, Buffer.concat(request.body as readonly Buffer[]))
        await handle.write(frames, size)
        size += frames.length
      } else if (typeof request.body === 'function') {
        for await (const chunk of request.body()) {
          await handle.write(chunk, size)
          size += chunk.length
        }
      } else if (request.body.length > 0) {
        const body = Buffer.concat(request.body)
        await handle.write(body, size)
        size += body.length
      }
      await handle.sync()
    } catch (error) {
      throw toStoreError(error, { op: 'write', file, fallback: JsonlErrorCode.WRITE_FAILED })
    }
    try {
      await fs.link(tempPath!, logPath)
      linked = true
    } catch (error) {
      if (errnoOf(error) === 'EEXIST') {
        const existing = await fs.lstat(logPath).catch(() => undefined)
        if (existing?.isSymbolicLink() === true) {
          throw new JsonlStoreError({
            code: JsonlErrorCode.SYMLINK_REFUSED,
            message: `Cannot create session ${id}: expected no file at ${file}, found a symbolic link (never followed).`,
            file,
            details: { which: 'log' },
          })
        }
        throw existsError(id)
      }
      throw toStoreError(error, { op: 'link', file, fallback: JsonlErrorCode.WRITE_FAILED })
    }
    await fs.fsyncDirectory(directory)
    await fs.unlink(tempPath!)
    tempPath = undefined
    await fs.fsyncDirectory(directory)
    return { handle, lock, size }
  } catch (error) {
    if (!linked) await handle?.close().catch(() => undefined)
    if (tempPath !== undefined) await fs.unlink(tempPath).catch(() => undefined)
    if (linked) await handle?.close().catch(() => undefined)
    await lock.release().catch(() => undefined)
    throw toStoreError(error, { op: 'create', file, fallback: JsonlErrorCode.WRITE_FAILED })
  }
}

export async function assertAbsent(ctx: StoreContext, id: string, logPath: string): Promise<void> {
  try {
    const stats = await ctx.fs.lstat(logPath)
    if (stats.isSymbolicLink()) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.SYMLINK_REFUSED,
        message: `Cannot create session ${id}: expected no file at ${id}/${LOG_FILE_NAME}, found a symbolic link (never followed).`,
        file: `${id}/${LOG_FILE_NAME}`,
        details: { which: 'log' },
      })
    }
    throw existsError(id)
  } catch (error) {
    if (JsonlStoreError.is(error)) throw error
    if (errnoOf(error) !== 'ENOENT') {
      throw toStoreError(error, {
        op: 'stat',
        file: `${id}/${LOG_FILE_NAME}`,
        fallback: JsonlErrorCode.READ_FAILED,
      })
    }
  }
}

export function existsError(id: string): JsonlStoreError {
  return new JsonlStoreError({
    code: JsonlErrorCode.SESSION_EXISTS,
    message: `Cannot create session ${id}: expected no session with that id, found ${id}/${LOG_FILE_NAME}.`,
    file: `${id}/${LOG_FILE_NAME}`,
  })
}

/**
 * `create`, `salvage` and `fork` into an id whose directory holds a generation of another
 * version (an older `session.jsonl`, a newer `session.v5.jsonl`): SESSION_EXISTS. The v4
 * names are checked by {@link #assertAbsent}.
 */
export async function assertNoOtherGeneration(
  ctx: StoreContext,
  id: string,
  directory: string,
): Promise<void> {
  const other = (await listGenerations(ctx.fs, directory)).find(
    (generation) => generation.version !== SESSION_FORMAT_VERSION,
  )
  if (other === undefined) return
  throw new JsonlStoreError({
    code: JsonlErrorCode.SESSION_EXISTS,
    message: `Cannot create session ${id}: expected no session with that id, found ${id}/${other.file}.`,
    file: `${id}/${other.file}`,
    details: { version: other.version },
  })
}

export async function fixMode(handle: FileHandleOps, file: string): Promise<void> {
  const stats = await handle.stat()
  if ((stats.mode & 0o777) === 0o600) return
  await handle.chmod(0o600)
  const after = await handle.stat()
  if ((after.mode & 0o777) !== 0o600) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.ACCESS_DENIED,
      message: `Cannot set ${file} to mode 0600: found ${(after.mode & 0o777).toString(8)} after fchmod.`,
      file,
      details: { op: 'chmod', path: file, cause: 'EPERM' },
    })
  }
}
