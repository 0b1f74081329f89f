import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { OFFLINE_CAPABILITIES } from '../src/providers/scripted.ts'
import { runMiniAgent } from './support/mini-agent-process.ts'

let tmp: string

beforeAll(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'mini-agent-e2e-offline-'))
})
afterAll(() => rmSync(tmp, { recursive: true, force: true }))

function emptyWorkspace(name: string): { workspace: string; root: string } {
  const workspace = path.join(tmp, name, 'workspace')
  mkdirSync(workspace, { recursive: true })
  return { workspace, root: path.join(tmp, name, 'sessions') }
}

describe('the scripted provider on an empty workspace (mini-agent run, as a child process)', () => {
  it('"Create hello.txt containing hello, then read it back." creates the file and reads it back', async () => {
    const { workspace, root } = emptyWorkspace('create')
    const run = await runMiniAgent(
      [
        'run',
        '--root',
        root,
        '--workspace',
        workspace,
        'Create hello.txt containing hello, then read it back.',
      ],
      { cwd: workspace },
    )
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0)
    expect(readFileSync(path.join(workspace, 'hello.txt'), 'utf8')).toBe('hello\n')
    // Event lines come from the CLI's describeEvent: `tool/call NAME(ID) args "JSON"`.
    expect(run.stdout).toMatch(
      /tool\/call write_file\(call_[0-9a-f]+\) args "\{\\"path\\":\\"hello\.txt\\",\\"content\\":\\"hello\\n\\"\}"/,
    )
    expect(run.stdout).toMatch(
      /tool\/call read_file\(call_[0-9a-f]+\) args "\{\\"path\\":\\"hello\.txt\\"\}"/,
    )
    expect(run.stdout).toContain('hello.txt contains:\nhello\n')
    expect(run.stdout).toContain('That is what I wrote.')
    expect(run.stdout).not.toContain('(empty directory)"}')
  })

  it('a summary request on an empty workspace says there is nothing to summarize instead of reading "(empty directory)"', async () => {
    const { workspace, root } = emptyWorkspace('summary')
    const run = await runMiniAgent(
      ['run', '--root', root, '--workspace', workspace, 'Summarize the notes.'],
      { cwd: workspace },
    )
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0)
    expect(run.stdout).not.toMatch(/read_file \{"path":"\(empty directory\)"\}/)
    expect(run.stdout).toContain('The workspace has no file I could summarize')
  })

  it('a prompt it has no script for gets an honest answer: what it can do offline, and --provider openai', async () => {
    const { workspace, root } = emptyWorkspace('other')
    const run = await runMiniAgent(
      ['run', '--root', root, '--workspace', workspace, 'Fix the failing test in src/app.ts'],
      {
        cwd: workspace,
      },
    )
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0)
    expect(run.stdout).toContain(OFFLINE_CAPABILITIES)
    expect(OFFLINE_CAPABILITIES).toContain('--provider openai')
    expect(OFFLINE_CAPABILITIES).toContain('OPENAI_API_KEY')
    expect(run.stdout).not.toMatch(/list_dir|read_file|write_file|run_command/)
  })
})
