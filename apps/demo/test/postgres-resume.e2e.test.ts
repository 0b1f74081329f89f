/**
 * mini-agent on PostgreSQL (the global setup's real server), as child processes: a run is
 * SIGKILLed in the middle of a tool call; a second process resumes it (with --takeover while
 * the dead writer's lease is live; without, once a short lease has expired), appends the
 * honest repair, and its next model request (the offline scripted provider answers from the
 * messages it is sent) carries the repair code. `agent-ledger tail --store` shows the repair.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import { runCli } from '@agent-ledger/cli'
import type { LoggedEvent } from '@agent-ledger/session-events'
import { createSessionStore } from '@agent-ledger/session-store'
import { openPostgresBackend } from '@agent-ledger/session-store-postgres'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'

import { testTime, waitUntil } from '../../../tooling/test-time.ts'
import { childEnv, runMiniAgent } from './support/mini-agent-process.ts'

const adminUrl = inject('pgUrl')
const skipReason = inject('pgSkipReason')

async function sql<TRow extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query<TRow>(text, values)).rows
  } finally {
    await client.end()
  }
}

describe.skipIf(adminUrl === null)(
  `mini-agent on PostgreSQL, SIGKILLed mid-tool-call, resumed by another process${skipReason === null ? '' : ` (skipped: ${skipReason})`}`,
  () => {
    let base: string
    let workspace: string
    let url: string

    beforeAll(async () => {
      base = await mkdtemp(path.join(os.tmpdir(), 'mini-agent-pg-'))
      workspace = path.join(base, 'workspace')
      await mkdir(workspace)
      await writeFile(path.join(workspace, 'notes.md'), '# Notes\nship on Friday\n')
      const database = `demo_${randomBytes(6).toString('hex')}`
      await sql(adminUrl!, `CREATE DATABASE ${database}`)
      const parsed = new URL(adminUrl!)
      parsed.pathname = `/${database}`
      url = parsed.toString()
    }, testTime(60_000))

    afterAll(async () => {
      await rm(base, { recursive: true, force: true })
    })

    /** The children read the store from the environment, as a fleet worker would. */
    const env = (): NodeJS.ProcessEnv => childEnv({ AGENT_LEDGER_STORE: url })

    async function events(id: string): Promise<LoggedEvent[]> {
      const store = createSessionStore({
        backend: await openPostgresBackend({ connectionString: url }),
        clock: () => new Date().toISOString(),
      })
      try {
        const all: LoggedEvent[] = []
        for await (const event of store.readEvents(id)) all.push(event)
        return all
      } finally {
        await store.close()
      }
    }

    it('after the write_file tool/call: refused while the dead writer`s lease is live, then --takeover repairs with TOOL_OUTCOME_UNKNOWN and the next request carries it', async () => {
      const id = 'pg-after-call'
      const crashed = await runMiniAgent(
        [
          'run',
          '--workspace',
          workspace,
          '--id',
          id,
          '--crash-at',
          'after-tool-call:write_file',
          'Summarize notes.md',
        ],
        { env: env() },
      )
      expect(crashed.signal, crashed.stderr).toBe('SIGKILL')
      const afterCrash = await events(id)
      const call = afterCrash.at(-1)!
      expect(call).toMatchObject({ type: 'tool/call', data: { name: 'write_file' } })
      const [held] = await sql<{ writer_owner: string; live: boolean }>(
        url,
        'SELECT writer_owner, lease_until > now() AS live FROM ledger_sessions WHERE session_id = $1',
        [id],
      )
      expect(held).toMatchObject({ writer_owner: expect.stringMatching(/^mini-agent@/) })

      expect(held!.live).toBe(true)
      // A second process is refused while the dead writer's lease runs, naming the way out.
      const refused = await runMiniAgent(['resume', id], { env: env() })
      expect(refused.code).toBe(1)
      expect(refused.stderr).toContain('SESSION_LOCKED')
      expect(refused.stderr).toContain('--takeover')
      expect(await events(id)).toHaveLength(afterCrash.length)

      const resumed = await runMiniAgent(['resume', id, '--takeover', 'Continue where you left off.'], {
        env: env(),
      })
      expect(resumed.code, resumed.stderr).toBe(0)
      expect(resumed.stdout).toContain(
        `placeholder TOOL_OUTCOME_UNKNOWN for write_file call ${String((call.data as { callId: string }).callId)}`,
      )
      expect(resumed.stdout).toContain('the model will receive this placeholder:')
      const after = await events(id)
      const added = after.slice(afterCrash.length)
      expect(added[0]).toMatchObject({
        type: 'tool/result',
        data: { isError: true, code: 'TOOL_OUTCOME_UNKNOWN' },
        sourceEventSeqs: [call.seq],
      })
      expect(added[1]).toMatchObject({ type: 'turn/end', data: { reason: 'interrupted' } })
      // The next model request: the scripted model answers from the messages it is sent, and
      // names the code it found in the placeholder.
      const reply = added.find((event) => event.type === 'assistant/message')
      expect(JSON.stringify(reply?.data)).toContain(
        'interrupted during write_file to notes.md.summary.md (TOOL_OUTCOME_UNKNOWN)',
      )
      const epochs = await sql<{ writer_epoch: string }>(
        url,
        'SELECT DISTINCT writer_epoch FROM ledger_events WHERE session_id = $1 ORDER BY writer_epoch',
        [id],
      )
      expect(epochs.length).toBe(2) // the dead writer's epoch, then the takeover's

      const all = await runCliText(['tail', '-n', '40', id, '--store', url])
      expect(all).toMatch(
        new RegExp(
          `^#${call.seq + 1} \\S+ tool/result for \\S+ \\[error TOOL_OUTCOME_UNKNOWN\\] .* <- ${call.seq}$`,
          'm',
        ),
      )
      expect(all).toMatch(new RegExp(`^#${call.seq + 2} \\S+ turn/end turn 1 interrupted$`, 'm'))
    })

    it('after the assistant asked (no tool/call): once a short lease expires, a resume without --takeover repairs with TOOL_NOT_STARTED', async () => {
      const id = 'pg-after-assistant'
      const crashed = await runMiniAgent(
        [
          'run',
          '--workspace',
          workspace,
          '--id',
          id,
          '--lease-ms',
          String(testTime(1_000)),
          '--crash-at',
          'after-assistant',
          'Summarize notes.md',
        ],
        { env: env() },
      )
      expect(crashed.signal, crashed.stderr).toBe('SIGKILL')
      const afterCrash = await events(id)
      expect(afterCrash.at(-1)!.type).toBe('assistant/message')
      // Wait on the server's clock (the one the lease is judged by) until the lease has expired.
      await waitUntil(
        "the crashed run's lease to expire",
        async () => {
          const [row] = await sql<{ live: boolean }>(
            url,
            'SELECT lease_until > now() AS live FROM ledger_sessions WHERE session_id = $1',
            [id],
          )
          return row?.live === false
        },
        { pollMs: 100 },
      )
      const resumed = await runMiniAgent(['resume', id, 'Continue where you left off.'], { env: env() })
      expect(resumed.code, resumed.stderr).toBe(0)
      expect(resumed.stdout).toContain('placeholder TOOL_NOT_STARTED for list_dir')
      const added = (await events(id)).slice(afterCrash.length)
      expect(added[0]).toMatchObject({
        type: 'tool/result',
        data: { isError: true, code: 'TOOL_NOT_STARTED' },
      })
      const reply = added.find((event) => event.type === 'assistant/message')
      expect(JSON.stringify(reply?.data)).toContain('(TOOL_NOT_STARTED); it is safe to run it again')
      const shown = await runCliText(['tail', '-n', '40', id, '--store', url])
      expect(shown).toMatch(/tool\/result for \S+ \[error TOOL_NOT_STARTED\]/)
    })

    it(
      'the demo story runs on PostgreSQL (mini-agent demo with AGENT_LEDGER_STORE, as pnpm demo:postgres runs it)',
      async () => {
        const story = await runMiniAgent(['demo'], { env: env() })
        expect(story.code, story.stdout + story.stderr).toBe(0)
        expect(story.stdout).not.toContain('DEMO FAILED')
        expect(story.stdout).toMatch(/^ {2}sessions: postgres ledger@127\.0\.0\.1:\d+\/demo_[0-9a-f]+$/m)
        expect(story.stdout).toContain("openWriter took over the dead child's lease")
        expect(story.stdout).toMatch(/placeholder TOOL_OUTCOME_UNKNOWN for write_file/)
        expect(story.stdout).toContain('== 9. Copy to a JSONL directory ==')
        expect(story.stdout).toContain(
          'agent-ledger tail -n 2 prints the same on the database and on the copy',
        )
        // The child got the URL from the environment: it is never on a command line in the output.
        expect(story.stdout).not.toContain('postgres://')
      },
      testTime(120_000),
    )

    async function runCliText(argv: readonly string[]): Promise<string> {
      let stdout = ''
      let stderr = ''
      const code = await runCli(argv, {
        stdout: (text) => (stdout += text),
        stderr: (text) => (stderr += text),
        env: {},
      })
      expect(code, stderr).toBe(0)
      return stdout
    }
  },
)
