/**
 * Helpers of the end-to-end tests: run the BUILT binary (`dist/bin.js`) as a child process,
 * and write sessions through the built store (`dist/` of session-store-jsonl).
 */
import { execFile, spawn } from 'node:child_process'
import type { ChildProcessWithoutNullStreams } from 'node:child_process'
import { fileURLToPath } from 'node:url'

import { testTime, waitUntil } from '../../../../tooling/test-time.ts'

/** The built binary, as `npm i @agent-ledger/cli` installs it. */
const BIN = fileURLToPath(new URL('../../dist/bin.js', import.meta.url))

/** What a finished child printed, and how it ended. */
export interface BinRun {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs `node dist/bin.js ...args` to completion.
 *
 * @param args - The CLI arguments.
 * @param options - Working directory.
 */
export function runBin(args: readonly string[], options: { readonly cwd?: string } = {}): Promise<BinRun> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd: options.cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, timeout: testTime(60_000) },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code !== 'number') {
          reject(new Error(`could not run ${BIN}: ${error.message}`, { cause: error }))
          return
        }
        resolve({
          code: error === null ? 0 : (error.code as number),
          signal: (error?.signal as NodeJS.Signals | null | undefined) ?? null,
          stdout,
          stderr,
        })
      },
    )
  })
}

/** A long-running child (`tail -f`) whose output is collected as it arrives. */
export interface LiveBin {
  readonly child: ChildProcessWithoutNullStreams
  stdout(): string
  stderr(): string
  /** Resolves when stdout satisfies `predicate` (rejects if the child exits first, or after `waitUntil`'s hang guard). */
  waitFor(what: string, predicate: (stdout: string) => boolean): Promise<void>
  /** Resolves with the exit code and signal. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/**
 * Spawns `node dist/bin.js ...args` and keeps it running.
 *
 * @param args - The CLI arguments.
 */
export function spawnBin(args: readonly string[]): LiveBin {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['pipe', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    stdout += text
  })
  child.stderr.setEncoding('utf8').on('data', (text: string) => {
    stderr += text
  })
  let ended = false
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => {
      ended = true
      resolve({ code, signal })
    })
  })
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    waitFor: async (what, predicate) => {
      await waitUntil(
        what,
        () => {
          if (predicate(stdout)) return true
          if (ended) throw new Error(`the child exited before ${what}; stderr: ${stderr}`)
          return false
        },
        { pollMs: 20, detail: () => `stdout: ${stdout}; stderr: ${stderr}` },
      )
    },
  }
}
