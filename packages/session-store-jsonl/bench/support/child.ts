/**
 * Memory figures inside a bench child (`benchChild` of tooling/bench/support.ts, started with
 * `exposeGc`): the current and peak RSS, resetting the peak, and a full GC.
 */
import { readFileSync, writeFileSync } from 'node:fs'

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
