/**
 * Cold open of a 1,000,000-event session on PostgreSQL whose projection checkpoint is 100
 * events behind the head, beside a full replay of the same session in the same run
 * (`pnpm bench --only cold-open`; 3 to 7 minutes on the shared 2-core machine, nearly all of
 * it loading the session and the full replay: the module prints how long each step took).
 *
 * - The session: an agent session generated deterministically (turns of turn/start, user
 *   message, assistant tool call, tool/call, tool/result of 40 B to 2 KB, assistant answer,
 *   turn/end; a compaction every 20 turns, as a long session's context stays bounded), lines
 *   sealed with the real CRC-32C, created by the session core (its header) and loaded with
 *   `backend.append` in batches of 10,000 lines. The checkpoint (the generator's projection
 *   snapshot at seq 999,899, JSON in `body`) is stored with `putCheckpoint` under the lease.
 * - Ours: `getCheckpoint`, the binding checks (header checksum; line `seq` still has the
 *   checkpoint's checksum), `restoreProjection`, then the 100 later events read with every
 *   check by `store.readEvents` and folded in. The session core has no checkpoint open of its
 *   own yet (its `openReader` always replays): this is the path such an open would take, on
 *   the backend's public calls. The result is checked to equal the full replay's projection.
 * - Floor: `store.openReader`, the session core's full replay (every line: checksum, JSON,
 *   seq, schema, projection). One run: it takes 30 s to minutes, and ours is thousands of
 *   times shorter (REPLAY_ROUNDS raises it).
 * - Ratio: ours / floor, target <= 0.05.
 *
 * Also measured on the loaded session: bytes per stored event row (`pg_total_relation_size`
 * of `ledger_events`: heap, TOAST and primary key index) beside the line's own UTF-8 bytes.
 */
import { coreEventRegistry } from '@agent-ledger/session-events'
import type { EventInput, LoggedEvent } from '@agent-ledger/session-events'
import type { CheckpointRecord, SessionStore } from '@agent-ledger/session-store'
import { createSessionStore, crc32c, lineCrc, verifyLineChecksum } from '@agent-ledger/session-store'
import { createProjection, planCompaction, restoreProjection } from '@agent-ledger/session-projection'
import type { Projection, ProjectionSnapshot } from '@agent-ledger/session-projection'

import type { BenchResult } from '../../../tooling/bench/types.ts'
import { openPostgresBackend } from '../src/index.ts'
import type { PostgresBackend } from '../src/index.ts'
import { bareClient, median, withServer } from './support.ts'

const TOTAL_EVENTS = 1_000_000
const TAIL_EVENTS = 100
const LOAD_BATCH = 10_000
const COMPACT_EVERY_TURNS = 20
const OPEN_ROUNDS = 5
const REPLAY_ROUNDS = 1
const START = Date.UTC(2026, 0, 5, 9, 0, 0)

const WORDS = ['const', 'return', 'await', 'session', 'event', 'flush', 'writer', 'reader', 'turn', 'tool', 'result', 'test', 'value', 'line', 'seq']

/** mulberry32: small, fast, deterministic. */
function createRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let mixed = state
    mixed = Math.imul(mixed ^ (mixed >>> 15), mixed | 1)
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61)
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296
  }
}

function text(random: () => number, bytes: number): string {
  let out = ''
  while (out.length < bytes) out += `${WORDS[Math.floor(random() * WORDS.length)]!} `
  return out
}

/** The v4 line of an event: canonical member order, then the CRC-32C suffix over the bytes before it. */
function sealLine(event: LoggedEvent): string {
  const body = JSON.stringify(event).slice(0, -1)
  const crc = (crc32c(Buffer.from(body, 'utf8')) >>> 0).toString(16).padStart(8, '0')
  return `${body},"crc":"${crc}"}`
}

