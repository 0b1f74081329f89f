/**
 * Cold open of a 1,000,000-event session on PostgreSQL whose projection checkpoint is about
 * 100 events behind the head, through the session core's own checkpointed open, beside a
 * full replay of the same session in the same run (`pnpm bench --only cold-open`; several
 * minutes on the shared 2-core machine, nearly all of it loading the session and the full
 * replay: the module prints how long each step took).
 *
 * - The session: the deterministic agent session of `tooling/bench/agent-session.ts` (tool
 *   results of 40 B to 2 KB, a compaction every 20 turns, as a long session's context stays
 *   bounded), written by the session core itself: one writer appends every event (validated,
 *   encoded, sealed) and flushes every 10,000, the next batch generated while the previous
 *   one is appended. That writer stops at the first `turn/end` at or after seq 999,899 and
 *   closes, and close() stores the core's checkpoint there (its `checkpoint` options let
 *   nothing but close() write one). A second writer opens the session (from that
 *   checkpoint), appends events up to the first `turn/end` at or after seq 999,999 (so the session ends with a whole turn: a write open repairs nothing) and closes without a
 *   checkpoint (the growth rule: the tail is far below 16 x the checkpoint's size).
 * - Ours (read): `store.openReader` with the default `checkpoint` options: the core loads
 *   the checkpoint, checks it (header, registry, head, event crc, body version and crc,
 *   snapshot), restores the projection and replays the tail with every check. Checked to
 *   report the checkpoint's seq and the tail's length, and to equal the full replay's
 *   projection (`snapshot()`, messages, lastSeq).
 * - Ours (write): `store.openWriter` the same way (the lease, the head comparison, repair
 *   planning), then close() outside the timing; checked the same way.
 *   `AGENT_LEDGER_COLD_OPEN_EVENTS` sets another size (a quick check of the module).
 * - Floor: `store.openReader` with `checkpoint: { enabled: false }`, the core's full replay
 *   (every line: checksum, JSON, seq, schema, projection). One run: it takes 30 s to
 *   minutes, and ours is thousands of times shorter (REPLAY_ROUNDS raises it).
 * - Ratio: ours / floor, target <= 0.05.
 *
 * Also measured on the loaded session: bytes per stored event row (`pg_total_relation_size`
 * of `ledger_events`: heap, TOAST and primary key index) beside the line's own UTF-8 bytes.
 */
import type { SessionStore, SessionStoreOptions, SessionWriter } from '@agent-ledger/session-store'
import { createSessionStore } from '@agent-ledger/session-store'
import type { EventInput } from '@agent-ledger/session-events'
import { planCompaction } from '@agent-ledger/session-projection'
import type { Projection } from '@agent-ledger/session-projection'

import { agentSessionInputs } from '../../../tooling/bench/agent-session.ts'
import type { BenchResult } from '../../../tooling/bench/types.ts'
import { openPostgresBackend } from '../src/index.ts'
import type { PostgresBackend } from '../src/index.ts'
import { bareClient, median, withServer } from './support.ts'

/** 1,000,000; `AGENT_LEDGER_COLD_OPEN_EVENTS` overrides it (a quick check of the module). */
const TOTAL_EVENTS =
  Number(process.env.AGENT_LEDGER_COLD_OPEN_EVENTS ?? '') > 1000
    ? Number(process.env.AGENT_LEDGER_COLD_OPEN_EVENTS)
    : 1_000_000
const TAIL_EVENTS = 100
const LOAD_BATCH = 10_000
const OPEN_ROUNDS = 5
const REPLAY_ROUNDS = 1
const NEVER = Number.MAX_SAFE_INTEGER

/** The texts of the session (characters). */
const SIZES = {
  system: 600,
  user: [30, 150],
  toolResultSmall: [40, 400],
  toolResultLarge: [400, 1600],
  answer: [40, 200],
  summary: 300,
} as const

/**
 * Writes the session (see the module comment) with the core; returns the checkpoint's seq
 * and the seconds spent waiting for the server (generation overlaps the flush in flight).
 */
