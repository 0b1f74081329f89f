import { readdirSync, readlinkSync } from 'node:fs'

/**
 * What this process holds open below `root` (deleted files included, as ` (deleted)` paths):
 * the descriptors of `/proc/self/fd`, for tests that a closed store, writer or import leaves
 * nothing open. Linux only; such tests run under `it.runIf(process.platform === 'linux')`.
 *
 * @param root - An absolute directory.
 * @returns The open paths below it.
 */
export function openFilesUnder(root: string): string[] {
  return readdirSync('/proc/self/fd')
    .map((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`)
      } catch {
        return '' // closed since the listing (the listing's own descriptor, for one)
      }
    })
    .filter((target) => target.startsWith(root))
}
