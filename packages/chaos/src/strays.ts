/**
 * Processes a round left running: any process whose working directory is inside the round's
 * scratch directory once its workers have exited (the Claude Agent SDK's CLI runs there). A
 * fault that signalled only the worker, not its process group, would leave its CLI child
 * behind. Linux only (`/proc`); elsewhere it finds none.
 */
import { readdirSync, readlinkSync } from 'node:fs'
import { sep } from 'node:path'

/**
 * The pids of live processes working under `dir` (a resolved path).
 *
 * @param dir - The round's scratch directory.
 * @returns Their pids (empty without `/proc`).
 */
export function strayProcesses(dir: string): number[] {
  let pids: string[]
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name))
  } catch {
    return []
  }
  return pids.flatMap((pid) => {
    try {
      const cwd = readlinkSync(`/proc/${pid}/cwd`)
      return cwd === dir || cwd.startsWith(dir + sep) ? [Number(pid)] : []
    } catch {
      return [] // gone, a zombie, or not ours to read
    }
  })
}
