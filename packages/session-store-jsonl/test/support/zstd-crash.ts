/**
 * W1 on a `.zstd` session: a child appends the seeded workload to a `.zstd` log and is
 * SIGKILLed; the check reopens it for write (torn frame quarantined, dangling calls closed)
 * and compares every event with the workload's reference lines.
 */
import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

import { createJsonlStore } from '../../src/index.ts'
import { encodeEventLine } from '../../src/format.ts'
import { CRASH_STORE_OPTIONS, referenceLines, runCrashWriter, tornTailBytes } from './crash-harness.ts'
import type { KillRound } from './crash-harness.ts'
import { WORKLOAD_HEADER } from './workload.ts'
import { collect } from './sessions.ts'
import { cliCheck } from '../zstd-helpers.ts'

/** What one `.zstd` kill round observed. */
export interface ZstdKillResult {
  readonly lastAck: number
  /** Acked seqs missing or not byte-identical to the workload after reopening. Must be 0. */
  readonly ackedLost: number
  /** Seq of the last event equal to the workload's (>= lastAck). */
  readonly lastWorkloadSeq: number
  /** Compressed bytes the write open quarantined. */
  readonly tornTailBytes: number
  /** Tool calls left without a result after the write open (must be 0). */
  readonly unrepairedDangling: number
  /** Repair events a second write open appended (must be 0). */
  readonly duplicateSynthetic: number
  /** `zstd -t` of the repaired file. */
  readonly cliTestOk: boolean
  readonly signal: string | null
}

/**
 * Runs one W1 round on a `.zstd` session in `root` (a fresh directory).
 *
 * @param root - An empty store root.
 * @param round - Seed, flush interval, kill timing or named point.
 * @returns The observations.
 */
export async function runZstdKillRound(root: string, round: KillRound): Promise<ZstdKillResult> {
  const id = `zw1-${round.seed}`
  mkdirSync(root, { recursive: true, mode: 0o700 })
  // The encoding is the store's (`createJsonlStore({ encoding })`); the child and the checks
  // below write in the encoding the session has.
  const creator = createJsonlStore({ root, ...CRASH_STORE_OPTIONS, encoding: 'zstd' })
  await (await creator.create({ id, header: WORKLOAD_HEADER })).close()
  await creator.close()
  const store = createJsonlStore({ root, ...CRASH_STORE_OPTIONS })
  const run = await runCrashWriter(root, id, round)
  if (run.signal !== 'SIGKILL') {
    throw new Error(
      `crash-writer ended without SIGKILL (code ${String(run.code)}): ${run.stderr.slice(-2000)}`,
    )
  }
  const { lastAck } = run
  const writer = await store.openWriter(id)
  const tornTail = tornTailBytes(writer)
  await writer.close()
  const events = await collect(store.readEvents(id))
  const reference = await referenceLines({
    id,
    seed: round.seed,
    count: Math.max(events.length, lastAck + 1),
  })
  let ackedLost = 0
  for (let seq = 0; seq <= lastAck; seq += 1) {
    const event = events[seq]
    if (event === undefined || !encodeEventLine(event).equals(reference[seq + 1]!)) ackedLost += 1
  }
  let lastWorkloadSeq = -1
  while (
    lastWorkloadSeq + 1 < events.length &&
    lastWorkloadSeq + 2 < reference.length &&
    encodeEventLine(events[lastWorkloadSeq + 1]!).equals(reference[lastWorkloadSeq + 2]!)
  ) {
    lastWorkloadSeq += 1
  }
  const reader = await store.openReader(id)
  const again = await store.openWriter(id)
  const duplicateSynthetic = again.recovery.repairs.length
  await again.close()
  await store.close()
  return {
    lastAck,
    ackedLost,
    lastWorkloadSeq,
    tornTailBytes: tornTail,
    unrepairedDangling: reader.pendingToolCalls.length,
    duplicateSynthetic,
    cliTestOk: cliCheck(readFileSync(join(root, id, 'session.v4.jsonl.zstd'))).testOk,
    signal: run.signal,
  }
}
