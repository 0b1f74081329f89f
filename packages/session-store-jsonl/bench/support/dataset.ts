/**
 * Benchmark datasets of the store: realistic agent sessions written THROUGH the one store API
 * (`createJsonlStore` (the core over the JSONL backend) + `writer.append` + `writer.flush`),
 * cached on disk between runs.
 *
 * The events come from the seeded generator in `../generate-session.ts` (system prompt, user
 * turns, assistant messages with reasoning and tool calls, tool results from a few bytes to a
 * few hundred KB), with two additions a long agent session has:
 *
 * - multi-MB tool results: about every 16 MB of log, one tool result is replaced by a 1-4 MB
 *   dump (a log file with quoted JSON in it, so JSON escaping is exercised);
 * - compactions: at a turn end, when the model-visible history passes ~400,000 characters
 *   (~100k tokens), everything but the system prompt and the last turn is folded into a
 *   summary through `planCompaction` (the four events a harness appends).
 *
 * Datasets live in `os.tmpdir()/agent-ledger-bench-<hash>/`, the hash covering the generator
 * parameters, {@link DATASET_GENERATOR_VERSION} and the bytes the store's line encoder writes
 * for a fixed event (a format change invalidates the cache). A dataset is built in a
 * temporary sibling directory and renamed into place, so an interrupted build leaves no
 * half dataset behind.
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { SESSION_FORMAT_VERSION } from '@agent-ledger/session-events'
import type { EventInput, LoggedEvent } from '@agent-ledger/session-events'
import { planCompaction } from '@agent-ledger/session-projection'
import type { Projection } from '@agent-ledger/session-projection'

import { createJsonlStore } from '../../src/index.ts'
import { encodeEventLine, LOG_FILE_NAME } from '../../src/format.ts'
import { generateSessionEvents, generateSessionHeader } from '../generate-session.ts'
import type { GeneratedHeader } from '../generate-session.ts'

/** Bump when the generator's output changes (invalidates every cached dataset). */
// 2: written by the core over the JSONL backend (was the JSONL store API)
const DATASET_GENERATOR_VERSION = 2

const MB = 1_000_000
/** One multi-MB tool result per this many bytes of log. */
const HUGE_RESULT_EVERY_BYTES = 16 * MB
/** Model-visible characters past which a turn end compacts the history. */
const COMPACT_AT_CHARS = 400_000

/** One event to append, with the time the store's clock must stamp it with. */
export interface TimedInput {
  readonly input: EventInput
  readonly time: string
}

/**
 * The first `count` events of a dataset's log as writer inputs (the envelope without `seq`,
 * `crc` dropped) with their recorded times; fewer when the log holds fewer.
 *
 * @param file - The dataset's log.
 * @param count - How many events at most.
 * @returns The inputs and their times.
 */
export function readTimedInputs(file: string, count: number): TimedInput[] {
  const text = readFileSync(file, 'utf8')
  const inputs: TimedInput[] = []
  let start = text.indexOf('\n') + 1
  while (inputs.length < count) {
    const end = text.indexOf('\n', start)
    if (end === -1) break
    const {
      seq: _seq,
      time,
      crc: _crc,
      ...input
    } = JSON.parse(text.slice(start, end)) as Record<string, unknown>
    inputs.push({ input: input as unknown as EventInput, time: time as string })
    start = end + 1
  }
  return inputs
}

/** Parameters of one generated session. */
export interface AgentSessionOptions {
  /** Seed of the base generator. */
  readonly seed: number
  /** Approximate log size in bytes (the generator stops at the first turn end past it). */
  readonly targetBytes: number
}

/** mulberry32, the same small generator the base generator uses. */
function createRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const LOG_WORDS = (
  'store flush open read write lock seq frame offset buffer header projection replay compaction ' +
  'checkpoint tool result message turn event line error warning retry timeout durable fsync ' +
  'session writer reader scan repair torn tail quarantine generation migrate compress'
).split(' ')

