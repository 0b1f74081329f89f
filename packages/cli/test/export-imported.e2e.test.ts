/**
 * HTML and Markdown transcripts of imported sessions, checked in Chromium: the real Claude
 * Code and Codex recordings of shared/fixtures/import, each with a faithful synthetic tail
 * appended (the fixtures hold no file edit): a Claude Code `Edit` call and its result, a
 * Codex `apply_patch` custom tool call and its output, then a last user turn. Screenshots
 * go to the package's ignored test-output/.
 */
import {
  copyFileSync,
  appendFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { runBin } from './support/bin.ts'
import { dumpDom, hasChromium, screenshot } from './support/chromium.ts'

const shared = fileURLToPath(new URL('../../../../shared/fixtures/import/', import.meta.url))
const claudeFixture = join(shared, 'claude-code', 'short.jsonl')
const codexFixture = join(
  shared,
  'codex',
  'rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl',
)
const available = existsSync(claudeFixture) && existsSync(codexFixture)

const LAST_CLAUDE = 'Last question of the Claude Code session: is the edit in?'
const LAST_CODEX = 'Last question of the Codex session: did the patch apply?'

/** Claude Code records after line 15 of short.jsonl, in its shape (parentUuid chain, tool_use / tool_result). */
function claudeTail(): string {
  const common = {
    isSidechain: false,
    userType: 'external',
    cwd: '/home/marco/projects/spotter',
    sessionId: '55604662-cf2a-4331-851a-ec234028f8ca',
    version: '2.1.38',
    gitBranch: 'master',
  }
  const records = [
    {
      ...common,
      parentUuid: '40003bdd-2613-4975-83d5-36fb0b6bbc59',
      type: 'user',
      message: { role: 'user', content: 'Rename the greeting in lib/spotter.ex.' },
      uuid: 'aaaaaaaa-0000-4000-8000-000000000001',
      timestamp: '2026-02-10T21:17:00.000Z',
    },
    {
      ...common,
      parentUuid: 'aaaaaaaa-0000-4000-8000-000000000001',
      type: 'assistant',
      message: {
        model: 'claude-opus-4-6',
        id: 'msg_synthetic_edit',
        type: 'message',
        role: 'assistant',
        content: [
          {
            type: 'tool_use',
            id: 'toolu_synthetic_edit',
            name: 'Edit',
            input: {
              file_path: '/home/marco/projects/spotter/lib/spotter.ex',
              old_string: '  def hello do\n    :world\n  end',
              new_string: '  def hello do\n    :spotter\n  end',
            },
          },
        ],
        stop_reason: 'tool_use',
        usage: { input_tokens: 3, output_tokens: 40 },
      },
      uuid: 'aaaaaaaa-0000-4000-8000-000000000002',
      timestamp: '2026-02-10T21:17:01.000Z',
    },
    {
      ...common,
      parentUuid: 'aaaaaaaa-0000-4000-8000-000000000002',
      type: 'user',
      message: {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_synthetic_edit',
            content: 'The file /home/marco/projects/spotter/lib/spotter.ex has been updated.',
          },
        ],
      },
      uuid: 'aaaaaaaa-0000-4000-8000-000000000003',
      timestamp: '2026-02-10T21:17:02.000Z',
      sourceToolAssistantUUID: 'aaaaaaaa-0000-4000-8000-000000000002',
    },
    {
      ...common,
      parentUuid: 'aaaaaaaa-0000-4000-8000-000000000003',
      type: 'user',
      message: { role: 'user', content: LAST_CLAUDE },
      uuid: 'aaaaaaaa-0000-4000-8000-000000000004',
      timestamp: '2026-02-10T21:18:00.000Z',
    },
  ]
  return records.map((record) => `${JSON.stringify(record)}\n`).join('')
}

/** Codex rollout records after line 19, in its shape (response_item custom_tool_call / output). */
function codexTail(): string {
  const patch = [
    '*** Begin Patch',
    '*** Update File: src/main.rs',
    '@@ fn main() {',
    '-    println!("hello");',
    '+    println!("hello, codex");',
    '*** End Patch',
  ].join('\n')
  const records = [
    {
      type: 'response_item',
      payload: { type: 'function_call_output', call_id: 'call_UtYwHmwWekzvq83m8Rb9K8jJ', output: 'ok' },
    },
    {
      type: 'response_item',
      payload: {
        type: 'custom_tool_call',
        status: 'completed',
        call_id: 'call_synthetic_patch',
        name: 'apply_patch',
        input: patch,
      },
    },
    {
      type: 'response_item',
      payload: {
        type: 'custom_tool_call_output',
        call_id: 'call_synthetic_patch',
        output: 'Success. Updated the following files:\nM src/main.rs',
      },
    },
    {
      type: 'response_item',
      payload: { type: 'message', role: 'user', content: [{ type: 'input_text', text: LAST_CODEX }] },
    },
  ]
  return records
    .map(
      (record, index) => `${JSON.stringify({ timestamp: `2026-02-23T12:20:0${index}.000Z`, ...record })}\n`,
    )
    .join('')
}

