/**
 * The fault driver: runs sessions over K worker processes (`worker.ts`, `claude-worker.ts`), faults them at seeded
 * points (SIGKILL; SIGSTOP past the lease then SIGCONT; SIGSTOP with a takeover by another
 * worker then SIGCONT), starts a fresh worker after each fault to resume what is unfinished,
 * and at the end of each round hands the journals and the sessions to `checkRun`.
 */
import { spawn } from 'node:child_process'
import type { ChildProcessByStdio } from 'node:child_process'
import type { Readable } from 'node:stream'
import { cpSync, mkdirSync, mkdtempSync, realpathSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { ledgerSessionId } from '@agent-ledger/claude-agent-sdk'

import { claudeKey } from './claude-key.ts'
import { fillDisk, mountTmpfs, unmountTmpfs } from './disk.ts'
import { checkRun, providerProblems } from './checker.ts'
import type { ChaosCounts, CheckedSession } from './checker.ts'
import { readJournals } from './journal.ts'
import { hashSeed, pickFault, Random } from './plan.ts'
import type { FaultKind, Subject } from './plan.ts'
import { baselineSession, ledgerSession, openLedgerStore } from './readback.ts'
import { strayProcesses } from './strays.ts'
import type { WorkerConfig } from './worker-kit.ts'
import { launchArgs } from '../../../tooling/launch-args.ts'

/** The workers' entries, run through tooling/launch.mjs (bundled once, cached, rebuilt when a source changes). */
const WORKER_ENTRY = fileURLToPath(new URL('./worker.ts', import.meta.url))
const CLAUDE_WORKER_ENTRY = fileURLToPath(new URL('./claude-worker.ts', import.meta.url))

/** Options of {@link runChaos}. */
export interface ChaosOptions {
  readonly subject: Subject
  /** Sessions in all (each a tool-heavy agent run). */
  readonly runs: number
  readonly seed: number
  /** Worker processes running at once. */
  readonly workers?: number
  /** Sessions each worker slot is given per round. */
  readonly sessionsPerWorker?: number
  /** Faults per slot per round, at most (each one a worker process faulted once). */
  readonly faultsPerSlot?: number
  readonly kinds?: readonly FaultKind[]
  readonly leaseMs?: number
  /** The PostgreSQL server's URL, for `store: 'postgres'`. */
  readonly pgUrl?: string
  /** A prefix of every session id (a PostgreSQL server shared between runs); the plans do not change. */
  readonly namespace?: string
  /** Keep each round's directory (journals, effects, JSONL store) and print its path. */
  readonly keep?: boolean
  /** JSONL: the store on a tmpfs of this many MiB per round (the `disk-full` fault fills it). */
  readonly tmpfsMiB?: number
  /**
   * PostgreSQL, the `failover` fault: kills the primary, promotes its synchronous standby and
   * returns the new primary's URL; `prepare` (before each round) gives the primary a new
   * synchronous standby when it has none.
   */
  readonly failover?: { readonly fail: () => Promise<string>; readonly prepare: () => Promise<string> }
  /** `claude-agent-sdk`: run the SDK's defaults (batched mirroring, tools at once), not write-ahead. */
  readonly sdkDefaults?: boolean
  /**
   * The first round's number (0 unless told): a nonzero round of a longer run, rerun alone. The
   * round's number picks its session ids and its faults, so round `n` of a run is round `n` here.
   */
  readonly firstRound?: number
}

/** What a run measured. */
export interface ChaosResult {
  readonly subject: Subject
  readonly sessions: number
  readonly counts: ChaosCounts
  /** Each resumed open's duration in ms, and the session's events at that point. */
  readonly resumes: readonly { readonly ms: number; readonly events: number }[]
  /** Faults injected, by `kind point`. */
  readonly faults: Readonly<Record<string, number>>
  /** Workers stopped or taken over that finished their session after the takeover (must be 0 for agent-ledger). */
  readonly unfenced: number
  /** How stopped workers were refused on their session after SIGCONT, by error code (`FENCED`...). */
  readonly refusals: Readonly<Record<string, number>>
  /** Sessions that no worker finished (not a defect by itself; reported). */
  readonly unfinished: number
  /** `ERROR` lines of the workers (unexpected errors), first few. */
  readonly errors: readonly string[]
  /** The seeds of the rounds with a nonzero count, to rerun one alone. */
  readonly badRounds: readonly {
    readonly round: number
    readonly counts: ChaosCounts
    /** The sessions whose next request is provider-invalid, and why. */
    readonly invalid: readonly string[]
  }[]
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** A worker process, its exit and its stderr. */
interface WorkerProcess {
  readonly child: ChildProcessByStdio<null, Readable, Readable>
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  readonly output: () => { stdout: string; stderr: string }
  /** Signals the worker's process group (the worker and every child it started). */
  readonly signal: (name: NodeJS.Signals) => void
}

/** A running worker and what it said. */
interface Running {
  readonly child: WorkerProcess
  readonly lines: string[]
  readonly exited: Promise<void>
  /** Resolves with the fault's point at `FAULT`, or null at exit. */
  readonly faulted: Promise<string | null>
}

/**
 * A worker process: `worker.ts` (or `claude-worker.ts`) through the workspace's launcher (one
 * cached esbuild bundle), in a process group of its own: faults signal the group, so a child
 * the worker started (the Claude Agent SDK's CLI) is killed or stopped with it.
 */
function spawnWorker(config: WorkerConfig): WorkerProcess {
  const { subject } = config
  const entry =
    subject.kind === 'ledger' && subject.adapter === 'claude-agent-sdk' ? CLAUDE_WORKER_ENTRY : WORKER_ENTRY
  const child = spawn(process.execPath, launchArgs(entry, [JSON.stringify(config)]), {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  let stderr = ''
  child.stdout.setEncoding('utf8')
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  )
  const signal = (name: NodeJS.Signals): void => {
    try {
      process.kill(-child.pid!, name)
    } catch {
      // the group is gone (the worker and its children exited)
    }
  }
  return { child, exited, output: () => ({ stdout: '', stderr }), signal }
}

function startWorker(config: WorkerConfig): Running {
  const child = spawnWorker(config)
  const lines: string[] = []
  let buffered = ''
  let onFault: (point: string | null) => void = () => undefined
  const faulted = new Promise<string | null>((resolve) => (onFault = resolve))
  child.child.stdout.on('data', (chunk: string) => {
    buffered += chunk
    const parts = buffered.split('\n')
    buffered = parts.pop()!
    for (const line of parts) {
      if (process.env['CHAOS_DEBUG'] === '1') console.error(`${config.name}: ${line}`)
      lines.push(line)
      if (line.startsWith('FAULT ')) onFault(line.split(' ')[1]!)
    }
  })
  const exited = child.exited.then(({ code, signal }) => {
    if (code !== 0 && signal === null)
      lines.push(`ERROR worker exited ${code}: ${child.output().stderr.slice(-400).replaceAll('\n', ' ')}`)
    onFault(null)
  })
  return { child, lines, exited, faulted }
}

/** Per round: what the workers said. */
interface RoundLog {
  readonly acked: Map<string, number>
  readonly finished: Set<string>
  readonly touched: Set<string>
  readonly resumes: { ms: number; events: number }[]
  readonly faults: Map<string, number>
  readonly errors: string[]
  readonly refusals: Map<string, number>
  unfenced: number
}

function absorb(log: RoundLog, lines: readonly string[]): void {
  for (const line of lines) {
    const [word, id, a, b] = line.split(' ')
    if (word === 'ACK') log.acked.set(id!, Math.max(log.acked.get(id!) ?? -1, Number(a)))
    else if (word === 'FINISHED') log.finished.add(id!)
    else if (word === 'OPENED') log.touched.add(id!)
    else if (word === 'RESUME') log.resumes.push({ ms: Number(a), events: Number(b) })
    else if (word === 'ERROR') log.errors.push(line)
  }
}

/** A round's faults that act on the whole store (a full disk, a failover), and where the store is. */
interface RoundStore {
  /** The store's target now (a failover moves it to the promoted standby). */
  target: string
  /** Fills the store's file system until ENOSPC (JSONL on a tmpfs); `free` undoes it. */
  readonly fill?: () => void
  readonly free?: () => void
  readonly failover?: () => Promise<string>
}

/** One worker slot of a round. */
interface Slot {
  readonly base: Omit<
    WorkerConfig,
    'sessions' | 'touched' | 'fault' | 'takeover' | 'name' | 'releaseFile' | 'target'
  >
  readonly store: RoundStore
  readonly slot: string
  readonly sessions: readonly string[]
  readonly random: Random
  readonly options: Required<Pick<ChaosOptions, 'faultsPerSlot' | 'kinds' | 'leaseMs'>>
  readonly log: RoundLog
  readonly scratch: string
}

/** One slot: a chain of worker processes over the same sessions, each faulted at most once. */
async function runSlot({ base, store, slot, sessions, random, options, log, scratch }: Slot): Promise<void> {
  let process = 0
  const config = (fault: WorkerConfig['fault'], takeover: boolean): WorkerConfig => {
    process += 1
    return {
      ...base,
      target: store.target,
      name: `${slot}-p${process}`,
      sessions: sessions.filter((id) => !log.finished.has(id)),
      touched: [...log.touched],
      fault,
      takeover,
      releaseFile: join(scratch, `${slot}-p${process}.release`),
    }
  }
  for (let faults = 0; faults <= options.faultsPerSlot; faults++) {
    const remaining = sessions.filter((id) => !log.finished.has(id))
    if (remaining.length === 0) return
    const fault =
      faults < options.faultsPerSlot
        ? pickFault(random, { seed: base.seed, sessions: remaining, kinds: options.kinds })
        : null
    const workerConfig = config(fault, false)
    const worker = startWorker(workerConfig)
    const point = await worker.faulted
    if (point === null || fault === null) {
      await worker.exited
      absorb(log, worker.lines)
      if (fault === null) return
      continue // the fault's point was never reached (e.g. a session already done)
    }
    const key = `${fault.kind} ${fault.point}`
    log.faults.set(key, (log.faults.get(key) ?? 0) + 1)
    if (fault.kind === 'kill') {
      worker.child.signal('SIGKILL')
      await worker.exited
      absorb(log, worker.lines)
      continue
    }
    if (fault.kind === 'disk-full' || fault.kind === 'failover') {
      await storeFault(fault.kind, store, { worker, releaseFile: workerConfig.releaseFile, log })
      continue
    }
    // A stop: the worker is frozen where it stands, its lease running out (or taken over).
    worker.child.signal('SIGSTOP')
    if (fault.kind === 'stop') await sleep(options.leaseMs + 50)
    absorb(log, worker.lines)
    const replacement = startWorker(config(null, fault.kind === 'takeover'))
    await replacement.exited
    absorb(log, replacement.lines)
    writeFileSync(workerConfig.releaseFile, '')
    worker.child.signal('SIGCONT')
    const before = worker.lines.length
    await worker.exited
    const after = worker.lines.slice(before)
    // The stopped worker's own session: its refusal is the expected outcome, not an error.
    for (const line of after) {
      const [word, id, code] = line.split(' ')
      if (id !== fault.session || (word !== 'FENCED' && word !== 'ERROR')) continue
      const key = word === 'FENCED' ? 'FENCED' : code!
      log.refusals.set(key, (log.refusals.get(key) ?? 0) + 1)
    }
    absorb(
      log,
      after.filter((line) => !line.startsWith(`ERROR ${fault.session} `)),
    )
    // The frozen worker's session was finished by the replacement: if it was not fenced it
    // either wrote over the new owner or had nothing left to write. Only the first is a defect,
    // and the checker counts its consequences; `unfenced` counts a stale worker that said FINISHED.
    if (after.includes(`FINISHED ${fault.session}`) && !after.includes(`FENCED ${fault.session}`))
      log.unfenced += 1
  }
}

/** How long a worker may go on after a full disk or a failover before it is killed (a hang guard). */
const AFTER_STORE_FAULT_MS = 60_000

/**
 * A fault of the whole store while the worker waits at its point: the disk filled (then the
 * worker goes on and meets ENOSPC, and the space is freed once it has exited) or the primary
 * killed and its standby promoted (the worker goes on against a dead server; later workers get
 * the new primary). Its refusals on the way out are counted by code, not as errors.
 */
async function storeFault(
  kind: 'disk-full' | 'failover',
  store: RoundStore,
  faulted: { readonly worker: Running; readonly releaseFile: string; readonly log: RoundLog },
): Promise<void> {
  const { worker, releaseFile, log } = faulted
  if (kind === 'disk-full') store.fill!()
  else store.target = await store.failover!()
  writeFileSync(releaseFile, '')
  const guard = setTimeout(() => worker.child.signal('SIGKILL'), AFTER_STORE_FAULT_MS)
  await worker.exited
  clearTimeout(guard)
  if (kind === 'disk-full') store.free!()
  // What it said after the fault: its refusals, not errors.
  const at = worker.lines.findIndex((line) => line.startsWith('FAULT '))
  for (const line of worker.lines.slice(at + 1)) {
    const [word, , code] = line.split(' ')
    if (word !== 'ERROR' && word !== 'FENCED') continue
    const key = word === 'FENCED' ? 'FENCED' : code!
    log.refusals.set(key, (log.refusals.get(key) ?? 0) + 1)
  }
  absorb(log, [
    ...worker.lines.slice(0, at + 1),
    ...worker.lines.slice(at + 1).filter((line) => !line.startsWith('ERROR ')),
  ])
}

function add(a: ChaosCounts, b: ChaosCounts): ChaosCounts {
  return {
    duplicatedExecutions: a.duplicatedExecutions + b.duplicatedExecutions,
    forgottenActions: a.forgottenActions + b.forgottenActions,
    dishonestRepairs: a.dishonestRepairs + b.dishonestRepairs,
    ackedEventsLost: a.ackedEventsLost + b.ackedEventsLost,
    providerInvalidRequests: a.providerInvalidRequests + b.providerInvalidRequests,
    toolCallsStarted: a.toolCallsStarted + b.toolCallsStarted,
  }
}

const ZERO: ChaosCounts = {
  duplicatedExecutions: 0,
  forgottenActions: 0,
  dishonestRepairs: 0,
  ackedEventsLost: 0,
  providerInvalidRequests: 0,
  toolCallsStarted: 0,
}

/**
 * Runs `runs` sessions of one subject under faults, round by round (K slots of
 * `sessionsPerWorker` sessions), and checks each round.
 *
 * @param options - The subject, the number of runs, the seed and the fault mix.
 * @returns The counts and measurements.
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const workers = options.workers ?? 4
  const perWorker = options.sessionsPerWorker ?? 5
  const slotOptions = {
    faultsPerSlot: options.faultsPerSlot ?? 2,
    kinds: options.kinds ?? ['kill', 'kill', 'stop', 'takeover'],
    leaseMs: options.leaseMs ?? 1000,
  }
  const { subject } = options
  const perRound = workers * perWorker
  const rounds = Math.ceil(options.runs / perRound)
  let counts = ZERO
  const resumes: { ms: number; events: number }[] = []
  const faults: Record<string, number> = {}
  const errors: string[] = []
  const refusals: Record<string, number> = {}
  const badRounds: { round: number; counts: ChaosCounts; invalid: string[] }[] = []
  let unfenced = 0
  let unfinished = 0
  let sessionsRun = 0
  const runId = (options.seed >>> 0).toString(36)
  const firstRound = options.firstRound ?? 0
  for (let round = firstRound; round < firstRound + rounds; round++) {
    const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-chaos-'))
    let mounted: string | undefined
    try {
      const journalDir = join(scratch, 'journal')
      const effectsDir = join(scratch, 'effects')
      const diskDir = join(scratch, 'disk')
      for (const dir of [journalDir, effectsDir, diskDir]) mkdirSync(dir)
      if (options.tmpfsMiB !== undefined) {
        const refused = mountTmpfs(diskDir, options.tmpfsMiB)
        if (refused !== null) throw new Error(refused)
        mounted = diskDir
      }
      const storeDir = join(diskDir, 'store')
      mkdirSync(storeDir)
      const fillFile = join(diskDir, 'fill')
      const pgUrl = options.failover === undefined ? options.pgUrl : await options.failover.prepare()
      const store: RoundStore = {
        target: subject.kind === 'ledger' && subject.store === 'postgres' ? pgUrl! : storeDir,
        fill: () => fillDisk(fillFile),
        free: () => unlinkSync(fillFile),
        ...(options.failover === undefined ? {} : { failover: options.failover.fail }),
      }
      const count = Math.min(perRound, options.runs - sessionsRun)
      const ids = Array.from(
        { length: count },
        (_, index) => `${options.namespace ?? ''}chaos-${runId}-r${round}-s${index}`,
      )
      sessionsRun += count
      const log: RoundLog = {
        acked: new Map(),
        finished: new Set(),
        touched: new Set(),
        resumes: [],
        faults: new Map(),
        errors: [],
        refusals: new Map(),
        unfenced: 0,
      }
      const base = {
        subject,
        journalDir,
        effectsDir,
        seed: options.seed,
        leaseMs: slotOptions.leaseMs,
        ...(options.sdkDefaults === true ? { sdkDefaults: true } : {}),
      }
      const slots = Array.from({ length: workers }, (_, slot) =>
        ids.filter((_, index) => index % workers === slot),
      ).filter((list) => list.length > 0)
      await Promise.all(
        slots.map((list, slot) =>
          runSlot({
            base,
            store,
            slot: `w${slot}`,
            sessions: list,
            random: new Random(hashSeed(`${options.seed}:${round}:${slot}`)),
            options: slotOptions,
            log,
            scratch,
          }),
        ),
      )
      const sessions: CheckedSession[] = []
      if (subject.kind === 'ledger') {
        const checked = await openLedgerStore(subject, store.target)
        try {
          const cwd = realpathSync(effectsDir)
          for (const id of ids) {
            const stored = subject.adapter === 'claude-agent-sdk' ? ledgerSessionId(claudeKey(cwd, id)) : id
            sessions.push(
              await ledgerSession(checked, subject, { id, stored, acked: log.acked.get(id) ?? -1 }),
            )
          }
        } finally {
          await checked.close()
        }
      } else {
        for (const id of ids)
          sessions.push(
            baselineSession(subject, join(storeDir, `${id}.json`), { id, acked: log.acked.get(id) ?? -1 }),
          )
      }
      const roundCounts = checkRun(readJournals(journalDir), sessions)
      for (const checked of sessions)
        if (checked.openError !== undefined)
          log.errors.push(`CHECK ${checked.id} ${checked.openError.slice(0, 300)}`)
      if (
        roundCounts.duplicatedExecutions +
          roundCounts.forgottenActions +
          roundCounts.dishonestRepairs +
          roundCounts.ackedEventsLost +
          roundCounts.providerInvalidRequests >
        0
      )
        badRounds.push({
          round,
          counts: roundCounts,
          invalid: sessions.flatMap((checked) => {
            const problems = providerProblems(checked)
            return problems.length === 0 ? [] : [`${checked.id}: ${problems.join('; ').slice(0, 600)}`]
          }),
        })
      // A worker's child still running after its worker exited (its fault missed the group).
      for (const pid of strayProcesses(realpathSync(scratch))) {
        log.errors.push(`STRAY process ${pid} left running in the round's directory`)
        try {
          process.kill(pid, 'SIGKILL')
        } catch {
          // it exited meanwhile
        }
      }
      counts = add(counts, roundCounts)
      resumes.push(...log.resumes)
      for (const [key, value] of log.faults) faults[key] = (faults[key] ?? 0) + value
      for (const [key, value] of log.refusals) refusals[key] = (refusals[key] ?? 0) + value
      errors.push(...log.errors.slice(0, Math.max(0, 10 - errors.length)))
      unfenced += log.unfenced
      unfinished += ids.filter((id) => !log.finished.has(id)).length
    } finally {
      if (mounted !== undefined && options.keep === true)
        cpSync(mounted, join(scratch, 'disk-copy'), { recursive: true })
      if (mounted !== undefined) unmountTmpfs(mounted)
      if (options.keep === true) console.error(`kept ${scratch}`)
      else rmSync(scratch, { recursive: true, force: true })
    }
  }
  return {
    subject,
    sessions: sessionsRun,
    counts,
    resumes,
    faults,
    unfenced,
    refusals,
    unfinished,
    errors,
    badRounds,
  }
}
