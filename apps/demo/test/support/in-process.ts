import { runCommandLine } from '../../src/commands.ts'
import type { CommandIo } from '../../src/commands.ts'
import type { ChildRun } from '../../src/demo.ts'

/** Thrown by the fake `kill` so a `--crash-at` run stops where SIGKILL would have stopped it. */
class SimulatedKill extends Error {
  constructor() {
    super('simulated SIGKILL')
  }
}

/** Runs mini-agent's command line in this process, capturing its output. `kill` throws {@link SimulatedKill}. */
export async function runInProcess(
  argv: readonly string[],
  options: { cwd?: string; signal?: AbortSignal } = {},
): Promise<{ code: number; out: string[]; err: string[]; killed: boolean }> {
  const out: string[] = []
  const err: string[] = []
  let killed = false
  const io: CommandIo = {
    out: (line) => out.push(line),
    err: (line) => err.push(line),
    cwd: options.cwd ?? process.cwd(),
    env: {},
    withInterrupt: (fn) => fn(options.signal ?? new AbortController().signal),
    kill: () => {
      killed = true
      throw new SimulatedKill()
    },
  }
  const code = await runCommandLine(argv, io)
  return { code, out, err, killed }
}

/**
 * A stand-in for the demo's child process: runs the command in this process, and reports
 * SIGKILL when its `--crash-at` point was reached. (The real child is exercised by the e2e tests.)
 */
export async function fakeChild(args: readonly string[]): Promise<ChildRun> {
  const run = await runInProcess(args)
  return {
    code: run.killed ? null : run.code,
    signal: run.killed ? 'SIGKILL' : null,
    stdout: run.out.join('\n') + '\n',
    stderr: run.err.join('\n'),
  }
}
