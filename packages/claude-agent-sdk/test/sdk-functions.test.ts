/**
 * The SDK's own functions driving the store, offline (no model, no CLI process):
 * `importSessionToStore` mirrors a local transcript into it, `getSessionMessages`,
 * `listSessions` and `deleteSession` read and delete through it. Then the agent-ledger side:
 * the mirrored session verifies, and `agent-ledger export`, `stats` and `verify` read it.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import {
  deleteSession,
  getSessionMessages,
  importSessionToStore,
  listSessions,
} from '@anthropic-ai/claude-agent-sdk'
import { runCli } from '@agent-ledger/cli'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { afterAll, beforeAll, expect, it } from 'vitest'

import { createClaudeSessionStore } from '../src/index.ts'

// A Claude Code transcript with branches (the importer's fixture): the mirror keeps every record.
const FIXTURE = fileURLToPath(
  new URL('../../import/test/fixtures/claude-code/branches.jsonl', import.meta.url),
)
const SESSION = '0b7c1a52-1111-4a2b-9c3d-5e6f7a8b9c0d'

let home: string
const saved = process.env['CLAUDE_CONFIG_DIR']

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), 'agent-ledger-claude-home-'))
  process.env['CLAUDE_CONFIG_DIR'] = home
})

afterAll(() => {
  if (saved === undefined) delete process.env['CLAUDE_CONFIG_DIR']
  else process.env['CLAUDE_CONFIG_DIR'] = saved
  rmSync(home, { recursive: true, force: true })
})

async function cli(argv: string[]): Promise<{ code: number; out: string }> {
  let out = ''
  const code = await runCli(argv, {
    stdout: (text) => {
      out += text
    },
    stderr: (text) => {
      out += text
    },
  })
  return { code, out }
}

it('importSessionToStore mirrors a CLI transcript; the SDK reads, lists and deletes it through the store', async () => {
  const text = readFileSync(FIXTURE, 'utf8')
  const records = text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>)
  const cwd = String(records.find((record) => typeof record['cwd'] === 'string')!['cwd'])
  const projectDir = join(home, 'projects', cwd.replace(/[^A-Za-z0-9]/g, '-'))
  mkdirSync(projectDir, { recursive: true })
  writeFileSync(join(projectDir, `${SESSION}.jsonl`), text)

  const root = mkdtempSync(join(tmpdir(), 'agent-ledger-claude-sdk-'))
  const store = createJsonlStore({ root })
  const claude = createClaudeSessionStore(store)
  await importSessionToStore(SESSION, claude, { dir: cwd, batchSize: 4 })
  const projectKey = cwd.replace(/[^A-Za-z0-9]/g, '-')
  const key = { projectKey, sessionId: SESSION }
  // The fixture repeats one uuid: the SDK's idempotency key keeps the first record that has it.
  const firstOfEachUuid = records.filter(
    (record, index) =>
      typeof record['uuid'] !== 'string' ||
      records.findIndex((other) => other['uuid'] === record['uuid']) === index,
  )
  expect(firstOfEachUuid.length).toBe(records.length - 1)
  expect(await claude.load(key)).toStrictEqual(firstOfEachUuid)

  // A replay of the import (the SDK's documented idempotency) adds nothing with a uuid.
  await importSessionToStore(SESSION, claude, { dir: cwd })
  const withoutUuid = records.filter((record) => typeof record['uuid'] !== 'string')
  expect(await claude.load(key)).toStrictEqual([...firstOfEachUuid, ...withoutUuid])

  // The SDK reads through the store once the local copy is gone.
  rmSync(join(home, 'projects'), { recursive: true, force: true })
  const messages = await getSessionMessages(SESSION, { dir: cwd, sessionStore: claude })
  expect(messages.length).toBeGreaterThan(0)
  expect(messages.every((message) => message.session_id === SESSION)).toBe(true)
  const listed = await listSessions({ dir: cwd, sessionStore: claude })
  expect(listed.map((session) => session.sessionId)).toStrictEqual([SESSION])

  // agent-ledger reads the mirrored session.
  const id = claude.sessionIdFor(key)
  expect(await store.verify(id)).toMatchObject({ status: 'ok' })
  await claude.close()
  await store.close()
  const exported = await cli(['export', id, '--format', 'md', '--source-records', '--store', root])
  expect(exported.code).toBe(0)
  for (const record of records) expect(exported.out).toContain(String(record['uuid'] ?? record['type']))
  // The conversation is mapped from the entries: the transcript before its branch switch (line 13).
  const conversation = await cli(['export', id, '--format', 'md', '--store', root])
  expect(conversation.code).toBe(0)
  for (const said of ['list files', 'Two files and a readme.']) {
    expect(conversation.out).toContain(said)
  }
  const stats = await cli(['stats', id, '--store', root, '--json'])
  expect(stats.code).toBe(0)
  expect((JSON.parse(stats.out) as { events: number }).events).toBeGreaterThan(
    firstOfEachUuid.length + withoutUuid.length,
  )
  expect((await cli(['verify', id, '--store', root])).code).toBe(0)

  // deleteSession goes through the store's delete.
  const again = createClaudeSessionStore(createJsonlStore({ root }))
  await deleteSession(SESSION, { dir: cwd, sessionStore: again })
  expect(await again.load(key)).toBeNull()
  expect(await listSessions({ dir: cwd, sessionStore: again })).toStrictEqual([])
  await again.close()
  rmSync(root, { recursive: true, force: true })
})
