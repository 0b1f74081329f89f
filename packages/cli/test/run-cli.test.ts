import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { CliError, CliErrorCode, ExitCode, runCli } from '../src/index.ts'
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
  'db',
]

describe('runCli', () => {
  it('prints the global help (every command listed, exit codes) and exits 0', async () => {
    const run = await cli(['--help'])
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('Usage: agent-ledger <command> [options]')
    for (const command of COMMANDS) expect(run.stdout).toMatch(new RegExp(`^ {2}${command} +\\S`, 'm'))
    expect(run.stdout).toContain('Exit codes')
    expect((await cli([])).stdout).toBe(run.stdout)
  })

  it.each(COMMANDS)('%s --help prints its usage, options and exit codes, exit 0', async (command) => {
    const run = await cli([command, '--help'])
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(new RegExp(`^Usage: agent-ledger ${command} `))
    expect(run.stdout).toContain('Exit codes:')
    expect(run.stdout).toContain('-h, --help')
    expect((await cli(['help', command])).stdout).toBe(run.stdout)
  })

  it('exits 2 and names the command when it is unknown', async () => {
    const run = await cli(['frobnicate'])
    expect(run.code).toBe(2)
    expect(run.stderr).toBe(
      'agent-ledger: USAGE: unknown command "frobnicate": expected one of verify, inspect, cat, tail, messages, fork, compact, salvage, migrate, compress, export, list, search, import, stats, copy, prune, rekey, db, serve; run agent-ledger --help\n',
    )
  })

  it('exits 2 on an unknown option or a missing argument, with one line naming the command', async () => {
    const unknown = await cli(['verify', '--frobnicate', 'x'])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toMatch(
      /^agent-ledger: USAGE: verify: unknown option --frobnicate: expected one of --json, --strict, --no-progress, --store, -h\/--help; run agent-ledger verify --help\n$/,
    )
    const missing = await cli(['inspect'])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toBe(
      'agent-ledger: USAGE: inspect: expected <session>, found none; run agent-ledger inspect --help\n',
    )
  })

  it('prints --version from the package manifest', async () => {
    const run = await cli(['--version'])
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/^\d+\.\d+\.\d+/)
  })

  it('exports its error class and exit codes', () => {
    const error = new CliError({ code: CliErrorCode.NOT_A_SESSION, message: 'x' })
    expect(CliError.is(error)).toBe(true)
    expect(CliError.is(new Error('x'))).toBe(false)
    expect(error.exitCode).toBe(ExitCode.USAGE)
    expect(ExitCode).toEqual({ OK: 0, DAMAGE: 1, USAGE: 2 })
  })

  it('with --json, a one-document command also prints the error as JSON on stdout', async () => {
    const run = await runJson(['inspect', '/definitely/not/here', '--json'])
    expect(run.code).toBe(2)
    expect(run.json).toMatchObject({ error: { code: 'NOT_A_SESSION', file: '/definitely/not/here' } })
  })
})

async function runJson(argv: string[]): Promise<{ code: number; json: unknown }> {
  let stdout = ''
  const code = await runCli(argv, {
    stdout: (text) => {
      stdout += text
    },
    stderr: () => undefined,
  })
  return { code, json: JSON.parse(stdout) }
}

/** {@link runJson} with stderr captured and a monotonic clock (progress lines print when it advances). */
async function runJsonWith(
  argv: string[],
  now: () => number,
): Promise<{ code: number; json: unknown; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const code = await runCli(argv, {
    stdout: (text) => {
      stdout += text
    },
    stderr: (text) => {
      stderr += text
    },
    now,
  })
  return { code, json: JSON.parse(stdout), stderr }
}

describe('migrate and compress (feature-detected)', () => {
  let root: string
  let cleanup: () => void
  beforeEach(async () => {
    ;({ root, cleanup } = makeRoot())
    await writeSession(testStore(root), 'a1', { turns: 1 })
  })
  afterEach(() => cleanup())

  it('compress converts the session to session.v4.jsonl.zstd with the same messages, and verify accepts it', async () => {
    const before = await cli(['messages', join(root, 'a1'), '--json'])
    expect(before.code).toBe(0)
    const run = await cli(['compress', join(root, 'a1'), '--no-progress'])
    expect(run.code).toBe(0)
    const files = readdirSync(join(root, 'a1'))
    expect(files).toContain('session.v4.jsonl.zstd')
    expect(files).not.toContain('session.v4.jsonl')
    const after = await cli(['messages', join(root, 'a1'), '--json'])
    expect(after.code).toBe(0)
    expect(after.stdout).toBe(before.stdout)
    expect((await cli(['verify', join(root, 'a1')])).code).toBe(0)
  })

  it('migrate --dry-run on a current-format session is up to date and writes nothing', async () => {
    const before = filesIn(join(root, 'a1'))
    const run = await cli(['migrate', join(root, 'a1'), '--dry-run'])
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/^dry run passed for a1: .*outcome=up-to-date/)
    expect(filesIn(join(root, 'a1'))).toEqual(before)
  })
})