async function load(
  backend: PostgresBackend,
  id: string,
): Promise<{ checkpointSeq: number; lastSeq: number; waiting: number }> {
  const common: Omit<SessionStoreOptions, 'checkpoint'> = {
    backend,
    clock: () => new Date().toISOString(),
    owner: 'bench-load',
    redaction: null,
    leaseMs: 3_600_000,
  }
  // close() stores the checkpoint; the flushes do not (the interval is never over after the first).
  const loader = createSessionStore({
    ...common,
    checkpoint: { everyEvents: NEVER, minIntervalMs: NEVER, minLogBytes: 0, minGrowthRatio: 0 },
  })
  // Opens from that checkpoint and writes none (the default growth rule).
  const tailer = createSessionStore(common)
  let writer: SessionWriter = await loader.create({ id })
  const inputs = agentSessionInputs<EventInput>({
    surface: () => writer.projection.surface(),
    compact: (request) => planCompaction(writer.projection, request),
    seed: 7,
    compactEvery: 20,
    sizes: SIZES,
  })
  let waiting = 0
  let inFlight: Promise<unknown> = Promise.resolve()
  const flushInBackground = async (): Promise<void> => {
    const before = performance.now()
    await inFlight
    waiting += (performance.now() - before) / 1000
    inFlight = writer.flush()
  }
  let checkpointSeq = -1
  let lastSeq = -1
  for (const input of inputs) {
    const event = writer.append(input)
    if (checkpointSeq < 0 && event.type === 'turn/end' && event.seq >= TOTAL_EVENTS - TAIL_EVENTS - 1) {
      await flushInBackground()
      await inFlight
      await writer.close()
      checkpointSeq = event.seq
      writer = await tailer.openWriter(id)
      if (writer.recovery.checkpoint.used !== true)
        throw new Error('the tail writer did not open from the checkpoint')
      inFlight = Promise.resolve()
      continue
    }
    // The session ends with a whole turn too: a write open then repairs nothing (and writes nothing).
    if (event.type === 'turn/end' && event.seq >= TOTAL_EVENTS - 1) {
      lastSeq = event.seq
      break
    }
    if (writer.bufferedEvents >= LOAD_BATCH) await flushInBackground()
  }
  await flushInBackground()
  await inFlight
  await writer.close()
  // The stores are not closed: that would close the backend the caller still uses.
  return { checkpointSeq, lastSeq, waiting }
}

async function seconds(action: () => Promise<unknown>): Promise<number> {
  const started = performance.now()
  await action()
  return (performance.now() - started) / 1000
}

/** The checks every timed open must pass: from the checkpoint, over the tail, equal to the full replay. */
function checkOpen(
  what: string,
  opened: {
    readonly projection: Projection
    readonly checkpoint: { readonly used: boolean; readonly seq?: number; readonly replayedEvents: number }
  },
  expected: { readonly checkpointSeq: number; readonly lastSeq: number; readonly full: Projection },
): void {
  const { checkpoint } = opened
  const tail = expected.lastSeq - expected.checkpointSeq
  if (!checkpoint.used || checkpoint.seq !== expected.checkpointSeq || checkpoint.replayedEvents !== tail) {
    throw new Error(
      `${what}: expected the checkpoint at ${expected.checkpointSeq} and ${tail} events replayed, found ${JSON.stringify(checkpoint)}`,
    )
  }
  if (JSON.stringify(opened.projection.snapshot()) !== JSON.stringify(expected.full.snapshot())) {
    throw new Error(`${what}: the checkpointed open does not give the full replay's projection`)
  }
  if (JSON.stringify(opened.projection.deriveMessages()) !== JSON.stringify(expected.full.deriveMessages())) {
    throw new Error(`${what}: the checkpointed open does not give the full replay's messages`)
  }
}

