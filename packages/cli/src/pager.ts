import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { delimiter, isAbsolute, join } from 'node:path'

/** The variables read for the pager, first set wins (as git reads GIT_PAGER, then PAGER). */
export const PAGER_ENV = ['AGENT_LEDGER_PAGER', 'PAGER'] as const

/** The pager when neither variable is set. */
const DEFAULT_PAGER = 'less -FRX'

/**
 * The pager command a user asked for: `AGENT_LEDGER_PAGER`, else `PAGER`, else
 * {@link DEFAULT_PAGER}. An empty value or `cat` means no pager (as git reads them).
 *
 * @param env - The environment.
 * @returns The shell command, or null for none.
 */
function pagerCommand(env: Readonly<Record<string, string | undefined>>): string | null {
  const chosen = PAGER_ENV.map((name) => env[name]).find((value) => value !== undefined) ?? DEFAULT_PAGER
  const command = chosen.trim()
  return command === '' || command === 'cat' ? null : command
}

/** True when the first word of `command` is an executable file (a path, or a name on PATH). */
function runnable(command: string, env: Readonly<Record<string, string | undefined>>): boolean {
  const program = command.split(/\s+/)[0]!
  const executable = (path: string): boolean => {
    try {
      accessSync(path, constants.X_OK)
      return true
    } catch {
      return false
    }
  }
  if (program.includes('/')) return executable(program)
  return (env['PATH'] ?? '')
    .split(delimiter)
    .filter((directory) => directory !== '' && isAbsolute(directory))
    .some((directory) => executable(join(directory, program)))
}

/** A running pager: standard output goes to its stdin. */
export interface RunningPager {
  readonly child: ChildProcess
  /** Ends its input and resolves when it has exited. */
  end(): Promise<void>
}

/**
 * Starts the pager through `/bin/sh -c` with the terminal as its stdout and stderr, `LESS`
 * set to `FRX` unless already set. A pager that quits before the command has written
 * everything (`q` in less) ends the process quietly, exit 0; Ctrl-C waits for the pager to
 * exit, then exits 130.
 *
 * @param env - The environment (which pager, PATH, LESS).
 * @returns The pager, or null when none is wanted or its program is not found (`reason` then says which).
 */
export function startPager(
  env: Readonly<Record<string, string | undefined>>,
): { readonly pager: RunningPager } | { readonly pager: null; readonly missing: string | null } {
  const command = pagerCommand(env)
  if (command === null) return { pager: null, missing: null }
  if (!runnable(command, env)) return { pager: null, missing: command }
  const child = spawn('/bin/sh', ['-c', command], {
    stdio: ['pipe', 'inherit', 'inherit'],
    env: { ...env, LESS: env['LESS'] ?? 'FRX' },
  })
  let ending = false
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      // Quit early (q in less, a pager that stopped reading): nothing more is wanted.
      if (!ending) process.exit(0)
      resolve()
    })
    child.once('error', () => resolve())
  })
  // Writes after the pager quit fail with EPIPE: the exit handler above ends the process.
  child.stdin.on('error', () => undefined)
  const onInterrupt = (): void => {
    ending = true
    child.stdin.end()
    void exited.then(() => process.exit(130))
  }
  process.once('SIGINT', onInterrupt)
  return {
    pager: {
      child,
      end: async () => {
        ending = true
        process.off('SIGINT', onInterrupt)
        child.stdin.end()
        await exited
      },
    },
  }
}
