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
    expect(parseCommandLine([], cwd)).toEqual({ kind: 'demo', keep: false })
    expect(parseCommandLine(['run', 'hello'], cwd)).toEqual({
      kind: 'run',
      prompt: 'hello',
      compress: false,
      root: path.join(cwd, '.mini-agent', 'sessions'),
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
    expect(parseCommandLine(['sessions', '--root', '/r'], cwd)).toEqual({ kind: 'sessions', root: '/r' })
    expect(parseCommandLine(['--help'], cwd)).toEqual({ kind: 'help' })
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
