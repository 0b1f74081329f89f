import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import type { EventInput } from '@agent-ledger/session-events'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import {
  cli,
  flipByteInLine,
  logPath,
  makeRoot,
  testStore,
  writeCrashedSession,
  writeSession,
} from './support/sessions.ts'

let root: string
let cleanup: () => void

beforeEach(() => {
  ;({ root, cleanup } = makeRoot())
})
afterEach(() => cleanup())

const XSS = '<script>document.title="pwned"</script><img src=x onerror=alert(1)> & "quotes" \'single\''

const extra: EventInput[] = [
  { type: 'turn/start', data: { turn: 3 } },
  { type: 'user/message', data: { message: { role: 'user', content: 'Show me the page source.' } } },
  {
    type: 'assistant/message',
    data: {
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_x',
            type: 'function',
            function: { name: 'read_file', arguments: '{"path":"index.html"}' },
          },
        ],
      },
    },
  },
  { type: 'tool/call', data: { callId: 'call_x', name: 'read_file', arguments: '{"path":"index.html"}' } },
  { type: 'tool/result', data: { message: { role: 'tool', tool_call_id: 'call_x', content: XSS } } },
  {
    type: 'assistant/message',
    data: { message: { role: 'assistant', content: 'It has a script tag: <script>.' } },
  },
  { type: 'turn/end', data: { turn: 3, reason: 'completed' } },
]

