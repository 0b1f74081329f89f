/**
 * The shared part of the crash tests (W1, W2): create a session, regenerate what the seeded
 * workload must have produced, and check a crashed session after reopening it.
 *
 * Every check here counts instead of asserting, so a crash suite can report
 * `acked_events_lost`, `holes_after_recovery`, `unrepaired_dangling_tool_calls` and
 * `duplicate_synthetic_results` as numbers (RELIABILITY section 8), and then assert them.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { createSessionStore, LOG_FILE_NAME } from '../../src/index.ts'
import type { FsOps } from '../../src/index.ts'
import { expect } from 'vitest'

import { spawnBundledChild } from './children.ts'
import { seededRandom } from './fault-fs.ts'
import { workload, WORKLOAD_HEADER } from './workload.ts'

/** The constant clock every crash workload uses, so event bytes depend on the seed only. */
export const CRASH_CLOCK = (): string => '2026-01-01T00:00:00.000Z'

/** Store options shared by the crash children, the references and the checks. */
export const CRASH_STORE_OPTIONS = {
  clock: CRASH_CLOCK,
  flush: { maxDelayMs: 0, maxBufferedEvents: 0, maxBufferedBytes: 0 },
  lock: { heartbeatMs: 0 },
} as const

/** Splits a log into its `\n`-terminated lines (with the `\n`) and the unterminated rest. */
export function splitLines(bytes: Buffer): { lines: Buffer[]; tail: Buffer } {
  const lines: Buffer[] = []
  let start = 0
  for (let index = bytes.indexOf(0x0a); index >= 0; index = bytes.indexOf(0x0a, start)) {
    lines.push(bytes.subarray(start, index + 1))
    start = index + 1
  }
  return { lines, tail: bytes.subarray(start) }
}

/** Creates `id` under `root` with the crash workload's header and no events, and closes it. */
export async function createCrashSession(root: string, id: string, fs?: FsOps): Promise<void> {
  const store = createSessionStore({ root, ...CRASH_STORE_OPTIONS, ...(fs === undefined ? {} : { fs }) })
  const writer = await store.create({ id, header: WORKLOAD_HEADER })
  await writer.close()
}

/**
 * The exact lines (header first, then seq 0..count-1) the workload for `seed` produces
 * in session `id` when written through the store without any crash.
 */
