import { existsSync } from 'node:fs'
import { mkdir, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'

import type { LoggedEvent } from '@agent-ledger/session-events'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { runMiniAgent, zstdTest } from './support/mini-agent-process.ts'
import { notesWorkspace, readAll } from './support/notes-workspace.ts'

let base: string
let root: string
let workspace: string

beforeAll(async () => {
  ;({ base, root, workspace } = await notesWorkspace('mini-agent-e2e-crash-'))
})

afterAll(async () => {
  await rm(base, { recursive: true, force: true })
})

function events(id: string): Promise<LoggedEvent[]> {
  return readAll(root, id)
}

/** Crashes a run at `crashAt`, then resumes it twice; returns the log after each step. */
async function crashThenResumeTwice(id: string, crashAt: string, extra: readonly string[] = []) {
  const crashed = await runMiniAgent([
    'run',
    ...extra,
    '--root',
    root,
    '--workspace',
    workspace,
    '--id',
    id,
    '--crash-at',
    crashAt,
    'Summarize notes.md',
  ])
  expect(crashed.signal, crashed.stderr).toBe('SIGKILL')
  const afterCrash = await events(id)
  const firstResume = await runMiniAgent(['resume', id, '--root', root])
  expect(firstResume.code, firstResume.stderr).toBe(0)
  const afterFirst = await events(id)
  const secondResume = await runMiniAgent(['resume', id, '--root', root])
  expect(secondResume.code, secondResume.stderr).toBe(0)
  const afterSecond = await events(id)
  return { afterCrash, afterFirst, afterSecond, firstResume, secondResume }
}

describe('mini-agent killed with SIGKILL, then resumed (child processes)', () => {
  it('R1: after-tool-call: the placeholder carries TOOL_OUTCOME_UNKNOWN and cites the tool/call; a second resume adds nothing', async () => {
    const { afterCrash, afterFirst, afterSecond, firstResume, secondResume } = await crashThenResumeTwice(
      'crash-after-call',
      'after-tool-call',
    )
    const lastBefore = afterCrash.at(-1)!
    expect(lastBefore.type).toBe('tool/call')
    const added = afterFirst.slice(afterCrash.length)
    expect(added.map((event) => event.type)).toEqual(['tool/result', 'turn/end'])
    expect(added[0]!.data).toMatchObject({ isError: true, code: 'TOOL_OUTCOME_UNKNOWN' })
    expect(added[0]!.sourceEventSeqs).toEqual([lastBefore.seq])
    expect(added[1]!.data).toMatchObject({ reason: 'interrupted' })
    expect(firstResume.stdout).toContain('the model will receive this placeholder:')
    expect(firstResume.stdout).toContain('[TOOL_OUTCOME_UNKNOWN]')
    expect(afterSecond).toHaveLength(afterFirst.length)
    expect(secondResume.stdout).toContain('nothing to repair')
  })

  it('R1: after-assistant: the call never started, so the placeholder carries TOOL_NOT_STARTED; a second resume adds nothing', async () => {
    const { afterCrash, afterFirst, afterSecond, firstResume } = await crashThenResumeTwice(
      'crash-after-assistant',
      'after-assistant',
    )
    const lastBefore = afterCrash.at(-1)!
    expect(lastBefore.type).toBe('assistant/message')
    expect(afterCrash.some((event) => event.type === 'tool/call')).toBe(false)
    const added = afterFirst.slice(afterCrash.length)
    expect(added.map((event) => event.type)).toEqual(['tool/result', 'turn/end'])
    expect(added[0]!.data).toMatchObject({ isError: true, code: 'TOOL_NOT_STARTED' })
    expect(added[0]!.sourceEventSeqs).toEqual([lastBefore.seq])
    expect(firstResume.stdout).toContain('[TOOL_NOT_STARTED]')
    expect(afterSecond).toHaveLength(afterFirst.length)
  })

  it('R1: after-tool-run on write_file: the file was written but never logged; the resumed model checks before redoing', async () => {
    const id = 'crash-after-run'
    const ownWorkspace = path.join(base, 'workspace-after-run')
    await mkdir(ownWorkspace)
    await writeFile(path.join(ownWorkspace, 'notes.md'), '# Notes\nship on Friday\n')
    const crashed = await runMiniAgent([
      'run',
      '--root',
      root,
      '--workspace',
      ownWorkspace,
      '--id',
      id,
      '--crash-at',
      'after-tool-run:write_file',
      'Summarize notes.md',
    ])
    expect(crashed.signal).toBe('SIGKILL')
    expect(existsSync(path.join(ownWorkspace, 'notes.md.summary.md'))).toBe(true)
    const continued = await runMiniAgent(['resume', id, '--root', root, 'Continue where you left off.'])
    expect(continued.code, continued.stderr).toBe(0)
    expect(continued.stdout).toContain('[TOOL_OUTCOME_UNKNOWN]')
    expect(continued.stdout).toContain('the interrupted write had happened')
    const log = await events(id)
    expect(
      log.filter(
        (event) => event.type === 'tool/call' && (event.data as { name?: string }).name === 'write_file',
      ),
    ).toHaveLength(1)
    expect(log.at(-1)!.data).toEqual({ turn: 2, reason: 'completed' })
    expect((await createJsonlStore({ root }).verify(id)).status).toBe('ok')
  })

  it('R1 (zstd): a --compress run killed after-tool-call leaves a .zstd log the zstd CLI accepts; resume appends TOOL_OUTCOME_UNKNOWN to it and reseals it', async () => {
    const id = 'crash-compressed'
    const directory = path.join(root, id)
    const compressed = path.join(directory, 'session.v4.jsonl.zstd')
    const { afterCrash, afterFirst, afterSecond, firstResume, secondResume } = await crashThenResumeTwice(
      id,
      'after-tool-call',
      ['--compress'],
    )
    expect(existsSync(path.join(directory, 'session.v4.jsonl'))).toBe(false)
    expect(existsSync(compressed)).toBe(true)
    const lastBefore = afterCrash.at(-1)!
    expect(lastBefore.type).toBe('tool/call')
    const added = afterFirst.slice(afterCrash.length)
    expect(added.map((event) => event.type)).toEqual(['tool/result', 'turn/end'])
    expect(added[0]!.data).toMatchObject({ isError: true, code: 'TOOL_OUTCOME_UNKNOWN' })
    expect(added[0]!.sourceEventSeqs).toEqual([lastBefore.seq])
    expect(firstResume.stdout).toContain(`session ${id}: ${compressed}`)
    expect(firstResume.stdout).toContain('[TOOL_OUTCOME_UNKNOWN]')
    expect(firstResume.stdout).toMatch(/compressed log resealed: .*session\.v4\.jsonl\.zstd/)
    expect(afterSecond).toHaveLength(afterFirst.length)
    expect(secondResume.stdout).toContain('nothing to repair')
    expect(existsSync(path.join(directory, 'session.v4.jsonl'))).toBe(false)
    const check = zstdTest(compressed)
    if (check === null) console.warn('skipped the zstd -t check: the zstd CLI is not installed')
    else expect(check.status, check.stderr).toBe(0)
    expect((await createJsonlStore({ root }).verify(id)).status).toBe('ok')
  })
})
