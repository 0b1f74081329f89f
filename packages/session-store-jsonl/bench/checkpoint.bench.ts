/**
 * Projection checkpoint benchmark (issue 7).
 *
 * (a) Cold open of a long session whose checkpoint is 100 events behind the tail, beside a
 *     full replay of the same log in the same run (`openReader` with checkpoints off): the
 *     ratio is checkpointed / full, target <= 0.05. 200,000 events at default scale,
 *     1,000,000 with `--large` (the figure names say which). The session is an agent session
 *     with a compaction every 20 turns, and again every 1,000 turns (what the model sees stays bounded, as in a real long
 *     session), tool results from 60 bytes to 6 KB.
 *     Beside it (issue 10): the checksum-only pass a WRITE open runs over the prefix the
 *     checkpoint skips (no JSON parse), and the whole cold write open with that pass, against
 *     the same full replay and the same 0.05 target.
 * (b) Checkpoint write cost at `turn/end` for a projection of 10,000 surface messages: the
 *     library's whole write (snapshot, encodability walk, msgpack encode, temp file, write,
 *     fsync, rename, directory fsync), beside the floor of a bare msgpack `encode` of the same
 *     snapshot + write + fsync of a plain file. Also the first write of a writer (which walks
 *     every message once) and the part that blocks the event loop (the synchronous encode).
 *
 * The logs are generated deterministically with the store's own line encoder (the bytes a
 * writer would write) into os.tmpdir(), and removed afterwards. Run alone with
 * `pnpm bench --only checkpoint`.
 */
