/**
 * A TypeScript child process for the framework adapters' crash tests and the chaos driver's
 * workers, run as ONE node process so that SIGKILL hits the process holding the files or the
 * lease. Shared by `@agent-ledger/ai-sdk`, `@agent-ledger/openai-agents`,
 * `@agent-ledger/claude-agent-sdk` and `@agent-ledger/chaos`.
 *
 * A child runs through tooling/launch.mjs (see tooling/launch-args.ts: bundled once, a start
 * costs about a quarter of tsx's loader). Under tooling/frameworks-next.ts it runs under tsx's
 * loader instead, with a resolve hook that sends its bare imports of a framework to the copy
 * under test, as the test process does through its vitest aliases: a launch bundle has its
 * third-party paths resolved when it is built, which no hook would see.
 */
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'

import { launchArgs } from '../launch-args.ts'

/** The aliases of a frameworks-next run (a JSON object, specifier -> file), or '' outside one. */
const frameworkAliases = process.env['AGENT_LEDGER_FRAMEWORK_ALIASES'] ?? ''

/** `node` arguments that run `script` with `args` (see the file comment). */
function childArgs(script: string, args: readonly string[]): string[] {
  if (frameworkAliases === '') return launchArgs(script, args)
  const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
  return [
    '--conditions=@agent-ledger/source',
    '--import',
    new URL('../next/framework-aliases.mjs', import.meta.url).href,
    '--import',
    tsxLoader,
    script,
    ...args,
  ]
}

/** A running child. */
export interface TsChild {
  readonly child: ChildProcess
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** Resolves when stdout holds `marker`; rejects when the child exits first. */
  readonly waitFor: (marker: string) => Promise<void>
  /** What it printed so far. */
  readonly output: () => { stdout: string; stderr: string }
}

/**
 * Starts `script` with `args`.
 *
 * @param script - The module's URL (`new URL('./fixtures/x.ts', import.meta.url)`).
 * @param args - Its arguments.
 * @returns The child, its exit, and a wait for a stdout marker.
 */
export function spawnTsChild(script: URL, args: readonly string[]): TsChild {
  const child = spawn(process.execPath, childArgs(fileURLToPath(script), args), {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  )
  const waitFor = (marker: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        if (stdout.includes(marker)) {
          child.stdout!.off('data', check)
          resolve()
        }
      }
      child.stdout!.on('data', check)
      check()
      void exited.then(({ code, signal }) => {
        if (!stdout.includes(marker))
          reject(new Error(`child exited (${code ?? signal}) before "${marker}": ${stderr}`))
      })
    })
  return { child, exited, waitFor, output: () => ({ stdout, stderr }) }
}
