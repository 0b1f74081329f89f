/**
 * The shared part of the crash tests (W1, W2): create a session, regenerate what the seeded
 * workload must have produced, and check a crashed session after reopening it.
 *
 * Every check here counts instead of asserting, so a crash suite can report
 * `acked_events_lost`, `holes_after_recovery`, `unrepaired_dangling_tool_calls` and
 * `duplicate_synthetic_results` as numbers (RELIABILITY section 8), and then assert them.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir, uptime } from 'node:os'
import { join } from 'node:path'

import type { SessionWriter } from '@agent-ledger/session-store'

import { createJsonlStore } from '../../src/index.ts'
import { LOG_FILE_NAME } from '../../src/format.ts'
import type { FsOps, JsonlStore } from '../../src/index.ts'
import { expect } from 'vitest'

import { spawnBundledChild } from './children.ts'
import { createPowerLossRecorder, seededRandom } from './fault-fs.ts'
import type { Damage, PowerLossRecorder } from './fault-fs.ts'
import { workload, WORKLOAD_HEADER } from './workload.ts'

/** The constant clock every crash workload uses, so event bytes depend on the seed only. */
const CRASH_CLOCK = (): string => '2026-01-01T00:00:00.000Z'

/**
 * Options of `createJsonlStore` shared by the crash children, the references and the checks:
 * the constant clock, and no writer-lock heartbeat (the core writer flushes only when asked).
 */
export const CRASH_STORE_OPTIONS = {
  clock: CRASH_CLOCK,
  jsonl: { lock: { heartbeatMs: 0 } },
} as const

/** The one store API (the core over the JSONL backend) on `root`, with {@link CRASH_STORE_OPTIONS}. */
export function crashStore(root: string, fs?: FsOps): JsonlStore {
  return createJsonlStore({ root, ...CRASH_STORE_OPTIONS, ...(fs === undefined ? {} : { fs }) })
}

