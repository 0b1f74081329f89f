/**
 * Helpers shared by the benchmark modules (`packages/<name>/bench/*.bench.ts`): a module that
 * re-runs itself in a child process (so that its peak RSS and timings are its own), and the
 * median of rounds. Not a `.bench.ts` file: the runner does not load it on its own.
 */
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'

/** One job for a child: the environment variable that carries it, and its text. */
export interface BenchChildJob {
  readonly envName: string
  readonly value: string
}

/**
 * Runs `script` in a child Node process with the tsx loader and the source condition (and
 * `--expose-gc` when asked), the job in environment variable `job.envName`, and parses the
 * last line it prints on stdout as JSON.
 *
 * @param script - Absolute path of the module to run (usually the bench module itself).
 * @param job - The variable's name and value.
 * @param options - `exposeGc`: start the child with `--expose-gc`.
 * @returns What the child printed on its last line.
 * @throws Error naming the exit code and the end of stderr when the child fails or prints nothing.
 */
export function runBenchChild<TResult>(
  script: string,
  job: BenchChildJob,
  options: { readonly exposeGc?: boolean } = {},
): Promise<TResult> {
  const loader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
  const flags = options.exposeGc === true ? ['--expose-gc'] : []
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...flags, '--conditions=@agent-ledger/source', '--import', loader, script], {
      env: { ...process.env, [job.envName]: job.value },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.on('close', (code) => {
      const line = stdout.trim().split('\n').pop() ?? ''
      if (code !== 0 || line === '') reject(new Error(`bench child exited ${code}: ${stderr.slice(-2000)}`))
      else resolve(JSON.parse(line) as TResult)
    })
  })
}

/**
 * The median of `values` (the upper middle one of an even count; NaN when empty).
 *
 * @param values - The rounds' figures.
 * @returns Their median.
 */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((left, right) => left - right)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}