/** A 1-4 MB text dump (a service log with quoted JSON payloads and a few non-ASCII characters). */
function hugeDump(random: () => number): string {
  const target = 1 * MB + Math.floor(random() * 3 * MB)
  const pick = (): string => LOG_WORDS[Math.floor(random() * LOG_WORDS.length)]!
  const lines: string[] = []
  let bytes = 0
  let clock = Date.UTC(2025, 0, 6, 9, 0, 0)
  for (let line = 0; bytes < target; line += 1) {
    clock += Math.floor(random() * 50)
    const level = random() < 0.9 ? 'INFO ' : random() < 0.7 ? 'WARN ' : 'ERROR'
    const payload = JSON.stringify({
      seq: line,
      op: pick(),
      path: `src/${pick()}/${pick()}.ts`,
      bytes: Math.floor(random() * 100_000),
      note: `${pick()} ${pick()} ${pick()} — ${pick()}`,
    })
    const text = `${new Date(clock).toISOString()} ${level} [${pick()}] ${pick()} ${pick()} ${payload}`
    lines.push(text)
    bytes += text.length + 1
  }
  return lines.join('\n')
}

interface MessageLike {
  readonly content?: unknown
  readonly reasoning_content?: unknown
  readonly tool_calls?: readonly { readonly function?: { readonly arguments?: unknown } }[]
}

/** Characters of a wire message the model would read (content, reasoning, call arguments). */
function visibleChars(message: MessageLike | undefined): number {
  if (message === undefined) return 0
  let chars = typeof message.content === 'string' ? message.content.length : 0
  if (typeof message.reasoning_content === 'string') chars += message.reasoning_content.length
  for (const call of message.tool_calls ?? []) {
    const args = call.function?.arguments
    if (typeof args === 'string') chars += args.length
  }
  return chars
}

/**
 * Generates a realistic agent session as inputs for a writer, in order.
 *
 * The caller must append every yielded input (in order, with the yielded time as the
 * store's clock) to a writer whose projection is `projection` before asking for the next:
 * compactions are planned on that projection, and seqs are predicted from it.
 *
 * @param options - Seed and approximate size.
 * @param projection - The projection of the session being written (e.g. `writer.projection`).
 * @returns The inputs with their times.
 */
export function* generateAgentSession(
  options: AgentSessionOptions,
  projection: Projection,
): Generator<TimedInput> {
  const random = createRandom(options.seed ^ 0x0b5e55ed)
  // Base seqs shift by the compaction events inserted so far.
  let inserted = 0
  let bytes = 0
  let nextHugeAt = HUGE_RESULT_EVERY_BYTES / 2
  let surfaceChars = 0
  let compactions = 0
  for (const event of generateSessionEvents(options)) {
    let data = event.data
    if (event.type === 'tool/result' && bytes >= nextHugeAt) {
      const message = data['message'] as Record<string, unknown>
      data = { ...data, message: { ...message, content: hugeDump(random) } }
      nextHugeAt += HUGE_RESULT_EVERY_BYTES
    }
    const input: Record<string, unknown> = { type: event.type, data }
    if (event.surfaceOp !== undefined) input['surfaceOp'] = event.surfaceOp
    if (event.sourceEventSeqs !== undefined)
      input['sourceEventSeqs'] = event.sourceEventSeqs.map((seq) => seq + inserted)
    if (projection.nextSeq !== event.seq + inserted) {
      throw new Error(
        `generateAgentSession: expected the caller's projection at seq ${event.seq + inserted}, found ${projection.nextSeq}`,
      )
    }
    yield { input: input as unknown as EventInput, time: event.time }
    bytes += estimateLineBytes(data) + 120
    surfaceChars += visibleChars(data['message'] as MessageLike | undefined)
    if (event.type !== 'turn/end' || surfaceChars < COMPACT_AT_CHARS) continue
    // Compact everything but the system prompt and the last turn (from its user message on).
    const surface = projection.surface()
    let lastUser = surface.length - 1
    while (lastUser > 1 && surface[lastUser]!.type !== 'user/message') lastUser -= 1
    const end = lastUser > 1 ? lastUser - 1 : surface.length - 1
    if (end < 1) continue
    compactions += 1
    const summaryRandom = createRandom(options.seed * 7919 + compactions)
    const sentences: string[] = []
    const count = 10 + Math.floor(summaryRandom() * 30)
    for (let index = 0; index < count; index++) {
      const words: string[] = []
      for (let word = 0; word < 12; word++)
        words.push(LOG_WORDS[Math.floor(summaryRandom() * LOG_WORDS.length)]!)
      sentences.push(`${words.join(' ')}.`)
    }
    const plan = planCompaction(projection, {
      compactionId: `compaction-${compactions}`,
      startSeq: surface[1]!.seq,
      endSeq: surface[end]!.seq,
      summary: sentences.join(' '),
      reason: 'context-window',
    })
    for (const step of plan) {
      yield { input: step, time: event.time }
      inserted += 1
    }
    surfaceChars = 0
    for (const node of projection.surface().slice(1))
      surfaceChars += visibleChars(node.message as MessageLike)
  }
}

