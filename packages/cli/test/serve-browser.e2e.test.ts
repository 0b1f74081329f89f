/**
 * `agent-ledger serve` in Debian's Chromium, driven by playwright-core (its executable path,
 * no browser download): the list, a filter, a search and its hit, a session, a live session
 * following a writer in a child process, and a hostile session whose script never runs.
 * One server (in process) and one browser for the file; screenshots go to test-output/.
 */
import { spawn } from 'node:child_process'
import type { ChildProcessWithoutNullStreams } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

import { chromium } from 'playwright-core'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { launchArgs } from '../../../tooling/launch-args.ts'
import { testTime, waitUntil } from '../../../tooling/test-time.ts'
import { CHROMIUM, hasChromium } from './support/chromium.ts'
import { startServe } from './support/serve.ts'
import type { RunningServe } from './support/serve.ts'
import { makeRoot, testStore, writeSession } from './support/sessions.ts'

if (!hasChromium) {
  console.warn(`serve-browser.e2e: skipped: ${CHROMIUM} is missing (install Debian's chromium package)`)
}

const ARTIFACTS = fileURLToPath(new URL('../test-output/', import.meta.url))
const PACKAGE = fileURLToPath(new URL('..', import.meta.url))
const APPEND_CHILD = fileURLToPath(new URL('./support/append-child.ts', import.meta.url))
/** Sets a window flag if it ever runs: from a `<script>`, an `onerror`, or a `javascript:` link. */
const HOSTILE =
  '<script>window.__pwned = "script"</script><img src=x onerror="window.__pwned = \'onerror\'"> [x](javascript:window.__pwned=1)'

const { root, cleanup } = makeRoot('al-serve-browser-')
let serve: RunningServe
let browser: Browser
let page: Page
const pageErrors: string[] = []

async function shot(name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true })
  await page.screenshot({ path: `${ARTIFACTS}${name}` })
}

beforeAll(async () => {
  if (!hasChromium) return
  const store = testStore(root)
  await writeSession(store, 'native-build', { turns: 2 })
  const imported = await store.create({
    id: 'claude-migration',
    header: { cwd: '/home/dev/webapp', metadata: { source: { format: 'claude-code' } } },
  })
  imported.append({ type: 'turn/start', data: { turn: 1 } })
  imported.append({
    type: 'user/message',
    data: { message: { role: 'user', content: 'The database migration broke: please fix it.' } },
  })
  imported.append({
    type: 'assistant/message',
    data: { message: { role: 'assistant', content: 'Fixed the migration: the column was renamed twice.' } },
  })
  imported.append({ type: 'turn/end', data: { turn: 1, reason: 'completed' } })
  await imported.close()
  const hostile = await store.create({ id: 'hostile', header: { cwd: HOSTILE } })
  hostile.append({ type: 'user/message', data: { message: { role: 'user', content: HOSTILE } } })
  hostile.append({ type: 'assistant/message', data: { message: { role: 'assistant', content: HOSTILE } } })
  await hostile.close()
  await writeSession(store, 'live-one', { turns: 1 })
  await store.close()
  serve = await startServe([root])
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] })
  page = await browser.newPage({ viewport: { width: 1200, height: 760 } })
  page.setDefaultTimeout(testTime(30_000))
  page.on('pageerror', (error) => pageErrors.push(error.message))
}, testTime(180_000))

afterAll(async () => {
  await browser?.close()
  if (serve !== undefined) expect(await serve.stop()).toBe(0)
  cleanup()
})

describe.skipIf(!hasChromium)('serve in Chromium', () => {
  it('the token URL lands on the list (the token leaves the address bar); a filter narrows it', async () => {
    await page.goto(serve.url.href)
    expect(new URL(page.url()).searchParams.has('token')).toBe(false)
    const rows = page.locator('table.sessions tbody tr')
    expect(await rows.count()).toBe(4)
    await shot('serve-list.png')
    await page.selectOption('select[name=source]', 'claude-code')
    await page.click('form.filters button[type=submit]')
    await page.waitForURL(/source=claude-code/)
    expect(await rows.allTextContents()).toEqual([expect.stringContaining('claude-migration')])
    await shot('serve-list-filtered.png')
  })

  it('a search shows its hits in context; a hit opens the session at its seq', async () => {
    await page.fill('.serve-bar input[name=q]', 'migration broke')
    await page.press('.serve-bar input[name=q]', 'Enter')
    await page.waitForURL(/\/search\?q=migration/)
    const hits = page.locator('ol.hits li')
    expect(await hits.count()).toBe(1)
    // The API marks the first match of the first term.
    expect(await hits.locator('mark').textContent()).toBe('migration')
    await shot('serve-search.png')
    await hits.locator('a').first().click()
    await page.waitForURL(/\/session\/claude-migration\?seq=1#seq-1/)
    expect(await page.locator('#e1').isVisible()).toBe(true)
    expect(await page.locator('h1').textContent()).toBe('Session claude-migration')
    // The stats panel and the transcript of export --html.
    expect(await page.locator('.summary').count()).toBe(1)
    await shot('serve-session.png')
  })

  it('a live session: the marker turns live and events a child process appends show up', async () => {
    await page.goto(`http://${serve.host}/session/live-one`)
    await page.waitForSelector('#live[data-state=live]')
    const child: ChildProcessWithoutNullStreams = spawn(
      process.execPath,
      launchArgs(APPEND_CHILD, [root, 'live-one']),
      { cwd: PACKAGE, stdio: 'pipe' },
    )
    let said = ''
    child.stdout.on('data', (chunk: Buffer) => (said += chunk.toString()))
    try {
      child.stdin.write('first line written while the page is open\n')
      await waitUntil('the child appends', () => said.includes('appended'), { detail: () => said })
      await page.waitForSelector('text=first line written while the page is open')
      child.stdin.write('second live line\n')
      await page.waitForSelector('text=second live line')
      expect(await page.locator('#live').textContent()).toMatch(/^live: #\d+$/)
      await page.locator('text=second live line').scrollIntoViewIfNeeded()
      await shot('serve-live.png')
    } finally {
      child.stdin.end()
      await new Promise((resolve) => child.once('exit', resolve))
    }
  })

  it('hostile content shows as text and runs no script on the session, list and search pages', async () => {
    for (const path of ['/session/hostile', '/?cwd=script', '/search?q=pwned']) {
      await page.goto(`http://${serve.host}${path}`)
      await page.waitForLoadState('load')
      expect(await page.evaluate('typeof window.__pwned'), path).toBe('undefined')
      expect(await page.locator('body').textContent(), path).toContain('<script>window.__pwned')
    }
    await shot('serve-hostile.png')
    expect(pageErrors).toEqual([])
  })
})