/** A v0 session (the seed chapter's session.jsonl) as its mini-agent writes it: the last tool call has no result. */
function placeV0Session(root: string, id: string): string {
  const directory = join(root, id)
  mkdirSync(directory, { mode: 0o700 })
  const events: Record<string, unknown>[] = [
    { type: 'session/header', data: { version: 0, cwd: '/home/dev/todo', model: 'deepseek-chat' } },
    { type: 'turn/start', data: { turn: 1 } },
    {
      type: 'user/message',
      data: { message: { role: 'user', content: 'Run the tests.' } },
      surfaceOp: { op: 'append' },
    },
    {
      type: 'assistant/message',
      data: {
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'run_command', arguments: '{"command":"npm test"}' },
            },
          ],
        },
      },
    },
    {
      type: 'tool/call',
      data: { callId: 'call_1', name: 'run_command', arguments: '{"command":"npm test"}' },
    },
  ]
  const text = events
    .map((event, seq) => `${JSON.stringify({ seq, time: `2025-04-20T21:40:0${seq}.000Z`, ...event })}\n`)
    .join('')
  const path = join(directory, 'session.jsonl')
  writeFileSync(path, text, { mode: 0o600 })
  return path
}

/** Every file of a directory with its bytes, inode and mtime. */
function filesIn(directory: string): [string, string, number, number][] {
  return readdirSync(directory)
    .sort()
    .map((name) => {
      const path = join(directory, name)
      const stats = statSync(path)
      return [name, readFileSync(path).toString('base64'), stats.ino, stats.mtimeMs]
    })
}

describe('migrate', () => {
  let root: string
  let cleanup: () => void
  beforeEach(() => {
    ;({ root, cleanup } = makeRoot())
  })
  afterEach(() => cleanup())

  it('migrate <v0 session> --dry-run migrates in memory, writes nothing and shows progress on stderr', async () => {
    placeV0Session(root, 'old')
    const before = filesIn(join(root, 'old'))
    let tick = 0
    const run = await cli(['migrate', join(root, 'old'), '--dry-run'], { now: () => (tick += 2000) })
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(
      /^dry run passed for old: .*outcome=dry-run from=old\/session\.jsonl fromVersion=0 to=old\/session\.v4\.jsonl toVersion=4 events=4 lastSeq=3 .*bytesWritten=0\n$/,
    )
    expect(run.stderr).toMatch(/^migrate \(scan\): 100% /m)
    expect(run.stderr).toMatch(/^migrate \(migrate\): 100% /m)
    expect(run.stderr).not.toMatch(/^migrate \(verify\)/m)
    expect(filesIn(join(root, 'old'))).toEqual(before)
  })

  it('migrate <v0 session> publishes session.v4.jsonl, leaves session.jsonl byte-identical, and is then up to date', async () => {
    const v0 = placeV0Session(root, 'old')
    const before = filesIn(join(root, 'old'))
    let tick = 0
    const run = await runJsonWith(['migrate', join(root, 'old'), '--json'], () => (tick += 2000))
    expect(run.code).toBe(0)
    const v4 = join(root, 'old', 'session.v4.jsonl')
    expect(run.json).toMatchObject({
      session: 'old',
      result: {
        outcome: 'migrated',
        from: 'old/session.jsonl',
        to: 'old/session.v4.jsonl',
        events: 4,
        bytesWritten: statSync(v4).size,
        header: {
          version: 4,
          id: 'old',
          cwd: '/home/dev/todo',
          migratedFrom: { file: 'session.jsonl', version: 0 },
        },
      },
    })
    expect(run.stderr).toMatch(/^migrate \(verify\): 100% /m)
    expect(run.stderr).toMatch(/^migrate \(publish\): 100% /m)
    expect(readdirSync(join(root, 'old')).sort()).toEqual(['session.jsonl', 'session.v4.jsonl'])
    expect(filesIn(join(root, 'old')).filter(([name]) => name === 'session.jsonl')).toEqual(before)
    // Migration invents nothing: the dangling call is repaired by the first write open, not here.
    expect(readFileSync(v4, 'utf8').trimEnd().split('\n')).toHaveLength(5)
    expect(readFileSync(v0).equals(Buffer.from(before[0]![1], 'base64'))).toBe(true)
    const again = await cli(['migrate', join(root, 'old')])
    expect(again.code).toBe(0)
    expect(again.stdout).toMatch(/^nothing to migrate in old: .*outcome=up-to-date/)
    expect((await cli(['verify', join(root, 'old')])).code).toBe(0)
  })

  it('migrate of a v0 session damaged in the middle exits 1 naming the line, and writes nothing', async () => {
    const v0 = placeV0Session(root, 'bad')
    const lines = readFileSync(v0, 'utf8').split('\n')
    lines[2] = '{"seq":2,"time":"2025-04-20T21:40:02.000Z","type":"user/mess'
    writeFileSync(v0, lines.join('\n'))
    const before = filesIn(join(root, 'bad'))
    for (const argv of [
      ['migrate', join(root, 'bad')],
      ['migrate', join(root, 'bad'), '--dry-run'],
    ]) {
      const run = await cli(argv)
      expect(run.code).toBe(1)
      expect(run.stderr).toMatch(/agent-ledger: CORRUPT_LINE in .*bad\/session\.jsonl line 3/)
    }
    expect(filesIn(join(root, 'bad'))).toEqual(before)
  })
})
