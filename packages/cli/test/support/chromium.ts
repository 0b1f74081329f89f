/**
 * Headless Chromium for the HTML transcript tests: the DOM as the browser built it, a
 * computed style read from a same-directory wrapper page, and screenshots. Debian's
 * `chromium` package provides `/usr/bin/chromium` (CI installs it); tests skip without it.
 */
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

import { testTime } from '../../../../tooling/test-time.ts'

export const CHROMIUM = '/usr/bin/chromium'
export const hasChromium = existsSync(CHROMIUM)

/** Where screenshots go: the package's ignored `test-output/` directory. */
const ARTIFACTS = fileURLToPath(new URL('../../test-output/', import.meta.url))

function chromium(args: readonly string[], profile: string): Promise<string> {
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
        '--hide-scrollbars',
        `--user-data-dir=${profile}`,
        ...args,
      ],
      { encoding: 'utf8', timeout: testTime(120_000), maxBuffer: 256 * 1024 * 1024 },
      (error, stdout) => {
        if (error !== null) reject(new Error(`chromium failed: ${error.message}`, { cause: error }))
        else resolve(stdout)
      },
    )
  })
}

/** The page's DOM after parsing, serialized by Chromium. */
export function dumpDom(file: string, profile: string): Promise<string> {
  return chromium(['--dump-dom', pathToFileURL(file).href], profile)
}

/** Saves a screenshot of the page's first `height` pixels under {@link ARTIFACTS}. */
export async function screenshot(
  file: string,
  options: {
    readonly name: string
    readonly profile: string
    readonly dark?: boolean
    readonly height?: number
  },
): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true })
  const target = join(ARTIFACTS, options.name)
  await chromium(
    [
      ...(options.dark === true ? ['--force-dark-mode'] : []),
      `--screenshot=${target}`,
      `--window-size=1280,${options.height ?? 1800}`,
      pathToFileURL(file).href,
    ],
    options.profile,
  )
  return target
}

/**
 * The computed background colour of the page's body, read by a wrapper page (the page
 * itself runs no script) that frames it; `dark` asks for `prefers-color-scheme: dark`.
 */
export async function bodyBackground(
  file: string,
  options: { readonly profile: string; readonly dark: boolean },
): Promise<string> {
  const wrapper = join(dirname(file), `wrap-${basename(file)}`)
  writeFileSync(
    wrapper,
    `<!DOCTYPE html><html><body><iframe id="f" src="${basename(file)}"></iframe><pre id="out">pending</pre><script>
document.getElementById('f').addEventListener('load', () => {
  const doc = document.getElementById('f').contentDocument
  document.getElementById('out').textContent = doc ? 'bg=' + getComputedStyle(doc.body).backgroundColor : 'no access'
})
</script></body></html>`,
  )
  const dom = await chromium(
    [
      ...(options.dark ? ['--force-dark-mode'] : []),
      '--allow-file-access-from-files',
      '--virtual-time-budget=10000',
      '--dump-dom',
      pathToFileURL(wrapper).href,
    ],
    options.profile,
  )
  return /<pre id="out">([^<]*)<\/pre>/.exec(dom)?.[1] ?? 'no output'
}

/** The ids a DOM defines and the `#fragment` links it holds. */
export function anchors(dom: string): { ids: Set<string>; links: string[] } {
  const ids = new Set([...dom.matchAll(/\sid="([^"]+)"/g)].map((match) => match[1]!))
  const links = [...dom.matchAll(/\shref="#([^"]*)"/g)].map((match) => match[1]!)
  return { ids, links }
}