let work: string
let store: string

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'al-export-imported-'))
  store = join(work, 'store')
  if (!available) return
  const sources = join(work, 'sources')
  const claude = join(sources, 'claude.jsonl')
  const codex = join(sources, 'rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl')
  await import('node:fs/promises').then(({ mkdir }) => mkdir(sources, { recursive: true }))
  copyFileSync(claudeFixture, claude)
  appendFileSync(claude, claudeTail())
  copyFileSync(codexFixture, codex)
  appendFileSync(codex, codexTail())
  for (const source of [claude, codex]) {
    const imported = await runBin(['import', source, '--root', store, '--no-progress'])
    expect(imported.code, imported.stderr).toBe(0)
  }
}, 120_000)

afterAll(() => {
  rmSync(work, { recursive: true, force: true })
})

function sessionOf(prefix: string): string {
  const id = readdirSync(store).find((name) => name.startsWith(prefix))
  expect(id, `a ${prefix} session in the store`).toBeDefined()
  return join(store, id!)
}

async function exported(
  session: string,
  format: 'html' | 'md',
  name: string,
  extra: string[] = [],
): Promise<string> {
  const file = join(work, name)
  const run = await runBin(['export', session, '--format', format, '-o', file, '--no-progress', ...extra])
  expect(run.code, run.stderr).toBe(0)
  return file
}

describe.skipIf(!available)('transcripts of imported sessions', () => {
  for (const [label, prefix, last, diff] of [
    ['Claude Code', 'claude-', LAST_CLAUDE, { del: '-    :world', add: '+    :spotter', tool: 'Edit' }],
    [
      'Codex',
      'codex-',
      LAST_CODEX,
      { del: '-    println!("hello");', add: '+    println!("hello, codex");', tool: 'apply_patch' },
    ],
  ] as const) {
    it.skipIf(!hasChromium)(
      `${label}: no source-record cards by default (a count and a flag instead), the last turn, the edit as a diff, each call with its result`,
      async () => {
        const session = sessionOf(prefix)
        const file = await exported(session, 'html', `${prefix}page.html`)
        const profile = join(work, `chromium-${prefix}`)
        const dom = await dumpDom(file, profile)
        // The log holds source records, the page shows none of them, and says how many it hides.
        const cat = await runBin(['cat', session, '--json'])
        const recordCount = cat.stdout
          .split('\n')
          .filter((line) => line.includes('"type":"import/source-record"')).length
        expect(recordCount).toBeGreaterThan(5)
        expect(dom).not.toContain('>import/source-record<')
        expect(dom).toContain(`<dt>source records</dt><dd>${recordCount} hidden`)
        // The last turn is on the page.
        expect(dom).toContain(last)
        // The edit is a diff: the removed and the added line each in its own element.
        const diffBlock = /<pre class="diff">([\s\S]*?)<\/pre>/.exec(dom)?.[1] ?? ''
        expect(diffBlock).toContain(`<span class="diff-del">${diff.del.replaceAll('"', '"')}</span>`)
        expect(diffBlock).toContain(`<span class="diff-add">${diff.add}</span>`)
        expect(dom).toMatch(
          new RegExp(`<li class="call"><strong>${diff.tool}</strong>[\\s\\S]*?<pre class="diff">`),
        )
        // Each answered call shows its result under it.
        const calls = dom.match(/<li class="call">[\s\S]*?<\/li>/g) ?? []
        const answered = calls.filter((item) => item.includes('result at'))
        expect(answered.length).toBeGreaterThan(0)
        for (const item of answered) expect(item).toContain('<div class="call-result')
        await screenshot(file, { name: `transcript-imported-${prefix}light.png`, profile, height: 2400 })

        // --source-records shows them.
        const withRecords = await exported(session, 'html', `${prefix}records.html`, ['--source-records'])
        const shown = readFileSync(withRecords, 'utf8')
        expect(shown.match(/<span class="role">import\/source-record<\/span>/g)).toHaveLength(recordCount)
        expect(shown).toContain(`<dt>source records</dt><dd>${recordCount} shown`)
      },
      300_000,
    )

    it(`${label}: Markdown hides the source records (a count instead), keeps the last turn and shows the edit as a diff block`, async () => {
      const session = sessionOf(prefix)
      const md = readFileSync(await exported(session, 'md', `${prefix}page.md`), 'utf8')
      expect(md).not.toContain('`import/source-record`')
      expect(md).toMatch(/- source records: \d+ hidden/)
      expect(md).toContain(last)
      expect(md).toMatch(
        new RegExp(
          `\`\`\`diff\\n[\\s\\S]*?\\n${diff.del.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n${diff.add.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n`,
        ),
      )
      const shown = readFileSync(
        await exported(session, 'md', `${prefix}records.md`, ['--source-records']),
        'utf8',
      )
      expect(shown).toContain('`import/source-record`')
    }, 120_000)
  }
})
