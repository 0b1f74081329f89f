import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import type { EventInput } from '@agent-ledger/session-events'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { runBin } from './support/bin.ts'
import { anchors, bodyBackground, CHROMIUM, dumpDom, hasChromium, screenshot } from './support/chromium.ts'

if (!hasChromium) {
  console.warn(`export-html-viewer.e2e: skipped: ${CHROMIUM} is missing (install Debian's chromium package)`)
}

const HOSTILE = '<script>document.title="pwned"</script><img src=x onerror="document.title=1"><b>raw bold</b>'
const USER_MARKDOWN = [
  'Please **review** the build:',
  '',
  '- check `package.json`',
  '- run the tests',
  '',
  '```ts',
  'const answer: number = 42',
  '```',
  '',
  `Hostile: ${HOSTILE} and [a link](javascript:alert(1)) and ![pic](https://example.com/x.png).`,
].join('\n')
/** A 3,000-line tool output (the 57,489 px page). */
const LONG_OUTPUT = Array.from({ length: 3000 }, (_, index) => `line ${index + 1}: ${'x'.repeat(60)}`).join(
  '\n',
)
const LONG_ARGUMENTS = JSON.stringify(
  { path: 'big.json', rows: Array.from({ length: 40 }, (_, index) => `row ${index + 1}`) },
  null,
  2,
)

let work: string
let profile: string

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'al-cli-viewer-'))
  profile = join(work, 'chromium-profile')
})
afterAll(() => {
  if (process.env['KEEP_TEST_OUTPUT'] === undefined) rmSync(work, { recursive: true, force: true })
})

function call(
  id: string,
  name: string,
  args: string,
): { id: string; type: 'function'; function: { name: string; arguments: string } } {
  return { id, type: 'function', function: { name, arguments: args } }
}

/** A session shaped like the demo's: a Markdown question, long output, an error, a crash, a compaction, a fork. */
async function writeDemoSession(root: string): Promise<void> {
  const store = createJsonlStore({ root })
  const writer = await store.create({ id: 'demo', header: { cwd: '/srv/demo' } })
  const inputs: EventInput[] = [
    {
      type: 'system/message',
      data: { message: { role: 'system', content: 'You are mini-agent, a careful coding agent.' } },
    },
    { type: 'turn/start', data: { turn: 1 } },
    { type: 'user/message', data: { message: { role: 'user', content: USER_MARKDOWN } } },
    {
      type: 'assistant/message',
      data: {
        message: {
          role: 'assistant',
          content: 'I will run the **tests** first, then write `big.json`.',
          tool_calls: [
            call('call_test', 'run_command', '{"cmd":"pnpm test"}'),
            call('call_write', 'write_file', LONG_ARGUMENTS),
          ],
        },
      },
    },
    {
      type: 'tool/call',
      data: { callId: 'call_test', name: 'run_command', arguments: '{"cmd":"pnpm test"}' },
    },
    {
      type: 'tool/result',
      data: { message: { role: 'tool', tool_call_id: 'call_test', content: LONG_OUTPUT } },
    },
    { type: 'tool/call', data: { callId: 'call_write', name: 'write_file', arguments: LONG_ARGUMENTS } },
    {
      type: 'tool/result',
      data: {
        message: {
          role: 'tool',
          tool_call_id: 'call_write',
          content: 'Error: EACCES: permission denied, open big.json',
        },
        isError: true,
      },
    },
    {
      type: 'assistant/message',
      data: {
        message: { role: 'assistant', content: 'The write failed:\n\n1. permissions\n2. retry as *root*?' },
      },
    },
    { type: 'turn/end', data: { turn: 1, reason: 'completed' } },
    { type: 'turn/start', data: { turn: 2 } },
    { type: 'user/message', data: { message: { role: 'user', content: 'Delete tmp/ then.' } } },
    {
      type: 'assistant/message',
      data: {
        message: {
          role: 'assistant',
          content: 'Deleting.',
          tool_calls: [call('call_rm', 'run_command', '{"cmd":"rm -rf tmp"}')],
        },
      },
    },
    {
      type: 'tool/call',
      data: { callId: 'call_rm', name: 'run_command', arguments: '{"cmd":"rm -rf tmp"}' },
    },
  ]
  for (const input of inputs) writer.append(input)
  await writer.close()
  // The crash left call_rm unanswered: the next write open answers it with a placeholder.
  const resumed = await store.openWriter('demo')
  resumed.append({ type: 'turn/start', data: { turn: 3 } })
  resumed.append({
    type: 'user/message',
    data: { message: { role: 'user', content: 'Continue where you left off.' } },
  })
  resumed.append({
    type: 'assistant/message',
    data: { message: { role: 'assistant', content: 'The `rm` may have run; checking.' } },
  })
  resumed.append({ type: 'turn/end', data: { turn: 3, reason: 'completed' } })
  await resumed.close()
}

