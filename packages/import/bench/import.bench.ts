/**
 * Import throughput and memory, run by `pnpm bench` (tooling/bench/run.ts).
 *
 * A synthetic Codex rollout (the format of the largest real logs) of N turns, 8 lines each
 * (task_started, user message, reasoning, function_call, token_count, a 2 KB
 * function_call_output, assistant message, task_complete), is written to a temp file, then:
 *
 * 1. source lines per second of `importSource` (read stream → splitLines → every event
 *    validated and folded into a projection), beside the floor of a bare read stream +
 *    line split + `JSON.parse` of the same file, in the same run;
 * 2. peak RSS of a child process importing the file, beside a child running the bare loop.
 *    The importer returns every event of the session (the store publishes a session in one
 *    piece), so its memory grows with the source: the figure says by how much.
 *
 * Timing is wall clock on a shared machine: ratios are the claim, absolute figures vary.
 */
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { benchChild, median, textChunks } from '../../../tooling/bench/support.ts'
import type { BenchResult } from '../../../tooling/bench/types.ts'
import { importSource, splitLines } from '../src/index.ts'

const CHILD_ENV = 'AGENT_LEDGER_IMPORT_BENCH_CHILD'

// A benchmark reads the clock by definition; this file is not shipped (not in `files`).
const now = (): number => performance.now()

function rollout(turns: number): string {
  const time = (turn: number, step: number): string =>
    new Date(Date.UTC(2026, 0, 1) + turn * 10_000 + step * 1000).toISOString()
  const lines: string[] = [
    JSON.stringify({
      timestamp: time(0, 0),
      type: 'session_meta',
      payload: { id: 'bench-rollout', cwd: '/tmp/bench', cli_version: '0.110.0', base_instructions: { text: 'You are Codex.' } },
    }),
  ]
  const output = 'x'.repeat(2000)
  for (let turn = 1; turn <= turns; turn += 1) {
    const call = `call_${turn}`
    const line = (step: number, type: string, payload: unknown): number =>
      lines.push(JSON.stringify({ timestamp: time(turn, step), type, payload }))
    line(0, 'event_msg', { type: 'task_started', turn_id: `t${turn}` })
    line(0, 'response_item', { type: 'message', role: 'user', content: [{ type: 'input_text', text: `step ${turn}: run the tests` }] })
    line(1, 'response_item', { type: 'reasoning', summary: [{ type: 'summary_text', text: 'Run them.' }], encrypted_content: 'gAAA' })
    line(1, 'response_item', { type: 'function_call', name: 'shell', arguments: `{"command":["npm","test","${turn}"]}`, call_id: call })
    line(2, 'event_msg', {
      type: 'token_count',
      info: { last_token_usage: { input_tokens: 1000 + turn, cached_input_tokens: 500, output_tokens: 20, total_tokens: 1020 + turn } },
    })
    line(3, 'response_item', { type: 'function_call_output', call_id: call, output })
    line(4, 'response_item', { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: `turn ${turn} passes` }] })
    line(4, 'event_msg', { type: 'task_complete', turn_id: `t${turn}` })
  }
  return `${lines.join('\n')}\n`
}

async function importJob(file: string, sha256: string): Promise<number> {
  const result = await importSource(splitLines(textChunks(file)), { file, sha256 })
  return result.report.lines
}

async function floorJob(file: string): Promise<number> {
  let lines = 0
  for await (const line of splitLines(textChunks(file))) {
    // The empty line after the file's last newline is its terminator, not a line.
    if (typeof line !== 'string' || line === '') continue
    JSON.parse(line)
    lines += 1
  }
  return lines
}

const runChild = benchChild(import.meta.url, {
  envName: CHILD_ENV,
  main: (job: { readonly kind: 'import' | 'floor'; readonly file: string; readonly sha256: string }) =>
    job.kind === 'import' ? importJob(job.file, job.sha256) : floorJob(job.file),
})

/**
 * The import figures.
 *
 * @param options - `scale`: 'default' (5,000 turns, about 12 MB) or 'large' (50,000 turns, about 120 MB).
 */
export async function run(options: { scale?: 'default' | 'large' } = {}): Promise<BenchResult[]> {
  const turns = options.scale === 'large' ? 50_000 : 5_000
  const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-bench-import-'))
  try {
    const file = join(scratch, 'rollout.jsonl')
    const text = rollout(turns)
    writeFileSync(file, text)
    const sha256 = createHash('sha256').update(text).digest('hex')
    const mb = Buffer.byteLength(text) / (1024 * 1024)
    const ours: number[] = []
    const floor: number[] = []
    let lines = 0
    for (let round = 0; round < 3; round += 1) {
      const floorStart = now()
      lines = await floorJob(file)
      floor.push((now() - floorStart) / 1000)
      const start = now()
      await importJob(file, sha256)
      ours.push((now() - start) / 1000)
    }
    const oursRate = lines / median(ours)
    const floorRate = lines / median(floor)
    const oursChild = await runChild({ kind: 'import', file, sha256 })
    const floorChild = await runChild({ kind: 'floor', file, sha256 })
    const rateRatio = oursRate / floorRate
    const rssRatio = oursChild.maxRssBytes / floorChild.maxRssBytes
    const toMb = (bytes: number): number => bytes / (1024 * 1024)
    return [
      {
        name: `import Codex rollout, ${lines} lines (${mb.toFixed(0)} MB)`,
        value: oursRate,
        unit: 'lines/s',
        floor: { name: 'bare read + line split + JSON.parse', value: floorRate },
        ratio: rateRatio,
        target: '>= 0.05',
        met: rateRatio >= 0.05,
      },
      {
        name: `import Codex rollout, ${mb.toFixed(0)} MB: peak RSS of a child`,
        value: toMb(oursChild.maxRssBytes),
        unit: 'MB',
        floor: { name: 'bare loop peak RSS (child)', value: toMb(floorChild.maxRssBytes) },
        ratio: rssRatio,
        target: '<= 12 (events held for the store)',
        met: rssRatio <= 12,
      },
    ]
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}