export async function referenceLines(options: {
  id: string
  seed: number
  count: number
}): Promise<Buffer[]> {
  const root = mkdtempSync(join(tmpdir(), 'agent-ledger-reference-'))
  try {
    const store = createSessionStore({ root, ...CRASH_STORE_OPTIONS })
    const writer = await store.create({ id: options.id, header: WORKLOAD_HEADER })
    for (const event of workload(options.seed, options.count)) writer.append(event)
    await writer.close()
    return splitLines(readFileSync(join(root, options.id, LOG_FILE_NAME))).lines
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}

/** What one crash left, after reopening. */
export interface CrashCheck {
  /** Acked seqs (<= lastAck) missing or not byte-identical after reopen. Must be 0. */
  readonly ackedLost: number
  /** Workload events found beyond the last ACK (written, not acknowledged, kept). */
  readonly unackedKept: number
  /** Complete lines before repair that are not the reference line for their position. Must be 0. */
  readonly foreignLines: number
  /** Seq gaps or repeats in the reopened session. Must be 0. */
  readonly holes: number
  /** Bytes of torn tail the write open quarantined. */
  readonly tornTailBytes: number
  /** Repair events the write open appended (R1). */
  readonly repairs: number
  /** Tool calls still without a result after the write open. Must be 0. */
  readonly unrepairedDangling: number
  /** Repair events a second write open appended (must be 0: repair is idempotent). */
  readonly duplicateSynthetic: number
  /** The workload seq of the last event present after reopen (-1 when none). */
  readonly lastWorkloadSeq: number
  /** Why the open failed, when it did (counted as a failure by the caller). */
  readonly openError: string | null
}

/**
 * Reopens a crashed session and checks it against the workload reference.
 *
 * @param options - Where the session is, the workload seed and the last acknowledged seq (-1 if none).
 * @returns The counts (see {@link CrashCheck}).
 */
export async function checkCrashedSession(options: {
  readonly root: string
  readonly id: string
  readonly seed: number
  readonly lastAck: number
}): Promise<CrashCheck> {
  const { root, id, seed, lastAck } = options
  const path = join(root, id, LOG_FILE_NAME)
  let before: Buffer
  try {
    before = readFileSync(path)
  } catch {
    before = Buffer.alloc(0)
  }
  const raw = splitLines(before)
  const eventLinesBefore = Math.max(0, raw.lines.length - 1)
  const reference = await referenceLines({ id, seed, count: Math.max(lastAck + 1, eventLinesBefore) })
  let foreignLines = 0
  for (let index = 0; index < raw.lines.length; index += 1) {
    if (!raw.lines[index]!.equals(reference[index] ?? Buffer.alloc(0))) foreignLines += 1
  }
  const store = createSessionStore({ root, ...CRASH_STORE_OPTIONS })
  let tornTailBytes = 0
  let repairs = 0
  let openError: string | null = null
  try {
    const writer = await store.openWriter(id)
    tornTailBytes = writer.recovery.tornTail?.bytes ?? 0
    repairs = writer.recovery.repairs.length
    await writer.close()
  } catch (error) {
    openError =
      error instanceof Error ? `${(error as { code?: string }).code ?? ''} ${error.message}` : String(error)
  }
  const after = splitLines(readFileSync(path))
  let ackedLost = 0
  for (let seq = 0; seq <= lastAck; seq += 1) {
    const line = after.lines[seq + 1]
    if (line === undefined || !line.equals(reference[seq + 1]!)) ackedLost += 1
  }
  let lastWorkloadSeq = -1
  while (
    lastWorkloadSeq + 2 < after.lines.length &&
    lastWorkloadSeq + 2 < reference.length &&
    after.lines[lastWorkloadSeq + 2]!.equals(reference[lastWorkloadSeq + 2]!)
  ) {
    lastWorkloadSeq += 1
  }
  let holes = 0
  let unrepairedDangling = 0
  let duplicateSynthetic = 0
  if (openError === null) {
    let expected = 0
    for await (const event of store.readEvents(id)) {
      if (event.seq !== expected) holes += 1
      expected = event.seq + 1
    }
    const reader = await store.openReader(id)
    unrepairedDangling = reader.pendingToolCalls.length
    if (reader.tornTail !== null) holes += 1
    const again = await store.openWriter(id)
    duplicateSynthetic = again.recovery.repairs.length
    await again.close()
  }
  return {
    ackedLost,
    unackedKept: Math.max(0, lastWorkloadSeq - lastAck),
    foreignLines,
    holes,
    tornTailBytes,
    repairs,
    unrepairedDangling,
    duplicateSynthetic,
    lastWorkloadSeq,
    openError,
  }
}

/** One W1 round: a child appending the workload, killed after `killAfterMs` (or at `crashAt`). */
export interface KillRound {
  readonly seed: number
  readonly flushEvery: number
  /** Milliseconds after the child printed OPEN (its workload started) before SIGKILL. */
  readonly killAfterMs: number
  /** A named crash point the child reaches itself (CRASH_AT), instead of the timed kill. */
  readonly crashAt?: 'mid-write' | 'after-write' | 'after-fdatasync'
}

/** What a round observed. */
export interface KillRoundResult extends CrashCheck {
  readonly lastAck: number
  readonly acks: number
  readonly signal: string | null
  readonly finishedBeforeKill: boolean
}

/**
 * Runs one W1 round in `root` (a fresh directory): creates the session, runs the child,
 * SIGKILLs it, and checks the reopened session.
 *
 * @param root - An empty store root.
 * @param round - Seed, flush interval and kill timing.
 * @returns The checks plus what the child acknowledged.
 */
export async function runKillRound(root: string, round: KillRound): Promise<KillRoundResult> {
  const id = `w1-${round.seed}`
  mkdirSync(root, { recursive: true, mode: 0o700 })
  await createCrashSession(root, id)
  const env = { ...process.env }
  delete env['CRASH_AT']
  if (round.crashAt !== undefined) env['CRASH_AT'] = round.crashAt
  const child = await spawnBundledChild(
    'crash-writer.ts',
    [root, id, String(round.seed), String(round.flushEvery), '200000'],
    { env },
  )
  await child.waitForLine((line) => line.startsWith('OPEN '))
  if (round.crashAt === undefined) {
    await new Promise((resolve) => setTimeout(resolve, round.killAfterMs))
    child.process.kill('SIGKILL')
  }
  const exit = await child.exited
  const acks = child.lines.filter((line) => line.startsWith('ACK ')).map((line) => Number(line.slice(4)))
  const lastAck = acks.length === 0 ? -1 : Math.max(...acks)
  if (exit.signal !== 'SIGKILL' && !child.lines.some((line) => line.startsWith('DONE '))) {
    throw new Error(
      `crash-writer ended without SIGKILL (code ${String(exit.code)}): ${child.stderr().slice(-2000)}`,
    )
  }
  const check = await checkCrashedSession({ root, id, seed: round.seed, lastAck })
  return {
    ...check,
    lastAck,
    acks: acks.length,
    signal: exit.signal,
    finishedBeforeKill: child.lines.some((line) => line.startsWith('DONE ')),
  }
}

/**
 * The W1 rounds for a base seed: per round a workload seed, a flush interval in 1..20 and
 * a kill delay in 50..800 ms, all derived from `baseSeed` (print it to replay a failure).
 *
 * @param baseSeed - The run's seed.
 * @param count - How many rounds.
 * @returns The rounds.
 */
export function killRounds(baseSeed: number, count: number): KillRound[] {
  const random = seededRandom(baseSeed)
  return Array.from({ length: count }, (_, index) => ({
    seed: baseSeed * 1000 + index,
    flushEvery: 1 + Math.floor(random() * 20),
    killAfterMs: 50 + Math.floor(random() * 751),
  }))
}

/** Sums the counters of many rounds (for the crash summary). */
export function sumRounds(results: readonly KillRoundResult[]): Record<string, number> {
  const sum = (pick: (result: KillRoundResult) => number): number =>
    results.reduce((total, result) => total + pick(result), 0)
  return {
    rounds: results.length,
    acked_events_lost: sum((result) => result.ackedLost),
    acked_events_checked: sum((result) => result.lastAck + 1),
    unacked_events_kept: sum((result) => result.unackedKept),
    holes_after_recovery: sum((result) => result.holes),
    foreign_lines: sum((result) => result.foreignLines),
    torn_tails_repaired: sum((result) => (result.tornTailBytes > 0 ? 1 : 0)),
    repair_events_appended: sum((result) => result.repairs),
    unrepaired_dangling_tool_calls: sum((result) => result.unrepairedDangling),
    duplicate_synthetic_results: sum((result) => result.duplicateSynthetic),
    open_failures: sum((result) => (result.openError === null ? 0 : 1)),
    finished_before_kill: sum((result) => (result.finishedBeforeKill ? 1 : 0)),
  }
}

/** Every invariant of one W1 round; `label` names the seed so a failure can be replayed. */
export function expectSurvived(result: KillRoundResult, label: string): void {
  expect({ label, openError: result.openError }).toEqual({ label, openError: null })
  expect({ label, ackedLost: result.ackedLost }).toEqual({ label, ackedLost: 0 })
  expect({ label, foreignLines: result.foreignLines, holes: result.holes }).toEqual({
    label,
    foreignLines: 0,
    holes: 0,
  })
  expect({
    label,
    unrepairedDangling: result.unrepairedDangling,
    duplicateSynthetic: result.duplicateSynthetic,
  }).toEqual({
    label,
    unrepairedDangling: 0,
    duplicateSynthetic: 0,
  })
  expect(result.lastWorkloadSeq).toBeGreaterThanOrEqual(result.lastAck)
}