/** The agent session described in the module comment, event by event, folded into `projection`. */
function* agentSession(projection: Projection): Generator<{ readonly seq: number; readonly line: string }> {
  const random = createRandom(7)
  let tick = 0
  const emit = (input: EventInput): { seq: number; line: string } => {
    const event: Record<string, unknown> = {
      seq: projection.nextSeq,
      time: new Date(START + 250 * tick++).toISOString(),
      type: input.type,
      data: input.data,
    }
    if (input.surfaceOp !== undefined) event.surfaceOp = input.surfaceOp
    if (input.sourceEventSeqs !== undefined) event.sourceEventSeqs = input.sourceEventSeqs
    const logged = event as unknown as LoggedEvent
    projection.apply(logged)
    return { seq: logged.seq, line: sealLine(logged) }
  }
  yield emit({ type: 'system/message', data: { message: { role: 'system', content: `You are a coding agent. ${text(random, 600)}` } } })
  for (let turn = 1; ; turn += 1) {
    const callId = `call_${turn}`
    const args = JSON.stringify({ path: `src/module-${turn % 97}.ts` })
    yield emit({ type: 'turn/start', data: { turn } })
    yield emit({ type: 'user/message', data: { message: { role: 'user', content: text(random, 30 + random() * 150) } } })
    yield emit({
      type: 'assistant/message',
      data: {
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: callId, type: 'function', function: { name: 'read_file', arguments: args } }],
        },
      },
    })
    yield emit({ type: 'tool/call', data: { callId, name: 'read_file', arguments: args } })
    const resultBytes = random() < 0.8 ? 40 + random() * 400 : 400 + random() * 1600
    yield emit({
      type: 'tool/result',
      data: { message: { role: 'tool', tool_call_id: callId, content: text(random, resultBytes) } },
    })
    yield emit({ type: 'assistant/message', data: { message: { role: 'assistant', content: text(random, 40 + random() * 200) } } })
    yield emit({ type: 'turn/end', data: { turn, reason: 'completed' } })
    if (turn % COMPACT_EVERY_TURNS === 0) {
      const surface = projection.surface()
      const plan = planCompaction(projection, {
        compactionId: `compaction-${turn}`,
        startSeq: surface[1]!.seq,
        endSeq: surface.at(-1)!.seq,
        summary: text(random, 300),
        reason: 'context-window',
      })
      for (const input of plan) yield emit(input)
    }
  }
}

/** Creates the session with the core, loads TOTAL_EVENTS lines and the checkpoint; returns the seconds spent waiting for the server (generation overlaps the append in flight). */
async function load(store: SessionStore, backend: PostgresBackend, id: string): Promise<number> {
  const writer = await store.create({ id })
  await writer.close()
  const head = await backend.head(id)
  if (head.nextSeq !== 0) throw new Error(`the new session has ${head.nextSeq} events already`)
  const headerCrc = lineCrc((await backend.readHeader(id)).line)!
  const { lease } = await backend.acquire(id, { owner: 'bench-load', leaseMs: 3_600_000 })
  const projection = createProjection({ registry: coreEventRegistry })
  const checkpointSeq = TOTAL_EVENTS - TAIL_EVENTS - 1
  let checkpoint: CheckpointRecord | undefined
  let batch: string[] = []
  let next = 0
  let inFlight: Promise<void> = Promise.resolve()
  let waitingMs = 0
  const send = async (lines: string[]): Promise<void> => {
    const before = performance.now()
    await inFlight
    waitingMs += performance.now() - before
    const expectedSeq = next
    next += lines.length
    inFlight = backend.append(lease, {
      expectedSeq,
      lines,
      lastCrc: lineCrc(lines[lines.length - 1]!)!,
      batchId: `load:${expectedSeq}`,
    })
  }
  for (const { seq, line } of agentSession(projection)) {
    batch.push(line)
    if (seq === checkpointSeq) {
      const snapshot: ProjectionSnapshot = projection.snapshot()
      checkpoint = {
        seq,
        eventCrc: lineCrc(line)!,
        headerCrc,
        registryDigest: 'core',
        body: Buffer.from(JSON.stringify(snapshot), 'utf8'),
      }
    }
    if (batch.length === LOAD_BATCH || seq === TOTAL_EVENTS - 1) {
      await send(batch)
      batch = []
    }
    if (seq === TOTAL_EVENTS - 1) break
  }
  const before = performance.now()
  await inFlight
  waitingMs += performance.now() - before
  await backend.capabilities.checkpoints!.putCheckpoint(lease, checkpoint!)
  await backend.release(lease)
  return waitingMs / 1000
}

