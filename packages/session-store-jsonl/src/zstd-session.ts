/*
 * Which encoding of the v4 log a session directory holds, and the store-side glue of the
 * `.zstd` encoding (codec loading, the writer's frame encoder, error mapping).
 *
 * One directory holds one encoding. The one exception is a `compress` caught between its
 * `link()` of `session.v4.jsonl.zstd` and its `unlink()` of `session.v4.jsonl`: both names
 * then hold the same content. {@link locateSessionLog} resolves that state:
 *   - same plain content: a read open reads the plain file (either would do); a write open,
 *     under the writer lock, finishes the conversion (unlinks the plain file, fsyncs the
 *     directory) and opens the `.zstd` one;
 *   - different content: refused, `MIXED_ENCODINGS` naming both files (only a writer that
 *     ignored the `.zstd` file, like an older library, can cause it). Nothing is removed.
 */
import { join } from 'node:path'

import { errnoOf, openLogForRead, toStoreError } from './fs-errors.ts'
import { readFully } from './fs-ops.ts'
import type { FsOps } from './fs-ops.ts'
import { listGenerations, pickCurrentGeneration } from './generations.ts'
import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'
import { LOG_FILE_NAME } from './layout.ts'
import type { StoreLogger } from './store-logger.ts'
import { zstdPlainSource } from './zstd-log-reader.ts'
import type { ZstdReadLimits } from './zstd-log-reader.ts'
import { encodeZstdLines } from './zstd-log-writer.ts'
import type { LogEncoding } from './zstd-log-writer.ts'
import { loadZstdCodec } from './zstd/zstd-codec.ts'
import type { ZstdCodec } from './zstd/zstd-codec.ts'
import { ZstdFrameError } from './zstd/zstd-frame-error.ts'

/** File name of the compressed current-format log: `session.v4.jsonl.zstd`. */
export const ZSTD_LOG_FILE_NAME = `${LOG_FILE_NAME}.zstd`

/** The current log of a session: its name in the session directory, its encoding, and how errors name it. */
export interface SessionLog {
  /** `session.v4.jsonl` or `session.v4.jsonl.zstd`. */
  readonly name: string
  readonly encoding: LogEncoding
  /** `<id>/<name>`: the log relative to the store root. */
  readonly file: string
}

/**
 * The log of session `id` in an encoding.
 *
 * @param id - The session id (already checked).
 * @param encoding - `plain` or `zstd`.
 * @returns Its name, encoding and display path.
 */
export function sessionLog(id: string, encoding: LogEncoding): SessionLog {
  const name = encoding === 'zstd' ? ZSTD_LOG_FILE_NAME : LOG_FILE_NAME
  return { name, encoding, file: `${id}/${name}` }
}

/**
 * Loads the shared codec, mapping a load failure to a typed store error.
 *
 * @param file - The log the codec is needed for (for the error).
 * @returns The codec.
 * @throws {@link JsonlStoreError} `READ_FAILED` with `details.cause` `CODEC_FAILED`.
 */
export async function zstdCodecFor(file: string): Promise<ZstdCodec> {
  try {
    return await loadZstdCodec()
  } catch (error) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.READ_FAILED,
      message: `Cannot read or write ${file}: the Zstandard codec failed to load (${error instanceof Error ? error.message : String(error)}).`,
      file,
      details: { cause: ZstdFrameError.is(error) ? error.code : 'unknown' },
      cause: error,
    })
  }
}

/**
 * The writer's batch encoder for a `.zstd` log: whole lines to whole frames (level 3, at
 * most 4 MiB of content each). A codec failure is `WRITE_FAILED` before anything is written,
 * so the events stay buffered.
 *
 * @param codec - The codec.
 * @param file - The log (for errors).
 * @returns The encoder to pass as the writer's `encodeBatch`.
 */
export function zstdBatchEncoder(codec: ZstdCodec, file: string): (lines: Buffer) => Buffer {
  return (lines) => {
    try {
      return encodeZstdLines(codec, lines)
    } catch (error) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.WRITE_FAILED,
        message: `Cannot compress a batch of ${lines.length} bytes for ${file}: ${error instanceof Error ? error.message : String(error)}; nothing was written and the events stay buffered.`,
        file,
        details: { op: 'compress', cause: ZstdFrameError.is(error) ? error.code : 'unknown' },
        cause: error,
      })
    }
  }
}

/** What {@link locateSessionLog} needs. */
export interface LocateRequest {
  readonly fs: FsOps
  /** The session directory (absolute). */
  readonly directory: string
  readonly id: string
  /** `write`: the caller holds the writer lock and an interrupted compress may be finished. */
  readonly mode: 'read' | 'write'
  readonly limits: ZstdReadLimits
  readonly logger?: StoreLogger
}

