import { cpSync, mkdirSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { openAgentsSession } from '@agent-ledger/openai-agents'
import { openAiSdkSession } from '@agent-ledger/ai-sdk'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { Agent, MemorySession, run as runAgent, setTracingDisabled, Usage } from '@openai/agents-core'
import type { Model } from '@openai/agents-core'
import { ensureDataset } from '../session-store-jsonl/bench/support/dataset.ts'

setTracingDisabled(true)
const MB = Number(process.argv[2] ?? 128)
const log = (m: string) => process.stderr.write(`probe: ${m}\n`)
const source = await ensureDataset(MB, log)
const root = `/work/wt/probe/root-${MB}`
if (!existsSync(join(root, source.id, 'core.checkpoint'))) {
  mkdirSync(root, { recursive: true, mode: 0o700 })
  cpSync(join(source.root, source.id), join(root, source.id), { recursive: true })
  const store = createJsonlStore({ root, checkpoint: { everyEvents: 1, minIntervalMs: 0, minLogBytes: 0, minGrowthRatio: 0 } })
  const w = await store.openWriter(source.id)
  w.append({ type: 'user/message', data: { message: { role: 'user', content: 'Checkpoint here.' } } })
  await w.close()
  await store.close()
}
const model = (on: () => void): Model => ({
  getResponse: () => { on(); return Promise.resolve({ usage: new Usage(), output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok' }] }] }) },
  getStreamedResponse: () => { throw new Error('no') },
})
const t = () => performance.now()
for (let i = 0; i < 8; i++) {
  const store = createJsonlStore({ root })
  const phases: Record<string, number> = {}
  const s0 = t()
  const session = await openAgentsSession(store, source.id, { create: false })
  phases.open = t() - s0
  const wrap = <K extends keyof typeof session>(name: K) => {
    const orig = (session[name] as (...a: unknown[]) => unknown).bind(session)
    ;(session as Record<string, unknown>)[name as string] = async (...a: unknown[]) => { const st = t(); try { return await orig(...a) } finally { phases[name as string] = (phases[name as string] ?? 0) + (t() - st) } }
  }
  wrap('getItems'); wrap('addItems')
  let first = 0
  const inner = model(() => { first ||= t() - s0 })
  const wrapped = session.wrapModel(inner)
  const orig = wrapped.getResponse.bind(wrapped)
  let wrapStart = 0
  wrapped.getResponse = (req) => { wrapStart = t(); return orig(req) }
  const items = await session.getItems()
  const sdkSession = new MemorySession({ initialItems: items })
  const x0 = t(); let sdkMs = 0
  await runAgent(new Agent({ name: 'r', instructions: 'You run a plan.', model: model(() => { sdkMs ||= t() - x0 }) }), 'Continue.', { session: sdkSession, maxTurns: 1 })
  phases.getItems = 0
  const r0 = t()
  await runAgent(new Agent({ name: 'r', instructions: 'You run a plan.', model: wrapped }), 'Continue.', { session, maxTurns: 1 })
  const total = first
  phases.wrapLog = first + s0 - wrapStart
  phases.runToWrap = wrapStart - r0
  await session.close(); await store.close()
  log(`items ${items.length} chars ${JSON.stringify(items).length} | total-to-model ${(total - (r0 - s0 - phases.open)).toFixed(1)} open ${phases.open.toFixed(1)} getItems ${phases.getItems.toFixed(1)} addItems ${(phases.addItems ?? 0).toFixed(1)} runner-to-wrap ${phases.runToWrap.toFixed(1)} wrap-log ${phases.wrapLog.toFixed(1)} | sdk alone ${sdkMs.toFixed(1)}`)
}
