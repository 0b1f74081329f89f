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
const ctx = { sessionId: 's', registry: coreEventRegistry, limits: DEFAULT_LIMITS, crc32c: (b: Uint8Array) => nativeCrc32c(b) >>> 0, redaction: DEFAULT_REDACTION_POLICY }
for (let r = 0; r < 10; r++) { (globalThis as any).__T = [0,0,0,0,0,0,0]; const c = process.cpuUsage(); for (let i = 0; i < N; i++) encodeEvent(ins[i], { seq: i, time: ins[i].time }, ctx); const u = process.cpuUsage(c); console.log(((u.user + u.system) / N).toFixed(2), (globalThis as any).__T.map((x: number) => (x * 1000 / N).toFixed(2)).join(" ")) }
