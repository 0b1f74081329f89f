/**
 * Child-process helpers for the reliability tests: run a TypeScript script in a real
 * `node` process (so SIGKILL hits the process that holds the files), read its stdout line
 * by line, and wait for lines or exit without timed assertions.
 *
 * Why not `node_modules/.bin/tsx script.ts`: the tsx CLI runs the script in a grandchild
 * process and only relays signals, so a SIGKILL sent to the tsx pid would leave the writer
 * running. {@link spawnTsChild} runs `node tooling/launch.mjs script.ts` instead (see
 * tooling/launch-args.ts): one process, sibling packages from their sources, bundled once
 * into the repository's launch cache (a start without tsx's loader).
 *
 * {@link bundleChild} goes one step further for the tests that start many children (W1
 * crash rounds) or run them where the launcher could not refresh its cache (under
 * `ulimit -f`, as uid 65534): it bundles the script once per test process with esbuild
 * (the transformer tsx itself uses, reached through tsx's own dependency; same
 * `@agent-ledger/source` condition) into `node_modules/.cache/` of this package, so each
 * child is a plain `node bundle.mjs` (about 0.1 s instead of 1-2 s of loader start-up on a
 * busy 2-core machine). Third-party packages stay external and load from this package's
 * node_modules.
 */
import { spawn } from 'node:child_process'
import type { ChildProcessWithoutNullStreams } from 'node:child_process'
import { mkdirSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

import { launchArgs } from '../../../../tooling/launch-args.ts'
import { testTime } from '../../../../tooling/test-time.ts'

/** The package directory (packages/session-store-jsonl). */
export const packageRoot = fileURLToPath(new URL('../..', import.meta.url))

/** Absolute path of a child script in test/fixtures/children. */
function childScript(name: string): string {
  return fileURLToPath(new URL(`../fixtures/children/${name}`, import.meta.url))
}

/** A running child with a line-oriented stdout. */
export interface Child {
  readonly process: ChildProcessWithoutNullStreams
  readonly pid: number
  /** Every complete stdout line so far. */
  readonly lines: string[]
  /** Everything written to stderr so far. */
  stderr(): string
  /** Resolves with the first line (from `from` on) that satisfies `predicate`; rejects if the child exits first or after `testTime(timeoutMs)` (a hang guard, default 30 s idle). */
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
      const timeoutMs = testTime(waitOptions.timeoutMs ?? 30_000)
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

/** Spawns a TypeScript child script from test/fixtures/children through tooling/launch.mjs. */
export function spawnTsChild(
  name: string,
  args: readonly string[] = [],
  options: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Child {
  return spawnChild(process.execPath, launchArgs(childScript(name), args), options)
}

interface EsbuildModule {
  readonly build: (options: Record<string, unknown>) => Promise<unknown>
}

const bundles = new Map<string, Promise<string>>()

/**
 * Bundles a child script (sources of this package and its siblings included, other
 * packages external) into one ESM file and returns its path; cached per process.
 *
 * @param name - The script's file name in test/fixtures/children.
 * @returns The bundle's absolute path, runnable with plain `node`.
 */
export function bundleChild(name: string): Promise<string> {
  let bundle = bundles.get(name)
  if (bundle === undefined) {
    bundle = (async () => {
      const esbuildPath = createRequire(createRequire(import.meta.url).resolve('tsx')).resolve('esbuild')
      const esbuild = (await import(pathToFileURL(esbuildPath).href)) as EsbuildModule & {
        default?: EsbuildModule
      }
      const build = esbuild.build ?? esbuild.default?.build
      const directory = join(packageRoot, 'node_modules', '.cache', 'agent-ledger-test-children')
      mkdirSync(directory, { recursive: true })
      const outfile = join(directory, `${name.replace(/\.ts$/, '')}-${process.pid}.mjs`)
      await build({
        entryPoints: [childScript(name)],
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        outfile,
        conditions: ['@agent-ledger/source'],
        logLevel: 'error',
        plugins: [
          {
            name: 'externalize-third-party',
            setup(pluginBuild: {
              onResolve: (options: { filter: RegExp }, callback: (args: { path: string }) => unknown) => void
            }) {
              pluginBuild.onResolve({ filter: /^[^./]/ }, (args) =>
                args.path.startsWith('@agent-ledger/') ? undefined : { path: args.path, external: true },
              )
            },
          },
        ],
      })
      process.on('exit', () => {
        rmSync(outfile, { force: true })
      })
      return outfile
    })()
    bundles.set(name, bundle)
  }
  return bundle
}

/** Spawns a bundled child script (see {@link bundleChild}) with plain `node`. */
export async function spawnBundledChild(
  name: string,
  args: readonly string[] = [],
  options: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<Child> {
  return spawnChild(process.execPath, [await bundleChild(name), ...args], options)
}
