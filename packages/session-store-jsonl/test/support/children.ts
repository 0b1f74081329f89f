/**
 * Child-process helpers for the reliability tests: run a TypeScript script in a real
 * `node` process (so SIGKILL hits the process that holds the files), read its stdout line
 * by line, and wait for lines or exit without timed assertions.
 *
 * Why not `node_modules/.bin/tsx script.ts`: the tsx CLI runs the script in a grandchild
 * process and only relays signals, so a SIGKILL sent to the tsx pid would leave the writer
 * running. We run `node --conditions=@agent-ledger/source --import <tsx loader> script.ts`
 * instead: one process, sibling packages resolved to their sources.
 */
import { spawn } from 'node:child_process'
import type { ChildProcessWithoutNullStreams } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'

/** The package directory (packages/session-store-jsonl). */
export const packageRoot = fileURLToPath(new URL('../..', import.meta.url))

/** Absolute path of a child script in test/fixtures/children. */
export function childScript(name: string): string {
  return fileURLToPath(new URL(`../fixtures/children/${name}`, import.meta.url))
}

/** file:// URL of tsx's ESM loader, resolved from this package. */
export const tsxLoaderUrl = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href

/** `node` arguments that run `script` with TypeScript support and the source condition. */
export function nodeTsArgs(script: string, args: readonly string[] = []): string[] {
  return ['--conditions=@agent-ledger/source', '--import', tsxLoaderUrl, script, ...args]
}

/** A running child with a line-oriented stdout. */
export interface Child {
  readonly process: ChildProcessWithoutNullStreams
  readonly pid: number
  /** Every complete stdout line so far. */
  readonly lines: string[]
  /** Everything written to stderr so far. */
  stderr(): string
  /** Resolves with the first line (from `from` on) that satisfies `predicate`; rejects if the child exits first or after `timeoutMs`. */
  waitForLine(
    predicate: (line: string) => boolean,
    options?: { from?: number; timeoutMs?: number },
  ): Promise<string>
  /** Resolves when the child has exited (and been reaped): exit code and signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  send(line: string): void
}

/** Spawns `command args` with piped stdio and line tracking. */
export function spawnChild(
  command: string,
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Child {
  const child = spawn(command, args, {
    cwd: options.cwd ?? packageRoot,
    env: options.env ?? process.env,
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  const lines: string[] = []
  let partial = ''
  let stderr = ''
  const waiters = new Set<() => void>()
  const notify = (): void => {
    for (const waiter of waiters) waiter()
  }
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (chunk: string) => {
    partial += chunk
    let index = partial.indexOf('\n')
    while (index >= 0) {
      lines.push(partial.slice(0, index))
      partial = partial.slice(index + 1)
      index = partial.indexOf('\n')
    }
    notify()
  })
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (chunk: string) => {
    stderr += chunk
  })
  let done = false
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('close', (code, signal) => {
      done = true
      notify()
      resolve({ code, signal })
    })
  })
  child.stdin.on('error', () => undefined)
  return {
    process: child,
    pid: child.pid ?? -1,
    lines,
    stderr: () => stderr,
    exited,
    send(line) {
      child.stdin.write(`${line}\n`)
    },
    waitForLine(predicate, waitOptions = {}) {
      const from = waitOptions.from ?? 0
      const timeoutMs = waitOptions.timeoutMs ?? 20_000
      return new Promise((resolve, reject) => {
        const check = (): void => {
          for (let index = from; index < lines.length; index += 1) {
            const line = lines[index]!
            if (predicate(line)) {
              cleanup()
              resolve(line)
              return
            }
          }
          if (done) {
            cleanup()
            reject(
              new Error(`child ${child.pid} exited before the expected line; stderr: ${stderr.slice(-2000)}`),
            )
          }
        }
        const cleanup = (): void => {
          waiters.delete(check)
          clearTimeout(timer)
        }
        const timer = setTimeout(() => {
          cleanup()
          reject(
            new Error(
              `child ${child.pid}: no expected line within ${timeoutMs} ms; lines: ${lines.slice(-5).join(' | ')}; stderr: ${stderr.slice(-2000)}`,
            ),
          )
        }, timeoutMs)
        waiters.add(check)
        check()
      })
    },
  }
}

/** Spawns a TypeScript child script from test/fixtures/children with `node` + tsx. */
export function spawnTsChild(
  name: string,
  args: readonly string[] = [],
  options: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Child {
  return spawnChild(process.execPath, nodeTsArgs(childScript(name), args), options)
}
