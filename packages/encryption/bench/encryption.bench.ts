/**
 * Encryption at rest benchmark (issue 27 item 3): the same work through the one store API
 * (`createJsonlStore({ root })`) with and without `encryption`, rounds alternating (ABAB),
 * medians of the per-round ratios. `ratio` = encrypted seconds / plain seconds (target
 * <= 1.3, the "within 1.3x"); the plain figure is the floor.
 *
 * 1. Append batch 100: `append` x 100 + `await flush()` (one fdatasync per batch), 30 batches
 *    of realistic agent events (messages of 0.5-4 KB, tool calls and results).
 * 2. Cold open: `openReader` of a 3,000-event session by a new store (checkpoints off on both:
 *    an encrypted session stores none, so this is the honest comparison; a plain session with
 *    a checkpoint opens faster still, see FORMAT.md section 17).
 * 3. Context row (no target): the same cold open of 300 events whose tool results are ~32 KB,
 *    where the per-line cost of a GCM open (a `createDecipheriv` each) weighs less against the
 *    bytes every open decodes anyway.
 *
 * Run alone with `pnpm bench --only encryption.bench`.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import type { EventInput } from '@agent-ledger/session-events'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'

import { median } from '../../../tooling/bench/support.ts'
import type { BenchResult } from '../../../tooling/bench/types.ts'
import { createEncryption, localKeyProvider, memoryKeyStore } from '../src/index.ts'
import type { StoreEncryption } from '../src/index.ts'

const ROUNDS = 7
const BATCH = 100
const BATCHES = 30
const OPEN_EVENTS = 3000
const LARGE_EVENTS = 301
const TARGET = 1.3

/** Deterministic text of `bytes` characters (words from a fixed vocabulary). */
function prose(seed: number, bytes: number): string {
  const words = [
    'agent',
    'ledger',
    'session',
    'tool',
    'result',
    'file',
    'the',
    'of',
    'build',
    'test',
    'error',
    'fix',
  ]
  let text = ''
  let state = seed
  while (text.length < bytes) {
    state = (state * 1103515245 + 12345) % 2147483648
    text += `${words[state % words.length]!} `
  }
  return text.slice(0, bytes)
}

/** A turn of realistic events: user, assistant asking a tool, the call, its result, the answer. */
function turnEvents(turn: number, resultBytes: number): EventInput[] {
  const callId = `c${turn}`
  return [
    { type: 'turn/start', data: { turn } },
    { type: 'user/message', data: { message: { role: 'user', content: prose(turn, 600) } } },
    {
      type: 'assistant/message',
      data: {
        message: {
          role: 'assistant',
          content: prose(turn + 1, 400),
          tool_calls: [
            { id: callId, type: 'function', function: { name: 'read', arguments: '{"path":"a.ts"}' } },
          ],
        },
      },
    },
    { type: 'tool/call', data: { callId, name: 'read', arguments: '{"path":"a.ts"}' } },
    {
      type: 'tool/result',
      data: { message: { role: 'tool', tool_call_id: callId, content: prose(turn + 2, resultBytes) } },
    },
    { type: 'assistant/message', data: { message: { role: 'assistant', content: prose(turn + 3, 1500) } } },
    { type: 'turn/end', data: { turn, reason: 'completed' } },
  ]
}

function events(count: number, resultBytes = 4000): EventInput[] {
  const all: EventInput[] = []
  for (let turn = 1; all.length < count; turn += 1) all.push(...turnEvents(turn, resultBytes))
  return all.slice(0, count - (count % 7))
}

async function appendRun(root: string, id: string, encryption: StoreEncryption | undefined): Promise<number> {
  const store = createJsonlStore({ root, ...(encryption === undefined ? {} : { encryption }) })
  const inputs = events(BATCH * BATCHES)
  try {
    const writer = await store.create({ id })
    const started = performance.now()
    for (let batch = 0; batch < BATCHES; batch += 1) {
      for (const input of inputs.slice(batch * BATCH, (batch + 1) * BATCH)) writer.append(input)
      await writer.flush()
    }
    const elapsed = (performance.now() - started) / 1000
    await writer.close()
    return elapsed
  } finally {
    await store.close()
  }
}

