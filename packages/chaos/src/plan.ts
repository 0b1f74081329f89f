/**
 * What a chaos run does, deterministic from its seed: each session's tool plan (the scripted
 * model's steps and calls), and where each worker process is faulted. Pure: a seeded PRNG, no
 * clock, no I/O.
 */

/** The agent-ledger adapters a worker runs. */
export type Adapter = 'ai-sdk' | 'openai-agents' | 'claude-agent-sdk'

/** The frameworks' own storage, as their docs show users building it. */
export type Baseline = 'ai-sdk-recipe' | 'agents-memory' | 'agents-file'

/** What a run is measured on: an adapter over an agent-ledger store, or a baseline. */
export type Subject =
  | { readonly kind: 'ledger'; readonly adapter: Adapter; readonly store: 'jsonl' | 'postgres' }
  | { readonly kind: 'baseline'; readonly baseline: Baseline }

/**
 * Where a fault lands:
 * - `model`: inside a model response, before it reaches the framework;
 * - `before-tool`: after the call is logged, before the tool journals `started`;
 * - `in-tool`: after `started` and half the side effect, before `finished`;
 * - `after-tool`: after `finished`, before the tool returns its result;
 * - `flush`: inside the store's write of a batch (JSONL: half the bytes written, not synced;
 *   elsewhere: at the save that follows a tool's result).
 */
export type FaultPoint = 'model' | 'before-tool' | 'in-tool' | 'after-tool' | 'flush'

/**
 * What the driver does there: `kill` (SIGKILL, then a fresh worker resumes), `stop` (SIGSTOP past
 * the lease: the lease expires, a fresh worker takes the session over and finishes it, then
 * SIGCONT: the stopped one must be fenced), `takeover` (SIGSTOP, a fresh worker takes the live
 * lease over at once, then SIGCONT), `disk-full` (JSONL on a small tmpfs: the file system is
 * filled while the worker waits at the point, it goes on and meets ENOSPC; the space is freed
 * and a fresh worker resumes), `failover` (PostgreSQL: the primary SIGKILLed while the worker
 * waits at the point, the synchronous standby promoted; fresh workers connect to it and resume).
 */
export type FaultKind = 'kill' | 'stop' | 'takeover' | 'disk-full' | 'failover'

/** One fault of one worker process: at the `step`-th model step of `session`, at `point`. */
export interface Fault {
  readonly session: string
  readonly step: number
  readonly point: FaultPoint
  readonly kind: FaultKind
}

/** One model step of a session's plan: the tool calls it makes (1 or 2, in parallel). */
export interface PlanStep {
  readonly calls: readonly { readonly id: string; readonly tool: ToolName }[]
}

/** The tools every worker offers: each does a real side effect (an fsynced append to a file). */
export type ToolName = 'write_record' | 'send_notice'

/** A seeded PRNG (mulberry32): the same seed, the same numbers. */
export class Random {
  #state: number

  constructor(seed: number) {
    this.#state = seed >>> 0
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0
    let t = this.#state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1))
  }

  /** One of `items`. */
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!
  }
}

/** A number from a string (FNV-1a), to derive a session's own seed from the run's. */
export function hashSeed(text: string): number {
  let hash = 0x811c9dc5
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index)
    hash = Math.imul(hash, 0x01000193)
  }
  return hash >>> 0
}

/**
 * A session's plan: 2 to 5 steps of 1 or 2 tool calls, from the run's seed and the session id.
 * Call ids are `<session>-s<step>-c<index>`: a model that sees step k's calls in its history
 * moves on to step k+1, one that does not (a history that lost them) asks for step k again.
 *
 * @param seed - The run's seed.
 * @param session - The session id.
 * @returns The steps.
 */
export function sessionPlan(seed: number, session: string): PlanStep[] {
  // A namespace before `chaos-` (a shared PostgreSQL server's run) does not change the plan.
  const random = new Random(hashSeed(`${seed}:${session.slice(Math.max(0, session.indexOf('chaos-')))}`))
  const steps: PlanStep[] = []
  const count = random.int(2, 5)
  for (let step = 0; step < count; step++) {
    const calls = random.next() < 0.3 ? 2 : 1
    steps.push({
      calls: Array.from({ length: calls }, (_, index) => ({
        id: `${session}-s${step}-c${index}`,
        tool: random.pick<ToolName>(['write_record', 'send_notice']),
      })),
    })
  }
  return steps
}

/** The final answer of a session whose plan is done: a session whose history ends with it is finished. */
export const DONE_TEXT = 'All steps done.'

/**
 * The step a model asks for next, from the call ids its request's history holds: one past the
 * highest step seen, 0 when none.
 *
 * @param session - The session id.
 * @param callIds - Every tool call id in the request's history.
 * @returns The step index.
 */
export function nextStep(session: string, callIds: Iterable<string>): number {
  const prefix = `${session}-s`
  let next = 0
  for (const id of callIds) {
    if (!id.startsWith(prefix)) continue
    const step = Number.parseInt(id.slice(prefix.length), 10)
    if (Number.isInteger(step)) next = Math.max(next, step + 1)
  }
  return next
}

const POINTS: readonly FaultPoint[] = ['model', 'before-tool', 'in-tool', 'after-tool', 'flush']

/**
 * A worker process's fault: on one of `sessions`, at a step its plan has, at a seeded point.
 *
 * @param random - The run's PRNG.
 * @param among - The run's seed (for the plans), the sessions the process will work on, the fault kinds to pick from.
 * @returns The fault.
 */
export function pickFault(
  random: Random,
  among: {
    readonly seed: number
    readonly sessions: readonly string[]
    readonly kinds: readonly FaultKind[]
  },
): Fault {
  const { seed, sessions, kinds } = among
  const session = random.pick(sessions)
  const plan = sessionPlan(seed, session)
  const point = random.pick(POINTS)
  // A model response exists for every step and for the final answer; tools only for the steps.
  const step = random.int(0, point === 'model' ? plan.length : plan.length - 1)
  return { session, step, point, kind: random.pick(kinds) }
}
