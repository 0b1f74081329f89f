/**
 * A TypeScript child process for the framework adapters' crash tests, run as ONE node
 * process (tsx's loader, the source condition) so that SIGKILL hits the process holding the
 * files or the lease. Shared by `@agent-ledger/ai-sdk`, `@agent-ledger/openai-agents` and
 * `@agent-ledger/claude-agent-sdk`.
 */
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'

const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href

/**
 * Under tooling/frameworks-next.ts, children resolve the framework to the copy under test,
 * as the test process does through its vitest aliases.
 */
const frameworkAliases =
  (process.env['AGENT_LEDGER_FRAMEWORK_ALIASES'] ?? '') === ''
    ? []
    : ['--import', new URL('../next/framework-aliases.mjs', import.meta.url).href]

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
  const child = spawn(
    process.execPath,
    [
      '--conditions=@agent-ledger/source',
      ...frameworkAliases,
      '--import',
      tsxLoader,
      fileURLToPath(script),
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
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