describe('export --format html', () => {
  it('writes ONE self-contained file: no script, no external resource, every text escaped', async () => {
    await writeSession(testStore(root), 'a1', { turns: 2, extra })
    const out = join(root, 'a1.html')
    const run = await cli(['export', join(root, 'a1'), '--format', 'html', '-o', out])
    expect(run.code).toBe(0)
    expect(readdirSync(root).filter((name) => name.includes('.tmp-'))).toEqual([])
    const html = readFileSync(out, 'utf8')
    expect(html.startsWith('<!DOCTYPE html>')).toBe(true)
    expect(html).toContain(`content="default-src 'none'; style-src 'unsafe-inline'"`)
    expect(html).not.toMatch(/<script/i)
    expect(html).not.toMatch(/<(img|link|iframe|object|embed)\b/i)
    expect(html).not.toMatch(/<[a-z]+[^>]*\s(src|srcset|on[a-z]+)=/i)
    expect(html).not.toMatch(/href="(?!#)/)
    expect(html).toContain(
      '&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt; &amp; &quot;quotes&quot; &#39;single&#39;',
    )
    expect(html).toContain('It has a script tag: &lt;script&gt;.')
    expect(html).toContain('<section class="turn" id="e1">')
    expect(html).toMatch(
      /<strong>read_file<\/strong> <code>call_x<\/code>: started \(<span class="seq">#\d+<\/span>\); result at <a class="seq" href="#e(\d+)">/,
    )
  })

  it('R1: marks repair placeholders and pending calls; compactions and hidden originals (greyed)', async () => {
    const store = testStore(root)
    await writeCrashedSession(store, 'c1')
    await (await store.openWriter('c1')).close()
    const compact = await cli([
      'compact',
      join(root, 'c1'),
      '--from',
      '2',
      '--to',
      '6',
      '--summary',
      'Turn 1 summary.',
      '--id',
      'k1',
    ])
    expect(compact.code).toBe(0)
    const run = await cli(['export', join(root, 'c1'), '--format', 'html'])
    expect(run.code).toBe(0)
    const html = run.stdout
    expect(html).toContain('<span class="badge placeholder">repair placeholder TOOL_OUTCOME_UNKNOWN</span>')
    expect(html).toContain('<span class="badge placeholder">repair placeholder TOOL_NOT_STARTED</span>')
    expect(html).toContain('interrupted after the tool started: its side effect may or may not have happened')
    expect(html).toMatch(/<article class="event role-user hidden-event" id="e2">/)
    expect(html).toMatch(/Replaced by <a class="seq" href="#e(\d+)">#\1<\/a>/)
    expect(html).toContain('compaction k1 started')
    expect(html).toContain('<span class="badge summary">compaction summary</span>')
    expect(html).toContain('ended: <strong>interrupted</strong>')
  })

  it('I1: exports the good prefix of a damaged log with the damage marked, exit 1', async () => {
    await writeSession(testStore(root), 'a1', { turns: 2 })
    flipByteInLine(root, 'a1', 8)
    const run = await cli(['export', join(root, 'a1'), '--format', 'html'])
    expect(run.code).toBe(1)
    expect(run.stdout).toContain('the log is damaged here')
    expect(run.stdout).toContain('<span class="badge error">CORRUPT_LINE</span>line 8')
    expect(run.stdout.trimEnd().endsWith('</html>')).toBe(true)
    expect(run.stderr).toMatch(/^agent-ledger: CORRUPT_LINE /)
  })

  it('refuses a missing or unknown --format (exit 2)', async () => {
    await writeSession(testStore(root), 'a1', { turns: 1 })
    expect((await cli(['export', join(root, 'a1')])).code).toBe(2)
    expect((await cli(['export', join(root, 'a1'), '--format', 'pdf'])).stderr).toContain(
      'expected --format md, html, openai, anthropic',
    )
  })
})

describe('export --format md', () => {
  it('keeps untrusted text inside fences that it cannot close, and marks calls, results and turns', async () => {
    const tricky = 'a ``` fence\n```\n# not a heading\n\u001b[2J'
    await writeSession(testStore(root), 'a1', {
      turns: 1,
      extra: [
        { type: 'turn/start', data: { turn: 2 } },
        { type: 'user/message', data: { message: { role: 'user', content: tricky } } },
        { type: 'turn/end', data: { turn: 2, reason: 'aborted' } },
      ],
    })
    const run = await cli(['export', join(root, 'a1'), '--format', 'md'])
    expect(run.code).toBe(0)
    const md = run.stdout
    expect(md).toMatch(/^# Session `a1`\n/)
    expect(md).toContain('## Turn 1')
    expect(md).toContain('- tool call `read_file` id `call_1`: started at #4; result at #5')
    expect(md).toContain('answers `read_file` call `call_1` from #3')
    expect(md).toContain('````text\na ``` fence\n```\n# not a heading\n\\u001b[2J\n````')
    expect(md).not.toContain('\u001b')
  })
})

describe('list', () => {
  it('lists sessions from their headers and broken ones as problems, exit 0', async () => {
    const store = testStore(root)
    await writeSession(store, 'a1', { turns: 1 })
    await writeSession(store, 'b2', { turns: 1 })
    mkdirSync(join(root, 'broken'), { mode: 0o700 })
    writeFileSync(join(root, 'broken', 'session.v4.jsonl'), 'not a header\n{}\n', { mode: 0o600 })
    mkdirSync(join(root, 'empty'), { mode: 0o700 })
    writeFileSync(join(root, 'empty', 'session.v4.jsonl'), '', { mode: 0o600 })
    const run = await cli(['list', root, '--json'])
    expect(run.code).toBe(0)
    const listing = JSON.parse(run.stdout) as {
      sessions: { id: string; bytes: number }[]
      problems: { id: string; error: { code: string } }[]
    }
    expect(listing.sessions.map((session) => session.id)).toEqual(['a1', 'b2'])
    expect(listing.sessions[0]!.bytes).toBe(readFileSync(logPath(root, 'a1')).length)
    expect(listing.problems.map((problem) => problem.id).sort()).toEqual(['broken', 'empty'])
    const human = await cli(['list', root])
    expect(human.stdout).toMatch(/^a1 {2}created 2026-01-01T00:00:00\.000Z {2}\S+ \S+ {2}modified /m)
    expect(human.stdout).toMatch(/^broken {2}PROBLEM \S+ in .*broken\/session\.v4\.jsonl/m)
    expect(human.stdout).toContain('2 sessions, 2 problems')
  })

  it('exits 2 for a root that does not exist', async () => {
    const run = await cli(['list', join(root, 'missing')])
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(/^agent-ledger: NOT_A_SESSION: .*missing does not exist/)
  })
})