/** A cheap size estimate of an event's data (strings dominate). */
function estimateLineBytes(data: Record<string, unknown>): number {
  const message = data['message'] as MessageLike | undefined
  if (message === undefined) return JSON.stringify(data).length
  return visibleChars(message) + 200
}

/** A dataset on disk: one session in a store root. */
export interface Dataset {
  /** The store root (pass it to `createJsonlStore`). */
  readonly root: string
  /** The session id. */
  readonly id: string
  /** Absolute path of the session's log. */
  readonly file: string
  /** Size of the log in bytes. */
  readonly bytes: number
  /** Events in the log (the header not counted). */
  readonly events: number
}

function cacheKey(parts: Record<string, unknown>): string {
  // The store's bytes for a fixed event: a change of the line format changes the key.
  const probe = encodeEventLine({
    seq: 0,
    time: '2025-01-06T09:30:00.000Z',
    type: 'user/message',
    data: { message: { role: 'user', content: 'probe ✓' } },
    surfaceOp: 'append',
  })
  return createHash('sha256')
    .update(
      JSON.stringify({
        ...parts,
        generator: DATASET_GENERATOR_VERSION,
        format: SESSION_FORMAT_VERSION,
        file: LOG_FILE_NAME,
      }),
    )
    .update(probe)
    .digest('hex')
    .slice(0, 16)
}

/** The cache directory of a dataset kind, `os.tmpdir()/agent-ledger-bench-<hash>`. */
function cacheDirectory(parts: Record<string, unknown>): string {
  return join(tmpdir(), `agent-ledger-bench-${cacheKey(parts)}`)
}

/**
 * Builds a cache directory once: `build` fills a temporary sibling, which is renamed into
 * place with a `complete.json` marker holding what `build` returned.
 *
 * @param parts - The parameters the cache is keyed by.
 * @param build - Fills the given directory and returns a JSON-serializable description.
 * @returns The directory and the description.
 */
export async function cached<TInfo>(
  parts: Record<string, unknown>,
  build: (directory: string) => Promise<TInfo>,
): Promise<{ directory: string; info: TInfo; built: boolean }> {
  const directory = cacheDirectory(parts)
  const marker = join(directory, 'complete.json')
  if (existsSync(marker)) {
    return { directory, info: JSON.parse(readFileSync(marker, 'utf8')) as TInfo, built: false }
  }
  rmSync(directory, { recursive: true, force: true })
  const building = `${directory}.building-${process.pid}`
  rmSync(building, { recursive: true, force: true })
  mkdirSync(building, { recursive: true, mode: 0o700 })
  try {
    const info = await build(building)
    writeFileSync(join(building, 'complete.json'), `${JSON.stringify({ parts, ...info })}\n`)
    renameSync(building, directory)
    return { directory, info, built: true }
  } catch (error) {
    rmSync(building, { recursive: true, force: true })
    throw error
  }
}

/** Seed of every benchmark session (one seed, several sizes). */
const DATASET_SEED = 20250106

/**
 * The header fields of the benchmark sessions (from the base generator, seed {@link DATASET_SEED}).
 *
 * @returns createdAt, cwd and metadata.
 */
export function generateAgentSessionHeader(): Pick<GeneratedHeader, 'createdAt' | 'cwd' | 'metadata'> {
  const { createdAt, cwd, metadata } = generateSessionHeader({ seed: DATASET_SEED })
  return { createdAt, cwd, metadata }
}

/**
 * Writes one generated session through the store: `create`, then `append` of every input
 * with the store's clock returning the input's time, flushing every ~8 MB and at the end.
 *
 * @param root - The store root.
 * @param request - Session id and generator options.
 * @returns The number of events written.
 */
