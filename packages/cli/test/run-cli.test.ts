import { join } from 'node:path'

import { createSessionStore } from '@agent-ledger/session-store-jsonl'
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
      'agent-ledger: USAGE: unknown command "frobnicate": expected one of verify, inspect, cat, tail, messages, fork, compact, salvage, migrate, compress, export, list; run agent-ledger --help\n',
    )
  })

  it('exits 2 on an unknown option or a missing argument, with one line naming the command', async () => {
    const unknown = await cli(['verify', '--frobnicate', 'x'])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toMatch(
      /^agent-ledger: USAGE: verify: Unknown option '--frobnicate'.*; run agent-ledger verify --help\n$/,
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

describe('migrate and compress (store part 2, feature-detected)', () => {
  let root: string
  let cleanup: () => void
  beforeEach(async () => {
    ;({ root, cleanup } = makeRoot())
    await writeSession(testStore(root), 'a1', { turns: 1 })
  })
  afterEach(() => cleanup())

  const store = (): Record<string, unknown> =>
    createSessionStore({ root: '/nonexistent' }) as unknown as Record<string, unknown>

  it.skipIf(typeof store()['migrate'] === 'function')(
    'migrate exits 2 with NOT_AVAILABLE while the store has no migrate()',
    async () => {
      const run = await cli(['migrate', join(root, 'a1'), '--dry-run'])
      expect(run.code).toBe(2)
      expect(run.stderr).toBe(
        'agent-ledger: NOT_AVAILABLE: migrate is not available in this version of @agent-ledger/session-store-jsonl: expected store.migrate(), found none; upgrade the store package\n',
      )
    },
  )

  it.skipIf(typeof store()['compress'] === 'function')(
    'compress exits 2 with NOT_AVAILABLE while the store has no compress()',
    async () => {
      const run = await cli(['compress', join(root, 'a1')])
      expect(run.code).toBe(2)
      expect(run.stderr).toContain('agent-ledger: NOT_AVAILABLE: compress is not available')
    },
  )

  it.runIf(typeof store()['migrate'] === 'function')(
    'migrate --dry-run on a current-format session succeeds and writes nothing',
    async () => {
      const run = await cli(['migrate', join(root, 'a1'), '--dry-run'])
      expect(run.code).toBe(0)
    },
  )
})
