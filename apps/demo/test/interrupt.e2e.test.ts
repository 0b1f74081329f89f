import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import type { LoggedEvent } from '@agent-ledger/session-events'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { runMiniAgent, startMiniAgent } from './support/mini-agent-process.ts'

let base: string

beforeAll(async () => {
  base = await mkdtemp(path.join(os.tmpdir(), 'mini-agent-e2e-sigint-'))
  await mkdir(path.join(base, 'workspace'))
})

afterAll(async () => {
  await rm(base, { recursive: true, force: true })
})

function waitFor(condition: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const poll = setInterval(() => {
      if (condition()) {
        clearInterval(poll)
        resolve()
      }
    }, 25)
  })
}

describe('mini-agent and Ctrl+C (SIGINT to a child process)', () => {
  it('Ctrl+C during a tool call aborts the tool, logs the result and turn/end aborted, and exits 130', async () => {
    const root = path.join(base, 'sessions')
    const running = startMiniAgent([
      'run',
      '--root',
      root,
      '--workspace',
      path.join(base, 'workspace'),
      '--id',
      'interrupted',
      'run: sleep 30',
    ])
    await waitFor(() => running.output().includes('tool/call'))
    running.child.kill('SIGINT')
    const finished = await running.finished
    expect(finished.code, finished.stderr).toBe(130)
    expect(finished.stderr).toContain('aborted by the user')

    const store = createJsonlStore({ root })
    const events: LoggedEvent[] = []
    for await (const event of store.readEvents('interrupted')) events.push(event)
    const [result, end] = events.slice(-2)
    expect(result?.type).toBe('tool/result')
    expect(result?.data).toMatchObject({ isError: true })
    expect(JSON.stringify(result?.data)).toContain('aborted by the user')
    expect(end?.data).toEqual({ turn: 1, reason: 'aborted' })
    expect((await store.verify('interrupted')).status).toBe('ok')

    const resumed = await runMiniAgent(['resume', 'interrupted', '--root', root])
    expect(resumed.code).toBe(0)
    expect(resumed.stdout).toContain('nothing to repair')
  })
})
