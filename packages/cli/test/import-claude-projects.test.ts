import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { cli, makeRoot } from './support/sessions.ts'

const here = dirname(fileURLToPath(import.meta.url))
const claudeFixtures = join(here, '..', '..', 'import', 'test', 'fixtures', 'claude-code')
const SESSION = '7c1e2a90-5b4d-4e6f-8a1b-2c3d4e5f6a7b'
const RESUMED = '66666666-7777-4888-9999-aaaaaaaaaaaa'

interface ImportJson {
  sources: { file: string; sessions: { id: string; role: string; action: string }[] }[]
  skipped: { file: string; code: string; reason: string }[]
  failures: { file: string; error: { code: string } }[]
}

let root: string
let cleanup: () => void
beforeEach(() => {
  ;({ root, cleanup } = makeRoot('al-import-claude-'))
})
afterEach(() => cleanup())

/**
 * A ~/.claude/projects tree as Claude Code 2.1 leaves it: project directories of
 * `<session>.jsonl`, a `<session>/subagents/` directory with `agent-*.jsonl` and their
 * `.meta.json`, `tool-results/` files, a `sessions-index.json`, an empty transcript.
 */
function projectsTree(home: string): { projects: string; app: string } {
  const projects = join(home, '.claude', 'projects')
  const app = join(projects, '-home-dev-app')
  const lib = join(projects, '-home-dev-lib')
  const subagents = join(app, SESSION, 'subagents')
  mkdirSync(subagents, { recursive: true })
  mkdirSync(join(app, SESSION, 'tool-results'), { recursive: true })
  mkdirSync(lib, { recursive: true })
  cpSync(join(claudeFixtures, 'parallel-calls.jsonl'), join(app, `${SESSION}.jsonl`))
  cpSync(join(claudeFixtures, 'agent-acompact.jsonl'), join(subagents, 'agent-acompact-1a2b3c.jsonl'))
  writeFileSync(join(subagents, 'agent-acompact-1a2b3c.meta.json'), '{"agentType":"general-purpose"}\n')
  writeFileSync(join(app, SESSION, 'tool-results', 'toolu_big.txt'), 'a long tool output\n')
  writeFileSync(join(app, 'sessions-index.json'), '{"version":1,"entries":[]}\n')
  writeFileSync(join(app, '0c0c0c0c-0000-4000-8000-000000000000.jsonl'), '')
  cpSync(join(claudeFixtures, 'resumed.jsonl'), join(app, `${RESUMED}.jsonl`))
  cpSync(join(claudeFixtures, 'summary-only.jsonl'), join(lib, '1d1d1d1d-0000-4000-8000-000000000000.jsonl'))
  return { projects, app }
}

describe('agent-ledger import of a ~/.claude/projects directory', () => {
  it('imports every transcript, links sub-agents to their session, and skips the files that are no session', async () => {
    const { projects } = projectsTree(join(root, 'home'))
    const store = join(root, 'store')
    const run = await cli(['import', projects, '--root', store, '--json', '--no-progress'])
    expect(run.code).toBe(0)
    const report = JSON.parse(run.stdout) as ImportJson
    expect(report.failures).toEqual([])
    expect(report.skipped.map((item) => [item.file.slice(projects.length + 1), item.code])).toEqual([
      ['-home-dev-app/0c0c0c0c-0000-4000-8000-000000000000.jsonl', 'EMPTY_SOURCE'],
      ['-home-dev-app/sessions-index.json', 'UNRECOGNIZED_FORMAT'],
      [`-home-dev-app/${SESSION}/subagents/agent-acompact-1a2b3c.meta.json`, 'UNRECOGNIZED_FORMAT'],
    ])
    // A session's file comes before its sub-agent directory.
    expect(report.sources.map((source) => source.file.slice(projects.length + 1))).toEqual([
      `-home-dev-app/${RESUMED}.jsonl`,
      `-home-dev-app/${SESSION}.jsonl`,
      `-home-dev-app/${SESSION}/subagents/agent-acompact-1a2b3c.jsonl`,
      '-home-dev-lib/1d1d1d1d-0000-4000-8000-000000000000.jsonl',
    ])
    expect(report.sources.flatMap((source) => source.sessions.map((session) => session.id))).toEqual([
      `claude-${RESUMED}`,
      `claude-${SESSION}`,
      `claude-${SESSION}-agent-acompact1a2b3c`,
      'claude-1d1d1d1d-0000-4000-8000-000000000000',
    ])
    const list = await cli(['list', store, '--json'])
    const sessions = (JSON.parse(list.stdout) as { sessions: { id: string; parentSession: string | null }[] })
      .sessions
    expect(sessions.find((session) => session.id === `claude-${SESSION}-agent-acompact1a2b3c`)).toMatchObject(
      {
        parentSession: `claude-${SESSION}`,
      },
    )
    for (const session of sessions) {
      const verify = await cli(['verify', join(store, session.id), '--json'])
      expect(JSON.parse(verify.stdout)).toMatchObject({ status: 'ok' })
    }
    // Without --json the skipped files are notes on stderr, and the exit is still 0.
    const text = await cli(['import', projects, '--root', store, '--no-progress'])
    expect(text.code).toBe(0)
    expect(text.stderr.match(/note: skipped \((UNRECOGNIZED_FORMAT|EMPTY_SOURCE)\)/g)).toHaveLength(3)
    expect(text.stdout).toContain(`unchanged claude-${SESSION}`)
  })

  it('a transcript that is refused (a torn last line) is still a failure in a directory; the others import', async () => {
    const { projects, app } = projectsTree(join(root, 'home'))
    const lines = readFileSync(join(claudeFixtures, 'broken-chain.jsonl'), 'utf8').split('\n')
    writeFileSync(join(app, 'torn.jsonl'), `${lines[0]}\n${lines[1]!.slice(0, 40)}`)
    const run = await cli(['import', projects, '--dry-run', '--json', '--no-progress'])
    expect(run.code).toBe(1)
    const report = JSON.parse(run.stdout) as ImportJson
    expect(
      report.failures.map((failure) => [failure.file.slice(app.length + 1), failure.error.code]),
    ).toEqual([['torn.jsonl', 'TORN_LINE']])
    expect(report.sources).toHaveLength(4)
    expect(report.skipped).toHaveLength(3)
  })

  it('--scan lists the Claude Code transcripts (.jsonl), not the .json beside them, one tab-separated line each', async () => {
    const home = join(root, 'home')
    const { projects } = projectsTree(home)
    const json = await cli(['import', '--scan', '--home', home, '--json'])
    expect(json.code).toBe(0)
    const found = (JSON.parse(json.stdout) as { sessions: { agent: string; file: string }[] }).sessions
    expect(found.map((item) => item.file.slice(projects.length + 1))).toEqual([
      '-home-dev-app/0c0c0c0c-0000-4000-8000-000000000000.jsonl',
      `-home-dev-app/${RESUMED}.jsonl`,
      `-home-dev-app/${SESSION}.jsonl`,
      `-home-dev-app/${SESSION}/subagents/agent-acompact-1a2b3c.jsonl`,
      '-home-dev-lib/1d1d1d1d-0000-4000-8000-000000000000.jsonl',
    ])
    const text = await cli(['import', '--scan', '--home', home])
    const first = text.stdout.split('\n')[0]!.split('\t')
    expect(first[0]).toBe('claude-code')
    expect(first[1]).toMatch(/0c0c0c0c-0000-4000-8000-000000000000\.jsonl$/)
    expect(first[2]).toBe('0 B')
  })
})
