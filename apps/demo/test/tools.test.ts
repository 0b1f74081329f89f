import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { MiniAgentError } from '../src/mini-agent-error.ts'
import { createWorkspaceTools } from '../src/tools.ts'
import type { WorkspaceTools } from '../src/tools.ts'

let base: string
let workspace: string
let outside: string
let tools: WorkspaceTools

beforeEach(async () => {
  base = await realpath(await mkdtemp(path.join(os.tmpdir(), 'mini-agent-tools-')))
  workspace = path.join(base, 'workspace')
  outside = path.join(base, 'outside')
  await mkdir(workspace)
  await mkdir(outside)
  await writeFile(path.join(workspace, 'notes.md'), 'hello\nworld\n')
  await writeFile(path.join(outside, 'secret.txt'), 'top secret')
  await mkdir(path.join(workspace, '.mini-agent', 'sessions'), { recursive: true })
  tools = await createWorkspaceTools({
    workspace,
    protectedPaths: [path.join(workspace, '.mini-agent', 'sessions')],
    commandTimeoutMs: testTime(5_000),
    maxOutputBytes: 64,
  })
})

afterEach(async () => {
  await rm(base, { recursive: true, force: true })
})

const args = (value: unknown): string => JSON.stringify(value)

describe('createWorkspaceTools: the happy path', () => {
  it('lists, reads and writes inside the workspace', async () => {
    const listing = await tools.run('list_dir', args({}))
    expect(listing).toEqual({ isError: false, content: '.mini-agent/\nnotes.md' })
    expect(await tools.run('read_file', args({ path: 'notes.md' }))).toEqual({
      isError: false,
      content: 'hello\nworld\n',
    })
    const written = await tools.run('write_file', args({ path: 'out/summary.md', content: 'two lines' }))
    expect(written.isError).toBe(false)
    expect(await readFile(path.join(workspace, 'out', 'summary.md'), 'utf8')).toBe('two lines')
  })

  it('runs a command in the workspace, reports the exit code and caps the output', async () => {
    const ok = await tools.run('run_command', args({ command: 'pwd' }))
    expect(ok).toEqual({ isError: false, content: `exit code 0\n${workspace}\n` })
    const failed = await tools.run('run_command', args({ command: 'echo nope >&2; exit 3' }))
    expect(failed).toEqual({ isError: true, content: 'exit code 3\nnope\n' })
    const big = await tools.run('run_command', args({ command: 'head -c 1000 /dev/zero | tr "\\0" x' }))
    expect(big.content).toContain('[output capped: 936 more bytes dropped]')
  })

  it('does not pass the parent environment (API keys) to commands', async () => {
    process.env.MINI_AGENT_TEST_SECRET = 'sk-test-should-not-leak'
    try {
      const outcome = await tools.run('run_command', args({ command: 'env' }))
      expect(outcome.content).not.toContain('sk-test-should-not-leak')
    } finally {
      delete process.env.MINI_AGENT_TEST_SECRET
    }
  })

  it('kills a command at its timeout', async () => {
    const outcome = await tools.run('run_command', args({ command: 'sleep 30', timeoutMs: 200 }))
    expect(outcome.isError).toBe(true)
    expect(outcome.content).toContain('timed out after 200 ms')
  })

  it('aborts a running command when the signal fires and says so', async () => {
    const controller = new AbortController()
    const running = tools.run('run_command', args({ command: 'sleep 30' }), controller.signal)
    setTimeout(() => controller.abort(), 100)
    expect(await running).toEqual({ isError: true, content: 'Error: aborted by the user', aborted: true })
  })

  it('an abort while the command is being prepared (before it is spawned) is still an abort, never a run to the timeout', async () => {
    const controller = new AbortController()
    // run() checks the signal, then awaits the cwd resolution: the abort lands in that await.
    const running = tools.run('run_command', args({ command: 'sleep 30' }), controller.signal)
    controller.abort()
    expect(await running).toEqual({ isError: true, content: 'Error: aborted by the user', aborted: true })
  })

  it('answers unknown tools and malformed arguments with tool errors, never exceptions', async () => {
    expect(await tools.run('rm_rf', '{}')).toMatchObject({
      isError: true,
      content: expect.stringContaining('no tool'),
    })
    expect(await tools.run('read_file', '{not json')).toMatchObject({ isError: true })
    expect(await tools.run('write_file', args({ path: 'x' }))).toMatchObject({
      isError: true,
      content: expect.stringContaining('content'),
    })
  })

  it('refuses a workspace that does not exist', async () => {
    await expect(createWorkspaceTools({ workspace: path.join(base, 'missing') })).rejects.toSatisfy(
      (error: unknown) => MiniAgentError.is(error) && error.code === 'WORKSPACE_INVALID',
    )
  })
})

