import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { checkLinks, markdownLinks, repositoryMarkdown } from '../check-links.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))
let scratch: string

// Scratch Markdown lives inside the repository (links are resolved against it), gitignored.
beforeAll(() => {
  mkdirSync(join(root, 'tooling', '.test-output'), { recursive: true })
  scratch = mkdtempSync(join(root, 'tooling', '.test-output', 'links-'))
})
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

function manifests(): Record<string, unknown>[] {
  return readdirSync(join(root, 'packages'))
    .map(
      (entry) =>
        JSON.parse(readFileSync(join(root, 'packages', entry, 'package.json'), 'utf8')) as Record<
          string,
          unknown
        >,
    )
    .filter((manifest) => manifest.private !== true)
}

describe('files a published project has', () => {
  it('has an MIT LICENSE at the root, shipped unchanged in every public package', () => {
    const license = readFileSync(join(root, 'LICENSE'), 'utf8')
    expect(license).toMatch(/^MIT License\n/)
    for (const entry of readdirSync(join(root, 'packages'))) {
      expect(readFileSync(join(root, 'packages', entry, 'LICENSE'), 'utf8'), entry).toBe(license)
    }
  })

  it('every public package names its license, homepage, bugs and keywords, and ships LICENSE', () => {
    for (const manifest of manifests()) {
      const name = String(manifest.name)
      expect(manifest.license, name).toBe('MIT')
      expect(String(manifest.homepage), name).toMatch(
        /^https:\/\/github\.com\/agent-ledger\/agent-ledger\/tree\/main\/packages\/[a-z-]+#readme$/,
      )
      expect((manifest.bugs as { url?: string } | undefined)?.url, name).toBe(
        'https://github.com/agent-ledger/agent-ledger/issues',
      )
      expect((manifest.keywords as string[] | undefined)?.length ?? 0, name).toBeGreaterThan(2)
      expect(manifest.files as string[], name).toContain('LICENSE')
    }
  })

  it('the store publishes the reference reader its README links', () => {
    const store = manifests().find((manifest) => manifest.name === '@agent-ledger/session-store-jsonl')
    expect(store?.files).toContain('reference/read-session.mjs')
  })
})

describe('Markdown links', () => {
  it('finds inline links and definitions, not links inside code', () => {
    const links = markdownLinks(
      [
        '[a](docs/A.md) and ![i](img.png "t")',
        '`[no](code.md)`',
        '```',
        '[no](fenced.md)',
        '```',
        '[ref]: ../B.md#x',
      ].join('\n'),
    )
    expect(links).toEqual([
      { line: 1, target: 'docs/A.md' },
      { line: 1, target: 'img.png' },
      { line: 6, target: '../B.md#x' },
    ])
  })

  it('refuses a link leaving the repository, a missing file, and an unpublished package file', () => {
    const file = join(scratch, 'NOTES.md')
    writeFileSync(
      file,
      [
        'See [the guide](../../../../shared/guide/HOUSE-STYLE.md).',
        'See [gone](../../docs/GONE.md) and [ok](../../../CONTRIBUTING.md#setup) and [web](https://example.com/x.md).',
      ].join('\n'),
    )
    const problems = checkLinks([file])
    expect(problems).toHaveLength(2)
    expect(problems[0]).toMatch(
      /NOTES\.md:1: links \.\.\/\.\.\/\.\.\/\.\.\/shared\/guide\/HOUSE-STYLE\.md, outside the repository/,
    )
    expect(problems[1]).toMatch(/NOTES\.md:2: links \.\.\/\.\.\/docs\/GONE\.md, which does not exist/)
    const readme = join(root, 'packages', 'session-store-jsonl', 'test', 'LINK-CHECK-SCRATCH.md')
    writeFileSync(
      readme,
      'The [tests](checkpoint.test.ts) and the [reader](../reference/read-session.mjs).\n',
    )
    try {
      const unpublished = checkLinks([readme])
      expect(unpublished).toHaveLength(1)
      expect(unpublished[0]).toMatch(/links checkpoint\.test\.ts, which is not in the package's "files"/)
    } finally {
      rmSync(readme)
    }
  })

  it('every relative link in the repository resolves inside it', () => {
    const files = repositoryMarkdown()
    expect(files.map((file) => file.slice(root.length))).toContain('CONTRIBUTING.md')
    expect(checkLinks(files)).toEqual([])
  })
})
