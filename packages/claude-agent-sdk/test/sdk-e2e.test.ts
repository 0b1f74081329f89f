/**
 * The real SDK end to end, offline: `query()` spawns the SDK's CLI pointed at a scripted
 * Messages API on loopback (test/scripted-messages-api.ts), mirrors the turn into the store,
 * and resumes from the store once the local transcript is gone. A store whose backend fails
 * does not fail the turn: the SDK reports a `mirror_error`.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { query } from '@anthropic-ai/claude-agent-sdk'
import type { Options, SDKMessage, SessionStore as SdkSessionStore } from '@anthropic-ai/claude-agent-sdk'
import { createMemoryBackend, createSessionStore, SessionStoreError } from '@agent-ledger/session-store'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { afterAll, beforeAll, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { createClaudeSessionStore } from '../src/index.ts'
import { startScriptedApi } from './scripted-messages-api.ts'
import type { ScriptedApi } from './scripted-messages-api.ts'

let api: ScriptedApi
let home: string

beforeAll(async () => {
  api = await startScriptedApi('Hello offline.')
  home = mkdtempSync(join(tmpdir(), 'agent-ledger-claude-e2e-'))
})

afterAll(async () => {
  await api.close()
  rmSync(home, { recursive: true, force: true })
})

function options(sessionStore: SdkSessionStore, extra: Partial<Options> = {}): Options {
  return {
    cwd: home,
    sessionStore,
    model: 'claude-sonnet-4-5',
    maxTurns: 1,
    tools: [],
    settingSources: [],
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: home,
      CLAUDE_CONFIG_DIR: join(home, '.claude'),
      ANTHROPIC_BASE_URL: api.url,
      ANTHROPIC_API_KEY: 'offline-test-key',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_AUTOUPDATER: '1',
    },
    ...extra,
  }
}

async function run(prompt: string, opts: Options): Promise<SDKMessage[]> {
  const messages: SDKMessage[] = []
  for await (const message of query({ prompt, options: opts })) messages.push(message)
  return messages
}

/** The CLI's local transcript of a session (under CLAUDE_CONFIG_DIR/projects). */
function localTranscript(sessionId: string): { projectKey: string; entries: unknown[] } {
  const projects = join(home, '.claude', 'projects')
  for (const projectKey of readdirSync(projects)) {
    const file = join(projects, projectKey, `${sessionId}.jsonl`)
    try {
      const text = readFileSync(file, 'utf8')
      return {
        projectKey,
        entries: text
          .split('\n')
          .filter((line) => line !== '')
          .map((line) => JSON.parse(line) as unknown),
      }
    } catch {
      continue
    }
  }
  throw new Error(`no local transcript of ${sessionId} under ${projects}`)
}

it(
  'query() mirrors the CLI transcript into the store, and resumes from it with the local copy gone',
  async () => {
    const root = mkdtempSync(join(tmpdir(), 'agent-ledger-claude-e2e-store-'))
    const store = createJsonlStore({ root })
    const claude = createClaudeSessionStore(store)
    const first = await run('say hello', options(claude))
    const result = first.find((message) => message.type === 'result')
    expect(result).toMatchObject({ subtype: 'success' })
    const sessionId = result!.session_id
    expect(first.some((message) => message.type === 'system' && message.subtype === 'mirror_error')).toBe(
      false,
    )

    const local = localTranscript(sessionId)
    // The CLI mirrors every local line but its request records (api-request, -shape, -blob).
    const mirrorable = local.entries.filter(
      (entry) => !String((entry as { type: unknown }).type).startsWith('api-request'),
    )
    expect(mirrorable.length).toBeLessThan(local.entries.length)
    expect(await claude.load({ projectKey: local.projectKey, sessionId })).toStrictEqual(mirrorable)
    expect((await claude.listSessions(local.projectKey)).map((session) => session.sessionId)).toStrictEqual([
      sessionId,
    ])
    expect(
      (await store.verify(claude.sessionIdFor({ projectKey: local.projectKey, sessionId }))).status,
    ).toBe('ok')

    // Resume on a "fresh host": no local transcript, only the store.
    rmSync(join(home, '.claude', 'projects'), { recursive: true, force: true })
    const before = api.requests.length
    const second = await run('again', options(claude, { resume: sessionId }))
    expect(second.find((message) => message.type === 'result')).toMatchObject({ subtype: 'success' })
    const resumed = api.requests.slice(before).join('\n')
    expect(resumed).toContain('say hello')
    expect(resumed).toContain('Hello offline.')
    expect(resumed).toContain('again')
    const entries = await claude.load({ projectKey: local.projectKey, sessionId })
    expect(entries!.length).toBeGreaterThan(mirrorable.length)
    expect(entries!.slice(0, mirrorable.length)).toStrictEqual(mirrorable)
    await claude.close()
    await store.close()
    rmSync(root, { recursive: true, force: true })
  },
  testTime(240_000),
)

it(
  'a store whose backend fails every append does not fail the turn: the SDK reports mirror_error',
  async () => {
    const backend = createMemoryBackend()
    const failing = new Proxy(backend, {
      get(target, property) {
        if (property === 'append' || property === 'create') {
          return () =>
            Promise.reject(new SessionStoreError({ code: 'DISK_FULL', message: 'injected: no space left' }))
        }
        const value: unknown = Reflect.get(target, property)
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
      },
    })
    const store = createSessionStore({ backend: failing, clock: () => new Date().toISOString() })
    const claude = createClaudeSessionStore(store)
    const messages = await run('say hello', options(claude))
    expect(messages.find((message) => message.type === 'result')).toMatchObject({ subtype: 'success' })
    const mirrorErrors = messages.filter(
      (message) => message.type === 'system' && message.subtype === 'mirror_error',
    )
    expect(mirrorErrors.length).toBeGreaterThan(0)
    expect(JSON.stringify(mirrorErrors[0])).toContain('no space left')
    await claude.close()
    await store.close()
  },
  testTime(240_000),
)
