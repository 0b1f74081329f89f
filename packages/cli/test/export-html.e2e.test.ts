import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

import type { LoggedEvent } from '@agent-ledger/session-events'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { runBin } from './support/bin.ts'

const CHROMIUM = '/usr/bin/chromium'
const hasChromium = existsSync(CHROMIUM)
if (!hasChromium) {
  console.warn(
    `export-html.e2e: skipped: ${CHROMIUM} is missing (install Debian's chromium package to render the HTML export in a headless browser)`,
  )
}

const PAYLOAD = '<script>document.body.innerHTML="pwned"</script><img src=x onerror="document.title=1">'

let work: string

/** The DOM as Chromium serializes text: `& < >` and no-break spaces escaped, quotes kept. */
function serializedText(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('\u00a0', '&nbsp;')
}

function dumpDom(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      CHROMIUM,
      [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        `--user-data-dir=${join(work, 'chromium-profile')}`,
        '--dump-dom',
        pathToFileURL(file).href,
      ],
      { encoding: 'utf8', timeout: testTime(90_000), maxBuffer: 64 * 1024 * 1024 },
      (error, stdout) => {
        if (error !== null) reject(new Error(`chromium failed: ${error.message}`, { cause: error }))
        else resolve(stdout)
      },
    )
  })
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'al-cli-html-'))
})
afterAll(() => rmSync(work, { recursive: true, force: true }))

describe('export --format html in headless Chromium', () => {
  it.skipIf(!hasChromium)(
    'shows every message of the session, and a <script> payload stays text',
    async () => {
      const root = join(work, 'root')
      const store = createJsonlStore({ root })
      const writer = await store.create({ id: 'h1' })
      writer.append({
        type: 'system/message',
        data: { message: { role: 'system', content: 'You are careful & terse.' } },
      })
      writer.append({ type: 'turn/start', data: { turn: 1 } })
      writer.append({
        type: 'user/message',
        data: { message: { role: 'user', content: 'Show index.html, then "clean up" tmp/.' } },
      })
      writer.append({
        type: 'assistant/message',
        data: {
          message: {
            role: 'assistant',
            content: 'Reading it first — ünïcödé, 中文, emoji 🚀.',
            tool_calls: [
              {
                id: 'call_read',
                type: 'function',
                function: { name: 'read_file', arguments: '{"path":"index.html"}' },
              },
              {
                id: 'call_rm',
                type: 'function',
                function: { name: 'run_command', arguments: '{"cmd":"rm -rf tmp"}' },
              },
            ],
          },
        },
      })
      writer.append({
        type: 'tool/call',
        data: { callId: 'call_read', name: 'read_file', arguments: '{"path":"index.html"}' },
      })
      writer.append({
        type: 'tool/result',
        data: { message: { role: 'tool', tool_call_id: 'call_read', content: PAYLOAD } },
      })
      writer.append({
        type: 'tool/call',
        data: { callId: 'call_rm', name: 'run_command', arguments: '{"cmd":"rm -rf tmp"}' },
      })
      await writer.close()
      // The crash left call_rm unanswered: a write open answers it with a TOOL_OUTCOME_UNKNOWN placeholder.
      const resumed = await store.openWriter('h1')
      resumed.append({ type: 'turn/start', data: { turn: 2 } })
      resumed.append({
        type: 'user/message',
        data: { message: { role: 'user', content: '\nLeading newline, and   spaces kept.' } },
      })
      resumed.append({
        type: 'assistant/message',
        data: { message: { role: 'assistant', content: 'The rm may have run; checking.' } },
      })
      resumed.append({ type: 'turn/end', data: { turn: 2, reason: 'completed' } })
      await resumed.close()
      const compact = await runBin([
        'compact',
        join(root, 'h1'),
        '--from',
        '2',
        '--to',
        '7',
        '--summary',
        'Read index.html; rm outcome unknown.',
      ])
      expect(compact.code).toBe(0)

      const file = join(work, 'h1.html')
      const exported = await runBin(['export', join(root, 'h1'), '--format', 'html', '-o', file])
      expect(exported.code).toBe(0)
      const dom = await dumpDom(file)

      const events: LoggedEvent[] = []
      for await (const event of store.readEvents('h1')) events.push(event)
      const texts: string[] = []
      for (const event of events) {
        const data = event.data as {
          message?: { content?: unknown; tool_calls?: { function: { arguments: string } }[] }
        }
        // User and assistant text is Markdown: a paragraph drops leading and trailing blank space.
        const markdown = event.type === 'user/message' || event.type === 'assistant/message'
        if (typeof data.message?.content === 'string' && data.message.content !== '')
          texts.push(
            ...(markdown
              ? data.message.content
                  .split('\n')
                  .map((line) => line.trim())
                  .filter((line) => line !== '')
              : [data.message.content]),
          )
        for (const call of data.message?.tool_calls ?? []) texts.push(call.function.arguments)
      }
      expect(texts.length).toBeGreaterThanOrEqual(10)
      expect(texts.some((text) => text.includes('[TOOL_OUTCOME_UNKNOWN]'))).toBe(true)
      for (const text of texts) expect(dom).toContain(serializedText(text))
      // The payload is text on the page, never elements: the script did not run and no <img> exists.
      expect(dom).not.toMatch(/<script/i)
      expect(dom).not.toMatch(/<img/i)
      expect(dom).not.toContain('pwned</body>')
      expect(dom).toContain(serializedText(PAYLOAD))
      expect(dom).toContain('repair placeholder TOOL_OUTCOME_UNKNOWN')
      expect(dom).toContain('compaction summary')
      expect(dom).toMatch(/<article class="event role-tool hidden-event" id="e5">/)
      expect(readFileSync(file, 'utf8')).not.toMatch(/<script/i)
    },
    120_000,
  )
})
