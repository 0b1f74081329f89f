import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { extractWalk, walkReadme } from '../readme-walk.ts'

// A real repository whose `mini-agent` / `agent-ledger` scripts stand in for the real ones:
// `run` prints a session id and writes under the ignored .mini-agent/; `run stray` also writes
// stray.txt at the root; `agent-ledger` fails unless it was given the session's id.
const FAKE = `import { mkdirSync, writeFileSync } from 'node:fs'
const [tool, ...args] = process.argv.slice(2)
if (tool === 'mini-agent' && args[0] === 'run') {
  mkdirSync('.mini-agent/sessions/s-1', { recursive: true })
  writeFileSync('.mini-agent/sessions/s-1/session.v4.jsonl', '{}\\n')
  if (args.includes('stray')) writeFileSync('stray.txt', 'left behind\\n')
  console.log('session s-1: .mini-agent/sessions/s-1/session.v4.jsonl')
} else if (tool === 'agent-ledger' && !args.some((arg) => arg.includes('s-1'))) {
  console.error('agent-ledger: no session id in ' + JSON.stringify(args))
  process.exit(3)
}
`

let work: string

function git(cwd: string, ...args: string[]): void {
  execFileSync('git', args, { cwd, stdio: 'pipe' })
}

function repository(name: string, readme: string): string {
  const directory = join(work, name)
  execFileSync('mkdir', ['-p', directory])
  writeFileSync(
    join(directory, 'package.json'),
    JSON.stringify({
      name,
      private: true,
      scripts: { 'mini-agent': 'node fake.mjs mini-agent', 'agent-ledger': 'node fake.mjs agent-ledger' },
    }),
  )
  writeFileSync(join(directory, 'fake.mjs'), FAKE)
  writeFileSync(join(directory, '.gitignore'), 'node_modules/\n.mini-agent/\n')
  writeFileSync(join(directory, 'README.md'), readme)
  execFileSync('pnpm', ['install', '--offline'], { cwd: directory, stdio: 'pipe' })
  git(directory, 'init', '--quiet')
  git(directory, 'add', '.')
  git(directory, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '--quiet', '-m', 'fixture')
  return directory
}

const walked = (lines: string): string =>
  `# x\n\n\`\`\`sh\nnpm install\n\`\`\`\n\n\`\`\`sh walk\n${lines}\n\`\`\`\n`

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'al-readme-walk-test-'))
})
afterAll(() => rmSync(work, { recursive: true, force: true }))

describe('README walk', () => {
  it('extracts only the commands of ```sh walk blocks, with their lines', () => {
    expect(
      extractWalk(walked('pnpm mini-agent run "hi"\n\n# a comment\npnpm agent-ledger list <id>')),
    ).toEqual([
      { line: 8, command: 'pnpm mini-agent run "hi"' },
      { line: 11, command: 'pnpm agent-ledger list <id>' },
    ])
  })

  it('refuses an unknown fence attribute and a command it would not walk', () => {
    expect(() => extractWalk('```sh wlak\npnpm mini-agent sessions\n```\n')).toThrow(
      /unknown attribute "wlak"/,
    )
    expect(() => extractWalk('```sh walk\nrm -rf .mini-agent\n```\n')).toThrow(
      /line 2: .*found "rm -rf .mini-agent"/,
    )
  })

  it('passes a walk that writes only ignored files, with <id> filled from the session it created', async () => {
    const repo = repository(
      'clean',
      walked('pnpm mini-agent run "hello"\npnpm agent-ledger export .mini-agent/sessions/<id>'),
    )
    expect(await walkReadme({ repository: repo })).toEqual({ problems: [], ran: 2 })
  })

  it('fails a walk that leaves a stray file, naming it', async () => {
    const repo = repository('stray', walked('pnpm mini-agent run stray\npnpm agent-ledger list <id>'))
    const { problems, ran } = await walkReadme({ repository: repo })
    expect(ran).toBe(2)
    expect(problems).toHaveLength(1)
    expect(problems[0]).toMatch(/README\.md: the walk left the tree dirty .*: stray\.txt$/)
  })

  it('fails on a command that exits non-zero, naming its README line and output', async () => {
    const repo = repository('failing', walked('pnpm agent-ledger list nothing'))
    const { problems } = await walkReadme({ repository: repo })
    expect(problems).toHaveLength(1)
    expect(problems[0]).toMatch(/README\.md:8: `pnpm agent-ledger list nothing` exited \d+: .*no session id/s)
  })
})
