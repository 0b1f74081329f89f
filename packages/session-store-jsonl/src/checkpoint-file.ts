import { constants } from 'node:fs'
import { join } from 'node:path'

import { errnoOf } from './fs-errors.ts'
import { NOT_REGULAR_ERRNO, readFully } from './fs-ops.ts'
import type { FileHandleOps, FsOps } from './fs-ops.ts'
import { CORE_CHECKPOINT_FILE_NAME, TEMP_PREFIX } from './layout.ts'
import { replaceFile } from './temp-file.ts'

/** The outcome of {@link readCheckpointFile}. */
export type CheckpointFileRead =
  | { readonly kind: 'absent' }
  | { readonly kind: 'bytes'; readonly bytes: Buffer }
  | {
      readonly kind: 'unusable'
      readonly reason: 'too-large' | 'not-a-file' | 'read-failed'
      readonly detail: string
    }

/**
 * Reads a session's checkpoint file (`core.checkpoint`) whole, never through a symbolic link, refusing one
 * larger than `maxBytes`. Never throws: a missing file is `absent`, anything else that
 * stops the read is `unusable` (the open then replays the log).
 *
 * @param fs - The file-system seam.
 * @param directory - The session directory.
 * @param maxBytes - Largest checkpoint read.
 * @returns The bytes, `absent`, or why the file cannot be used.
 */
export async function readCheckpointFile(
  fs: FsOps,
  directory: string,
  maxBytes: number,
): Promise<CheckpointFileRead> {
  let handle: FileHandleOps
  try {
    handle = await fs.open(
      join(directory, CORE_CHECKPOINT_FILE_NAME),
      constants.O_RDONLY | constants.O_NOFOLLOW,
    )
  } catch (error) {
    const code = errnoOf(error)
    if (code === 'ENOENT') return { kind: 'absent' }
    if (code === 'ELOOP')
      return { kind: 'unusable', reason: 'not-a-file', detail: 'a symbolic link (never followed)' }
    if (code === NOT_REGULAR_ERRNO) {
      const kind = (error as { kind?: unknown }).kind
      return {
        kind: 'unusable',
        reason: 'not-a-file',
        detail: `a ${typeof kind === 'string' ? kind : 'special file'} (not read)`,
      }
    }
    return { kind: 'unusable', reason: 'read-failed', detail: code ?? String(error) }
  }
  try {
    const stats = await handle.stat()
    if (!stats.isFile()) return { kind: 'unusable', reason: 'not-a-file', detail: 'not a regular file' }
    if (stats.size > maxBytes) {
      return { kind: 'unusable', reason: 'too-large', detail: `${stats.size} bytes, limit ${maxBytes}` }
    }
    const bytes = Buffer.allocUnsafe(stats.size)
    return { kind: 'bytes', bytes: bytes.subarray(0, await readFully(handle, bytes)) }
  } catch (error) {
    return { kind: 'unusable', reason: 'read-failed', detail: errnoOf(error) ?? String(error) }
  } finally {
    await handle.close().catch(() => undefined)
  }
}

/**
 * Replaces a session's checkpoint atomically: a fresh temp file (`.tmp-checkpoint-<hex>`,
 * O_CREAT|O_EXCL|O_NOFOLLOW, 0600), one write, fsync, close, `rename` over the old
 * checkpoint, fsync of the directory. A crash leaves the old checkpoint or the new one,
 * never part of one; a leftover temp file is removed by the next writer open. `rename`
 * (which replaces) is right here: a checkpoint is a cache, never the only copy of anything.
 *
 * @param fs - The file-system seam.
 * @param request - The session directory, the bytes, and the temp-name randomness.
 * @throws The file-system error (the temp file is removed first).
 */
export async function writeCheckpointFile(
  fs: FsOps,
  request: {
    readonly directory: string
    readonly bytes: Uint8Array
    readonly randomHex: (byteCount: number) => string
  },
): Promise<void> {
  await replaceFile(fs, {
    directory: request.directory,
    name: CORE_CHECKPOINT_FILE_NAME,
    tempPrefix: `${TEMP_PREFIX}checkpoint-`,
    randomHex: request.randomHex,
    bytes: request.bytes,
  })
}
