/**
 * The machine-readable crash summary (RELIABILITY section 8): each crash test file merges
 * its section into `packages/session-store-jsonl/crash-summary.json` and the totals are
 * recomputed, so `acked_events_lost` and `crash_points_injected` can be read by the
 * dashboard. Test files run in parallel processes, so the read-merge-write happens under
 * the store's own writer lock (on a directory in the OS temp dir).
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { testTime } from '../../../../tooling/test-time.ts'
import { nodeFsOps } from '../../src/fs-ops.ts'
import { acquireWriterLock } from '../../src/writer-lock.ts'
import { packageRoot } from './children.ts'

/** The figures one crash test file reports. */
export interface CrashSection {
  /** How many crash points were injected (kills, power-loss images, ...). */
  readonly crash_points_injected: number
  /** Acknowledged events missing or changed after recovery, summed. Target 0. */
  readonly acked_events_lost: number
  /** Any other counters of the section. */
  readonly [key: string]: unknown
}

/** Where the summary is written. */
const CRASH_SUMMARY_FILE = join(packageRoot, 'crash-summary.json')

/**
 * Merges `section` under `name` into the crash summary, recomputes the totals, prints the
 * section and returns the whole summary.
 *
 * @param name - The section name, e.g. `W1`.
 * @param section - The section's figures.
 * @returns The summary after the merge.
 */
export async function recordCrashSection(
  name: string,
  section: CrashSection,
): Promise<Record<string, unknown>> {
  const lockDirectory = join(tmpdir(), 'agent-ledger-crash-summary-lock')
  mkdirSync(lockDirectory, { recursive: true, mode: 0o700 })
  const lock = await acquireWriterLock(nodeFsOps, lockDirectory, {
    timeoutMs: testTime(60_000),
    heartbeatMs: 0,
  })
  try {
    let summary: { sections: Record<string, CrashSection> } = { sections: {} }
    try {
      summary = JSON.parse(readFileSync(CRASH_SUMMARY_FILE, 'utf8')) as typeof summary
    } catch {
      // First section of this run (or an unreadable old file): start over.
    }
    summary.sections[name] = { ...section, recordedAt: new Date().toISOString() }
    const sections = Object.values(summary.sections)
    const total = {
      ...summary,
      crash_points_injected: sections.reduce((sum, entry) => sum + entry.crash_points_injected, 0),
      acked_events_lost: sections.reduce((sum, entry) => sum + entry.acked_events_lost, 0),
    }
    const temp = `${CRASH_SUMMARY_FILE}.tmp-${process.pid}`
    writeFileSync(temp, `${JSON.stringify(total, null, 2)}\n`)
    renameSync(temp, CRASH_SUMMARY_FILE)
    console.log(`crash summary ${name}: ${JSON.stringify(section)}`)
    console.log(
      `crash summary totals: ${total.crash_points_injected} crash points injected, ${total.acked_events_lost} acknowledged events lost`,
    )
    return total
  } finally {
    await lock.release()
  }
}