/** The checkpointed cold open described in the module comment; returns the projection and how many events it replayed. */
async function checkpointOpen(store: SessionStore, backend: PostgresBackend, id: string): Promise<{ projection: Projection; replayed: number }> {
  const checkpoint = await backend.capabilities.checkpoints!.getCheckpoint(id)
  if (checkpoint === null) throw new Error('no checkpoint')
  if (lineCrc((await backend.readHeader(id)).line) !== checkpoint.headerCrc) throw new Error('checkpoint of another header')
  let bound = false
  for await (const stored of backend.read(id, { fromSeq: checkpoint.seq, toSeq: checkpoint.seq })) {
    bound = lineCrc(stored.line) === checkpoint.eventCrc && verifyLineChecksum(stored.line, crc32c)
  }
  if (!bound) throw new Error(`checkpoint no longer bound to event ${checkpoint.seq}`)
  const snapshot = JSON.parse(Buffer.from(checkpoint.body).toString('utf8')) as ProjectionSnapshot
  const projection = restoreProjection(snapshot, { registry: coreEventRegistry })
  let replayed = 0
  for await (const event of store.readEvents(id, { fromSeq: checkpoint.seq + 1 })) {
    projection.apply(event)
    replayed++
  }
  return { projection, replayed }
}

async function seconds(action: () => Promise<unknown>): Promise<number> {
  const started = performance.now()
  await action()
  return (performance.now() - started) / 1000
}

/** Runs the figures (see the module comment). */
export async function run(): Promise<BenchResult[]> {
  return await withServer('session-store-postgres cold open', async ({ url }) => {
    const backend = await openPostgresBackend({ connectionString: url, poolSize: 4, readPageSize: 5000 })
    const store = createSessionStore({ backend, clock: () => new Date().toISOString(), owner: 'bench' })
    const bare = await bareClient(url)
    try {
      const id = 'cold-1m'
      let waiting = 0
      const loadSeconds = await seconds(async () => {
        waiting = await load(store, backend, id)
      })
      console.error(
        `bench: cold open: generated and loaded ${TOTAL_EVENTS} events in ${loadSeconds.toFixed(1)} s (${(loadSeconds - waiting).toFixed(1)} s generating lines in this process while the previous batch was appended, ${waiting.toFixed(1)} s waiting for the server)`,
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
            fullProjection = (await store.openReader(id)).projection
          }),
        )
      }
      const ours: number[] = []
      for (let round = 0; round < OPEN_ROUNDS; round++) {
        let opened: { projection: Projection; replayed: number } | undefined
        ours.push(
          await seconds(async () => {
            opened = await checkpointOpen(store, backend, id)
          }),
        )
        if (opened?.replayed !== TAIL_EVENTS) throw new Error(`replayed ${opened?.replayed} events, expected ${TAIL_EVENTS}`)
        if (JSON.stringify(opened.projection.snapshot()) !== JSON.stringify(fullProjection!.snapshot())) {
          throw new Error('the checkpointed open does not give the full replay projection')
        }
      }
      const floorMs = Math.min(...full) * 1000
      const oursMs = median(ours) * 1000
      console.error(
        `bench: cold open: full replays ${full.map((value) => value.toFixed(1)).join(', ')} s; checkpointed ${ours.map((value) => (value * 1000).toFixed(0)).join(', ')} ms; ${fullProjection!.surface().length} surface nodes`,
      )
      return [
        {
          name: `postgres cold open, ${TOTAL_EVENTS} events, checkpoint ${TAIL_EVENTS} events behind`,
          value: oursMs,
          unit: 'ms',
          floor: { name: 'full replay (store.openReader), same session', value: floorMs },
          ratio: oursMs / floorMs,
          target: '<= 0.05',
          met: oursMs / floorMs <= 0.05,
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