describe('createWorkspaceTools: confinement', () => {
  it('refuses .. that climbs out of the workspace, for every tool', async () => {
    for (const [name, input] of [
      ['read_file', { path: '../outside/secret.txt' }],
      ['write_file', { path: '../outside/new.txt', content: 'x' }],
      ['list_dir', { path: '..' }],
      ['run_command', { command: 'pwd', cwd: '../outside' }],
    ] as const) {
      const outcome = await tools.run(name, args(input))
      expect(outcome.isError, name).toBe(true)
      expect(outcome.content, name).toContain('outside the workspace')
    }
    expect(existsSync(path.join(outside, 'new.txt'))).toBe(false)
  })

  it('refuses an absolute path outside the workspace and accepts one inside', async () => {
    const refused = await tools.run('read_file', args({ path: path.join(outside, 'secret.txt') }))
    expect(refused.isError).toBe(true)
    expect(refused.content).not.toContain('top secret')
    const written = await tools.run(
      'write_file',
      args({ path: '/etc/mini-agent-should-not-exist', content: 'x' }),
    )
    expect(written.content).toContain('outside the workspace')
    expect(existsSync('/etc/mini-agent-should-not-exist')).toBe(false)
    const inside = await tools.run('read_file', args({ path: path.join(workspace, 'notes.md') }))
    expect(inside.isError).toBe(false)
  })

  it('refuses a symlink inside the workspace that points out (file and directory links)', async () => {
    await symlink(path.join(outside, 'secret.txt'), path.join(workspace, 'link-to-secret'))
    await symlink(outside, path.join(workspace, 'link-to-dir'))
    const read = await tools.run('read_file', args({ path: 'link-to-secret' }))
    expect(read.content).toContain('outside the workspace')
    expect(read.content).not.toContain('top secret')
    const throughDir = await tools.run('write_file', args({ path: 'link-to-dir/planted.txt', content: 'x' }))
    expect(throughDir.content).toContain('outside the workspace')
    expect(existsSync(path.join(outside, 'planted.txt'))).toBe(false)
    const overwrite = await tools.run('write_file', args({ path: 'link-to-secret', content: 'pwned' }))
    expect(overwrite.isError).toBe(true)
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('top secret')
    const listed = await tools.run('list_dir', args({ path: 'link-to-dir' }))
    expect(listed.content).toContain('outside the workspace')
    const command = await tools.run('run_command', args({ command: 'pwd', cwd: 'link-to-dir' }))
    expect(command.content).toContain('outside the workspace')
  })

  it('refuses to write through a dangling symlink (it would create the file wherever the link points)', async () => {
    await symlink(path.join(outside, 'not-yet.txt'), path.join(workspace, 'dangling'))
    const outcome = await tools.run('write_file', args({ path: 'dangling', content: 'x' }))
    expect(outcome.isError).toBe(true)
    expect(existsSync(path.join(outside, 'not-yet.txt'))).toBe(false)
  })

  it('follows a symlink that stays inside the workspace', async () => {
    await symlink(path.join(workspace, 'notes.md'), path.join(workspace, 'alias.md'))
    expect(await tools.run('read_file', args({ path: 'alias.md' }))).toEqual({
      isError: false,
      content: 'hello\nworld\n',
    })
  })

  it('refuses the session root even though it is inside the workspace', async () => {
    const outcome = await tools.run(
      'write_file',
      args({ path: '.mini-agent/sessions/x/session.v4.jsonl', content: '' }),
    )
    expect(outcome.content).toContain('session log directory')
    expect(existsSync(path.join(workspace, '.mini-agent', 'sessions', 'x'))).toBe(false)
    const listing = await tools.run('list_dir', args({ path: '.mini-agent' }))
    expect(listing.content).toBe('(empty directory)')
  })

  it('refuses a NUL byte and an empty path', async () => {
    expect((await tools.run('read_file', args({ path: 'notes.md\0.txt' }))).content).toContain('NUL')
    expect((await tools.run('read_file', args({ path: '' }))).content).toContain('empty')
  })
})
