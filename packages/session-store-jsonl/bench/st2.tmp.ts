import { readFileSync } from 'node:fs'
import { crc32c as nativeCrc32c } from '@node-rs/crc32'
import { assertJsonValue, parseEvent, coreEventRegistry } from '@agent-ledger/session-events'
import { createProjection } from '@agent-ledger/session-projection'
import { snapshotInput } from '../../session-store/src/snapshot.ts'
import { redactInPlace, DEFAULT_REDACTION_POLICY } from '../../session-store/src/redaction.ts'
import { canonicalEvent, checksumJson } from '../../session-store/src/line-codec.ts'
import { encodeEvent, DEFAULT_LIMITS } from '../../session-store/src/event-codec.ts'
import { ensureDataset } from './support/dataset.ts'
const dataset = await ensureDataset(20, () => {})
const text = readFileSync(dataset.file, 'utf8')
const ins: any[] = []
let start = text.indexOf('\n') + 1
while (ins.length < 6000) { const end = text.indexOf('\n', start); const { seq: _s, time, crc: _c, ...input } = JSON.parse(text.slice(start, end)); ins.push({ ...input, time }); start = end + 1 }
const N = ins.length
const lim = { maxDepth: 256, maxEntries: 5_000_000 }
function t(name: string, f: (i: number) => unknown, setup?: () => void) {
  let best = Infinity
  for (let r = 0; r < 7; r++) { setup?.(); const c = process.cpuUsage(); for (let i = 0; i < N; i++) f(i); const u = process.cpuUsage(c); best = Math.min(best, (u.user + u.system) / N) }
  console.log(name.padEnd(30), best.toFixed(3), 'us')
}
const copies = ins.map((x, i) => snapshotInput(canonicalEvent({ seq: i, time: x.time, type: x.type, data: x.data }), lim).copy)
const jsons = copies.map((c) => JSON.stringify(c))
t('stringify', (i) => JSON.stringify({ seq: i, time: ins[i].time, type: ins[i].type, data: ins[i].data }))
t('stringify copy', (i) => JSON.stringify(copies[i]))
t('canonical+snapshot', (i) => snapshotInput(canonicalEvent({ seq: i, time: ins[i].time, type: ins[i].type, data: ins[i].data }), lim))
t('assertJsonValue', (i) => assertJsonValue(copies[i], lim, 'event'))
t('redact trigger test', (i) => redactInPlace((copies[i] as any).data, (s) => DEFAULT_REDACTION_POLICY.redact(s)))
t('parseEvent', (i) => parseEvent(copies[i], coreEventRegistry))
t('checksumJson native', (i) => checksumJson(jsons[i]!, (b) => nativeCrc32c(b) >>> 0))
let p = createProjection({ registry: coreEventRegistry })
let evs: any[] = []
t('projection check+apply', (i) => { p.check(evs[i]); p.apply(evs[i]) }, () => { p = createProjection({ registry: coreEventRegistry }); evs = jsons.map((j) => JSON.parse(j)) })
t('projection apply', (i) => p.apply(evs[i]), () => { p = createProjection({ registry: coreEventRegistry }); evs = jsons.map((j) => JSON.parse(j)) })
const ctx = { sessionId: 's', registry: coreEventRegistry, limits: DEFAULT_LIMITS, crc32c: (b: Uint8Array) => nativeCrc32c(b) >>> 0, redaction: DEFAULT_REDACTION_POLICY }
t('encodeEvent (no projection)', (i) => encodeEvent(ins[i], { seq: i, time: ins[i].time }, ctx))
let plainCount = 0
for (let i = 0; i < N; i++) if (snapshotInput(canonicalEvent({ seq: i, time: ins[i].time, type: ins[i].type, data: ins[i].data }), lim).plain) plainCount++
console.log('plain', plainCount, 'of', N)
const strings: string[] = []
const walk = (v: any) => { if (typeof v === 'string') strings.push(v); else if (v && typeof v === 'object') for (const k of Object.keys(v)) walk(v[k]) }
for (const x of ins) walk(x.data)
let chars = 0; for (const s of strings) chars += s.length
console.log('strings', strings.length, 'chars', chars)
const variants: [string, (s: string) => boolean][] = [
  ['current', (s) => /-----BEGIN |sk-|A(?:KIA|SIA|GPA|IDA|ROA)|gh[pousr]_|github_pat_|xox[abprs]-|[Bb][Ee][Aa][Rr][Ee][Rr]\s/.test(s)],
  ['split3', (s) => /sk-|gh[pousr]_|github_pat_|xox[abprs]-|-----BEGIN /.test(s) || /A(?:KIA|SIA|GPA|IDA|ROA)/.test(s) || /bearer\s/i.test(s)],
  ['indexOf', (s) => s.indexOf('sk-') !== -1 || s.indexOf('-----BEGIN ') !== -1 || s.indexOf('gh') !== -1 || s.indexOf('xox') !== -1 || s.indexOf('A') !== -1 || /bearer\s/i.test(s)],
  ['lookahead', (s) => /(?=[-sAgxBb])(?:-----BEGIN |sk-|A(?:KIA|SIA|GPA|IDA|ROA)|gh[pousr]_|github_pat_|xox[abprs]-|[Bb][Ee][Aa][Rr][Ee][Rr]\s)/.test(s)],
]
const RE = [/-----BEGIN |sk-|A(?:KIA|SIA|GPA|IDA|ROA)|gh[pousr]_|github_pat_|xox[abprs]-|[Bb][Ee][Aa][Rr][Ee][Rr]\s/, /sk-|gh[pousr]_|github_pat_|xox[abprs]-|-----BEGIN /, /A(?:KIA|SIA|GPA|IDA|ROA)/, /bearer\s/i, /[Bb][Ee][Aa][Rr][Ee][Rr]\s/]
const vs: [string, (s: string) => boolean][] = [
  ['current', (s) => RE[0]!.test(s)],
  ['split3', (s) => RE[1]!.test(s) || RE[2]!.test(s) || RE[3]!.test(s)],
  ['split3b', (s) => RE[1]!.test(s) || RE[2]!.test(s) || RE[4]!.test(s)],
]
for (const [name, f] of vs) {
  let best = Infinity; let hits = 0
  for (let r = 0; r < 7; r++) { hits = 0; const c = process.cpuUsage(); for (const s of strings) if (f(s)) hits++; const u = process.cpuUsage(c); best = Math.min(best, (u.user + u.system) / N) }
  console.log(name.padEnd(12), best.toFixed(3), 'us/event', 'hits', hits)
}
