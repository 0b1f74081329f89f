import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { cli, makeRoot } from './support/sessions.ts'

const synthetic = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'import', 'test', 'fixtures')

let root: string
let cleanup: () => void
beforeEach(async () => {
  ;({ root, cleanup } = makeRoot('al-stats-'))
  for (const file of [join('codex', 'compacted.jsonl'), join('claude-code', 'branches.jsonl')]) {
    const run = await cli(['import', join(synthetic, file), '--root', root])
    expect(run.code).toBe(0)
  }
})
afterEach(() => cleanup())

interface Stats {
  id: string
  turns: number
  turnEnds: Record<string, number>
  messages: Record<string, number>
  toolCalls: number
  toolErrors: number
  tools: Record<string, { calls: number; errors: number; errorRate: number }>
  repairs: Record<string, number>
  compactions: number
  inputTokens: number
  outputTokens: number
  cachedTokens: number
  perTurn: { turn: number; durationMs: number | null }[]
  durationMs: number
}

describe('agent-ledger stats', () => {
  it('counts one session: turns by end reason, tool errors by tool, repairs, compactions, tokens, durations', async () => {
    const run = await cli(['stats', join(root, 'codex-019c9000-aaaa-7bbb-8ccc-000000000001'), '--json'])
    expect(run.code).toBe(0)
    const stats = JSON.parse(run.stdout) as Stats
    // compacted.jsonl by hand: 3 turns (completed, aborted, completed); 2 shell calls, the
    // second answered by a TOOL_OUTCOME_UNKNOWN placeholder (an error); 1 compaction; the one
    // token_count (100 in, 20 cached, 10 out); first line 08:00:00, last 08:00:13.
    expect(stats).toMatchObject({
      turns: 3,
      turnEnds: { completed: 2, aborted: 1 },
      toolCalls: 2,
      toolErrors: 1,
      tools: { shell: { calls: 2, errors: 1, errorRate: 0.5 } },
      repairs: { TOOL_OUTCOME_UNKNOWN: 1 },
      compactions: 1,
      inputTokens: 100,
      outputTokens: 10,
      cachedTokens: 20,
      durationMs: 13_000,
    })
    // Turn 1: task_started 08:00:01 to task_complete 08:00:07.
    expect(stats.perTurn[0]).toMatchObject({ turn: 1, durationMs: 6000 })
    // Every surface event of the log, hidden ones included: base_instructions; users "run the
    // tests", its replacement copy, the summary item, "now lint", "thanks"; assistants: the
    // call_1 response, "All 3 tests pass.", the call_2 response, "You are welcome."; results:
    // call_1's output and call_2's placeholder.
    expect(stats.messages).toEqual({ system: 1, user: 5, assistant: 4, tool: 2 })
  })

  it('over a root: one row per session plus totals, sorted by a column', async () => {
    const run = await cli(['stats', root, '--json', '--sort', 'toolCalls'])
    expect(run.code).toBe(0)
    const report = JSON.parse(run.stdout) as { sessions: Stats[]; totals: Stats }
    expect(
      report.sessions.map((row) => [
        row.id.replace(/^(codex|claude)-[0-9a-f]{8}.*?(-fork-b8|-agent-ag1)?$/, '$1$2'),
        row.toolCalls,
      ]),
    ).toEqual([
      ['claude', 3],
      ['claude-fork-b8', 2],
      ['codex', 2],
      ['claude-agent-ag1', 0],
    ])
    expect(report.totals.toolCalls).toBe(7)
    const text = await cli(['stats', root])
    expect(text.stdout.split('\n').at(-2)).toMatch(/^TOTAL\s+/)
    const bad = await cli(['stats', root, '--sort', 'color'])
    expect(bad.code).toBe(2)
  })
})
