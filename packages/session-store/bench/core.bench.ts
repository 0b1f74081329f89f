/**
 * Benchmarks of the session core, run by `pnpm bench` (tooling/bench/run.ts).
 *
 * 1. The pure CRC-32C (slicing-by-8) beside the native `@node-rs/crc32` over the same 4 MiB:
 *    MB/s, ratio pure / native (what a backend gains by injecting the native one).
 * 2. Writer append + flush into the memory backend (validation, snapshot, encoding, one
 *    backend append per 100 events) beside the floor of a bare `JSON.stringify` + CRC of
 *    the same events: events/s, ratio ours / floor (wall clock; the CPU-per-event figure
 *    with its target is `session-store-jsonl/bench/writer-cpu.bench.ts`).
 * 3. openWriter over the same session (every line checked: CRC, JSON, seq, schema,
 *    projection) beside a bare `JSON.parse` loop over the same lines: events/s, ratio.
 *
 * Wall clock on a shared machine: ratios are the claim, absolute figures vary.
 */
import { crc32c as nativeCrc32c } from '@node-rs/crc32'

import { createMemoryBackend, createSessionStore, crc32c } from '../src/index.ts'
import { utf8 } from '../src/line-codec.ts'
import type { BenchResult } from '../../../tooling/bench/types.ts'

declare const performance: { now(): number }


// A benchmark reads the clock by definition; this file is not shipped (not in `files`).
 
const now = (): number => performance.now()

function best(rounds: number, body: () => void): number {
  let fastest = Infinity
  for (let round = 0; round < rounds; round += 1) {
    const start = now()
    body()
    fastest = Math.min(fastest, now() - start)
  }
  return fastest
}

async function bestAsync(rounds: number, body: () => Promise<void>): Promise<number> {
  let fastest = Infinity
  for (let round = 0; round < rounds; round += 1) {
    const start = now()
    await body()
    fastest = Math.min(fastest, now() - start)
  }
  return fastest
}

function eventInput(index: number): {
  type: 'user/message'
  data: { message: { role: 'user'; content: string } }
} {
  return {
    type: 'user/message',
    data: {
      message: { role: 'user', content: `message ${index}: ${'lorem ipsum dolor sit amet '.repeat(8)}` },
    },
  }
}

/**
 * Runs the benchmarks.
 *
 * @param options - `scale`: `large` uses ten times the events.
 * @returns The figures.
 */
export async function run(options: { scale: 'default' | 'large' }): Promise<BenchResult[]> {
  const results: BenchResult[] = []
  const buffer = new Uint8Array(4 * 1024 * 1024)
  for (let index = 0; index < buffer.length; index += 1) buffer[index] = (index * 2654435761) >>> 24
  const megabytes = buffer.length / (1024 * 1024)
  let sink = 0
  const pureMs = best(5, () => {
    sink ^= crc32c(buffer)
  })
  const nativeMs = best(5, () => {
    sink ^= nativeCrc32c(buffer)
  })
  const pure = megabytes / (pureMs / 1000)
  const native = megabytes / (nativeMs / 1000)
  results.push({
    name: 'crc32c pure (slicing-by-8), 4 MiB',
    value: pure,
    unit: 'MB/s',
    floor: { name: '@node-rs/crc32 native', value: native },
    ratio: pure / native,
    target: 'informative (inject the native one on Node)',
  })

  const count = options.scale === 'large' ? 100_000 : 10_000
  const inputs = Array.from({ length: count }, (_, index) => eventInput(index))
  const time = '2026-01-01T00:00:00.000Z'
  const floorMs = best(3, () => {
    for (const [seq, input] of inputs.entries()) {
      const json = JSON.stringify({ seq, time, type: input.type, data: input.data })
      sink ^= crc32c(utf8(json.slice(0, -1)))
    }
  })
  // The native CRC-32C reaches the core through the backend (as the JSONL and PostgreSQL ones offer it).
  const backend = createMemoryBackend({ crc32c: (bytes) => nativeCrc32c(bytes) >>> 0 })
  const store = createSessionStore({ backend, clock: () => time })
  let round = 0
  const writeMs = await bestAsync(3, async () => {
    round += 1
    const writer = await store.create({ id: `bench-${round}` })
    for (let index = 0; index < inputs.length; index += 1) {
      writer.append(inputs[index]!)
      if (index % 100 === 99) await writer.flush()
    }
    await writer.close()
  })
  const writeRate = count / (writeMs / 1000)
  const floorRate = count / (floorMs / 1000)
  results.push({
    name: `writer append+flush, ${count} events, memory backend`,
    value: writeRate,
    unit: 'events/s',
    floor: { name: 'bare JSON.stringify + crc32c', value: floorRate },
    ratio: writeRate / floorRate,
    target: 'informative',
  })

  const lines: string[] = []
  for await (const stored of backend.read('bench-1', { fromSeq: 0 })) lines.push(stored.line)
  const parseMs = best(3, () => {
    for (const line of lines) sink ^= (JSON.parse(line) as { seq: number }).seq
  })
  const openMs = await bestAsync(3, async () => {
    const writer = await store.openWriter('bench-1')
    await writer.close()
  })
  const openRate = count / (openMs / 1000)
  const parseRate = count / (parseMs / 1000)
  results.push({
    name: `openWriter (every line checked), ${count} events`,
    value: openRate,
    unit: 'events/s',
    floor: { name: 'bare JSON.parse loop', value: parseRate },
    ratio: openRate / parseRate,
    target: 'informative',
  })
  results.push({ name: 'checksum sink (keeps the work alive)', value: sink & 1, unit: '' })
  return results
}
