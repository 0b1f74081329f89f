import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { checkReadmes, extractBlocks } from '../readme-examples.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))
let work: string

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'al-readme-test-'))
})
afterAll(() => rmSync(work, { recursive: true, force: true }))

function readme(name: string, markdown: string): { readme: string; resolveFrom: string } {
  const file = join(work, name)
  writeFileSync(file, markdown)
  return { readme: file, resolveFrom: join(root, 'packages', 'session-store-jsonl') }
}

describe('README examples', () => {
  it('extracts ts blocks with their line, and marks fragments', () => {
    const blocks = extractBlocks(
      '# x\n\n```sh\nls\n```\n\n```ts\nconst a = 1\n```\n\n```ts fragment\nb()\n```\n',
    )
    expect(blocks.map(({ line, fragment, code }) => ({ line, fragment, code }))).toEqual([
      { line: 8, fragment: false, code: 'const a = 1' },
      { line: 12, fragment: true, code: 'b()' },
    ])
  })

  it('refuses an unknown attribute instead of skipping the block', () => {
    expect(() => extractBlocks('```ts fragmnet\nx\n```\n')).toThrow(/unknown attribute "fragmnet"/)
  })

  it('reports an example that does not compile, with its README line', async () => {
    const input = readme('compile.md', 'Intro\n\n```ts\nconst event = JSON.parse(line)\n```\n')
    const { problems } = await checkReadmes([input])
    expect(problems).toHaveLength(1)
    expect(problems[0]).toMatch(/compile\.md:4: TS2304: Cannot find name 'line'/)
  })

  it('reports an example that throws when run, and one that leaves writer.lock behind', async () => {
    const throws = readme('throws.md', "```ts\nthrow new Error('BAD_COMPACTION_RANGE here')\n```\n")
    const leaks = readme(
      'leaks.md',
      [
        '```ts',
        "import { resolve } from 'node:path'",
        '',
        "import { createJsonlStore } from '@agent-ledger/session-store-jsonl'",
        '',
        "const store = createJsonlStore({ root: resolve('sessions') })",
        "const writer = await store.create({ id: 's1' })",
        "writer.append({ type: 'turn/start', data: { turn: 1 } })",
        'await writer.flush()',
        '```',
        '',
      ].join('\n'),
    )
    const { problems, ran } = await checkReadmes([throws, leaks])
    expect(ran).toBe(2)
    expect(
      problems.some((line) =>
        /throws\.md:1: the example failed when run: .*BAD_COMPACTION_RANGE here/s.test(line),
      ),
    ).toBe(true)
    expect(problems.some((line) => /leaks\.md:1: the example left .*writer\.lock behind/.test(line))).toBe(
      true,
    )
  })

  it('a syntax error in a fragment is reported; names it leaves undefined are not', async () => {
    const input = readme(
      'fragment.md',
      '```ts fragment\nuse(undeclared)\n```\n\n```ts fragment\nconst = 1\n```\n',
    )
    const { problems, fragments } = await checkReadmes([input])
    expect(fragments).toBe(2)
    expect(problems.length).toBeGreaterThan(0)
    for (const problem of problems) expect(problem).toMatch(/fragment\.md:6: fragment does not parse/)
  })

  it('two runs at once beside the same README directory each keep their own examples, and leave none behind', async () => {
    // The gate runs its README examples beside the tooling tests, whose examples resolve from
    // the same package: one run removing the other's files would fail the other's examples.
    const slow = (name: string): { readme: string; resolveFrom: string } =>
      readme(
        `${name}.md`,
        [
          '```ts',
          "import { createJsonlStore } from '@agent-ledger/session-store-jsonl'",
          '',
          'await new Promise((resolve) => setTimeout(resolve, 500))',
          "console.log(typeof createJsonlStore === 'function')",
          '```',
          '',
        ].join('\n'),
      )
    const [first, second] = await Promise.all([
      checkReadmes([slow('first'), slow('first-again')]),
      checkReadmes([slow('second')]),
    ])
    expect(first).toMatchObject({ problems: [], ran: 2 })
    expect(second).toMatchObject({ problems: [], ran: 1 })
    const directory = join(root, 'packages', 'session-store-jsonl', '.readme-examples')
    expect(existsSync(directory) ? readdirSync(directory) : []).toEqual([])
  })
})