async function openRun(
  root: string,
  encryption: StoreEncryption | undefined,
  session: { readonly id: string; readonly events: number },
): Promise<number> {
  const store = createJsonlStore({
    root,
    checkpoint: { enabled: false },
    ...(encryption === undefined ? {} : { encryption }),
  })
  try {
    const started = performance.now()
    const result = await store.openReader(session.id)
    const elapsed = (performance.now() - started) / 1000
    if (result.lastSeq < session.events - 8) throw new Error(`open read ${result.lastSeq + 1} events`)
    return elapsed
  } finally {
    await store.close()
  }
}

function row(name: string, samples: { plain: number[]; sealed: number[] }, targeted = true): BenchResult {
  const ratios = samples.sealed.map((value, index) => value / samples.plain[index]!)
  const ratio = median(ratios)
  return {
    name,
    value: median(samples.sealed) * 1000,
    unit: 'ms',
    floor: { name: 'the same, unencrypted', value: median(samples.plain) * 1000 },
    ratio,
    ...(targeted ? { target: `<= ${TARGET}`, met: ratio <= TARGET } : {}),
  }
}

export async function run(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'al-enc-bench-'))
  const encryption = createEncryption({
    keys: localKeyProvider(`k1:${randomBytes(32).toString('base64')}`),
    keyStore: memoryKeyStore(),
  })
  try {
    const appends = { plain: [] as number[], sealed: [] as number[] }
    const opens = { plain: [] as number[], sealed: [] as number[] }
    const largeOpens = { plain: [] as number[], sealed: [] as number[] }
    // The sessions the opens read, written once.
    const plainRoot = join(dir, 'open-plain')
    const sealedRoot = join(dir, 'open-sealed')
    for (const [root, option] of [
      [plainRoot, undefined],
      [sealedRoot, encryption],
    ] as const) {
      const store = createJsonlStore({ root, ...(option === undefined ? {} : { encryption: option }) })
      const writer = await store.create({ id: 'open' })
      for (const input of events(OPEN_EVENTS)) writer.append(input)
      await writer.close()
      const large = await store.create({ id: 'large' })
      for (const input of events(LARGE_EVENTS, 32_000)) large.append(input)
      await large.close()
      await store.close()
    }
    await appendRun(join(dir, 'warm-plain'), 'w', undefined)
    await appendRun(join(dir, 'warm-sealed'), 'w', encryption)
    for (let round = 0; round < ROUNDS; round += 1) {
      const order = round % 2 === 0 ? ([undefined, encryption] as const) : ([encryption, undefined] as const)
      for (const option of order) {
        const seconds = await appendRun(
          join(dir, `append-${round}-${option === undefined ? 'p' : 's'}`),
          'a',
          option,
        )
        ;(option === undefined ? appends.plain : appends.sealed).push(seconds)
        const root = option === undefined ? plainRoot : sealedRoot
        ;(option === undefined ? opens.plain : opens.sealed).push(
          await openRun(root, option, { id: 'open', events: OPEN_EVENTS }),
        )
        const large = await openRun(root, option, { id: 'large', events: LARGE_EVENTS })
        ;(option === undefined ? largeOpens.plain : largeOpens.sealed).push(large)
      }
    }
    return [
      row(`encrypted append, batch ${BATCH} (${BATCHES} flushes), jsonl`, appends),
      row(`encrypted cold open, ${OPEN_EVENTS} events, jsonl`, opens),
      row(
        `encrypted cold open, ${LARGE_EVENTS} events with 32 KB tool results, jsonl (context)`,
        largeOpens,
        false,
      ),
    ]
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
