/**
 * Conformance cases for the `checkpoints` capability, through the session core: a
 * checkpointed open equals a full replay; a checkpoint that cannot be trusted (damaged body,
 * another event's checksum, an older version, past the head) is ignored with a warning and
 * the open replays everything; a writer that dies between its events and its checkpoint
 * leaves a session that opens exactly as a full replay. Backends without the capability
 * pass them trivially.
 */
import { CORE_CHECKPOINT_FORMAT } from '../checkpoint-body.ts'
import type { CheckpointOptions, SessionStoreWarning } from '../checkpoint-options.ts'
import type { CheckpointRecord, SessionBackend } from '../port.ts'
import { SessionStoreError } from '../session-store-error.ts'
import type { SessionStore } from '../store-api.ts'
import { createSessionStore } from '../store.ts'
import { deepEqual, equal, ok } from './assert.ts'
import { makeClock, pollSleep, user } from './harness.ts'
import type { Case, CaseContext } from './harness.ts'

declare const TextEncoder: new () => { encode(input: string): Uint8Array }
declare const TextDecoder: new () => { decode(input: Uint8Array): string }

/** Checkpoint after every flush: no event, time or size threshold. */
const EAGER: CheckpointOptions = { everyEvents: 1, minIntervalMs: 0, minLogBytes: 0, minGrowthRatio: 0 }

interface Stores {
  /** Writes and uses checkpoints eagerly. */
  readonly eager: SessionStore
  /** Never uses or writes one: the full replay. */
  readonly replay: SessionStore
  readonly warnings: SessionStoreWarning[]
}

function stores(backend: SessionBackend, owner = 'checkpoints'): Stores {
  const warnings: SessionStoreWarning[] = []
  const common = { backend, owner, leaseMs: 60_000, sleep: pollSleep }
  return {
    eager: createSessionStore({
      ...common,
      clock: makeClock(),
      checkpoint: EAGER,
      onWarning: (warning) => warnings.push(warning),
    }),
    replay: createSessionStore({ ...common, clock: makeClock(), checkpoint: { enabled: false } }),
    warnings,
  }
}

/** `turns` complete turns (one tool call each), one flush per turn. */
async function writeTurns(
  store: SessionStore,
  id: string,
  turns: { from: number; count: number },
): Promise<void> {
  const writer = await store.openWriter(id)
  for (let turn = turns.from; turn < turns.from + turns.count; turn++) {
    writer.append({ type: 'turn/start', data: { turn } })
    writer.append(user(`question ${turn}`))
    writer.append({
      type: 'assistant/message',
      data: {
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: `c${turn}`, type: 'function', function: { name: 'ls', arguments: '{}' } }],
        },
      },
    })
    writer.append({ type: 'tool/call', data: { callId: `c${turn}`, name: 'ls', arguments: '{}' } })
    writer.append({
      type: 'tool/result',
      data: { message: { role: 'tool', tool_call_id: `c${turn}`, content: `out ${turn}` } },
    })
    writer.append({
      type: 'assistant/message',
      data: { message: { role: 'assistant', content: `answer ${turn}` } },
    })
    writer.append({ type: 'turn/end', data: { turn, reason: 'completed' } })
    await writer.flush()
  }
  await writer.close()
}

/** A session with a checkpoint at seq 20 (3 turns) and 14 events after it. */
async function checkpointed(context: CaseContext, name: string): Promise<{ id: string; s: Stores } | null> {
  if (context.backend.capabilities.checkpoints === undefined) return null
  const id = context.id(name)
  const s = stores(context.backend)
  await (await s.eager.create({ id, header: { cwd: '/conformance' } })).close()
  await writeTurns(s.eager, id, { from: 1, count: 3 })
  await writeTurns(s.replay, id, { from: 4, count: 2 })
  const stored = await storedCheckpoint(context.backend, id)
  equal(stored?.seq, 20, 'checkpoint seq after three turns')
  return { id, s }
}

