/**
 * The gate under load (`pnpm test:under-load`, not part of `pnpm test`): starts N busy-loop
 * processes (default 6, `--hogs N`) to keep the machine saturated, runs the whole gate
 * (`pnpm test`) in this tree with turbo's cache bypassed (TURBO_FORCE=true, so every task
 * really runs), samples the 1-minute load average while it runs, and prints, per run, the
 * gate's closing line, its exit code, its wall time and the min/median/max load average.
 * `--runs K` runs the gate K times in a row (the hogs stay up between runs).
 *
 * The hogs are stopped by their pids when the script ends: on exit, on an error, and on
 * SIGINT/SIGTERM (the gate runs in its own process group, stopped by that group's id).
 * Exits 1 when any run failed.
 */
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..')
/** How often the load average is sampled while the gate runs. */
const SAMPLE_MS = 5000

function positive(name: string, text: string): number {
  const value = Number(text)
  if (!Number.isInteger(value) || value < 1) {
    throw new Error(`under-load: --${name} takes a whole number of at least 1, found ${JSON.stringify(text)}`)
  }
  return value
}

const { values } = parseArgs({
  options: { hogs: { type: 'string', default: '6' }, runs: { type: 'string', default: '1' } },
})
const hogCount = positive('hogs', values.hogs)
const runs = positive('runs', values.runs)

const hogs: ChildProcess[] = []
let gate: ChildProcess | undefined

/** Stops every hog still running, by its pid (synchronous: safe in an exit handler). */
function stopHogs(): void {
  for (const hog of hogs) {
    if (hog.pid !== undefined && hog.exitCode === null && hog.signalCode === null) {
      try {
        process.kill(hog.pid, 'SIGKILL')
      } catch {
        // Already gone.
      }
    }
  }
}

process.on('exit', stopHogs)
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    stopHogs()
    if (gate?.pid !== undefined && gate.exitCode === null) {
      try {
        process.kill(-gate.pid, signal)
      } catch {
        // The gate's group is gone.
      }
    }
    console.error(`under-load: ${signal}: stopped ${hogs.length} hogs by pid`)
    process.exit(130)
  })
}

function duration(ms: number): string {
  const seconds = Math.round(ms / 1000)
  return `${Math.floor(seconds / 60)} min ${String(seconds % 60).padStart(2, '0')} s`
}

function loadSummary(samples: readonly number[]): string {
  if (samples.length === 0) return 'no sample'
  const sorted = [...samples].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  const median = sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
  return `min ${sorted[0]!.toFixed(1)}, median ${median.toFixed(1)}, max ${sorted.at(-1)!.toFixed(1)}`
}

/** Runs `pnpm test` once with the cache bypassed; its closing line, exit code and wall time. */
function runGateOnce(samples: number[]): Promise<{ closing: string; code: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const start = performance.now()
    let last = ''
    let partial = ''
    const child = spawn('pnpm', ['test'], {
      cwd: root,
      env: { ...process.env, TURBO_FORCE: 'true' },
      stdio: ['ignore', 'pipe', 'inherit'],
      detached: true,
    })
    gate = child
    const sampler = setInterval(() => samples.push(loadavg()[0]!), SAMPLE_MS)
    child.stdout!.on('data', (chunk: Buffer) => {
      process.stdout.write(chunk)
      const lines = (partial + chunk.toString('utf8')).split('\n')
      partial = lines.pop() ?? ''
      const nonEmpty = lines.filter((line) => line.trim() !== '')
      if (nonEmpty.length > 0) last = nonEmpty.at(-1)!
    })
    child.on('error', (error) => {
      clearInterval(sampler)
      reject(new Error(`under-load: could not start pnpm test: ${error.message}`))
    })
    child.on('close', (code, signal) => {
      clearInterval(sampler)
      gate = undefined
      if (partial.trim() !== '') last = partial
      resolve({
        closing: last,
        code: signal === null ? `exit ${code}` : `killed by ${signal}`,
        ms: performance.now() - start,
      })
    })
  })
}

async function main(): Promise<number> {
  for (let index = 0; index < hogCount; index += 1) {
    hogs.push(spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }))
  }
  console.log(`under-load: ${hogCount} hogs, pids ${hogs.map((hog) => hog.pid).join(' ')}`)
  const lines: string[] = []
  let failed = false
  for (let run = 1; run <= runs; run += 1) {
    const samples = [loadavg()[0]!]
    const result = await runGateOnce(samples)
    if (result.code !== 'exit 0') failed = true
    const line = `under-load: run ${run}/${runs}: ${result.closing} (${result.code}), wall ${duration(result.ms)}, load average ${loadSummary(samples)}, ${hogCount} hogs`
    lines.push(line)
    console.log(`\n${line}`)
  }
  stopHogs()
  if (runs > 1) console.log(['', ...lines].join('\n'))
  return failed ? 1 : 0
}

try {
  process.exitCode = await main()
} finally {
  stopHogs()
}
