import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { runMiniAgent, zstdTest } from './support/mini-agent-process.ts'

let cwd: string

beforeAll(async () => {
  cwd = await mkdtemp(path.join(os.tmpdir(), 'mini-agent-e2e-cli-'))
  await writeFile(path.join(cwd, 'readme.txt'), 'hello from the workspace\n')
  await mkdir(path.join(cwd, '.mini-agent', 'workspace'), { recursive: true })
  await writeFile(
    path.join(cwd, '.mini-agent', 'workspace', 'readme.txt'),
    'hello from the default workspace\n',
  )
})

afterAll(async () => {
  await rm(cwd, { recursive: true, force: true })
})

describe('mini-agent command line (child processes)', () => {
  it('run uses .mini-agent/sessions and .mini-agent/workspace under the working directory by default, and sessions lists it', async () => {
    const run = await runMiniAgent(['run', 'Summarize readme.txt'], { cwd })
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toContain('Done: the summary is in readme.txt.summary.md.')
    const root = path.join(cwd, '.mini-agent', 'sessions')
    const [id] = await readdir(root)
    expect(existsSync(path.join(root, id!, 'session.v4.jsonl'))).toBe(true)
    // The agent worked in the default workspace; the working directory itself is untouched.
    expect(existsSync(path.join(cwd, '.mini-agent', 'workspace', 'readme.txt.summary.md'))).toBe(true)
    expect((await readdir(cwd)).sort()).toEqual(['.mini-agent', 'readme.txt'])

    const listing = await runMiniAgent(['sessions'], { cwd })
    expect(listing.code).toBe(0)
    expect(listing.stdout).toContain(`${id!}  created `)
  })

  it('--compress writes session.v4.jsonl.zstd (no plain log), which the zstd CLI accepts and sessions lists', async () => {
    const root = path.join(cwd, 'c')
    const run = await runMiniAgent(
      ['run', '--compress', '--root', root, '--id', 'z', 'Summarize readme.txt'],
      {
        cwd,
      },
    )
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/compressed log resealed: z\/session\.v4\.jsonl\.zstd, \d+ bytes -> \d+ bytes/)
    const compressed = path.join(root, 'z', 'session.v4.jsonl.zstd')
    expect(existsSync(compressed)).toBe(true)
    expect(existsSync(path.join(root, 'z', 'session.v4.jsonl'))).toBe(false)
    const check = zstdTest(compressed)
    if (check === null) console.warn('skipped the zstd -t check: the zstd CLI is not installed')
    else expect(check.status, check.stderr).toBe(0)
    const listing = await runMiniAgent(['sessions', '--root', root], { cwd })
    expect(listing.stdout).toContain('z/session.v4.jsonl.zstd')
  })
})
