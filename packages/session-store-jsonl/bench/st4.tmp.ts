import { readFileSync } from 'node:fs'
import { crc32c as nativeCrc32c } from '@node-rs/crc32'
import { coreEventRegistry } from '@agent-ledger/session-events'
import { DEFAULT_REDACTION_POLICY } from '../../session-store/src/redaction.ts'
import { encodeEvent, DEFAULT_LIMITS } from '../../session-store/src/event-codec.ts'
import { ensureDataset } from './support/dataset.ts'
const dataset = await ensureDataset(20, () => {})
const text = readFileSync(dataset.file, 'utf8')
const ins: any[] = []
let start = text.indexOf('\n') + 1
while (ins.length < 6000) { const end = text.indexOf('\n', start); const { seq: _s, time, crc: _c, ...input } = JSON.parse(text.slice(start, end)); ins.push({ ...input, time }); start = end + 1 }
const N = ins.length
const native = (b: Uint8Array) => nativeCrc32c(b) >>> 0
const variants: [string, any][] = [
  ['full', { sessionId: 's', registry: coreEventRegistry, limits: DEFAULT_LIMITS, crc32c: native, redaction: DEFAULT_REDACTION_POLICY }],
  ['no redaction', { sessionId: 's', registry: coreEventRegistry, limits: DEFAULT_LIMITS, crc32c: native, redaction: null }],
  ['crc 0', { sessionId: 's', registry: coreEventRegistry, limits: DEFAULT_LIMITS, crc32c: () => 0, redaction: DEFAULT_REDACTION_POLICY }],
]
const best = new Map<string, number>()
let sbest = Infinity
for (let r = 0; r < 12; r++) {
  for (const [name, ctx] of variants) { const c = process.cpuUsage(); for (let i = 0; i < N; i++) encodeEvent(ins[i], { seq: i, time: ins[i].time }, ctx); const u = process.cpuUsage(c); best.set(name, Math.min(best.get(name) ?? Infinity, (u.user + u.system) / N)) }
  const c = process.cpuUsage(); for (let i = 0; i < N; i++) JSON.stringify({ seq: i, time: ins[i].time, type: ins[i].type, data: ins[i].data }); const u = process.cpuUsage(c); sbest = Math.min(sbest, (u.user + u.system) / N)
}
console.log([...best].map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', '), 'stringify', sbest.toFixed(2))
