import path from 'node:path'

import { describe, expect, it } from 'vitest'

import { parseCommandLine } from '../src/cli-args.ts'
import { MiniAgentError } from '../src/mini-agent-error.ts'

const cwd = path.join(path.sep, 'work', 'project')

function usageError(argv: string[]): string {
  try {
    parseCommandLine(argv, cwd)
  } catch (error) {
    if (MiniAgentError.is(error) && error.code === 'USAGE') return error.message
    throw error
  }
  throw new Error(`expected a usage error for ${argv.join(' ')}`)
}

describe('parseCommandLine', () => {
  it('defaults to the demo, and the root to .mini-agent/sessions under the working directory', () => {
    expect(parseCommandLine([], cwd)).toEqual({ kind: 'demo', keep: false, store: null })
    expect(parseCommandLine(['run', 'hello'], cwd)).toEqual({
      kind: 'run',
      prompt: 'hello',
      compress: false,
      root: path.join(cwd, '.mini-agent', 'sessions'),
      store: { kind: 'jsonl', root: path.join(cwd, '.mini-agent', 'sessions') },
    })
  })

  it('reads every run option', () => {
    expect(
      parseCommandLine(
        [
          'run',
          '--root',
          'r',
          '--workspace',
          '/ws',
          '--provider',
          'openai',
          '--id',
          'abc',
          '--max-steps',
          '5',
          '--compress',
          '--crash-at',
          'after-tool-call:write_file',
          'do it',
        ],
        cwd,
      ),
    ).toEqual({
      kind: 'run',
      prompt: 'do it',
      compress: true,
      id: 'abc',
      root: path.join(cwd, 'r'),
      store: { kind: 'jsonl', root: path.join(cwd, 'r') },
      workspace: '/ws',
      provider: 'openai',
      maxSteps: 5,
      crashAt: { point: 'after-tool-call', tool: 'write_file' },
    })
  })

  it('reads resume with and without a prompt, and sessions', () => {
    expect(parseCommandLine(['resume', 's1'], cwd)).toMatchObject({ kind: 'resume', id: 's1' })
    expect(parseCommandLine(['resume', 's1', 'go on', '--crash-at', 'after-assistant'], cwd)).toMatchObject({
      kind: 'resume',
      id: 's1',
      prompt: 'go on',
      crashAt: { point: 'after-assistant' },
    })
    expect(parseCommandLine(['sessions', '--root', '/r'], cwd)).toEqual({
      kind: 'sessions',
      root: '/r',
      store: { kind: 'jsonl', root: '/r' },
    })
    expect(parseCommandLine(['--help'], cwd)).toEqual({ kind: 'help' })
  })

  it('reads the store from --store, else AGENT_LEDGER_STORE, else --root; --store and --root together are refused', () => {
    const url = 'postgres://ledger@db.internal:5432/ledger'
    expect(parseCommandLine(['sessions', '--store', url], cwd)).toMatchObject({
      store: { kind: 'postgres', url },
    })
    expect(
      parseCommandLine(['resume', 's1', '--takeover', '--lease-ms', '1000'], cwd, {
        AGENT_LEDGER_STORE: url,
      }),
    ).toMatchObject({
      kind: 'resume',
      takeover: true,
      leaseMs: 1000,
      store: { kind: 'postgres', url },
    })
    expect(parseCommandLine(['sessions', '--store', 'dir'], cwd, { AGENT_LEDGER_STORE: url })).toEqual({
      kind: 'sessions',
      root: path.join(cwd, 'dir'),
      store: { kind: 'jsonl', root: path.join(cwd, 'dir') },
    })
    expect(parseCommandLine(['sessions', '--root', 'r'], cwd, { AGENT_LEDGER_STORE: url })).toMatchObject({
      store: { kind: 'jsonl', root: path.join(cwd, 'r') },
    })
    expect(parseCommandLine(['demo'], cwd, { AGENT_LEDGER_STORE: url })).toEqual({
      kind: 'demo',
      keep: false,
      store: { kind: 'postgres', url },
    })
    expect(parseCommandLine(['demo'], cwd, { AGENT_LEDGER_STORE: 'some/dir' })).toEqual({
      kind: 'demo',
      keep: false,
      store: null,
    })
    expect(usageError(['sessions', '--root', 'r', '--store', url])).toContain('--root and --store both')
    expect(usageError(['sessions', '--store', 'mysql://h/db'])).toContain('--store is a mysql:// URL')
    expect(usageError(['run', '--store', url, '--compress', 'hi'])).toContain('a PostgreSQL store has none')
    expect(usageError(['resume', 's1', '--lease-ms', '0'])).toContain(
      '--lease-ms is "0"; expected a positive integer',
    )
  })

  it('refuses what it does not understand, saying what was expected', () => {
    expect(usageError(['nope'])).toContain('unknown command "nope"')
    expect(usageError(['run'])).toContain('exactly one prompt')
    expect(usageError(['run', 'a', 'b'])).toContain('exactly one prompt')
    expect(usageError(['resume'])).toContain('session id')
    expect(usageError(['run', '--provider', 'claude', 'x'])).toContain('expected scripted or openai')
    expect(usageError(['run', '--crash-at', 'later', 'x'])).toContain('after-tool-call')
    expect(usageError(['run', '--max-steps', '0', 'x'])).toContain('positive integer')
    expect(usageError(['run', '--bogus', 'x'])).toContain('--bogus')
  })
})
