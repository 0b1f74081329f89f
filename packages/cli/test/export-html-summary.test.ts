import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { summaryPanel } from '../src/transcript/html/summary.ts'
import { emptyStats } from '../src/session-stats.ts'
import { cli, makeRoot } from './support/sessions.ts'

const synthetic = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'import', 'test', 'fixtures')
const CODEX_ID = 'codex-019c9000-aaaa-7bbb-8ccc-000000000001'

let root: string
let cleanup: () => void
beforeEach(() => {
  ;({ root, cleanup } = makeRoot('al-html-summary-'))
})
afterEach(() => cleanup())

/** The `<dd>` after the `<dt>` named `key` in the summary panel. */
function stat(html: string, key: string): string | undefined {
  const panel = /<section class="summary"[\s\S]*?<\/section>/.exec(html)?.[0] ?? ''
  return new RegExp(`<dt>${key}</dt><dd>([^<]*)</dd>`).exec(panel)?.[1]
}

describe('HTML export: the summary panel', () => {
  it('shows the stats numbers of a known session and its tokens per turn as inline SVG, with no script and no URL', async () => {
    const imported = await cli(['import', join(synthetic, 'codex', 'compacted.jsonl'), '--root', root])
    expect(imported.code).toBe(0)
    const run = await cli(['export', join(root, CODEX_ID), '--format', 'html', '--no-progress'])
    expect(run.code, run.stderr).toBe(0)
    const html = run.stdout
    // compacted.jsonl by hand (the same counts as the stats test): turns 1 and 3 complete, 2
    // aborted; surface messages 1 system, 5 user (the prompt, its replacement copy, the
    // summary item, "now lint", "thanks"), 4 assistant, 2 tool; two shell calls, call_2
    // answered by a TOOL_OUTCOME_UNKNOWN placeholder (an error); one compaction; the one
    // token_count (turn 1): 100 in, 20 cached, 10 out; lines 08:00:00 to 08:00:13.
    expect(stat(html, 'turns')).toBe('3 (completed 2, aborted 1)')
    expect(stat(html, 'messages')).toBe('12: 1 system, 5 user, 4 assistant, 2 tool')
    expect(stat(html, 'tool calls')).toBe('2, 1 error (50%)')
    expect(stat(html, 'repairs')).toBe('TOOL_OUTCOME_UNKNOWN 1')
    expect(stat(html, 'compactions')).toBe('1')
    expect(stat(html, 'tokens')).toBe('100 input (20 cached), 10 output')
    expect(stat(html, 'duration')).toBe('13.0 s')
    expect(html).toContain('<tr><th scope="row"><code>shell</code></th><td>2</td><td>1</td><td>50%</td></tr>')
    // One bar per turn in each chart; turn 1 carries all the tokens.
    const inputBars = [...html.matchAll(/<rect class="bar-input"[^>]*><title>([^<]*)<\/title>/g)].map(
      (m) => m[1],
    )
    const outputBars = [...html.matchAll(/<rect class="bar-output"[^>]*><title>([^<]*)<\/title>/g)].map(
      (m) => m[1],
    )
    expect(inputBars).toEqual([
      'turn 1: 100 input tokens',
      'turn 2: 0 input tokens',
      'turn 3: 0 input tokens',
    ])
    expect(outputBars).toEqual([
      'turn 1: 10 output tokens',
      'turn 2: 0 output tokens',
      'turn 3: 0 output tokens',
    ])
    expect(html).toContain(
      '<figcaption id="chart-input">Input tokens per turn: largest 100; turn 1 to 3</figcaption>',
    )
    expect(html).toMatch(/<svg viewBox="0 0 640 120"[^>]*role="img"/)
    // Self-contained: no script, nothing loaded, no URL at all (the SVG has no xmlns either).
    expect(html).not.toMatch(/<script/i)
    expect(html).not.toMatch(/https?:|\/\/[a-z]/i)
    expect(html).not.toMatch(/\s(?:src|xlink:href)=/i)
  })

  it('draws a long session in buckets of turns (at most 200 bars) and escapes tool names', () => {
    const stats = emptyStats('long')
    for (let turn = 1; turn <= 1000; turn += 1)
      stats.perTurn.push({ turn, durationMs: 1000, inputTokens: turn, outputTokens: 1 })
    stats.turns = 1000
    stats.tools['<img src=x onerror=alert(1)>'] = { calls: 1, errors: 1, errorRate: 1 }
    const html = summaryPanel(stats)
    const bars = [...html.matchAll(/<rect class="bar-input"[^>]*><title>([^<]*)<\/title>/g)].map((m) => m[1])
    expect(bars).toHaveLength(200)
    // Five turns a bar: 1+2+3+4+5 = 15 for the first, 996+...+1000 = 4,990 for the last.
    expect(bars[0]).toBe('turns 1-5: 15 input tokens')
    expect(bars.at(-1)).toBe('turns 996-1000: 4,990 input tokens')
    expect(html).toContain('<code>&lt;img src=x onerror=alert(1)&gt;</code>')
    expect(html).not.toContain('<img')
  })
})
