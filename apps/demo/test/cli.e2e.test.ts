import { existsSync } from 'node:fs'
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { runMiniAgent } from './support/mini-agent-process.ts'

let cwd: string

beforeAll(async () => {
  cwd = await mkdtemp(path.join(os.tmpdir(), 'mini-agent-e2e-cli-'))
  await writeFile(path.join(cwd, 'readme.txt'), 'hello from the workspace\n')
})

afterAll(async () => {
  await rm(cwd, { recursive: true, force: true })
})

describe('mini-agent command line (child processes)', () => {
  it('run uses .mini-agent/sessions under the working directory by default, and sessions lists it', async () => {
    const run = await runMiniAgent(['run', 'Summarize readme.txt'], { cwd })
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toContain('Done: the summary is in readme.txt.summary.md.')
    const root = path.join(cwd, '.mini-agent', 'sessions')
    const [id] = await readdir(root)
    expect(existsSync(path.join(root, id!, 'session.v4.jsonl'))).toBe(true)
    expect(existsSync(path.join(cwd, 'readme.txt.summary.md'))).toBe(true)

    const listing = await runMiniAgent(['sessions'], { cwd })
    expect(listing.code).toBe(0)
    expect(listing.stdout).toContain(`${id!}  created `)
  })

  it('refuses --compress with exit 2 and a clear message, creating nothing', async () => {
    const compress = await runMiniAgent(['run', '--compress', '--root', path.join(cwd, 'c'), 'hi'], { cwd })
    expect(compress.code).toBe(2)
    expect(compress.stderr).toContain('--compress is not available yet')
    expect(compress.stderr).toContain('COMPRESS_NOT_AVAILABLE')
    expect(existsSync(path.join(cwd, 'c'))).toBe(false)
  })
})
