import { readFileSync } from 'node:fs'
import { crc32c as nativeCrc32c } from '@node-rs/crc32'
import { createMemoryBackend, createSessionStore } from '@agent-ledger/session-store'
import { ensureDataset } from './support/dataset.ts'
const dataset = await ensureDataset(20, (m: string) => console.error(m))
const text = readFileSync(dataset.file, 'utf8')
const inputs: any[] = []
let start = text.indexOf('\n') + 1
while (inputs.length < 6000) {
  const end = text.indexOf('\n', start)
  const { seq: _s, time, crc: _c, ...input } = JSON.parse(text.slice(start, end))
  inputs.push({ input, time })
  start = end + 1
}
const N = inputs.length
let bytes = 0
for (const x of inputs) bytes += JSON.stringify(x.input).length
console.log(`events ${N}, avg ${(bytes / N).toFixed(0)} chars`)
let now = ''
const useNative = process.env.NATIVE === '1'
const store = createSessionStore({ backend: createMemoryBackend(), clock: () => now, checkpoint: { enabled: process.env.CKPT === '1' }, ...(useNative ? { crc32c: (b: Uint8Array) => nativeCrc32c(b) >>> 0 } : {}) })
let sink = 0
for (let r = 0; r < Number(process.env.R ?? 7); r++) {
  now = inputs[0].time
  const w = await store.create({ id: `p-${r}` })
  const c0 = process.cpuUsage()
  for (let i = 0; i < N; i++) { now = inputs[i].time; w.append(inputs[i].input); if (i % 100 === 99) await w.flush() }
  await w.flush()
  const c = process.cpuUsage(c0)
  await w.close()
  const s0 = process.cpuUsage()
  for (let i = 0; i < N; i++) { const x = inputs[i]; sink += JSON.stringify({ seq: i, time: x.time, type: x.input.type, data: x.input.data }).length }
  const s = process.cpuUsage(s0)
  const wu = (c.user + c.system) / N, su = (s.user + s.system) / N
  console.log(`round ${r}: writer cpu ${wu.toFixed(2)} us/event, stringify ${su.toFixed(2)} us/event, ratio ${(wu / su).toFixed(2)}`)
}
