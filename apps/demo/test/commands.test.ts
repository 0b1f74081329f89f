import { existsSync } from 'node:fs'
import { realpath, rm } from 'node:fs/promises'
import path from 'node:path'

import { validateProviderMessages } from '@agent-ledger/loop-repair'
import type { LoggedEvent } from '@agent-ledger/session-events'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { runInProcess } from './support/in-process.ts'
import { notesWorkspace, readAll } from './support/notes-workspace.ts'

let base: string
let root: string
let workspace: string

beforeEach(async () => {
  ;({ base, root, workspace } = await notesWorkspace('mini-agent-commands-'))
})

afterEach(async () => {
  await rm(base, { recursive: true, force: true })
})

const runArgs = (id: string, ...extra: string[]) => [
  'run',
  '--root',
  root,
  '--workspace',
  workspace,
  '--id',
  id,
  ...extra,
]

describe('mini-agent commands against a real store (in process)', () => {
  it('run: creates the session with the system prompt, logs the whole turn, and replays identically from disk', async () => {
    const run = await runInProcess(runArgs('s1', 'Summarize notes.md'))
    expect(run.code, run.err.join('\n')).toBe(0)
    expect(run.out.at(-1)).toBe('\nDone: the summary is in notes.md.summary.md.')
    const events = await readAll(root, 's1')
    expect(events[0]?.type).toBe('system/message')
    expect(events.at(-1)?.data).toEqual({ turn: 1, reason: 'completed' })
    expect(events.filter((event) => event.type === 'tool/call')).toHaveLength(3)

    const store = createJsonlStore({ root })
    const reader = await store.openReader('s1')
    expect(reader.header?.cwd).toBe(await realpath(workspace))
    expect(reader.header?.metadata).toMatchObject({ app: 'mini-agent', provider: 'scripted' })
    const messages = reader.projection.deriveMessages()
    expect(messages.map((message) => message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
    ])
    expect(validateProviderMessages(messages)).toEqual([])
  })

  it('R1: a run killed after a durable tool/call is repaired by resume (TOOL_OUTCOME_UNKNOWN), and a second resume adds nothing', async () => {
    const crashed = await runInProcess(runArgs('s2', '--crash-at', 'after-tool-call', 'Summarize notes.md'))
    expect(crashed.killed).toBe(true)
    const afterCrash = await readAll(root, 's2')
    expect(afterCrash.at(-1)?.type).toBe('tool/call')

    const resumed = await runInProcess(['resume', 's2', '--root', root])
    expect(resumed.code).toBe(0)
    const text = resumed.out.join('\n')
    expect(text).toContain('placeholder TOOL_OUTCOME_UNKNOWN for list_dir')
    expect(text).toContain('the model will receive this placeholder:')
    expect(text).toContain('[TOOL_OUTCOME_UNKNOWN]')
    const afterResume = await readAll(root, 's2')
    expect(afterResume).toHaveLength(afterCrash.length + 2)

    const again = await runInProcess(['resume', 's2', '--root', root])
    expect(again.out).toContain('nothing to repair: the log ended cleanly.')
    expect(await readAll(root, 's2')).toHaveLength(afterResume.length)
  })

  it('resume with a prompt continues in the next turn, in the workspace recorded in the header', async () => {
    await runInProcess(runArgs('s3', '--crash-at', 'after-assistant', 'Summarize notes.md'))
    const resumed = await runInProcess(['resume', 's3', '--root', root, 'Continue'])
    expect(resumed.code, resumed.err.join('\n')).toBe(0)
    expect(resumed.out.join('\n')).toContain('[TOOL_NOT_STARTED]')
    const events = await readAll(root, 's3')
    const turns = events.filter((event) => event.type === 'turn/end').map((event) => event.data)
    expect(turns).toEqual([
      { turn: 1, reason: 'interrupted' },
      { turn: 2, reason: 'completed' },
    ])
  })

  it('an aborted turn exits 130 and logs turn/end aborted', async () => {
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 300)
    const run = await runInProcess(runArgs('s4', 'run: sleep 20'), { signal: controller.signal })
    expect(run.code).toBe(130)
    expect((await readAll(root, 's4')).at(-1)?.data).toEqual({ turn: 1, reason: 'aborted' })
  })

  it('max-steps ends the turn as max-tokens with exit 3', async () => {
    const run = await runInProcess(runArgs('s5', '--max-steps', '1', 'Summarize notes.md'))
    expect(run.code).toBe(3)
    expect((await readAll(root, 's5')).at(-1)?.data).toEqual({ turn: 1, reason: 'max-tokens' })
  })

  it('errors: resume of a missing session, an existing id', async () => {
    const missing = await runInProcess(['resume', 'nope', '--root', root])
    expect(missing.code).toBe(1)
    expect(missing.err[0]).toContain('(SESSION_NOT_FOUND)')
    await runInProcess(runArgs('dup', 'Summarize notes.md'))
    const duplicate = await runInProcess(runArgs('dup', 'Summarize notes.md'))
    expect(duplicate.code).toBe(1)
    expect(duplicate.err[0]).toContain('SESSION_EXISTS')
  })

  it('--compress: the log is session.v4.jsonl.zstd from the start, resealed at the end, with the events of a plain run', async () => {
    const run = await runInProcess(runArgs('z', '--compress', 'Summarize notes.md'))
    expect(run.code, run.err.join('\n')).toBe(0)
    expect(run.out[0]).toBe(`session z: ${path.join(root, 'z', 'session.v4.jsonl.zstd')}`)
    expect(run.out.at(-1)).toMatch(
      /^compressed log resealed: z\/session\.v4\.jsonl\.zstd, \d+ bytes -> \d+ bytes/,
    )
    expect(existsSync(path.join(root, 'z', 'session.v4.jsonl'))).toBe(false)
    const plain = await runInProcess(runArgs('p', 'Summarize notes.md'))
    expect(plain.out.some((line) => line.includes('compressed'))).toBe(false)
    const types = (events: LoggedEvent[]) => events.map((event) => event.type)
    expect(types(await readAll(root, 'z'))).toEqual(types(await readAll(root, 'p')))
    // resume of the compressed session keeps its encoding and runs the next turn
    const resumed = await runInProcess(['resume', 'z', '--root', root, 'Summarize notes.md'])
    expect(resumed.code, resumed.err.join('\n')).toBe(0)
    expect(resumed.out).toContain('nothing to repair: the log ended cleanly.')
    expect((await readAll(root, 'z')).at(-1)?.data).toEqual({ turn: 2, reason: 'completed' })
    expect(existsSync(path.join(root, 'z', 'session.v4.jsonl'))).toBe(false)
    expect((await createJsonlStore({ root }).verify('z')).status).toBe('ok')
  })

  it('--provider openai without its environment fails before creating a session, naming the variable', async () => {
    const run = await runInProcess(runArgs('o', '--provider', 'openai', 'hi'))
    expect(run.code).toBe(1)
    expect(run.err[0]).toContain('OPENAI_API_KEY is not set')
    expect(existsSync(root)).toBe(false)
  })

  it('sessions lists every session with its file', async () => {
    await runInProcess(runArgs('one', 'Summarize notes.md'))
    await runInProcess(runArgs('two', 'Summarize notes.md'))
    const listing = await runInProcess(['sessions', '--root', root])
    expect(listing.code).toBe(0)
    expect(listing.out.map((line) => line.split(' ')[0]).sort()).toEqual(['one', 'two'])
    expect(listing.out.join('\n')).toContain('one/session.v4.jsonl')
  })
})