/** The checkpointed open's results equal the full replay's. */
async function assertSameAsReplay(s: Stores, id: string): Promise<void> {
  const full = await s.replay.openReader(id)
  const fast = await s.eager.openReader(id)
  deepEqual(fast.projection.snapshot(), full.projection.snapshot(), 'projection snapshot')
  deepEqual(fast.projection.deriveMessages(), full.projection.deriveMessages(), 'messages')
  equal(fast.lastSeq, full.lastSeq, 'lastSeq')
  equal(fast.projection.nextSeq, full.projection.nextSeq, 'nextSeq')
  deepEqual(fast.pendingToolCalls, full.pendingToolCalls, 'pending tool calls')
}

/** The stored checkpoint record, or null; a conformant store's own checkpoint is never unreadable. */
async function storedCheckpoint(backend: SessionBackend, id: string): Promise<CheckpointRecord | null> {
  const stored = await backend.capabilities.checkpoints!.getCheckpoint(id)
  if (stored !== null && 'unreadable' in stored) {
    throw new Error(
      `expected the checkpoint the store wrote for ${id}, found it unreadable: ${stored.unreadable}`,
    )
  }
  return stored
}

/** Replaces the stored checkpoint (under a lease taken and released for it). */
async function tamper(
  backend: SessionBackend,
  id: string,
  change: (record: CheckpointRecord) => CheckpointRecord,
): Promise<boolean> {
  const capability = backend.capabilities.checkpoints!
  const record = await storedCheckpoint(backend, id)
  ok(record !== null, 'a stored checkpoint to tamper with')
  const { lease } = await backend.acquire(id, { owner: 'tamper', leaseMs: 60_000, takeover: true })
  try {
    await capability.putCheckpoint(lease, change(record!))
    return true
  } catch (error) {
    // A backend may refuse the record itself (a seq past its head): then it cannot be stored at all.
    if (!SessionStoreError.is(error)) throw error
    return false
  } finally {
    await backend.release(lease)
  }
}

function ignoredCase(
  title: string,
  reason: string,
  change: (record: CheckpointRecord) => CheckpointRecord,
): Case {
  return {
    title,
    run: async (context) => {
      const made = await checkpointed(context, `bad-${reason}`)
      if (made === null) return
      const { id, s } = made
      if (!(await tamper(context.backend, id, change))) return
      const read = await s.eager.openReader(id)
      deepEqual(
        { used: read.checkpoint.used, reason: 'reason' in read.checkpoint ? read.checkpoint.reason : null },
        { used: false, reason },
        'checkpoint use',
      )
      equal(read.checkpoint.replayedEvents, 35, 'events replayed')
      deepEqual(
        s.warnings.map((warning) => [warning.code, warning.details.reason]),
        [['CHECKPOINT_IGNORED', reason]],
        'warnings',
      )
      await assertSameAsReplay(s, id)
      const writer = await s.eager.openWriter(id)
      equal(writer.recovery.checkpoint.used, false, 'write open checkpoint use')
      equal(writer.projection.nextSeq, 35, 'write open nextSeq')
      await writer.close()
    },
  }
}

function withBody(record: CheckpointRecord, body: Uint8Array): CheckpointRecord {
  return { ...record, body }
}

