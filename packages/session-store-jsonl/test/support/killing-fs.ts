/**
 * An `FsOps` that SIGKILLs its own process just before its n-th (1-based) mutating or
 * syncing file-system call (open with O_CREAT, write, datasync, sync, truncate, mkdir, link,
 * unlink, rmdir, rename, directory fsync): the K model of the crash children, stopping a
 * migration, an open or a delete at every op index.
 */
import { constants } from 'node:fs'

import type { FileHandleOps, FsOps } from '../../src/fs-ops.ts'

function die(): never {
  process.kill(process.pid, 'SIGKILL')
  throw new Error('unreachable')
}

/**
 * @param inner - The file system the calls go to.
 * @param killAt - The call to die before; undefined: never.
 * @returns The killing file system.
 */
export function killingFs(inner: FsOps, killAt: number | undefined): FsOps {
  if (killAt === undefined) return inner
  let count = 0
  const tick = (): void => {
    count += 1
    if (count >= killAt) die()
  }
  const wrap = (handle: FileHandleOps): FileHandleOps => ({
    path: handle.path,
    read: (buffer, offset, length, position) => handle.read(buffer, offset, length, position),
    async write(buffer, position) {
      tick()
      return handle.write(buffer, position)
    },
    async datasync() {
      tick()
      return handle.datasync()
    },
    async sync() {
      tick()
      return handle.sync()
    },
    async truncate(length) {
      tick()
      return handle.truncate(length)
    },
    stat: () => handle.stat(),
    chmod: (mode) => handle.chmod(mode),
    close: () => handle.close(),
  })
  return {
    async open(path, flags, mode) {
      if ((flags & constants.O_CREAT) !== 0) tick()
      return wrap(await inner.open(path, flags, mode))
    },
    lstat: (path) => inner.lstat(path),
    stat: (path) => inner.stat(path),
    readdir: (path) => inner.readdir(path),
    async mkdir(path, mode) {
      tick()
      return inner.mkdir(path, mode)
    },
    async link(from, to) {
      tick()
      return inner.link(from, to)
    },
    async unlink(path) {
      tick()
      return inner.unlink(path)
    },
    async rmdir(path) {
      tick()
      return inner.rmdir(path)
    },
    async rename(from, to) {
      tick()
      return inner.rename(from, to)
    },
    chmod: (path, mode) => inner.chmod(path, mode),
    realpath: (path) => inner.realpath(path),
    async fsyncDirectory(path) {
      tick()
      return inner.fsyncDirectory(path)
    },
  }
}
