/**
 * The full-disk fault's file-system helpers: a small tmpfs mounted for a JSONL root (root
 * only; the reason when it cannot be), and a filler that writes until ENOSPC.
 */
import { spawnSync } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** Mounts a tmpfs of `mib` MiB on `dir` (root only); the reason when it cannot. */
export function mountTmpfs(dir: string, mib: number): string | null {
  const result = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${mib}m,mode=0700`, 'tmpfs', dir], {
    encoding: 'utf8',
  })
  return result.status === 0 ? null : `mount refused (${(result.stderr || String(result.error)).trim()})`
}

/** Why this process may not mount a tmpfs (not root...), tried on a scratch directory; null when it may. */
export function tmpfsRefused(): string | null {
  const probe = mkdtempSync(join(tmpdir(), 'agent-ledger-chaos-mount-'))
  const refused = mountTmpfs(probe, 1)
  if (refused === null) unmountTmpfs(probe)
  rmSync(probe, { recursive: true, force: true })
  return refused
}

/** Unmounts what {@link mountTmpfs} mounted. */
export function unmountTmpfs(dir: string): void {
  spawnSync('umount', [dir])
}

/** Fills the file system of `dir` with `file` until ENOSPC. */
export function fillDisk(file: string): void {
  const fd = openSync(file, 'w')
  try {
    for (const size of [1 << 20, 1 << 12, 1]) {
      const chunk = Buffer.alloc(size, 0x2e)
      for (;;) {
        try {
          writeSync(fd, chunk)
        } catch {
          break
        }
      }
    }
  } finally {
    closeSync(fd)
  }
}