/** Bytes of torn tail the backend dropped (and quarantined) while granting `writer` its lease. */
export function tornTailBytes(writer: SessionWriter): number {
  return writer.recovery.backendRepairs
    .filter((repair) => repair.kind === 'torn-tail')
    .reduce((total, repair) => total + (repair.droppedBytes ?? 0), 0)
}

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
  const store = crashStore(root, fs)
  try {
    const writer = await store.create({ id, header: WORKLOAD_HEADER })
    await writer.close()
  } finally {
    await store.close()
  }
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
    const store = crashStore(root)
    const writer = await store.create({ id: options.id, header: WORKLOAD_HEADER })
    for (const event of workload(options.seed, options.count)) writer.append(event)
    await writer.close()
    await store.close()
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
  /** The workload's reference lines, when the caller already has them (at least as many as the file holds). */
  readonly reference?: readonly Buffer[]
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
  const reference =
    options.reference ?? (await referenceLines({ id, seed, count: Math.max(lastAck + 1, eventLinesBefore) }))
  let foreignLines = 0
  for (let index = 0; index < raw.lines.length; index += 1) {
    if (!raw.lines[index]!.equals(reference[index] ?? Buffer.alloc(0))) foreignLines += 1
  }
  const store = crashStore(root)
  let tornTail = 0
  let repairs = 0
  let openError: string | null = null
  try {
    const writer = await store.openWriter(id)
    tornTail = tornTailBytes(writer)
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
  await store.close()
  return {
    ackedLost,
    unackedKept: Math.max(0, lastWorkloadSeq - lastAck),
    foreignLines,
    holes,
    tornTailBytes: tornTail,
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
  const run = await runCrashWriter(root, id, round)
  if (run.signal !== 'SIGKILL' && !run.finishedBeforeKill) {
    throw new Error(
      `crash-writer ended without SIGKILL (code ${String(run.code)}): ${run.stderr.slice(-2000)}`,
    )
  }
  const { lastAck } = run
  const check = await checkCrashedSession({ root, id, seed: round.seed, lastAck })
  return {
    ...check,
    lastAck,
    acks: run.acks,
    signal: run.signal,
    finishedBeforeKill: run.finishedBeforeKill,
  }
}

/** What the writer child (`fixtures/children/crash-writer.ts`) did before it died or finished. */
export interface CrashWriterRun {
  readonly lastAck: number
  readonly acks: number
  readonly signal: string | null
  readonly code: number | null
  readonly finishedBeforeKill: boolean
  readonly stderr: string
}

/**
 * Runs the writer child on an existing session (plain or `.zstd`: the child wraps either log
 * file for `CRASH_AT`), SIGKILLs it after `round.killAfterMs` unless a named point kills it,
 * and collects its `ACK` lines.
 */
export async function runCrashWriter(root: string, id: string, round: KillRound): Promise<CrashWriterRun> {
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
  return {
    lastAck: acks.length === 0 ? -1 : Math.max(...acks),
    acks: acks.length,
    signal: exit.signal,
    code: exit.code,
    finishedBeforeKill: child.lines.some((line) => line.startsWith('DONE ')),
    stderr: child.stderr(),
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

/** A W2 workload run through the power-loss recorder. */
export interface PowerLossRun {
  readonly recorder: PowerLossRecorder
  readonly id: string
  readonly seed: number
  /** After each resolved flush: the recorder's op count at that moment and the acked seq. */
  readonly acks: readonly { readonly opCount: number; readonly seq: number }[]
  /** The workload's reference lines (header + every workload event). */
  readonly reference: readonly Buffer[]
}

/**
 * Runs the workload in this process through a {@link PowerLossRecorder} on `root`: create,
 * `events` appends with a flush every `flushEvery`, close; with `reopen`, then an
 * open-for-write (which repairs the dangling calls) and a close.
 *
 * @param root - An empty directory (the store root).
 * @param options - Seed, event count, flush interval, reopen phase.
 * @returns The recorder and the acknowledgements.
 */
export async function runPowerLossWorkload(
  root: string,
  options: {
    readonly seed: number
    readonly events: number
    readonly flushEvery: number
    readonly reopen: boolean
  },
): Promise<PowerLossRun> {
  const id = `w2-${options.seed}`
  const recorder = await createPowerLossRecorder(root)
  const store = crashStore(root, recorder)
  const acks: { opCount: number; seq: number }[] = []
  const writer = await store.create({ id, header: WORKLOAD_HEADER })
  let appended = 0
  for (const event of workload(options.seed, options.events)) {
    writer.append(event)
    appended += 1
    if (appended % options.flushEvery === 0 || appended === options.events) {
      const { durableSeq } = await writer.flush()
      acks.push({ opCount: recorder.opCount, seq: durableSeq })
    }
  }
  await writer.close()
  if (options.reopen) {
    const again = await store.openWriter(id)
    await again.close()
  }
  await store.close()
  const reference = await referenceLines({ id, seed: options.seed, count: options.events })
  return { recorder, id, seed: options.seed, acks, reference }
}

/**
 * What a reboot does to the never-fsynced writer lock in a power-loss image: its boot id is
 * another one and its mtime is before the boot (see writer-lock.ts).
 */
function rebootLock(sessionDirectory: string): void {
  const path = join(sessionDirectory, 'writer.lock')
  if (!existsSync(path)) return
  try {
    const record = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>
    writeFileSync(path, JSON.stringify({ ...record, bootId: '00000000-0000-0000-0000-000000000000' }))
  } catch {
    // Empty or garbled (it was never fsynced): left as the power loss made it.
  }
  const beforeBoot = (Date.now() - uptime() * 1000 - 60_000) / 1000
  utimesSync(path, beforeBoot, beforeBoot)
}

/** The figures of one power-loss image. */
export interface PowerLossImageResult extends CrashCheck {
  readonly opIndex: number
  readonly damage: Damage
  readonly lastAck: number
  /** 1 when the log is visible without a complete valid header line (must be 0). */
  readonly headerless: number
  /** Temp files (`.tmp-*`) still in the session directory after an open for write (must be 0). */
  readonly leftoverTemps: number
  /** False when the session was not visible in the image (and nothing was acked). */
  readonly visible: boolean
}

/**
 * Materialises the power-loss image at `opIndex` with `damage`, reboots its lock, and
 * checks it like a W1 crash.
 *
 * @param run - The recorded workload.
 * @param image - Op index, damage, seed, and an empty target directory.
 * @returns The figures.
 */
export async function checkPowerLossImage(
  run: PowerLossRun,
  image: {
    readonly opIndex: number
    readonly damage: Damage
    readonly seed: number
    readonly target: string
  },
): Promise<PowerLossImageResult> {
  const { opIndex, damage, target } = image
  await run.recorder.materialise(opIndex, { damage, seed: image.seed }, target)
  const sessionDirectory = join(target, run.id)
  rebootLock(sessionDirectory)
  const lastAck = run.acks
    .filter((ack) => ack.opCount <= opIndex)
    .reduce((max, ack) => Math.max(max, ack.seq), -1)
  const logPath = join(sessionDirectory, LOG_FILE_NAME)
  const visible = existsSync(logPath)
  let headerless = 0
  if (visible) {
    const first = splitLines(readFileSync(logPath)).lines[0]
    let header: unknown
    try {
      header = first === undefined ? undefined : JSON.parse(first.toString('utf8'))
    } catch {
      header = undefined
    }
    if ((header as { format?: unknown } | undefined)?.format !== 'agent-ledger.session') headerless = 1
  }
  const base = { opIndex, damage, lastAck, headerless, visible }
  if (!visible) {
    const missing = lastAck >= 0 ? lastAck + 1 : 0
    return {
      ...base,
      ackedLost: missing,
      unackedKept: 0,
      foreignLines: 0,
      holes: 0,
      tornTailBytes: 0,
      repairs: 0,
      unrepairedDangling: 0,
      duplicateSynthetic: 0,
      lastWorkloadSeq: -1,
      openError: null,
      leftoverTemps: 0,
    }
  }
  const check = await checkCrashedSession({
    root: target,
    id: run.id,
    seed: run.seed,
    lastAck,
    reference: run.reference,
  })
  const leftoverTemps =
    check.openError === null
      ? readdirSync(sessionDirectory).filter((name) => name.startsWith('.tmp-')).length
      : 0
  return { ...base, ...check, leftoverTemps }
}
