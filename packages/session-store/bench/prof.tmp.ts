import { crc32c as nativeCrc32c } from '@node-rs/crc32'
import { createMemoryBackend, createSessionStore } from '../src/index.ts'

function inputs(n: number): any[] {
  const out: any[] = []
  for (let i = 0; i < n; i++) {
    const k = i % 4
    if (k === 0) out.push({ type: 'turn/start', data: { turn: i } })
    else if (k === 1) out.push({ type: 'user/message', data: { message: { role: 'user', content: `message ${i}: ${'lorem ipsum dolor sit amet '.repeat(8)}` } } })
    else if (k === 2) out.push({ type: 'assistant/message', data: { message: { role: 'assistant', content: `Reading the file (step ${i}).` } } })
    else out.push({ type: 'turn/end', data: { turn: i - 3, reason: 'completed' } })
  }
  return out
}
const N = Number(process.env.N ?? 20000)
const ins = inputs(N)
const time = '2026-01-01T00:00:00.000Z'
let sink = 0
const useNative = process.env.NATIVE === '1'
const store = createSessionStore({ backend: createMemoryBackend(useNative ? { crc32c: (b: Uint8Array) => nativeCrc32c(b as Buffer) >>> 0 } : {}), clock: () => time })
for (let r = 0; r < 5; r++) {
  const t0 = process.cpuUsage()
  const a = performance.now()
  const w = await store.create({ id: `p-${r}` })
  for (let i = 0; i < ins.length; i++) { w.append(ins[i]); if (i % 100 === 99) await w.flush() }
  await w.close()
  const ms = performance.now() - a
  const c = process.cpuUsage(t0)
  const s0 = performance.now()
  for (let i = 0; i < ins.length; i++) sink += JSON.stringify({ seq: i, time, type: ins[i].type, data: ins[i].data }).length
  const sm = performance.now() - s0
  console.log(`round ${r}: writer ${(ms * 1000 / N).toFixed(2)} us/event (cpu ${((c.user + c.system) / N).toFixed(2)}), stringify ${(sm * 1000 / N).toFixed(2)} us/event, ratio ${(ms / sm).toFixed(1)}`)
}
