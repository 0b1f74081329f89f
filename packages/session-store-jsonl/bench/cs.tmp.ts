import { readFileSync } from 'node:fs'
import { crc32c as nativeCrc32c } from '@node-rs/crc32'
import { checksumJson } from '../../session-store/src/line-codec.ts'
import { ensureDataset } from './support/dataset.ts'
const dataset = await ensureDataset(20, () => {})
const text = readFileSync(dataset.file, 'utf8')
const jsons: string[] = []
let start = text.indexOf('\n') + 1
while (jsons.length < 6000) { const end = text.indexOf('\n', start); const { crc: _c, ...e } = JSON.parse(text.slice(start, end)); jsons.push(JSON.stringify(e)); start = end + 1 }
const N = jsons.length
const crc = (b: Uint8Array) => nativeCrc32c(b) >>> 0
function t(name: string, f: (i: number) => unknown) {
  let best = Infinity; let sink = 0
  for (let r = 0; r < 9; r++) { const c = process.cpuUsage(); for (let i = 0; i < N; i++) sink ^= (f(i) as any)?.length ?? 1; const u = process.cpuUsage(c); best = Math.min(best, (u.user + u.system) / N) }
  console.log(name.padEnd(30), best.toFixed(3), 'us')
}
const enc = new TextEncoder(); const scratch = new Uint8Array(8 << 20)
t('checksumJson native', (i) => checksumJson(jsons[i]!, crc).line)
t('encodeInto', (i) => enc.encodeInto(jsons[i]!, scratch))
t('slice+encodeInto', (i) => enc.encodeInto(jsons[i]!.slice(0, -1), scratch))
t('native crc(string)', (i) => nativeCrc32c(jsons[i]!))
t('Buffer.byteLength', (i) => Buffer.byteLength(jsons[i]!))
t('crc(encodeInto)', (i) => { const w = enc.encodeInto(jsons[i]!, scratch).written; return nativeCrc32c(scratch.subarray(0, w)) })
t('stringify', (i) => JSON.stringify(JSON.parse(jsons[i]!)))
t('parse', (i) => JSON.parse(jsons[i]!))
