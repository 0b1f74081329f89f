/**
 * The fault driver: runs sessions over K worker processes (`worker.ts`), faults them at seeded
 * points (SIGKILL; SIGSTOP past the lease then SIGCONT; SIGSTOP with a takeover by another
 * worker then SIGCONT), starts a fresh worker after each fault to resume what is unfinished,
 * and at the end of each round hands the journals and the sessions to `checkRun`.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { openAiSdkSession, fromModelMessages } from '@agent-ledger/ai-sdk'
import { itemToWire, openAgentsSession } from '@agent-ledger/openai-agents'
import { createSessionStore } from '@agent-ledger/session-store'
import type { SessionStore } from '@agent-ledger/session-store'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { openPostgresBackend } from '@agent-ledger/session-store-postgres'
import type { WireMessage } from '@agent-ledger/session-events'
import type { ModelMessage } from 'ai'

import { spawnTsChild } from '../../../tooling/adapters/child.ts'
import type { TsChild } from '../../../tooling/adapters/child.ts'
import { checkRun } from './checker.ts'
import type { ChaosCounts, CheckedSession, LoggedEvent } from './checker.ts'
import { readJournals } from './journal.ts'
import { hashSeed, pickFault, Random } from './plan.ts'
import type { FaultKind, Subject } from './plan.ts'
import type { WorkerConfig } from './worker.ts'

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
  readonly badRounds: readonly { readonly round: number; readonly counts: ChaosCounts }[]
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** A running worker and what it said. */
interface Running {
  readonly child: TsChild
  readonly lines: string[]
  readonly exited: Promise<void>
  /** Resolves with the fault's point at `FAULT`, or null at exit. */
  readonly faulted: Promise<string | null>
}