/** Projection checkpoints through the core (skipped without the capability, except the first). */
export const CHECKPOINT_CASES: readonly Case[] = [
  {
    title:
      'checkpoint used: a read and a write open report the checkpoint used and equal a full replay; without the capability both report it unsupported',
    run: async (context) => {
      const id = context.id('used')
      const s = stores(context.backend)
      await (await s.eager.create({ id, header: { cwd: '/conformance' } })).close()
      await writeTurns(s.eager, id, { from: 1, count: 3 })
      await writeTurns(s.replay, id, { from: 4, count: 1 })
      const read = await s.eager.openReader(id)
      const writer = await s.eager.openWriter(id)
      const recovered = writer.recovery.checkpoint
      await writer.close({ discardUnflushed: true })
      if (context.backend.capabilities.checkpoints === undefined) {
        for (const [use, what] of [
          [read.checkpoint, 'reader'],
          [recovered, 'writer'],
        ] as const) {
          deepEqual(
            { used: use.used, reason: 'reason' in use ? use.reason : null, replayed: use.replayedEvents },
            { used: false, reason: 'unsupported', replayed: 28 },
            `${what} checkpoint use without the capability`,
          )
        }
        return
      }
      deepEqual(read.checkpoint, { used: true, seq: 20, replayedEvents: 7 }, 'reader checkpoint use')
      deepEqual(recovered, { used: true, seq: 20, replayedEvents: 7 }, 'writer checkpoint use')
      await assertSameAsReplay(s, id)
      deepEqual(s.warnings, [], 'no warnings')
    },
  },
  {
    title:
      'checkpoints: an open from the checkpoint equals a full replay (projection, nextSeq, messages), read and write',
    run: async (context) => {
      const made = await checkpointed(context, 'equal')
      if (made === null) return
      const { id, s } = made
      const read = await s.eager.openReader(id)
      deepEqual(read.checkpoint, { used: true, seq: 20, replayedEvents: 14 }, 'reader checkpoint use')
      await assertSameAsReplay(s, id)
      const full = await s.replay.openReader(id)
      const writer = await s.eager.openWriter(id)
      deepEqual(
        writer.recovery.checkpoint,
        { used: true, seq: 20, replayedEvents: 14 },
        'writer checkpoint use',
      )
      equal(writer.projection.nextSeq, full.projection.nextSeq, 'writer nextSeq')
      deepEqual(writer.deriveMessages(), full.projection.deriveMessages(), 'writer messages')
      writer.append(user('after the checkpointed open'))
      await writer.close()
      equal((await storedCheckpoint(context.backend, id))?.seq, 35, 'checkpoint written on close')
      await assertSameAsReplay(s, id)
      deepEqual(s.warnings, [], 'no warnings')
    },
  },
  ignoredCase(
    'checkpoints: a damaged body (one byte flipped) is ignored with a warning; the open replays everything',
    'checksum',
    (record) => {
      const body = record.body.slice()
      body[body.length - 3] = body[body.length - 3]! ^ 0x01
      return withBody(record, body)
    },
  ),
  ignoredCase(
    'checkpoints: a record bound to another event checksum is ignored with a warning',
    'event',
    (record) => ({
      ...record,
      eventCrc: record.eventCrc === '00000000' ? '00000001' : '00000000',
    }),
  ),
  ignoredCase(
    'checkpoints: an older checkpoint version is ignored with a warning',
    'old-version',
    (record) => {
      const text = new TextDecoder().decode(record.body)
      const newline = text.indexOf('\n')
      const preamble = JSON.parse(text.slice(0, newline)) as Record<string, unknown>
      equal(preamble.format, CORE_CHECKPOINT_FORMAT, 'stored format')
      return withBody(
        record,
        new TextEncoder().encode(
          `${JSON.stringify({ ...preamble, checkpointVersion: 0 })}${text.slice(newline)}`,
        ),
      )
    },
  ),
  ignoredCase(
    'checkpoints: a record past the head is ignored with a warning (when the backend stores one at all)',
    'past-head',
    (record) => ({
      ...record,
      seq: 40,
    }),
  ),
  {
    title:
      'checkpoints: a writer that dies between its events and its checkpoint leaves a session that opens as a full replay',
    run: async (context) => {
      const made = await checkpointed(context, 'died')
      if (made === null) return
      const { id, s } = made
      const instance = await context.second()
      const dying = stores(instance, 'dying')
      // Its checkpoint write never happens (the process dies right after the flush): a store
      // with checkpoints off writes the events, then nothing closes or releases.
      const writer = await dying.replay.openWriter(id)
      writer.append({ type: 'turn/start', data: { turn: 9 } })
      writer.append(user('lost before its checkpoint'))
      await writer.flush()
      equal((await storedCheckpoint(context.backend, id))?.seq, 20, 'the checkpoint from before the death')
      const read = await s.eager.openReader(id)
      deepEqual(read.checkpoint, { used: true, seq: 20, replayedEvents: 16 }, 'the stale checkpoint is used')
      equal(read.lastSeq, 36, 'lastSeq')
      await assertSameAsReplay(s, id)
      const resumed = await stores(context.backend, 'resumer').eager.openWriter(id, { takeover: true })
      deepEqual(
        resumed.recovery.repairs.map((action) => action.code),
        ['CLOSE_TURN'],
        'repairs of the open turn',
      )
      await resumed.close()
      await assertSameAsReplay(s, id)
      deepEqual(s.warnings, [], 'no warnings')
    },
  },
]