async function exists(fs: FsOps, path: string, file: string): Promise<boolean> {
  try {
    await fs.lstat(path)
    return true
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') return false
    throw toStoreError(error, { op: 'stat', file, fallback: JsonlErrorCode.READ_FAILED })
  }
}

/**
 * Finds the current v4 log of a session directory: `session.v4.jsonl.zstd` when it exists
 * (resolving an interrupted compress, see the top of this file), else `session.v4.jsonl`
 * (whether or not it exists: opening it reports a missing session).
 *
 * @param request - File system, directory, id, mode and read limits.
 * @returns The log to open.
 * @throws {@link JsonlStoreError} `MIXED_ENCODINGS` (both encodings with different content, or
 *   plain and zstd generations of different versions), `READ_FAILED`, `ACCESS_DENIED`.
 */
export async function locateSessionLog(request: LocateRequest): Promise<SessionLog> {
  const { fs, directory, id } = request
  const zstd = sessionLog(id, 'zstd')
  const plain = sessionLog(id, 'plain')
  if (!(await exists(fs, join(directory, zstd.name), zstd.file))) return plain
  // Throws MIXED_ENCODINGS for plain and zstd generations of different versions.
  pickCurrentGeneration(await listGenerations(fs, directory), id)
  if (!(await exists(fs, join(directory, plain.name), plain.file))) return zstd
  const comparison = await compareEncodings({ ...request, plain, zstd })
  if (comparison.firstDifference !== -1) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.MIXED_ENCODINGS,
      message: `Session ${id} holds both ${plain.file} and ${zstd.file} with different content (first difference at plain byte ${comparison.firstDifference}): expected one encoding, or both with the same events after an interrupted compress; nothing was changed.`,
      file: zstd.file,
      offset: comparison.firstDifference,
      details: {
        files: [plain.file, zstd.file],
        conflict: 'both-encodings',
        reason: 'different-content',
        firstDifferenceOffset: comparison.firstDifference,
        plainBytes: comparison.plainBytes,
        zstdPlainBytes: comparison.zstdPlainBytes,
      },
    })
  }
  if (request.mode === 'read') return plain
  // Under the writer lock: finish the interrupted compress.
  try {
    await fs.unlink(join(directory, plain.name))
    await fs.fsyncDirectory(directory)
  } catch (error) {
    throw toStoreError(error, {
      op: 'remove the converted',
      file: plain.file,
      fallback: JsonlErrorCode.WRITE_FAILED,
    })
  }
  request.logger?.warn(
    `Finished an interrupted compress of session ${id}: ${plain.file} and ${zstd.file} held the same content; removed ${plain.file}.`,
    { id, removed: plain.file, kept: zstd.file },
  )
  return zstd
}

/**
 * Compares the plain content of a session's two encodings byte for byte, streaming (memory:
 * one frame's content).
 *
 * @param request - File system, directory, limits and the two logs.
 * @returns The first differing plain offset (-1 when identical) and both sizes (the `.zstd` one as far as it decoded).
 */
export async function compareEncodings(
  request: LocateRequest & { readonly plain: SessionLog; readonly zstd: SessionLog },
): Promise<{
  readonly firstDifference: number
  readonly plainBytes: number
  readonly zstdPlainBytes: number
}> {
  const { fs, directory, plain, zstd, limits } = request
  const codec = await zstdCodecFor(zstd.file)
  const plainHandle = await openLogForRead(fs, join(directory, plain.name), plain.file)
  try {
    const zstdHandle = await openLogForRead(fs, join(directory, zstd.name), zstd.file)
    try {
      const plainBytes = (await plainHandle.stat()).size
      let position = 0
      let firstDifference = -1
      try {
        for await (const chunk of zstdPlainSource(zstdHandle, { codec, limits })) {
          if (firstDifference === -1) {
            const other = Buffer.allocUnsafe(chunk.length)
            const count = await readFully(plainHandle, other, position)
            for (let index = 0; index < chunk.length; index += 1) {
              if (index >= count || chunk[index] !== other[index]) {
                firstDifference = position + index
                break
              }
            }
          }
          position += chunk.length
        }
      } catch (error) {
        throw toStoreError(error, { op: 'read', file: zstd.file, fallback: JsonlErrorCode.READ_FAILED })
      }
      if (firstDifference === -1 && position !== plainBytes) firstDifference = Math.min(position, plainBytes)
      return { firstDifference, plainBytes, zstdPlainBytes: position }
    } finally {
      await zstdHandle.close().catch(() => undefined)
    }
  } finally {
    await plainHandle.close().catch(() => undefined)
  }
}