/** Runs the figures (see the module comment). */
export async function run(): Promise<BenchResult[]> {
  return await withServer('session-store-postgres cold open', async ({ url }) => {
    const backend = await openPostgresBackend({ connectionString: url, poolSize: 4, readPageSize: 5000 })
    const clock = (): string => new Date().toISOString()
    const warnings: string[] = []
    const store: SessionStore = createSessionStore({
      backend,
      clock,
      owner: 'bench',
      onWarning: (warning) => warnings.push(warning.message),
    })
    const replay = createSessionStore({ backend, clock, owner: 'bench', checkpoint: { enabled: false } })
    const bare = await bareClient(url)
    try {
      const id = 'cold-1m'
      let loaded = { checkpointSeq: -1, lastSeq: -1, waiting: 0 }
      const loadSeconds = await seconds(async () => {
        loaded = await load(backend, id)
      })
      const { checkpointSeq, lastSeq } = loaded
      const events = lastSeq + 1
      const tail = lastSeq - checkpointSeq
      console.error(
        `bench: cold open: generated and wrote ${events} events through the core in ${loadSeconds.toFixed(1)} s (${loaded.waiting.toFixed(1)} s of it waiting for the server); checkpoint at seq ${checkpointSeq}, ${tail} events behind the head`,
      )
      const size = (
        await bare.query<{ total: string; lines: string; rows: string }>(
          `SELECT pg_total_relation_size('ledger_events')::text AS total,
                  sum(octet_length(line))::text AS lines, count(*)::text AS rows FROM ledger_events`,
        )
      ).rows[0]!
      const rows = Number(size.rows)
      const perRow = Number(size.total) / rows
      const perLine = Number(size.lines) / rows
      const full: number[] = []
      let fullProjection: Projection | undefined
      for (let round = 0; round < REPLAY_ROUNDS; round++) {
        full.push(
          await seconds(async () => {
            fullProjection = (await replay.openReader(id)).projection
          }),
        )
      }
      const expected = { checkpointSeq, lastSeq, full: fullProjection! }
      const reads: number[] = []
      const writes: number[] = []
      for (let round = 0; round < OPEN_ROUNDS; round++) {
        let read: Awaited<ReturnType<SessionStore['openReader']>> | undefined
        reads.push(await seconds(async () => (read = await store.openReader(id))))
        checkOpen('openReader', read!, expected)
        let writer: SessionWriter | undefined
        writes.push(await seconds(async () => (writer = await store.openWriter(id))))
        checkOpen(
          'openWriter',
          { projection: writer!.projection, checkpoint: writer!.recovery.checkpoint },
          expected,
        )
        await writer!.close()
      }
      if (warnings.length > 0) throw new Error(`unexpected warnings: ${warnings.join('; ')}`)
      const floorMs = Math.min(...full) * 1000
      const readMs = median(reads) * 1000
      const writeMs = median(writes) * 1000
      const ms = (values: number[]): string => values.map((value) => (value * 1000).toFixed(0)).join(', ')
      console.error(
        `bench: cold open: full replays ${full.map((value) => value.toFixed(1)).join(', ')} s; checkpointed openReader ${ms(reads)} ms, openWriter ${ms(writes)} ms; ${fullProjection!.surface().length} surface nodes`,
      )
      const floor = { name: 'full replay (openReader, checkpoints off), same session', value: floorMs }
      return [
        {
          name: `postgres cold open (core openReader), ${events} events, checkpoint ${tail} events behind`,
          value: readMs,
          unit: 'ms',
          floor,
          ratio: readMs / floorMs,
          target: '<= 0.05',
          met: readMs / floorMs <= 0.05,
        },
        {
          name: `postgres cold write open (core openWriter), ${events} events, checkpoint ${tail} events behind`,
          value: writeMs,
          unit: 'ms',
          floor,
          ratio: writeMs / floorMs,
          target: '<= 0.05',
          met: writeMs / floorMs <= 0.05,
        },
        {
          name: `postgres stored bytes per event (ledger_events with TOAST and primary key, ${rows} rows)`,
          value: perRow,
          unit: 'bytes',
          floor: { name: 'the line alone (UTF-8 bytes)', value: perLine },
          ratio: perRow / perLine,
        },
      ]
    } finally {
      await bare.end()
      await store.close()
    }
  })
}
