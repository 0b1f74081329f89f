import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { Readable } from 'node:stream'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { cli, makeRoot, testStore, writeSession } from './support/sessions.ts'

const COMMANDS = [
  'verify',
  'inspect',
  'cat',
  'tail',
  'messages',
  'fork',
  'compact',
  'salvage',
  'migrate',
  'compress',
  'export',
  'list',
]

let root: string
let cleanup: () => void
beforeEach(async () => {
  ;({ root, cleanup } = makeRoot())
  await writeSession(testStore(root), 'a1', { turns: 2 })
})
afterEach(() => cleanup())

describe('CLI conventions', () => {
  it('export -o - writes the transcript to stdout and no file named "-"', async () => {
    const run = await cli(['export', join(root, 'a1'), '--format', 'md', '-o', '-', '--no-progress'], {
      cwd: root,
    })
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('Please read file 1.')
    expect(existsSync(join(root, '-'))).toBe(false)
    expect(run.stderr).not.toContain('wrote')
  })

  it('compact --summary-file - reads the summary from standard input', async () => {
    const run = await cli(['compact', join(root, 'a1'), '--from', '2', '--to', '6', '--summary-file', '-'], {
      cwd: root,
      stdin: Readable.from([Buffer.from('Summary from stdin.')]),
    })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(existsSync(join(root, '-'))).toBe(false)
    const messages = await cli(['messages', join(root, 'a1'), '--json'])
    expect(messages.stdout).toContain('Summary from stdin.')
  })

  it('export -o FILE creates it owner-only (0600), as its help says', async () => {
    const file = join(root, 'a1.html')
    const run = await cli(['export', join(root, 'a1'), '--format', 'html', '-o', file, '--no-progress'])
    expect(run.code).toBe(0)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect((await cli(['export', '--help'])).stdout).toContain('FILE is created with mode 0600')
  })

  it('compress prints one human sentence, and --json the store result', async () => {
    const run = await cli(['compress', join(root, 'a1'), '--no-progress'])
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(
      /^compressed a1: [\d.]+ (B|kB) -> [\d.]+ (B|kB) \([\d.]+ times smaller, \d+ frames?\) into a1\/session\.v4\.jsonl\.zstd; removed a1\/session\.v4\.jsonl\n$/,
    )
    expect(run.stdout).not.toMatch(/ratio=|\w+=\S/)
    const again = await cli(['compress', join(root, 'a1'), '--json', '--no-progress'])
    expect(again.code).toBe(0)
    const json = JSON.parse(again.stdout) as { session: string; result: { outcome: string; ratio: number } }
    expect(json.session).toBe('a1')
    expect(json.result.outcome).toBe('up-to-date')
    expect(typeof json.result.ratio).toBe('number')
    expect((await cli(['compress', join(root, 'a1'), '--no-progress'])).stdout).toBe(
      'a1 is already compressed (a1/session.v4.jsonl.zstd): nothing to do\n',
    )
  })

  it('list <a session directory> says it was given a session, not a root', async () => {
    const run = await cli(['list', join(root, 'a1')], { cwd: root })
    expect(run.code).toBe(2)
    expect(run.stderr).toBe(
      'agent-ledger: NOT_A_SESSION: a1 is a session directory (it holds session.v4.jsonl), not a store root: expected a directory of session directories; list its root with agent-ledger list ., or look at this session with agent-ledger inspect a1\n',
    )
    expect((await cli(['list', '.'], { cwd: root })).code).toBe(0)
  })

  it('an unknown option or a missing value is reported in our own words', async () => {
    const unknown = await cli(['cat', join(root, 'a1'), '--bogus'])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toBe(
      'agent-ledger: USAGE: cat: unknown option --bogus: expected one of --no-pager, --json, --from, --to, --seq, --store, -h/--help; run agent-ledger cat --help\n',
    )
    const missing = await cli(['cat', join(root, 'a1'), '--from'])
    expect(missing.stderr).toBe(
      'agent-ledger: USAGE: cat: expected a value after --from, found none; run agent-ledger cat --help\n',
    )
    const valued = await cli(['cat', join(root, 'a1'), '--json=yes'])
    expect(valued.stderr).toBe(
      'agent-ledger: USAGE: cat: --json takes no value, found one; run agent-ledger cat --help\n',
    )
    for (const run of [unknown, missing, valued]) {
      expect(run.stderr).not.toMatch(/To specify a positional|place it at the end/)
      expect((run.stderr.match(/'/g) ?? []).length % 2).toBe(0)
    }
  })

  it('cat --seq N prints one event with its whole text; a seq past the end is PAST_END (exit 1) in words', async () => {
    const run = await cli(['cat', join(root, 'a1'), '--seq', '3'])
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/^#3 \S+ assistant\/message "Reading f1\.ts" call read_file\(call_1\)\n/)
    expect(run.stdout.split('\n').slice(1).join('\n')).toBe(
      '--- content ---\nReading f1.ts\n--- arguments of read_file (call_1) ---\n{"path":"f1.ts"}\n',
    )
    const past = await cli(['cat', join(root, 'a1'), '--seq', '99'], { cwd: root })
    expect(past.code).toBe(1)
    expect(past.stderr).toMatch(/PAST_END: session \S*a1 has \d+ events; --seq 99 is past the end/)
    const both = await cli(['cat', join(root, 'a1'), '--seq', '1', '--from', '0'])
    expect(both.stderr).toContain('expected --seq N alone or --from/--to, found both')
  })

  it('no milestone names ("part 2", "part two") in any help text or the README', async () => {
    const texts = [(await cli(['--help'])).stdout]
    for (const command of COMMANDS) texts.push((await cli([command, '--help'])).stdout)
    texts.push(readFileSync(new URL('../README.md', import.meta.url), 'utf8'))
    for (const text of texts) expect(text).not.toMatch(/part (2|two)\b|store part/i)
    expect(readdirSync(root)).toContain('a1')
  })
})