async function writeAgentSession(
  root: string,
  request: AgentSessionOptions & { readonly id: string },
): Promise<number> {
  let now = generateSessionHeader({ seed: request.seed }).createdAt
  // The core buffers until `flush` (no timer, no count trigger): flushed by hand below.
  const store = createJsonlStore({ root, clock: () => now })
  const base = generateSessionHeader({ seed: request.seed })
  const writer = await store.create({
    id: request.id,
    header: { createdAt: base.createdAt, cwd: base.cwd, metadata: base.metadata },
  })
  try {
    let sinceFlush = 0
    for (const { input, time } of generateAgentSession(request, writer.projection)) {
      now = time
      writer.append(input)
      sinceFlush += 1
      if (sinceFlush >= 2000) {
        await writer.flush()
        sinceFlush = 0
      }
    }
    return writer.projection.nextSeq
  } finally {
    await writer.close()
    await store.close()
  }
}

/**
 * The dataset of about `megabytes` MB: one session written through the store, cached.
 *
 * @param megabytes - Approximate size (1, 20, 200...).
 * @param log - Progress messages (to stderr).
 * @returns The dataset.
 */
export async function ensureDataset(megabytes: number, log: (message: string) => void): Promise<Dataset> {
  const id = `bench-${megabytes}mb`
  const parts = { kind: 'agent-session', seed: DATASET_SEED, megabytes }
  const started = performance.now()
  const { directory, info, built } = await cached(parts, async (building) => {
    const root = join(building, 'root')
    const events = await writeAgentSession(root, { id, seed: DATASET_SEED, targetBytes: megabytes * MB })
    const bytes = readFileSync(join(root, id, LOG_FILE_NAME)).length
    return { events, bytes }
  })
  if (built)
    log(
      `built ${megabytes} MB dataset (${info.bytes} bytes) in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    )
  const root = join(directory, 'root')
  // A checkpoint (issue 7) must never serve a "full open": drop any the writer left.
  removeCheckpoints(join(root, id))
  return { root, id, file: join(root, id, LOG_FILE_NAME), bytes: info.bytes, events: info.events }
}

/**
 * Deletes every checkpoint file of a session directory (anything but the log, the lock and
 * quarantine files whose name mentions `checkpoint`), so an open replays the whole log.
 *
 * @param sessionDirectory - The session's directory.
 */
export function removeCheckpoints(sessionDirectory: string): void {
  for (const name of readdirSync(sessionDirectory)) {
    if (name.includes('checkpoint')) rmSync(join(sessionDirectory, name), { force: true })
  }
}

/** The first events of a small session: a system prompt, a turn start and a user message. */
function smallSessionSeed(index: number, time: string): LoggedEvent[] {
  return [
    {
      seq: 0,
      time,
      type: 'system/message',
      data: {
        message: { role: 'system', content: 'You are a coding agent working in a TypeScript monorepo.' },
      },
      surfaceOp: 'append',
    },
    { seq: 1, time, type: 'turn/start', data: { turn: 1 } },
    {
      seq: 2,
      time,
      type: 'user/message',
      data: { message: { role: 'user', content: `Please fix failing test number ${index}.` } },
      surfaceOp: 'append',
    },
  ] as LoggedEvent[]
}

/**
 * A root of `sessions` small sessions (three events each, ids `session-<index>` zero-padded to
 * the count's width, a title in the metadata) created through `createJsonlStore` once and
 * cached under `kind`: the many-sessions benches (list, prune) share it.
 *
 * @returns The root's path and how long creating it took when it was built now (else null).
 */
export async function smallSessionsRoot(
  kind: string,
  sessions: number,
): Promise<{ root: string; builtSeconds: number | null }> {
  const started = performance.now()
  const width = String(sessions - 1).length
  const { directory, built } = await cached({ kind, sessions, writer: 'core' }, async (building) => {
    const base = generateAgentSessionHeader()
    const store = createJsonlStore({ root: join(building, 'root'), clock: () => base.createdAt })
    for (let index = 0; index < sessions; index += 1) {
      const writer = await store.create({
        id: `session-${String(index).padStart(width, '0')}`,
        header: {
          createdAt: base.createdAt,
          cwd: base.cwd,
          metadata: { ...base.metadata, title: `Session ${index}` },
        },
        seed: smallSessionSeed(index, base.createdAt),
      })
      await writer.close()
    }
    await store.close()
    return { sessions }
  })
  return { root: join(directory, 'root'), builtSeconds: built ? (performance.now() - started) / 1000 : null }
}
