import { readFileSync } from 'node:fs'
import { crc32c as nativeCrc32c } from '@node-rs/crc32'
import { coreEventRegistry, parseEvent } from '@agent-ledger/session-events'
import { snapshotInput } from '../../session-store/src/snapshot.ts'
import { canonicalEvent, checksumJson } from '../../session-store/src/line-codec.ts'
import { ensureDataset } from './support/dataset.ts'
const dataset = await ensureDataset(20, () => {})
const text = readFileSync(dataset.file, 'utf8')
const ins: any[] = []
let start = text.indexOf('\n') + 1
while (ins.length < 6000) { const end = text.indexOf('\n', start); const { seq: _s, time, crc: _c, ...input } = JSON.parse(text.slice(start, end)); ins.push({ ...input, time }); start = end + 1 }
const N = ins.length
const native = (b: Uint8Array) => nativeCrc32c(b) >>> 0
const lim = { maxDepth: 256, maxEntries: 5_000_000 }
const snap = (i: number) => snapshotInput(canonicalEvent({ seq: i, time: ins[i].time, type: ins[i].type, data: ins[i].data }), lim).copy
const enc = new TextEncoder(); const scratch = new Uint8Array(8 << 20)
const str = (i: number) => JSON.stringify({ seq: i, time: ins[i].time, type: ins[i].type, data: ins[i].data })
const variants: [string, (i: number) => unknown][] = [
  ['stringify', str],
  ['str+encodeInto', (i) => enc.encodeInto(str(i), scratch)],
  ['str+slice+encodeInto', (i) => enc.encodeInto(str(i).slice(0, -1), scratch)],
  ['str+encode', (i) => enc.encode(str(i))],
  ['str+Buffer.from', (i) => Buffer.from(str(i))],
  ['str+byteLength', (i) => Buffer.byteLength(str(i))],
  ['str+nativecrc(str)', (i) => nativeCrc32c(str(i))],
  ['str+cs', (i) => checksumJson(str(i), native)],
]
const best = new Map<string, number>()
for (let r = 0; r < 12; r++) {
  for (const [name, f] of variants) { const c = process.cpuUsage(); for (let i = 0; i < N; i++) f(i); const u = process.cpuUsage(c); best.set(name, Math.min(best.get(name) ?? Infinity, (u.user + u.system) / N)) }
}
console.log([...best].map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', '))
