import { spawn, spawnSync } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import path from 'node:path'

import { launchArgs } from '../../../../tooling/launch-args.ts'

/** Absolute path of mini-agent's entry point. */
const MAIN_SCRIPT = path.join(import.meta.dirname, '..', '..', 'src', 'main.ts')

/** Node arguments that run mini-agent from source, as `pnpm demo` does (tooling/launch.mjs). */
const NODE_ARGS = launchArgs(MAIN_SCRIPT)

/** What a finished mini-agent process did. */
export interface Finished {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** The environment children get: ours without any provider key, plus `extra`. */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra }
  delete env.OPENAI_API_KEY
  delete env.OPENAI_BASE_URL
  delete env.MODEL
  return env
}

/** Starts mini-agent as a child process; `finished` resolves when it exits (never rejects on a non-zero exit). */
export function startMiniAgent(
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): { child: ChildProcess; finished: Promise<Finished>; output: () => string } {
  const child = spawn(process.execPath, [...NODE_ARGS, ...args], {
    cwd: options.cwd ?? process.cwd(),
    env: options.env ?? childEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const finished = new Promise<Finished>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }))
  })
  return { child, finished, output: () => stdout }
}

/** Runs mini-agent to completion. */
export function runMiniAgent(
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<Finished> {
  return startMiniAgent(args, options).finished
}

/**
 * Runs `zstd -t` (test integrity) on a file.
 *
 * @returns Its exit status and stderr, or null when the zstd CLI is not installed (the caller skips, saying so).
 */
export function zstdTest(file: string): { status: number | null; stderr: string } | null {
  const result = spawnSync('zstd', ['-t', '-q', file], { encoding: 'utf8' })
  if (result.error !== undefined && (result.error as NodeJS.ErrnoException).code === 'ENOENT') return null
  return { status: result.status, stderr: result.stderr }
}
