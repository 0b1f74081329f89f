/**
 * Writer CPU per event through the session core (issue 23): `createSessionStore` from
 * `@agent-ledger/session-store` over the memory backend (so no I/O is counted) offering the
 * native CRC-32C, as the JSONL and PostgreSQL backends do; the store's defaults (redaction
 * on, checkpoints on, limits), `writer.append` of every event and one `flush` per 100. The
 * floor is `JSON.stringify` of the same events (`{seq, time, type, data}`), the least any
 * writer does to get a line. Both are process CPU time (`process.cpuUsage`, user + system),
 * not wall time, so another process on the machine does not count; rounds alternate ours and
 * the floor (ABAB) and the ratio is the median of the per-round ratios (target <= 3).
 *
 * Two event sets: the first 6,000 events of the ~20 MB realistic dataset (`support/dataset.ts`,
 * ~3.4 KB per event on average: tool outputs up to a few MB), and 20,000 small events of a
 * chat without tools (~150-300 bytes: a turn start, a user message, an assistant answer, a
 * turn end). A context row repeats the small set with redaction off.
 *
 * Run alone with `pnpm bench --only writer-cpu`.
 */
import { readFileSync } from 'node:fs'

import { crc32c } from '@node-rs/crc32'
import type { EventInput } from '@agent-ledger/session-events'
import { createMemoryBackend, createSessionStore } from '@agent-ledger/session-store'
import type { RedactionPolicy } from '@agent-ledger/session-store'

import { median } from '../../../tooling/bench/support.ts'
import { ensureDataset } from './support/dataset.ts'
import type { TimedInput } from './support/dataset.ts'
import { progress } from './support/measure.ts'
import type { BenchResult, RunOptions } from './support/measure.ts'

const ROUNDS = 9
const TARGET = 3
const FLUSH_EVERY = 100
const log = progress('writer-cpu')

/** CPU microseconds (user + system) of this process spent in `action`. */
async function cpuMicros(action: () => Promise<void> | void): Promise<number> {
  const before = process.cpuUsage()
  await action()
  const used = process.cpuUsage(before)
  return used.user + used.system
}

/** The first `count` events of the realistic dataset, as writer inputs with their times. */
function datasetInputs(file: string, count: number): TimedInput[] {
  const text = readFileSync(file, 'utf8')
  const inputs: TimedInput[] = []
  let start = text.indexOf('\n') + 1
  while (inputs.length < count) {
    const end = text.indexOf('\n', start)
    if (end === -1) break
    const { seq: _seq, time, crc: _crc, ...input } = JSON.parse(text.slice(start, end)) as Record<string, unknown>
    inputs.push({ input: input as unknown as EventInput, time: time as string })
    start = end + 1
  }
  return inputs
}

/** A chat without tools: turn start, user message, assistant answer, turn end. */
function smallInputs(count: number): TimedInput[] {
  const time = '2026-01-01T00:00:00.000Z'
  return Array.from({ length: count }, (_, index): TimedInput => {
    const turn = Math.floor(index / 4)
    switch (index % 4) {
      case 0:
        return { time, input: { type: 'turn/start', data: { turn } } }
      case 1:
        return {
          time,
          input: {
            type: 'user/message',
            data: { message: { role: 'user', content: `question ${turn}: ${'how does the flush policy work? '.repeat(4)}` } },
          },
        }
      case 2:
        return {
          time,
          input: {
            type: 'assistant/message',
            data: { message: { role: 'assistant', content: `It batches appends (turn ${turn}). ${'See writer.ts. '.repeat(6)}` } },
          },
        }
      default:
        return { time, input: { type: 'turn/end', data: { turn, reason: 'completed' } } }
    }
  })
}

let sessionCounter = 0

async function cpuFigure(
  name: string,
  inputs: readonly TimedInput[],
  redaction: RedactionPolicy | null | undefined,
  target: boolean,
): Promise<BenchResult> {
  let now = inputs[0]!.time
  const store = createSessionStore({
    backend: createMemoryBackend({ crc32c: (bytes) => crc32c(bytes) >>> 0 }),
    clock: () => now,
    owner: 'bench',
    ...(redaction === undefined ? {} : { redaction }),
  })
  let sink = 0
  const ours = async (): Promise<number> => {
    sessionCounter += 1
    now = inputs[0]!.time
    const writer = await store.create({ id: `cpu-${sessionCounter}` })
    const micros = await cpuMicros(async () => {
      for (let index = 0; index < inputs.length; index += 1) {
        const next = inputs[index]!
        now = next.time
        writer.append(next.input)
        if (index % FLUSH_EVERY === FLUSH_EVERY - 1) await writer.flush()
      }
      await writer.flush()
    })
    await writer.close()
    return micros / inputs.length
  }
  const floor = (): Promise<number> =>
    cpuMicros(() => {
      for (let index = 0; index < inputs.length; index += 1) {
        const { input, time } = inputs[index]!
        sink += JSON.stringify({ seq: index, time, type: input.type, data: input.data }).length
      }
    }).then((micros) => micros / inputs.length)
  await ours()
  await floor()
  const oursSamples: number[] = []
  const floorSamples: number[] = []
  const ratios: number[] = []
  for (let round = 0; round < ROUNDS; round += 1) {
    const stringify = await floor()
    const writer = await ours()
    oursSamples.push(writer)
    floorSamples.push(stringify)
    ratios.push(writer / stringify)
  }
  await store.close()
  if (sink < 0) console.error(sink)
  const ratio = median(ratios)
  return {
    name,
    value: median(oursSamples),
    unit: 'us CPU/event',
    floor: { name: 'JSON.stringify of the same events', value: median(floorSamples) },
    ratio,
    ...(target ? { target: `<= ${TARGET}`, met: ratio <= TARGET } : { target: 'context' }),
  }
}

/**
 * Runs the writer CPU figures (see the module comment).
 *
 * @param _options - `scale` (unused: the same sizes at every scale).
 * @returns One figure per event set.
 */
export async function run(_options: RunOptions = {}): Promise<BenchResult[]> {
  const dataset = await ensureDataset(20, log)
  const realistic = datasetInputs(dataset.file, 6000)
  const small = smallInputs(20_000)
  log('realistic events')
  const results = [
    await cpuFigure(
      `writer CPU per event, ${realistic.length} realistic events (createSessionStore, memory backend, redaction on)`,
      realistic,
      undefined,
      true,
    ),
  ]
  log('small events')
  results.push(
    await cpuFigure(
      `writer CPU per event, ${small.length} small chat events (createSessionStore, memory backend, redaction on)`,
      small,
      undefined,
      true,
    ),
  )
  results.push(
    await cpuFigure(
      `writer CPU per event, ${small.length} small chat events, redaction off (context)`,
      small,
      null,
      false,
    ),
  )
  return results
}
