import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'

import { launchArgs } from '../../../../tooling/launch-args.ts'

/**
 * A worker process (test/fixtures/worker.ts) run as ONE node process (tooling/launch.mjs,
 * sources of the sibling packages), so a signal sent to its pid reaches the process holding the lease.
 */
export interface Worker {
  readonly process: ChildProcess
  readonly pid: number
  readonly lines: string[]
  /** Resolves with the first stdout line matching `predicate`; rejects if the worker exits first. */
  waitForLine(predicate: (line: string) => boolean): Promise<string>
  readonly exited: Promise<{ code: number | null; stderr: string }>
}

const script = fileURLToPath(new URL('../fixtures/worker.ts', import.meta.url))

/** Starts a worker with `args` (see test/fixtures/worker.ts). */
export function startWorker(args: readonly string[]): Worker {
  const child = spawn(process.execPath, launchArgs(script, args), {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const lines: string[] = []
  const listeners = new Set<() => void>()
  let stderr = ''
  let pending = ''
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk
    const parts = pending.split('\n')
    pending = parts.pop() ?? ''
    lines.push(...parts)
    for (const listener of listeners) listener()
  })
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  const exited = new Promise<{ code: number | null; stderr: string }>((resolve) => {
    child.on('exit', (code) => {
      for (const listener of listeners) listener()
      resolve({ code, stderr })
    })
  })
  return {
    process: child,
    pid: child.pid ?? -1,
    lines,
    exited,
    waitForLine: (predicate) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const found = lines.find(predicate)
          if (found !== undefined) {
            listeners.delete(check)
            resolve(found)
          } else if (child.exitCode !== null || child.signalCode !== null) {
            listeners.delete(check)
            reject(
              new Error(
                `worker exited (${String(child.exitCode)}) before the expected line; stderr: ${stderr}`,
              ),
            )
          }
        }
        listeners.add(check)
        check()
      }),
  }
}
