import { constants, fstatSync, lstatSync, promises as fsp, statSync } from 'node:fs'
import type { Stats } from 'node:fs'

/** An open file, as the store sees it: a numeric handle plus the operations the store performs on it. */
export interface FileHandleOps {
  /** Path the handle was opened with (for error messages and fault injection). */
  readonly path: string
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<number>
  /** Writes all of `buffer` at `position`, looping over short writes; rejects with the errno error. */
  write(buffer: Uint8Array, position: number): Promise<void>
  datasync(): Promise<void>
  sync(): Promise<void>
  truncate(length: number): Promise<void>
  stat(): Promise<Stats>
  /** fchmod: changes the mode of the open file itself (never follows a name that may have been swapped). */
  chmod(mode: number): Promise<void>
  close(): Promise<void>
}

/**
 * Every file-system call the store makes goes through this interface, so tests can inject
 * faults (EIO on fdatasync, ENOSPC on the Nth write, EXDEV on link) and simulate power loss
 * (drop what was not fsynced) without touching the real disk semantics elsewhere.
 *
 * `flags` are numeric `fs.constants` combinations (O_CREAT|O_EXCL|O_NOFOLLOW...).
 */
export interface FsOps {
  /**
   * Opens a regular file. MUST NOT block on a special file and MUST refuse anything but a
   * regular file (the store's own open adds `O_NONBLOCK` and checks the descriptor; see
   * {@link nodeFsOps}); a refusal carries `code` `ENOTREGULAR` (or ENXIO).
   */
  open(path: string, flags: number, mode?: number): Promise<FileHandleOps>
  lstat(path: string): Promise<Stats>
  stat(path: string): Promise<Stats>
  readdir(path: string): Promise<string[]>
  mkdir(path: string, mode: number): Promise<void>
  /** Removes an empty directory (a deleted session's folder after its files; a folder a failed create made). */
  rmdir(path: string): Promise<void>
  link(existingPath: string, newPath: string): Promise<void>
  unlink(path: string): Promise<void>
  rename(oldPath: string, newPath: string): Promise<void>
  chmod(path: string, mode: number): Promise<void>
  /**
   * Sets a file's access and modification times (ms since the epoch). Optional: a seam without
   * it leaves a compressed log's modification time at its compression (its last update, as a
   * listing sees it, moves to then).
   */
  utimes?(path: string, atimeMs: number, mtimeMs: number): Promise<void>
  realpath(path: string): Promise<string>
  /** Opens `path` (a directory) read-only and fsyncs it, so a created, linked or removed name is durable. */
  fsyncDirectory(path: string): Promise<void>
}

/**
 * Runs a metadata read now and settles a promise with its outcome. The stat family is called
 * synchronously: a stat of a local file is one syscall on the main thread, where the
 * thread-pool round trip of `fs/promises` adds a thread hop and a promise per call, and every
 * flush makes several (the fence, the writer lock, the W5 same-file and size checks). Reads and
 * writes of data, and every fsync, stay on the thread pool. The store is for local file systems (see README):
 * on a network mount a stat could stall the event loop.
 */
function settled<T>(read: () => T): Promise<T> {
  try {
    return Promise.resolve(read())
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)))
  }
}

function wrapHandle(path: string, handle: fsp.FileHandle): FileHandleOps {
  return {
    path,
    // Mirrors pread(2) (buffer, offset, length, position); an options object would cost an allocation per read.
    // eslint-disable-next-line max-params
    async read(buffer, offset, length, position) {
      const { bytesRead } = await handle.read(buffer, offset, length, position)
      return bytesRead
    },
    async write(buffer, position) {
      let written = 0
      while (written < buffer.byteLength) {
        const { bytesWritten } = await handle.write(
          buffer,
          written,
          buffer.byteLength - written,
          position + written,
        )
        if (bytesWritten === 0) throw new Error(`write to ${path} made no progress`)
        written += bytesWritten
      }
    },
    datasync: () => handle.datasync(),
    sync: () => handle.sync(),
    truncate: (length) => handle.truncate(length),
    stat: () => settled(() => fstatSync(handle.fd)),
    chmod: (mode) => handle.chmod(mode),
    close: () => handle.close(),
  }
}

/** The errno-like `code` of the error {@link nodeFsOps}.open throws for a path that is not a regular file. */
export const NOT_REGULAR_ERRNO = 'ENOTREGULAR'

/**
 * What kind of file `stats` describes, in words (`a FIFO`, `a socket`...), for messages.
 *
 * @param stats - From `stat`, `lstat` or `fstat`.
 * @returns `regular` for a regular file, else the kind.
 */