import { constants, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { encode } from '@msgpack/msgpack'
import { coreEventRegistry } from '@agent-ledger/session-events'
import type { EventInput, LoggedEvent } from '@agent-ledger/session-events'
import { createProjection, planCompaction } from '@agent-ledger/session-projection'
import type { Projection } from '@agent-ledger/session-projection'

import { agentSessionInputs } from '../../../tooling/bench/agent-session.ts'
import type { AgentSessionSizes } from '../../../tooling/bench/agent-session.ts'
import type { BenchResult } from '../../../tooling/bench/types.ts'
import { interleave } from './support/measure.ts'
import type { CheckpointContext } from '../src/checkpoint-open.ts'
import { resolveCheckpointOptions } from '../src/checkpoint-options.ts'
import { CheckpointWriter } from '../src/checkpoint-writer.ts'
import { createSessionStore, nodeFsOps } from '../src/index.ts'
import { isSurfaceEventType } from '@agent-ledger/session-events'

import { lineRefOf, prefixCrc32c, pruneLineRefs } from '../src/checkpoint-refs.ts'
import { linesFacts } from '../src/checkpoint-writer.ts'
import {
  CHECKPOINT_FILE_NAME,
  CHECKPOINT_VERSION,
  decodeCheckpointBody,
  decodeCheckpointHead,
  encodeCheckpoint,
  LOG_FILE_NAME,
  resolveLimits,
} from '../src/format.ts'
import type { SessionStore, StoreLogger } from '../src/index.ts'
import type { CheckpointBinding, CheckpointRecord, LineRef } from '../src/format.ts'
import { canonicalEvent, encodeEventLine } from '../src/line-codec.ts'
import { V4_FORMAT } from '../src/log-format.ts'

const START = Date.UTC(2026, 0, 5, 9, 0, 0)
/** Two shapes: frequent compactions (a small surface) and rare ones (a surface of thousands of nodes). */
/** Three shapes: frequent compactions (a small surface), rare ones (thousands of nodes), none (the surface is the log). */
const COMPACT_EVERY_TURNS = [20, 1000, 0] as const
const TAIL_EVENTS = 100

const quietLogger: StoreLogger = {
  warn(message) {
    throw new Error(`unexpected warning in the checkpoint benchmark: ${message}`)
  },
}

/** The texts of the session (characters): tool results from 60 bytes to 6 KB. */
const SIZES: AgentSessionSizes = {
  system: 1500,
  user: [40, 300],
  toolResultSmall: [60, 1200],
  toolResultLarge: [1200, 5000],
  answer: [80, 400],
  summary: 600,
}

/**
 * A deterministic agent session, event by event: turns of turn/start, user message, assistant
 * message with one tool call, tool/call, tool/result, assistant answer, turn/end; every
 * `compactEvery` turns (0: never) a compaction folding everything after the system prompt
 * into a summary. Each event is folded into `projection` (so it is valid) and yielded with
 * its line bytes.
 */
function* agentSession(
  projection: Projection,
  options: { readonly seed: number; readonly compactEvery: number },
): Generator<{ readonly event: LoggedEvent; readonly line: Buffer }> {
  let tick = 0
  for (const input of agentSessionInputs<EventInput>({
    surface: () => projection.surface(),
    compact: (request) => planCompaction(projection, request),
    seed: options.seed,
    compactEvery: options.compactEvery,
    sizes: SIZES,
    text: { newlines: 0.1 },
  })) {
    const event = canonicalEvent({
      seq: projection.nextSeq,
      time: new Date(START + 250 * tick++).toISOString(),
      type: input.type,
      data: input.data,
      surfaceOp: input.surfaceOp,
      sourceEventSeqs: input.sourceEventSeqs,
    }) as LoggedEvent
    const line = encodeEventLine(event)
    projection.apply(event)
    yield { event, line }
  }
}

/** Appends lines to a file in large writes. */
class LineSink {
  readonly #handle: Awaited<ReturnType<typeof open>>
  #pending: Buffer[] = []
  #pendingBytes = 0
  position: number

  constructor(handle: Awaited<ReturnType<typeof open>>, position: number) {
    this.#handle = handle
    this.position = position
  }

  /** Where the next line pushed starts. */
  get end(): number {
    return this.position + this.#pendingBytes
  }

  async push(line: Buffer): Promise<void> {
    this.#pending.push(line)
    this.#pendingBytes += line.length
    if (this.#pendingBytes >= 4 * 1024 * 1024) await this.drain()
  }

  async drain(): Promise<void> {
    if (this.#pending.length === 0) return
    const bytes = Buffer.concat(this.#pending, this.#pendingBytes)
    await this.#handle.write(bytes, 0, bytes.length, this.position)
    this.position += bytes.length
    this.#pending = []
    this.#pendingBytes = 0
  }
}

function context(store: SessionStore, id: string): CheckpointContext {
  return {
    fs: nodeFsOps,
    directory: store.sessionDirectory(id),
    id,
    file: `${id}/${LOG_FILE_NAME}`,
    generationFile: LOG_FILE_NAME,
    format: V4_FORMAT,
    limits: resolveLimits(),
    registry: coreEventRegistry,
    logger: quietLogger,
    options: resolveCheckpointOptions({ minLogBytes: 0, minGrowthRatio: 0, minIntervalMs: 0 }),
  }
}

/** The fastest of `runs` (for CPU-only figures on a shared, noisy machine). */
function fastest(runs: number, action: () => void): number {
  let best = Infinity
  for (let run = 0; run < runs; run += 1) {
    const started = performance.now()
    action()
    best = Math.min(best, performance.now() - started)
  }
  return best
}

async function median(runs: number, action: () => Promise<void>): Promise<number> {
  const times: number[] = []
  for (let run = 0; run < runs; run += 1) {
    const started = performance.now()
    await action()
    times.push(performance.now() - started)
  }
  times.sort((a, b) => a - b)
  return times[Math.floor(times.length / 2)]!
}

/**
 * The floor of a cold open of a never-compacted session: read the lines of the visible nodes
 * (in offset order, through one 4 MiB window) and the tail after the checkpoint once, and
 * `JSON.parse` each line. Any reader that returns the messages does at least this.
 */
async function visibleBytesFloor(
  path: string,
  request: { readonly refs: readonly LineRef[]; readonly tailStart: number },
): Promise<number> {
  const started = performance.now()
  const handle = await open(path, 'r')
  try {
    const sorted = [...request.refs].sort((left, right) => left.offset - right.offset)
    // Kept, as any reader that returns the messages keeps them (the heap they fill costs GC time).
    const kept: unknown[] = []
    let window = Buffer.allocUnsafe(4 * 1024 * 1024)
    let windowStart = -1
    let windowEnd = -1
    let parsed = 0
    for (const ref of sorted) {
      if (ref.offset < windowStart || ref.offset + ref.length > windowEnd) {
        if (ref.length > window.length) window = Buffer.allocUnsafe(ref.length)
        const { bytesRead } = await handle.read(window, 0, window.length, ref.offset)
        windowStart = ref.offset
        windowEnd = ref.offset + bytesRead
      }
      const at = ref.offset - windowStart
      kept.push(JSON.parse(window.toString('utf8', at, at + ref.length - 1)))
      parsed += 1
    }
    const size = (await handle.stat()).size
    const tail = Buffer.allocUnsafe(size - request.tailStart)
    await handle.read(tail, 0, tail.length, request.tailStart)
    for (const line of tail.toString('utf8').split('\n')) if (line !== '') kept.push(JSON.parse(line))
    if (parsed !== request.refs.length) throw new Error('floor parsed the wrong count')
  } finally {
    await handle.close()
  }
  return performance.now() - started
}

async function coldOpen(
  root: string,
  total: number,
  shape: { readonly label: string; readonly compactEvery: number },
): Promise<BenchResult[]> {
  const id = 'cold'
  const store = createSessionStore({ root, logger: quietLogger, checkpoint: { enabled: false } })
  const created = await store.create({ id })
  const header = created.header
  await created.close()
  const path = join(store.sessionDirectory(id), LOG_FILE_NAME)
  const handle = await open(path, 'r+')
  const projection = createProjection()
  // What a writer keeps: the line of every surface node (pruned to the surface as it goes).
  const lineRefs = new Map<number, LineRef>()
  let events = 0
  try {
    const sink = new LineSink(handle, (await handle.stat()).size)
    const session = agentSession(projection, { seed: 7, compactEvery: shape.compactEvery })
    const checkpointAt = total - TAIL_EVENTS - 1
    for (const { event, line } of session) {
      if (isSurfaceEventType(event.type)) {
        const ref = lineRefOf(line.subarray(0, line.length - 1), { seq: event.seq, offset: sink.end })
        if (ref !== null) lineRefs.set(event.seq, ref)
        if (lineRefs.size > 2 * projection.surface().length + 4096) {
          pruneLineRefs(lineRefs, { surface: projection.surface(), afterSeq: event.seq })
        }
      }
      await sink.push(line)
      events += 1
      if (event.seq === checkpointAt) {
        await sink.drain()
        // The library's own checkpoint writer, at N = total - 101, from the generator's projection.
        const logHandle = await nodeFsOps.open(path, constants.O_RDONLY)
        const writer = new CheckpointWriter({
          context: context(store, id),
          handle: logHandle,
          header,
          lastLine: {
            seq: event.seq,
            eventOffset: sink.position - line.length,
            offset: sink.position,
            crc: null,
          },
          seqIndex: [],
          coveredSeq: -1,
          carry: { lineRefs, prefix: null },
        })
        await writer.close(projection, true)
        await logHandle.close()
      }
      if (events === total) break
    }
    await sink.drain()
  } finally {
    await handle.close()
  }
  const withCheckpoint = createSessionStore({ root, logger: quietLogger })
  const check = await withCheckpoint.openReader(id)
  if (check.checkpoint?.replayedEvents !== TAIL_EVENTS || check.lastSeq !== total - 1) {
    throw new Error(
      `checkpoint not used as planned: ${JSON.stringify(check.checkpoint)}, lastSeq ${check.lastSeq}`,
    )
  }
  const size = statSync(path).size
  const fullMs = await median(total > 500_000 ? 2 : 3, async () => {
    await store.openReader(id)
  })
  const checkpointMs = await median(5, async () => {
    await withCheckpoint.openReader(id)
  })
  const ratio = checkpointMs / fullMs
  // A write open also checks the whole prefix the checkpoint skips: one CRC-32C in 4 MiB reads.
  const directory = store.sessionDirectory(id)
  const checkpointBytes = readFileSync(join(directory, CHECKPOINT_FILE_NAME))
  const head = decodeCheckpointHead(checkpointBytes)
  if (!head.ok) throw new Error(`benchmark checkpoint unreadable: ${head.detail}`)
  const { binding } = head.head
  const headerEndOffset = readFileSync(path).subarray(0, 64 * 1024).indexOf(0x0a) + 1
  const body = decodeCheckpointBody(head.head, { body: head.body, bodyCrc32c: head.bodyCrc32c, headerEndOffset })
  if (!body.ok) throw new Error(`benchmark checkpoint body unreadable: ${body.detail}`)
  const prefixMs = await median(5, async () => {
    const log = await nodeFsOps.open(path, constants.O_RDONLY)
    try {
      const crc = await prefixCrc32c(log, { start: 0, crc: 0, end: binding.offset })
      if (crc !== binding.prefixCrc32c) throw new Error('prefix CRC differs')
    } finally {
      await log.close()
    }
  })
  // The cold write open (lock, prefix CRC, checkpoint restore, tail replay), from the same
  // checkpoint each time (its close writes a newer one: put the original back before each run).
  const writeTimes: number[] = []
  for (let run = 0; run < 5; run += 1) {
    writeFileSync(join(directory, CHECKPOINT_FILE_NAME), checkpointBytes, { mode: 0o600 })
    const started = performance.now()
    const writer = await withCheckpoint.openWriter(id)
    writeTimes.push(performance.now() - started)
    // The first write open closes the generator's last, open turn (repair events), so later
    // runs replay those few events too.
    if ((writer.recovery.checkpoint?.replayedEvents ?? 0) < TAIL_EVENTS) {
      throw new Error(`write open did not use the checkpoint: ${JSON.stringify(writer.recovery.checkpoint)}`)
    }
    await writer.close()
  }
  writeFileSync(join(directory, CHECKPOINT_FILE_NAME), checkpointBytes, { mode: 0o600 })
  writeTimes.sort((a, b) => a - b)
  const writeOpenMs = writeTimes[Math.floor(writeTimes.length / 2)]!
  const writeRatio = writeOpenMs / fullMs
  const compaction = shape.compactEvery === 0 ? 'never compacted' : `compaction every ${shape.compactEvery} turns`
  const where = `${shape.label} events, ${compaction} (${(size / 1e6).toFixed(0)} MB, checkpoint ${(checkpointBytes.length / 1e3).toFixed(0)} kB`
  const floor = { name: 'full replay of the same log (checkpoints off)', value: fullMs }
  const results: BenchResult[] = []
  if (shape.compactEvery === 0) {
    // Never compacted: the visible nodes are most of the log; the claim is against reading them once.
    // Alternated rounds (ABAB) on this shared machine; the claim is the median per-round ratio.
    const samples = await interleave(5, {
      ours: async () => {
        const started = performance.now()
        await withCheckpoint.openReader(id)
        return performance.now() - started
      },
      floor: () => visibleBytesFloor(path, { refs: body.surface, tailStart: binding.offset }),
    })
    const pick = (values: readonly number[]): number => [...values].sort((a, b) => a - b)[values.length >> 1]!
    const visibleMs = pick(samples.floor)
    const visibleRatio = pick(samples.ours.map((ms, round) => ms / samples.floor[round]!))
    const visibleBytes = body.surface.reduce((sum, ref) => sum + ref.length, 0)
    results.push({
      name: `cold open, ${where}, ${check.projection.surface().length} surface nodes, ${(visibleBytes / 1e6).toFixed(0)} MB visible), checkpoint ${TAIL_EVENTS} events behind`,
      value: pick(samples.ours),
      unit: 'ms',
      floor: {
        name: 'read the visible lines and the tail once (4 MiB window) + JSON.parse each, results kept',
        value: visibleMs,
      },
      ratio: visibleRatio,
      target: '<= 1.5',
      met: visibleRatio <= 1.5,
    })
    results.push({
      name: `cold open, ${where}), against a full replay (context)`,
      value: checkpointMs,
      unit: 'ms',
      floor,
      ratio,
    })
  } else {
    results.push({
      name: `cold open, ${where}, ${check.projection.surface().length} surface nodes), checkpoint ${TAIL_EVENTS} events behind`,
      value: checkpointMs,
      unit: 'ms',
      floor,
      ratio,
      target: '<= 0.05',
      met: ratio <= 0.05,
    })
  }
  results.push(
    {
      name: `whole-prefix CRC-32C pass of a write open (4 MiB reads; ${binding.seq + 1} lines, ${(binding.offset / 1e6).toFixed(0)} MB), ${where})`,
      value: prefixMs,
      unit: 'ms',
      floor,
      ratio: prefixMs / fullMs,
      target: '<= 0.05',
      met: prefixMs / fullMs <= 0.05,
    },
    {
      name: `cold WRITE open (openWriter, with the prefix CRC), ${where}), checkpoint ${TAIL_EVENTS} events behind`,
      value: writeOpenMs,
      unit: 'ms',
      floor,
      ratio: writeRatio,
      ...(shape.compactEvery === 0 ? {} : { target: '<= 0.05', met: writeRatio <= 0.05 }),
    },
  )
  return results
}

async function writeCost(root: string): Promise<BenchResult[]> {
  const id = 'write'
  const store = createSessionStore({ root, logger: quietLogger, checkpoint: { enabled: false } })
  const created = await store.create({ id })
  const header = created.header
  await created.close()
  const path = join(store.sessionDirectory(id), LOG_FILE_NAME)
  const handle = await open(path, 'r+')
  const projection = createProjection()
  const session = agentSession(projection, { seed: 11, compactEvery: 0 })
  const sink = new LineSink(handle, (await handle.stat()).size)
  const batch: { seq: number; bytes: Buffer }[] = []
  /** Appends one more turn (to the file and the projection); returns its lines. */
  const nextTurn = async (): Promise<{ seq: number; bytes: Buffer }[]> => {
    const lines: { seq: number; bytes: Buffer }[] = []
    for (;;) {
      const { event, line } = session.next().value as { event: LoggedEvent; line: Buffer }
      await sink.push(line)
      lines.push({ seq: event.seq, bytes: line })
      if (event.type === 'turn/end') return lines
    }
  }
  while (projection.surface().length < 10_000) batch.push(...(await nextTurn()))
  await sink.drain()
  const logHandle = await nodeFsOps.open(path, constants.O_RDONLY)
  const writer = new CheckpointWriter({
    context: context(store, id),
    handle: logHandle,
    header,
    lastLine: null,
    seqIndex: [],
    coveredSeq: -1,
    // Where every line so far is (a writer learns it from its open and its flushes).
    carry: linesFacts(
      batch.map((line) => line.bytes),
      sink.position,
      0,
    ).carry,
  })
  const writeAt = async (lines: { seq: number; bytes: Buffer }[], offset: number): Promise<void> => {
    const prepared = writer.prepare(lines, projection, offset)
    if (prepared.snapshot === null) throw new Error('a turn/end batch must make a checkpoint due')
    writer.committed(prepared)
    await writer.close(projection, true)
  }
  const messages = projection.surface().length
  const lastTurnBytes = batch.slice(-7).reduce((sum, line) => sum + line.bytes.length, 0)
  const firstMs = await median(1, () => writeAt(batch.slice(-7), sink.position - lastTurnBytes))
  const steadyMs = await median(5, async () => {
    const lines = await nextTurn()
    await sink.drain()
    const bytes = lines.reduce((sum, line) => sum + line.bytes.length, 0)
    await writeAt(lines, sink.position - bytes)
  })
  await logHandle.close()
  await handle.close()
  const snapshot = projection.snapshot()
  let encodedBytes = 0
  const bareMs = fastest(9, () => {
    encodedBytes = encode(snapshot, { ignoreUndefined: true }).length
  })
  // What a writer's checkpoint encodes synchronously: the state and one reference per node.
  const directory = context(store, id).directory
  const written = decodeCheckpointHead(readFileSync(join(directory, CHECKPOINT_FILE_NAME)))
  if (!written.ok) throw new Error(`benchmark checkpoint unreadable: ${written.detail}`)
  const headerEndOffset = readFileSync(path).subarray(0, 64 * 1024).indexOf(0x0a) + 1
  const decoded = decodeCheckpointBody(written.head, {
    body: written.body,
    bodyCrc32c: written.bodyCrc32c,
    headerEndOffset,
  })
  if (!decoded.ok) throw new Error(`benchmark checkpoint body unreadable: ${decoded.detail}`)
  const record: CheckpointRecord = {
    checkpointVersion: CHECKPOINT_VERSION,
    binding: readBinding(directory),
    state: decoded.state,
    surface: decoded.surface,
    seqIndex: [],
  }
  let checkpointSize = 0
  const blockMs = fastest(9, () => {
    checkpointSize = encodeCheckpoint(record, { maxDepth: 300 }).length
  })
  const floorPath = join(root, 'floor.msgpack')
  const floorMs = await median(5, async () => {
    const bytes = encode(snapshot, { ignoreUndefined: true })
    const file = await open(floorPath, 'w', 0o600)
    await file.write(bytes, 0, bytes.length, 0)
    await file.sync()
    await file.close()
  })
  const floor = { name: 'bare msgpack encode + write + fsync of the snapshot', value: floorMs }
  return [
    {
      name: `checkpoint write at turn/end (whole job, off the flush path), ${messages} surface messages (${(checkpointSize / 1e3).toFixed(0)} kB by reference; the snapshot is ${(encodedBytes / 1e6).toFixed(1)} MB as msgpack)`,
      value: steadyMs,
      unit: 'ms',
      floor,
      ratio: steadyMs / floorMs,
    },
    {
      name: `first checkpoint write of a writer (its prefix CRC reads the whole log once), ${messages} surface messages`,
      value: firstMs,
      unit: 'ms',
      floor,
      ratio: firstMs / floorMs,
    },
    {
      name: `event-loop block of a turn/end checkpoint (encode of the state and references; fastest of 9), ${messages} messages`,
      value: blockMs,
      unit: 'ms',
      floor: { name: 'bare msgpack encode of the snapshot (fastest of 9)', value: bareMs },
      ratio: blockMs / bareMs,
    },
  ]
}

/** The binding of the checkpoint the benchmark just wrote (for a realistic record to encode). */
function readBinding(directory: string): CheckpointBinding {
  const head = decodeCheckpointHead(readFileSync(join(directory, CHECKPOINT_FILE_NAME)))
  if (!head.ok) throw new Error(`benchmark checkpoint unreadable: ${head.detail}`)
  return head.head.binding
}

/**
 * Runs the checkpoint benchmark.
 *
 * @param options - `scale`: `default` (200,000-event cold open) or `large` (1,000,000 events).
 * @returns The figures, each beside its floor.
 */
export async function run(
  options: { scale: 'default' | 'large' } = { scale: 'default' },
): Promise<BenchResult[]> {
  const root = mkdtempSync(join(tmpdir(), 'al-ckpt-bench-'))
  try {
    const total = options.scale === 'large' ? 1_000_000 : 200_000
    const label = options.scale === 'large' ? '1,000,000' : '200,000 (default scale; 1,000,000 with --large)'
    const results: BenchResult[] = []
    for (const compactEvery of COMPACT_EVERY_TURNS) {
      const directory = join(root, `cold-${compactEvery}`)
      results.push(...(await coldOpen(directory, total, { label, compactEvery })))
      rmSync(directory, { recursive: true, force: true })
    }
    results.push(...(await writeCost(join(root, 'write'))))
    return results
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}
