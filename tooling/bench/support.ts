/**
 * Helpers shared by the benchmark modules (`packages/<name>/bench/*.bench.ts`): a module that
 * re-runs itself in a child process (so that its peak RSS and timings are its own,
 * {@link benchChild}), a timed command ({@link timeCommand}), and the median of rounds. Not a `.bench.ts` file: the runner does not load it on its own.
 */
import { spawn, spawnSync } from 'node:child_process'
import { createReadStream } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'

/** What a bench child measured around its job, and what the job returned. */
export interface ChildMeasure<TResult> {
  /** What the job returned (JSON round-tripped). */
  readonly result: TResult
  /** Wall seconds of the job (module loading not counted). */
  readonly seconds: number
  /** User + system CPU seconds of the child over the same span (less sensitive than wall time to a busy machine). */
  readonly cpuSeconds: number
  /** The child's RSS just before the job. */
  readonly baselineRssBytes: number
  /** The child's peak RSS since it started (`process.resourceUsage().maxRSS`). */
  readonly maxRssBytes: number
}

/** Options of {@link benchChild}. */
export interface BenchChildOptions<TJob, TResult> {
  /** The environment variable that carries the job (JSON) to the child; unique per module. */
  readonly envName: string
  /** Start the child with `--expose-gc` (for `globalThis.gc`). */
  readonly exposeGc?: boolean | undefined
  /** The job, run in the child. */
  readonly main: (job: TJob) => Promise<TResult>
}

/**
 * The one way a bench module measures work in a fresh Node process (its peak RSS, CPU and wall
 * time its own): call it once at module level with the module's `import.meta.url`. In the
 * parent it returns a function that runs `main(job)` in a child (`script` re-run under the tsx
 * loader with the source condition, the job as JSON in `envName`) and resolves with the
 * child's {@link ChildMeasure}. When the module itself is the child (`envName` set and the
 * module is the process's entry point), it also runs the job once the module has loaded,
 * prints the measure as one JSON line and sets a non-zero exit code if the job throws.
 *
 * @param moduleUrl - `import.meta.url` of the calling module (the child's script).
 * @param options - The variable name, `--expose-gc`, and the job.
 * @returns Runs one job in a child.
 * @throws Error (from the returned function) naming the exit code and the end of stderr when the child fails or prints nothing.
 */
export function benchChild<TJob, TResult>(
  moduleUrl: string,
  options: BenchChildOptions<TJob, TResult>,
): (job: TJob) => Promise<ChildMeasure<TResult>> {
  const script = fileURLToPath(moduleUrl)
  const job = process.env[options.envName]
  if (job !== undefined && process.argv[1] !== undefined && process.argv[1] === script) {
    // After the module has finished loading: `main` may use what is declared below the call.
    setImmediate(() => {
      measureJob(options.main, JSON.parse(job) as TJob).then(
        (measure) => process.stdout.write(`${JSON.stringify(measure)}\n`),
        (error: unknown) => {
          process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
          process.exitCode = 1
        },
      )
    })
  }
  return (value) => spawnBenchChild<ChildMeasure<TResult>>(script, options.envName, JSON.stringify(value), options.exposeGc === true)
}

async function measureJob<TJob, TResult>(
  main: (job: TJob) => Promise<TResult>,
  job: TJob,
): Promise<ChildMeasure<TResult>> {
  const baselineRssBytes = process.memoryUsage.rss()
  const cpuStart = process.cpuUsage()
  const started = performance.now()
  const result = await main(job)
  const seconds = (performance.now() - started) / 1000
  const cpu = process.cpuUsage(cpuStart)
  return {
    result,
    seconds,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    baselineRssBytes,
    maxRssBytes: process.resourceUsage().maxRSS * 1024,
  }
}

function spawnBenchChild<TResult>(script: string, envName: string, value: string, exposeGc: boolean): Promise<TResult> {
  const loader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
  const flags = exposeGc ? ['--expose-gc'] : []
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...flags, '--conditions=@agent-ledger/source', '--import', loader, script], {
      env: { ...process.env, [envName]: value },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.on('error', reject)
    child.on('close', (code) => {
      const line = stdout.trim().split('\n').pop() ?? ''
      if (code !== 0 || line === '') reject(new Error(`bench child ${script} exited ${code}: ${stderr.slice(-2000)}`))
      else resolve(JSON.parse(line) as TResult)
    })
  })
}

/**
 * The one way a bench module times a command (a CLI start, the `zstd` CLI as a floor): runs
 * `command args` synchronously `rounds` times after `warmup` untimed runs and returns the median
 * wall time, and the last run's stdout.
 *
 * @param command - The executable.
 * @param args - Its arguments.
 * @param options - `cwd`, `input` (stdin bytes), `rounds` (default 5), `warmup` runs (default 1).
 * @returns Median milliseconds and the last run's stdout.
 * @throws Error naming the command, its exit code and the end of its stderr when a run fails.
 */
export function timeCommand(
  command: string,
  args: readonly string[],
  options: {
    readonly cwd?: string | undefined
    readonly input?: Buffer | undefined
    readonly rounds?: number | undefined
    readonly warmup?: number | undefined
  } = {},
): { readonly ms: number; readonly stdout: Buffer } {
  let stdout = Buffer.alloc(0)
  const once = (): number => {
    const started = performance.now()
    const result = spawnSync(command, args, {
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      ...(options.input === undefined ? { stdio: ['ignore', 'pipe', 'pipe'] } : { input: options.input }),
      maxBuffer: 8 * 1024 * 1024 * 1024,
    })
    const elapsed = performance.now() - started
    if (result.status !== 0) {
      throw new Error(`${command} ${args.join(' ')} exited ${result.status}: ${result.stderr.toString().slice(-2000)}`)
    }
    stdout = result.stdout
    return elapsed
  }
  for (let run = 0; run < (options.warmup ?? 1); run += 1) once()
  const ms = median(Array.from({ length: options.rounds ?? 5 }, once))
  return { ms, stdout }
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

/**
 * A file's text as a stream of decoded chunks (UTF-8, characters split across chunks kept
 * whole): what the importers read, and the bare read loop of their floors.
 *
 * @param file - The file.
 * @returns Its text, chunk by chunk.
 */
export async function* textChunks(file: string): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8')
  for await (const chunk of createReadStream(file)) yield decoder.decode(chunk as Buffer, { stream: true })
  const rest = decoder.decode()
  if (rest !== '') yield rest
}
