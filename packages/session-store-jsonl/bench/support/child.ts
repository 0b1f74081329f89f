/**
 * Child processes for memory figures: a benchmark module re-runs itself under tsx in a fresh
 * Node process (so its peak RSS is its own), with `--expose-gc`, and reads one JSON line back.
 */
import { spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'

/**
 * Runs `script` in a child Node process with the tsx loader, the source condition and
 * `--expose-gc`, the job in environment variable `envName`, and parses the last stdout line.
 *
 * @param script - Absolute path of the module to run.
 * @param job - Environment variable name and JSON-serializable job.
 * @returns What the child printed on its last line.
 */
export async function runChild<TResult>(
  script: string,
  job: { readonly envName: string; readonly value: unknown },
): Promise<TResult> {
  const loader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--expose-gc', '--conditions=@agent-ledger/source', '--import', loader, script],
      {
        env: { ...process.env, [job.envName]: JSON.stringify(job.value) },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
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

/** Resident-set figures of the current process, in bytes, from /proc/self/status. */
export interface RssSample {
  /** VmRSS: resident now. */
  readonly rss: number
  /** VmHWM: peak resident since start (or since {@link resetPeakRss}). */
  readonly peak: number
}

/**
 * Reads VmRSS and VmHWM (falls back to `process.memoryUsage().rss` and `resourceUsage().maxRSS`).
 *
 * @returns The sample.
 */
export function sampleRss(): RssSample {
  try {
    const status = readFileSync('/proc/self/status', 'utf8')
    const field = (name: string): number => {
      const match = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)
      if (match === null) throw new Error(`no ${name}`)
      return Number(match[1]) * 1024
    }
    return { rss: field('VmRSS'), peak: field('VmHWM') }
  } catch {
    return { rss: process.memoryUsage().rss, peak: process.resourceUsage().maxRSS * 1024 }
  }
}

/**
 * Resets the kernel's peak-RSS mark (VmHWM) to the current RSS (`5` into /proc/self/clear_refs).
 *
 * @returns True when the reset worked (Linux); false when the peak still counts from start.
 */
export function resetPeakRss(): boolean {
  try {
    writeFileSync('/proc/self/clear_refs', '5')
    const sample = sampleRss()
    return sample.peak <= sample.rss + 4 * 1024 * 1024
  } catch {
    return false
  }
}

/**
 * Runs a full garbage collection when the process was started with `--expose-gc`.
 *
 * @returns True when it ran.
 */
export function collectGarbage(): boolean {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) return false
  gc()
  gc()
  return true
}