export function fileKind(stats: Stats): string {
  if (stats.isFile()) return 'regular'
  if (stats.isFIFO()) return 'fifo'
  if (stats.isSocket()) return 'socket'
  if (stats.isCharacterDevice()) return 'character-device'
  if (stats.isBlockDevice()) return 'block-device'
  if (stats.isDirectory()) return 'directory'
  if (stats.isSymbolicLink()) return 'symlink'
  return 'unknown'
}

/** Thrown by {@link nodeFsOps}.open for a path that is not a regular file (`code` {@link NOT_REGULAR_ERRNO}). */
class NotRegularFileError extends Error {
  readonly code = NOT_REGULAR_ERRNO
  readonly path: string
  /** `fifo`, `socket`, `character-device`, `block-device`, `directory`, or `fifo-or-socket` (ENXIO). */
  readonly kind: string

  constructor(path: string, kind: string) {
    super(`${NOT_REGULAR_ERRNO}: not a regular file (${kind}), open '${path}'`)
    this.path = path
    this.kind = kind
  }
}

/**
 * The real file system (node:fs promises).
 *
 * `open` never blocks on a special file and never returns one: it adds `O_NONBLOCK` (a FIFO
 * opens at once, or fails with ENXIO for writing), then checks the descriptor with `fstat`;
 * anything but a regular file (FIFO, socket, device, directory) is closed and refused with
 * {@link NotRegularFileError}. `O_NONBLOCK` changes nothing for regular files.
 */
export const nodeFsOps: FsOps = {
  async open(path, flags, mode) {
    let handle: fsp.FileHandle
    try {
      handle = await fsp.open(path, flags | constants.O_NONBLOCK, mode)
    } catch (error) {
      // ENXIO: a socket, or a FIFO opened for writing with no reader.
      if ((error as { code?: unknown }).code === 'ENXIO')
        throw new NotRegularFileError(path, 'fifo-or-socket')
      throw error
    }
    let kind: string
    try {
      kind = fileKind(fstatSync(handle.fd))
    } catch (error) {
      await handle.close().catch(() => undefined)
      throw error
    }
    if (kind !== 'regular') {
      await handle.close().catch(() => undefined)
      throw new NotRegularFileError(path, kind)
    }
    return wrapHandle(path, handle)
  },
  lstat: (path) => settled(() => lstatSync(path)),
  stat: (path) => settled(() => statSync(path)),
  readdir: (path) => fsp.readdir(path),
  async mkdir(path, mode) {
    await fsp.mkdir(path, { mode })
  },
  rmdir: (path) => fsp.rmdir(path),
  link: (existingPath, newPath) => fsp.link(existingPath, newPath),
  unlink: (path) => fsp.unlink(path),
  rename: (oldPath, newPath) => fsp.rename(oldPath, newPath),
  utimes: (path, atimeMs, mtimeMs) => fsp.utimes(path, atimeMs / 1000, mtimeMs / 1000),
  chmod: (path, mode) => fsp.chmod(path, mode),
  realpath: (path) => fsp.realpath(path),
  async fsyncDirectory(path) {
    const handle = await fsp.open(path, constants.O_RDONLY | constants.O_DIRECTORY)
    try {
      await handle.sync()
    } finally {
      await handle.close()
    }
  },
}

/**
 * Reads into `buffer` from `position` until it is full or the file ends (a pread may return
 * fewer bytes than asked).
 *
 * @param handle - An open file.
 * @param buffer - Filled from its start.
 * @param position - File offset of the first byte.
 * @returns The bytes read (less than `buffer.length` only at the end of the file).
 */
export async function readFully(handle: FileHandleOps, buffer: Uint8Array, position = 0): Promise<number> {
  let total = 0
  while (total < buffer.length) {
    const count = await handle.read(buffer, total, buffer.length - total, position + total)
    if (count === 0) break
    total += count
  }
  return total
}

/**
 * Whether `path` (never followed) still names the regular file `held` is: the dev and ino of a
 * handle kept open, whose inode therefore cannot be freed and reused by another file.
 *
 * @param fs - The file-system seam.
 * @param path - The name to check.
 * @param held - The `fstat` identity of the open file.
 * @returns False when the name is missing, unreadable, or another file.
 */
export async function namesFile(
  fs: FsOps,
  path: string,
  held: { readonly dev: number; readonly ino: number },
): Promise<boolean> {
  const named = await fs.lstat(path).catch(() => null)
  return named !== null && named.isFile() && named.ino === held.ino && named.dev === held.dev
}
