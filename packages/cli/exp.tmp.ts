import { cpSync, mkdtempSync, mkdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSessionStore } from '@agent-ledger/session-store-jsonl'
import { runCli } from './src/index.ts'
const fx = join(process.cwd(), '../session-store-jsonl/test/fixtures/v0/normal-tool-calls.jsonl')
async function variant(kind: string) {
  const root = mkdtempSync(join(tmpdir(), 'exp-'+kind+'-'))
  mkdirSync(join(root, 's1'), {mode: 0o700})
  cpSync(fx, join(root, 's1', 'session.jsonl'))
  const store = createSessionStore({ root, logger: { warn: () => undefined } })
  if (kind !== 'v0') { await store.migrate('s1'); rmSync(join(root, 's1', 'session.jsonl')) }
  if (kind === 'zstd') await store.compress('s1')
  return root
}
const roots = { v0: await variant('v0'), plain: await variant('plain'), zstd: await variant('zstd') }
const cmds = [['verify'],['verify','--json'],['inspect'],['inspect','--json'],['cat'],['cat','--json','--from','3','--to','4'],['tail','-n','2'],['messages'],['messages','--repaired','--json'],['export','--format','md'],['export','--format','html'],['fork','--at','5','--id','s1-fork'],['compact','--from','3','--to','6','--summary','S','--id','c1'],['salvage','--to','s1-salv'],['list'],['list','--json']]
const norm = (t: string, root: string) => t.split(root).join('<root>').replace(/session(\.v4)?\.jsonl(\.zstd)?/g, '<log>').replace(/agent-ledger: note: s1 holds .*\n/, '')
for (const c of cmds) {
  const outs: Record<string,string> = {}
  for (const [k, root] of Object.entries(roots)) {
    let o = '', e = ''
    const arg = c[0] === 'list' ? root : join(root, 's1')
    const code = await runCli([c[0], arg, ...c.slice(1), '--no-progress'].filter(x => !(x==='--no-progress' && ['cat','tail','fork','compact','salvage','list'].includes(c[0]))), { stdout: t => { o += t }, stderr: t => { e += t }, clock: () => '2026-02-01T00:00:00.000Z' })
    outs[k] = `code ${code}\n${norm(o, root)}\n--stderr--\n${norm(e, root)}`
  }
  const same = outs.v0 === outs.plain && outs.plain === outs.zstd
  console.log(`##### ${c.join(' ')}: ${same ? 'SAME' : 'DIFF'}`)
  if (!same) for (const [k,v] of Object.entries(outs)) console.log(`--- ${k}\n${v.slice(0, 1500)}`)
}
