/**
 * What every chaos worker process shares (`worker.ts`, `claude-worker.ts`): its config from
 * argv, the line protocol on stdout, the journaled tool body with its fault points, the JSONL
 * store's `flush` fault, lease handling on open, resume timing, and the session loop. One
 * import per process: its state (the fault fired, the flush armed) is the process's.
 */
import { appendFileSync, closeSync, existsSync, fsyncSync, openSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'

import type { SessionStore } from '@agent-ledger/session-store'
import type { FsOps } from '@agent-ledger/session-store-jsonl'

import { openJournal } from './journal.ts'
import { nextStep, sessionPlan } from './plan.ts'
import type { Fault, FaultPoint, Subject, ToolName } from './plan.ts'

/** What the driver tells a worker. */
export interface WorkerConfig {
  readonly subject: Subject
  /** A JSONL root, a `postgres://` URL, or the baseline's directory. */
  readonly target: string
  readonly journalDir: string
  readonly effectsDir: string
  /** The worker's name: its journal file's. */
  readonly name: string
  readonly seed: number
  readonly sessions: readonly string[]
  /** Sessions an earlier worker opened: their open here is a resume (latency measured). */
  readonly touched: readonly string[]
  readonly leaseMs: number
  readonly fault: Fault | null
  /** Take live leases over at once (the driver's takeover fault). */
  readonly takeover: boolean
  /** The file whose existence ends a stopped fault's wait. */
  readonly releaseFile: string
  /** `claude-agent-sdk`: the SDK's defaults (batched mirroring, tools at once) instead of write-ahead. */
  readonly sdkDefaults?: boolean
}

export const config = JSON.parse(process.argv[2]!) as WorkerConfig
export const owner = `chaos:${hostname()}:${process.pid}`
export const say = (line: string): void => void process.stdout.write(`${line}\n`)
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
const journal = openJournal(config.journalDir, config.name)

const { SessionStoreError } = await import('@agent-ledger/session-store')

let fired = false
/** The fault armed for the next JSONL log write (the `flush` point). */
let flushArmed = false

/** Whether this worker's fault is here; marks it fired. */
export function faultHere(point: FaultPoint, session: string, step: number): boolean {
  const fault = config.fault
  if (fired || fault === null || fault.point !== point || fault.session !== session || fault.step !== step)
    return false
  fired = true
  return true
}

/** Announces the fault and waits: for ever (the driver kills), or until released (a stop). */
export async function atFault(point: FaultPoint, session: string): Promise<void> {
  say(`FAULT ${point} ${session}`)
  if (config.fault!.kind === 'kill') await new Promise(() => setInterval(() => undefined, 1000))
  while (!existsSync(config.releaseFile)) await sleep(10)
}

/** A tool's real side effect: an fsynced append of the call id to the session's effects file. */
function sideEffect(session: string, callId: string, tool: ToolName): void {
  const fd = openSync(join(config.effectsDir, `${session}.log`), 'a')
  try {
    appendFileSync(fd, `${tool} ${callId}\n`)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/** The body every tool runs: journal `started`, the side effect, journal `finished`, with the fault points. */
export async function runTool(session: string, callId: string, tool: ToolName): Promise<string> {
  const step = nextStep(session, [callId]) - 1
  if (faultHere('before-tool', session, step)) await atFault('before-tool', session)
  journal.record({ callId, phase: 'started', worker: config.name })
  if (faultHere('in-tool', session, step)) await atFault('in-tool', session)
  sideEffect(session, callId, tool)
  journal.record({ callId, phase: 'finished', worker: config.name })
  if (faultHere('after-tool', session, step)) await atFault('after-tool', session)
  if (faultHere('flush', session, step)) await flushFault(session)
  return `${tool} done for ${callId}`
}

/** The `flush` point: on JSONL the next log write stops halfway; elsewhere the save that follows races a kill. */
async function flushFault(session: string): Promise<void> {
  if (config.subject.kind === 'ledger' && config.subject.store === 'jsonl') flushArmed = true
  else if (config.subject.kind === 'ledger')
    say(`FAULT flush ${session}`) // PostgreSQL: the kill races the append
  else await atFault('flush', session) // baselines: the save after this step is held (the process dies before it)
}

/** The real file system, with the `flush` fault inside the write of a session log. */
const faultyFs = (nodeFsOps: FsOps): FsOps => ({
  ...nodeFsOps,
  open: async (path, flags, mode) => {
    const handle = await nodeFsOps.open(path, flags, mode)
    if (!path.endsWith('.jsonl')) return handle
    // nodeFsOps' handles are plain objects of closures: spreading one keeps every operation.
    return {
      ...handle,
      write: async (buffer, position) => {
        if (!flushArmed || buffer.length < 2) return handle.write(buffer, position)
        flushArmed = false
        if (config.fault!.kind !== 'kill') {
          // A stop lands between the store's checks and its one write() (a write() is not split).
          await atFault('flush', path)
          return handle.write(buffer, position)
        }
        // A kill lands halfway: the bytes of a torn tail, never fsynced.
        const half = Math.floor(buffer.length / 2)
        await handle.write(buffer.subarray(0, half), position)
        return atFault('flush', path)
      },
    }
  },
})

/** The call ids of the plan step a model asks for next, or the final answer. */
export function respond(session: string, callIds: Iterable<string>): { id: string; tool: ToolName }[] | null {
  const plan = sessionPlan(config.seed, session)
  const step = nextStep(session, callIds)
  return step < plan.length ? [...plan[step]!.calls] : null
}

/** The first `code` on an error or its causes, or `-`. */
function codeOf(error: unknown): string {
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 8; depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string') return code
    current = (current as { cause?: unknown }).cause
  }
  return '-'
}

/** Whether the process named by a lease owner (`chaos:<host>:<pid>`) is gone from this host. */
function holderGone(holder: unknown): boolean {
  const match = /^chaos:(.*):(\d+)$/.exec(String(holder))
  if (match === null || match[1] !== hostname()) return false
  try {
    process.kill(Number(match[2]), 0)
    return false
  } catch {
    return true
  }
}

/**
 * Opens a session through an adapter: a lease whose holder is gone is taken over, a live one
 * is waited out until it expires (a stopped worker's), unless the driver said take over.
 * Returns when the successful attempt started (`performance.now()`: a wait for a lease is not
 * part of a resume).
 */
export async function openLeased<T>(
  open: (takeover: boolean) => Promise<T>,
): Promise<{ opened: T; started: number }> {
  const timed = async (takeover: boolean): Promise<{ opened: T; started: number }> => {
    const started = performance.now()
    return { opened: await open(takeover), started }
  }
  for (let attempt = 0; ; attempt++) {
    try {
      return await timed(config.takeover)
    } catch (error) {
      if (!SessionStoreError.is(error, 'SESSION_LOCKED') || attempt > 100) throw error
      const { holder, expiresAt } = error.details as { holder: unknown; expiresAt: string }
      if (holderGone(holder)) return await timed(true)
      await sleep(Math.min(2000, Math.max(10, Date.parse(expiresAt) - Date.now() + 10)))
    }
  }
}

/** A resume being timed: from its open (the successful attempt) to its first model request. */
let resuming: { readonly session: string; readonly started: number; readonly events: number } | null = null

/** Starts timing a resume of `session` (one an earlier worker had opened) at `started`. */
export function beginResume(session: string, started: number, events: number): void {
  resuming = config.touched.includes(session) ? { session, started, events } : null
}

/** The model was asked: a pending resume's time, open to first request ready, is reported. */
export function modelRequestReady(session: string): void {
  if (resuming?.session !== session) return
  say(`RESUME ${session} ${(performance.now() - resuming.started).toFixed(3)} ${resuming.events}`)
  resuming = null
}

/** Opens a session and reports it; a resume starts being timed. */
export async function timedOpen<T extends { writer: { durableSeq: number } }>(
  session: string,
  open: (takeover: boolean) => Promise<T>,
): Promise<T> {
  const { opened, started } = await openLeased(open)
  say(`OPENED ${session}`)
  beginResume(session, started, opened.writer.durableSeq + 1)
  return opened
}

export async function openStore(): Promise<SessionStore & { close(): Promise<void> }> {
  if (config.subject.kind === 'ledger' && config.subject.store === 'postgres') {
    const { createSessionStore } = await import('@agent-ledger/session-store')
    const { openPostgresBackend } = await import('@agent-ledger/session-store-postgres')
    return createSessionStore({
      backend: await openPostgresBackend({ connectionString: config.target }),
      clock: () => new Date().toISOString(),
      owner,
      leaseMs: config.leaseMs,
    })
  }
  const { createJsonlStore, nodeFsOps } = await import('@agent-ledger/session-store-jsonl')
  return createJsonlStore({ root: config.target, owner, leaseMs: config.leaseMs, fs: faultyFs(nodeFsOps) })
}

/**
 * Runs each of the config's sessions with `runOne` and reports it (`FINISHED`, `FENCED`,
 * `ERROR`), then closes the store and the journal, says `EXIT` and exits.
 */
export async function runSessions(
  store: { close(): Promise<void> } | null,
  runOne: (id: string) => Promise<void>,
): Promise<never> {
  for (const id of config.sessions) {
    try {
      await runOne(id)
      say(`FINISHED ${id}`)
    } catch (error) {
      if (codeOf(error) === 'FENCED') say(`FENCED ${id}`)
      else say(`ERROR ${id} ${codeOf(error)} ${String(error).replaceAll('\n', ' ').slice(0, 300)}`)
    }
  }
  await store?.close().catch(() => undefined)
  journal.close()
  say('EXIT')
  process.exit(0)
}