function startWorker(config: WorkerConfig): Running {
  const child = spawnTsChild(new URL('./worker.ts', import.meta.url), [JSON.stringify(config)])
  const lines: string[] = []
  let buffered = ''
  let onFault: (point: string | null) => void = () => undefined
  const faulted = new Promise<string | null>((resolve) => (onFault = resolve))
  child.child.stdout!.on('data', (chunk: string) => {
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

/** One worker slot of a round. */
interface Slot {
  readonly base: Omit<WorkerConfig, 'sessions' | 'touched' | 'fault' | 'takeover' | 'name' | 'releaseFile'>
  readonly slot: string
  readonly sessions: readonly string[]
  readonly random: Random
  readonly options: Required<Pick<ChaosOptions, 'faultsPerSlot' | 'kinds' | 'leaseMs'>>
  readonly log: RoundLog
  readonly scratch: string
}

/** One slot: a chain of worker processes over the same sessions, each faulted at most once. */
async function runSlot({ base, slot, sessions, random, options, log, scratch }: Slot): Promise<void> {
  let process = 0
  const config = (fault: WorkerConfig['fault'], takeover: boolean): WorkerConfig => {
    process += 1
    return {
      ...base,
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
      worker.child.child.kill('SIGKILL')
      await worker.exited
      absorb(log, worker.lines)
      continue
    }
    // A stop: the worker is frozen where it stands, its lease running out (or taken over).
    worker.child.child.kill('SIGSTOP')
    if (fault.kind === 'stop') await sleep(options.leaseMs + 50)
    absorb(log, worker.lines)
    const replacement = startWorker(config(null, fault.kind === 'takeover'))
    await replacement.exited
    absorb(log, replacement.lines)
    writeFileSync(workerConfig.releaseFile, '')
    worker.child.child.kill('SIGCONT')
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

/** The wire history of a baseline's saved array, and its entries as events (seq = array index). */
function baselineSession(
  subject: Subject,
  file: string,
  saved: { id: string; acked: number },
): CheckedSession {
  const { id, acked } = saved
  let entries: unknown[]
  try {
    entries = JSON.parse(readFileSync(file, 'utf8')) as unknown[]
  } catch {
    entries = [] // never saved (or an unreadable save): the history is empty
  }
  const events: LoggedEvent[] = []
  const wire: WireMessage[] = []
  entries.forEach((entry, seq) => {
    const messages =
      subject.kind === 'baseline' && subject.baseline === 'ai-sdk-recipe'
        ? fromModelMessages([entry as ModelMessage], { unsupported: 'placeholder' }).map((e) => e.message)
        : [itemToWire(entry as Parameters<typeof itemToWire>[0])]
    for (const message of messages) {
      const previous = wire.at(-1)
      // Parallel function_call items are one assistant message on the wire.
      if (
        message.role === 'assistant' &&
        message.tool_calls !== undefined &&
        previous?.role === 'assistant' &&
        previous.tool_calls !== undefined &&
        (message.content ?? '') === ''
      )
        wire[wire.length - 1] = { ...previous, tool_calls: [...previous.tool_calls, ...message.tool_calls] }
      else wire.push(message)
      events.push({ seq, type: message.role === 'tool' ? 'tool/result' : 'message', data: { message } })
    }
  })
  return { id, events, ackedSeq: acked, nextRequest: wire }
}

async function openLedgerStore(
  subject: Subject & { kind: 'ledger' },
  target: string,
): Promise<SessionStore & { close(): Promise<void> }> {
  const owner = `chaos-checker:${globalThis.process.pid}`
  if (subject.store === 'postgres')
    return createSessionStore({
      backend: await openPostgresBackend({ connectionString: target }),
      clock: () => new Date().toISOString(),
      owner,
    })
  return createJsonlStore({ root: target, owner })
}

/** Reads a ledger session back: its events, then the next request as the adapter derives it on open. */
async function ledgerSession(
  store: SessionStore,
  subject: Subject & { kind: 'ledger' },
  saved: { id: string; acked: number },
): Promise<CheckedSession> {
  const { id, acked } = saved
  // The good prefix even of a damaged log: a damaged session still counts what it holds.
  const read = await store.openReader(id, { allowDamaged: true }).catch((error: unknown) => error)
  const lastSeq = read instanceof Error ? -1 : (read as { lastSeq: number }).lastSeq
  const events: LoggedEvent[] = []
  if (lastSeq >= 0) for await (const event of store.readEvents(id, { toSeq: lastSeq })) events.push(event)
  try {
    const session =
      subject.adapter === 'ai-sdk'
        ? await openAiSdkSession(store, id, { create: false, takeover: true })
        : await openAgentsSession(store, id, { takeover: true, create: false })
    const nextRequest = session.writer.deriveMessages()
    await session.close()
    return { id, events, ackedSeq: acked, nextRequest }
  } catch (error) {
    return { id, events, ackedSeq: acked, nextRequest: [], openError: String(error) }
  }
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
  const badRounds: { round: number; counts: ChaosCounts }[] = []
  let unfenced = 0
  let unfinished = 0
  let sessionsRun = 0
  const runId = (options.seed >>> 0).toString(36)
  for (let round = 0; round < rounds; round++) {
    const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-chaos-'))
    try {
      const journalDir = join(scratch, 'journal')
      const effectsDir = join(scratch, 'effects')
      const storeDir = join(scratch, 'store')
      for (const dir of [journalDir, effectsDir, storeDir]) mkdirSync(dir)
      const target = subject.kind === 'ledger' && subject.store === 'postgres' ? options.pgUrl! : storeDir
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
        target,
        journalDir,
        effectsDir,
        seed: options.seed,
        leaseMs: slotOptions.leaseMs,
      }
      const slots = Array.from({ length: workers }, (_, slot) =>
        ids.filter((_, index) => index % workers === slot),
      ).filter((list) => list.length > 0)
      await Promise.all(
        slots.map((list, slot) =>
          runSlot({
            base,
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
        const store = await openLedgerStore(subject, target)
        try {
          for (const id of ids)
            sessions.push(await ledgerSession(store, subject, { id, acked: log.acked.get(id) ?? -1 }))
        } finally {
          await store.close()
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
        badRounds.push({ round, counts: roundCounts })
      counts = add(counts, roundCounts)
      resumes.push(...log.resumes)
      for (const [key, value] of log.faults) faults[key] = (faults[key] ?? 0) + value
      for (const [key, value] of log.refusals) refusals[key] = (refusals[key] ?? 0) + value
      errors.push(...log.errors.slice(0, Math.max(0, 10 - errors.length)))
      unfenced += log.unfenced
      unfinished += ids.filter((id) => !log.finished.has(id)).length
    } finally {
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
