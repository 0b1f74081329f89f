/**
 * The Claude store's append, one entry per call (the SDK's `eager` flush), run by `pnpm bench`
 * (tooling/bench/run.ts), on the core's memory backend (CPU, no disk):
 *
 * 1. milliseconds per entry over a transcript of N entries, beside the floor of the same
 *    entries appended verbatim through a core writer (one `import/source-record` event and a
 *    flush per entry: what the store writes before its mapping), in the same run;
 * 2. the cost per entry of a 4N-entry transcript beside that of an N-entry one: 1 when an
 *    append costs the same however long the transcript is (the mapping is incremental); more
 *    when an append's cost grows with the transcript (each append mapping it all again).
 *
 * Timing is wall clock on a shared machine: ratios are the claim, absolute figures vary.
 */
import type { SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk'
import { SOURCE_RECORD_EVENT_TYPE } from '@agent-ledger/import'
import type { EventInput } from '@agent-ledger/session-events'
import { createMemoryBackend, createSessionStore } from '@agent-ledger/session-store'

import { median } from '../../../tooling/bench/support.ts'
import type { BenchResult } from '../../../tooling/bench/types.ts'
import { createClaudeSessionStore } from '../src/index.ts'

// A benchmark reads the clock by definition; this file is not shipped (not in `files`).
const now = (): number => performance.now()
const clock = (): string => new Date().toISOString()

function chain(count: number): SessionStoreEntry[] {
  return Array.from({ length: count }, (_, i) => ({
    type: i % 2 === 0 ? 'user' : 'assistant',
    uuid: `u-${i}`,
    parentUuid: i === 0 ? null : `u-${i - 1}`,
    sessionId: 'bench',
    cwd: '/tmp/bench',
    timestamp: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
    message:
      i % 2 === 0
        ? { role: 'user', content: `question ${i}: ${'context '.repeat(40)}` }
        : {
            id: `msg-${i}`,
            role: 'assistant',
            model: 'claude-sonnet-4-5',
            content: [{ type: 'text', text: `answer ${i}: ${'detail '.repeat(60)}` }],
          },
  }))
}

/** Milliseconds per entry of appending `count` entries one per call through the Claude store. */
async function claudeAppend(count: number): Promise<number> {
  const store = createSessionStore({ backend: createMemoryBackend(), clock })
  const claude = createClaudeSessionStore(store)
  const key = { projectKey: 'bench', sessionId: 'bench' }
  const entries = chain(count)
  const started = now()
  for (const entry of entries) await claude.append(key, [entry])
  const ms = (now() - started) / count
  await claude.close()
  await store.close()
  return ms
}

/** The floor: the same entries as verbatim source records through a core writer, a flush each. */
async function verbatimAppend(count: number): Promise<number> {
  const store = createSessionStore({ backend: createMemoryBackend(), clock })
  const writer = await store.create({ id: 'floor' })
  const entries = chain(count)
  const started = now()
  for (const [index, entry] of entries.entries()) {
    writer.append({
      type: SOURCE_RECORD_EVENT_TYPE,
      data: { format: 'claude-code', line: index + 1, record: entry, disposition: 'mirrored' },
      ignorable: true,
    } as unknown as EventInput)
    await writer.flush()
  }
  const ms = (now() - started) / count
  await writer.close()
  await store.close()
  return ms
}

export async function run(options: { scale: 'default' | 'large' }): Promise<BenchResult[]> {
  const n = options.scale === 'large' ? 500 : 200
  const rounds = 3
  const floor: number[] = []
  const short: number[] = []
  const long: number[] = []
  await claudeAppend(50) // warm-up
  for (let round = 0; round < rounds; round += 1) {
    floor.push(await verbatimAppend(4 * n))
    long.push(await claudeAppend(4 * n))
    short.push(await claudeAppend(n))
  }
  const perEntry = median(long)
  const floorMs = median(floor)
  const shortMs = median(short)
  const overFloor = perEntry / floorMs
  const growth = perEntry / shortMs
  return [
    {
      name: `Claude store append, ${4 * n} entries one per call (memory backend)`,
      value: Number(perEntry.toFixed(3)),
      unit: 'ms/entry',
      floor: {
        name: 'the entries verbatim through a core writer, a flush each',
        value: Number(floorMs.toFixed(3)),
      },
      ratio: Number(overFloor.toFixed(2)),
      target: '<= 8',
      met: overFloor <= 8,
    },
    {
      name: `Claude store append cost per entry, ${4 * n}-entry transcript`,
      value: Number(perEntry.toFixed(3)),
      unit: 'ms/entry',
      floor: { name: `the same, ${n}-entry transcript`, value: Number(shortMs.toFixed(3)) },
      ratio: Number(growth.toFixed(2)),
      target: '<= 1.5',
      met: growth <= 1.5,
    },
  ]
}