describe('the HTML transcript as a viewer (headless Chromium)', () => {
  it.skipIf(!hasChromium)(
    'collapses long outputs and arguments, renders Markdown, escapes hostile HTML, indexes turns, repairs, errors, compactions and forks; every link lands',
    async () => {
      const root = join(work, 'demo-root')
      await writeDemoSession(root)
      const compact = await runBin([
        'compact',
        join(root, 'demo'),
        '--from',
        '2',
        '--to',
        '8',
        '--summary',
        'The user asked for a **review**.',
      ])
      expect(compact.stderr).toBe('')
      expect(compact.code).toBe(0)
      const fork = await runBin(['fork', join(root, 'demo'), '--at', '23', '--id', 'demo-fork'])
      expect(fork.code).toBe(0)
      const file = join(work, 'demo.html')
      const exported = await runBin([
        'export',
        join(root, 'demo-fork'),
        '--format',
        'html',
        '-o',
        file,
        '--no-progress',
      ])
      expect(exported.code).toBe(0)
      const html = readFileSync(file, 'utf8')
      const dom = await dumpDom(file, profile)

      // One self-contained page: no script, no element that loads anything.
      expect(html).not.toMatch(/<script|<img|<iframe|<link|@import|url\(/i)
      expect(dom).not.toMatch(/<script|<img/i)
      // Hostile HTML from the session is text, markdown links to javascript: are not links.
      expect(dom).toContain('&lt;script&gt;document.title="pwned"&lt;/script&gt;')
      expect(dom).toContain('&lt;b&gt;raw bold&lt;/b&gt;')
      expect(dom).not.toContain('<b>raw bold</b>')
      expect(dom).not.toMatch(/href="javascript:/i)
      expect(dom).toContain('[a link](javascript:alert(1))')
      // The summary panel survives Chromium's parser: the stats list, and one bar per turn in
      // each inline SVG chart (no script, nothing loaded).
      const panel = /<section class="summary"[\s\S]*?<\/section>/.exec(dom)?.[0] ?? ''
      const turns = Number(/<dt>turns<\/dt><dd>(\d+) /.exec(panel)?.[1])
      expect(turns).toBeGreaterThan(0)
      expect(panel.match(/<rect class="bar-input"/g)).toHaveLength(turns)
      expect(panel.match(/<rect class="bar-output"/g)).toHaveLength(turns)
      expect(panel).toMatch(/<dt>tool calls<\/dt><dd>\d+, \d+ errors/)
      // Markdown rendered in user and assistant text.
      expect(dom).toContain('<strong>review</strong>')
      expect(dom).toMatch(/<ul>\s*<li>check <code>package\.json<\/code><\/li>/)
      expect(dom).toMatch(/<pre><code class="language-ts">const answer: number = 42\n<\/code><\/pre>/)
      expect(dom).toMatch(/<ol>\s*<li>permissions<\/li>\s*<li>retry as <em>root<\/em>\?<\/li>/)
      expect(dom).toContain('<strong>tests</strong>')
      // The 3,000-line output: six lines visible, the rest behind a closed <details> with its size.
      const output =
        /<div class="collapsible output"><pre class="preview">\n?([\s\S]*?)<\/pre><details><summary>([^<]*)<\/summary>/.exec(
          dom,
        )
      expect(output).not.toBeNull()
      expect(output![1]).toBe(`${LONG_OUTPUT.split('\n').slice(0, 6).join('\n')}\n`)
      expect(output![2]).toBe('3,000 lines, 215 kB: show more')
      expect(dom).not.toMatch(/<details[^>]*\sopen/)
      expect(dom).toContain('Truncated: this page shows 16.0 kB of 3,000 lines, 215 kB.')
      expect(dom).toMatch(/Full text: <code>agent-ledger cat \S+demo-fork --seq 5<\/code>/)
      // Long arguments are collapsed the same way.
      expect(dom).toMatch(
        /<div class="collapsible arguments"><pre class="preview">\n?\{\n {2}"path": "big\.json",/,
      )
      expect(dom).toMatch(/<summary>\d+ lines?, [\d.]+ (B|kB): show the other \d+ lines?<\/summary>/)
      // No "tool started" rows.
      expect(dom).not.toMatch(/tool <strong>[^<]+<\/strong> started/)
      // The index: turns with their first words, and jumps to each kind of landmark.
      expect(dom).toMatch(/<a href="#e1"[^>]*>Turn 1: Please review the build:/)
      for (const group of ['repairs', 'errors', 'compactions', 'forks']) {
        expect(dom).toMatch(new RegExp(`<a href="#index-${group}">[A-Za-z ]+ \\(1\\)</a>`))
      }
      expect(dom).toMatch(/<a href="#e\d+"[^>]*>#\d+ TOOL_OUTCOME_UNKNOWN \(run_command\)<\/a>/)
      expect(dom).toMatch(/<a href="#e7"[^>]*>#7 write_file: Error: EACCES/)
      // Every in-page link lands on an element of the page.
      const { ids, links } = anchors(dom)
      expect(links.length).toBeGreaterThan(20)
      expect(links.filter((link) => !ids.has(link))).toEqual([])
      // Light and dark themes follow prefers-color-scheme.
      expect(await bodyBackground(file, { profile, dark: false })).toBe('bg=rgb(249, 250, 251)')
      expect(await bodyBackground(file, { profile, dark: true })).toBe('bg=rgb(15, 23, 42)')
      // The full text of the truncated output, with the command the page prints.
      const full = await runBin(['cat', join(root, 'demo-fork'), '--seq', '5'])
      expect(full.code).toBe(0)
      expect(full.stdout).toContain(`--- content ---\n${LONG_OUTPUT}\n`)

      await screenshot(file, { name: 'transcript-demo-light.png', profile })
      await screenshot(file, { name: 'transcript-demo-dark.png', profile, dark: true })
    },
    300_000,
  )

  it.skipIf(!hasChromium)(
    'a 20 MB session exports to a page under its 4.5 MB budget: texts shortened first, the middle left out, the first and the last turns kept',
    async () => {
      const root = join(work, 'large-root')
      const store = createJsonlStore({ root })
      const writer = await store.create({ id: 'large' })
      writer.append({
        type: 'system/message',
        data: { message: { role: 'system', content: 'You are a coding agent.' } },
      })
      // 3,000 turns: more than even 240-character texts fit in the budget, so the middle goes.
      const chunk = Array.from({ length: 60 }, (_, index) => `${index + 1}: ${'y'.repeat(96)}`).join('\n')
      for (let turn = 1; turn <= 3000; turn += 1) {
        const id = `call_${turn}`
        const output = turn % 100 === 1 ? LONG_OUTPUT : chunk
        writer.append({ type: 'turn/start', data: { turn } })
        writer.append({
          type: 'user/message',
          data: { message: { role: 'user', content: `Step ${turn}: read part ${turn}.` } },
        })
        writer.append({
          type: 'assistant/message',
          data: {
            message: {
              role: 'assistant',
              content: `Reading part **${turn}**.`,
              tool_calls: [call(id, 'read_file', `{"path":"part${turn}.txt"}`)],
            },
          },
        })
        writer.append({
          type: 'tool/call',
          data: { callId: id, name: 'read_file', arguments: `{"path":"part${turn}.txt"}` },
        })
        writer.append({
          type: 'tool/result',
          data: { message: { role: 'tool', tool_call_id: id, content: output } },
        })
        writer.append({ type: 'turn/end', data: { turn, reason: 'completed' } })
        if (turn % 100 === 0) await writer.flush()
      }
      await writer.close()
      const log = join(root, 'large')
      const file = join(work, 'large.html')
      const exported = await runBin(['export', log, '--format', 'html', '-o', file, '--no-progress'])
      expect(exported.code).toBe(0)
      const logBytes = statSync(join(log, 'session.v4.jsonl')).size
      expect(logBytes).toBeGreaterThan(20_000_000)
      const pageBytes = statSync(file).size
      expect(pageBytes).toBeLessThan(4_500_000)
      expect(pageBytes).toBeGreaterThan(3_000_000)

      const html = readFileSync(file, 'utf8')
      const notShown =
        /<article class="event budget" id="not-shown">[\s\S]*?leaves out events #(\d+)\.\.#(\d+) from the middle[\s\S]*?<code>(agent-ledger cat \S+ --from \d+ --to \d+)<\/code>/.exec(
          html,
        )
      expect(notShown).not.toBeNull()
      const from = Number(notShown![1])
      const to = Number(notShown![2])
      // The first turns and the last ones are on the page, the middle is not; the top says so.
      expect(from).toBeGreaterThan(100)
      expect(html).toContain('Step 1: read part 1.')
      expect(html).toContain('Step 3000: read part 3000.')
      expect(html).not.toContain('Step 1000: read part 1000.')
      expect(html).toMatch(
        /<dt>page budget<\/dt><dd>to stay under 4\.5 MB, texts over 240 characters are shortened and events #\d+\.\.#\d+ in the middle are left out/,
      )
      // The hint works as printed: it prints the first and the last event the page left out.
      const [, , ...hintArgs] = notShown![3]!.split(' ')
      const rest = await runBin(['cat', ...hintArgs])
      expect(rest.code).toBe(0)
      const printed = rest.stdout.split('\n').filter((line) => /^#\d+ /.test(line))
      expect(printed[0]).toMatch(new RegExp(`^#${from} `))
      expect(printed.at(-1)).toMatch(new RegExp(`^#${to} `))

      const dom = await dumpDom(file, profile)
      expect(dom).toContain('<a href="#not-shown"')
      const { ids, links } = anchors(dom)
      expect(links.filter((link) => !ids.has(link))).toEqual([])
      // The long outputs are shortened to their first lines and say their whole size, in the kept end too.
      expect((dom.match(/<p class="size">3,000 lines, 215 kB<\/p>/g) ?? []).length).toBeGreaterThan(3)
      expect(dom).toContain('Step 3000: read part 3000.')
      await screenshot(file, { name: 'transcript-large.png', profile })
    },
    600_000,
  )
})
