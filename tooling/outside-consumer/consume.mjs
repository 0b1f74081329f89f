// Runs in a fresh project outside the workspace, against the packed tarballs.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { planRepair, RepairCode, validateProviderMessages } from '@agent-ledger/loop-repair'
import { parseEvent, SESSION_FORMAT_VERSION } from '@agent-ledger/session-events'
import { createSessionLog } from '@agent-ledger/session-projection'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { createMemoryBackend, createSessionStore, SessionStoreError } from '@agent-ledger/session-store'
import { decodeLine, LOG_FILE_NAME } from '@agent-ledger/session-store-jsonl/format'
import * as cli from '@agent-ledger/cli'
import { importSource } from '@agent-ledger/import'
import { describeConnection, openPostgresBackend, SCHEMA_VERSION } from '@agent-ledger/session-store-postgres'
import { fromModelMessages, openAiSdkSession, toModelMessages } from '@agent-ledger/ai-sdk'
import { openAgentsSession } from '@agent-ledger/openai-agents'
import { createClaudeSessionStore } from '@agent-ledger/claude-agent-sdk'

function check(condition, message) {
  if (!condition) throw new Error(`outside-consumer: ${message}`)
}

check(SESSION_FORMAT_VERSION === 4, 'SESSION_FORMAT_VERSION is 4')
const event = parseEvent({ seq: 0, time: '2026-01-01T00:00:00.000Z', type: 'turn/start', data: { turn: 1 } })
check(event.type === 'turn/start', 'parseEvent returns the event')

let tick = 0
const clock = { now: () => new Date(Date.UTC(2026, 0, 1, 0, 0, tick++)).toISOString() }
const log = createSessionLog({ clock })
log.append({ type: 'turn/start', data: { turn: 1 } })
log.append({ type: 'user/message', data: { message: { role: 'user', content: 'list files' } } })
log.append({
  type: 'assistant/message',
  data: {
    message: {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call-1', type: 'function', function: { name: 'ls', arguments: '{}' } }],
    },
  },
})
log.append({ type: 'tool/call', data: { callId: 'call-1', name: 'ls', arguments: '{}' } })
const plan = planRepair(log.events)
check(plan.actions[0]?.code === RepairCode.TOOL_OUTCOME_UNKNOWN, 'repair plans TOOL_OUTCOME_UNKNOWN')
for (const { seq: _seq, time: _time, ...closing } of plan.events) log.append(closing)
check(
  validateProviderMessages(log.deriveMessages()).length === 0,
  'the repaired projection is provider-valid',
)

const root = mkdtempSync(join(tmpdir(), 'agent-ledger-consumer-store-'))
try {
  // The one store API: the session core over the JSONL backend.
  const store = createJsonlStore({ root })
  const writer = await store.create({ id: 'consumer-1' })
  writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'hello' } } })
  await writer.flush()
  await writer.close()
  const read = await store.openReader('consumer-1')
  check(read.lastSeq === 0, `the store reads back what it wrote (lastSeq ${read.lastSeq})`)
  check(read.projection.deriveMessages()[0]?.content === 'hello', 'the store projects the message')
  // The /format subpath: the line codec reads the store's own file.
  const lines = readFileSync(join(root, 'consumer-1', LOG_FILE_NAME))
    .toString('utf8')
    .split('\n')
  check(
    decodeLine(Buffer.from(lines[1], 'utf8'), { maxLineBytes: 1 << 20, maxDepth: 64 }).ok === true,
    'the /format line codec decodes an event line',
  )
  const files = await store.backend.capabilities.files.sessionFiles('consumer-1')
  check(files.current === `consumer-1/${LOG_FILE_NAME}`, 'the files capability names the current log')
  try {
    await store.openReader('../escape')
    check(false, 'a traversal id is refused')
  } catch (error) {
    check(SessionStoreError.is(error, 'INVALID_SESSION_ID'), 'a traversal id gives INVALID_SESSION_ID')
  }

  // The adapters, over the same store, beside their frameworks installed from the registry.
  const wire = fromModelMessages([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }])
  check(toModelMessages(wire.map((entry) => entry.message))[0]?.role === 'user', 'ai-sdk converts messages')
  const chat = await openAiSdkSession(store, 'consumer-ai-sdk', { system: 'be brief' })
  chat.beginTurn('hello')
  await chat.endTurn()
  check(
    chat.prompt().system === 'be brief' && chat.prompt().messages.length === 1,
    'ai-sdk derives the prompt',
  )
  await chat.close()
  const agents = await openAgentsSession(store, 'consumer-agents')
  await agents.addItems([{ type: 'message', role: 'user', content: 'hi' }])
  check((await agents.popItem())?.content === 'hi', 'openai-agents pops the item')
  check((await agents.getItems()).length === 0, 'openai-agents hides the popped item')
  await agents.close()

  // The adapters over the backend-neutral core (here its memory backend; PostgreSQL is the same API).
  const core = createSessionStore({ backend: createMemoryBackend(), clock: () => new Date().toISOString() })
  const coreChat = await openAiSdkSession(core, 'core-ai-sdk', { system: 'be brief' })
  coreChat.beginTurn('hello')
  await coreChat.endTurn()
  check(coreChat.prompt().messages.length === 1, 'ai-sdk runs over the core store')
  await coreChat.close()
  const coreAgents = await openAgentsSession(core, 'core-agents')
  await coreAgents.addItems([{ type: 'message', role: 'user', content: 'hi' }])
  check((await coreAgents.getItems()).length === 1, 'openai-agents runs over the core store')
  await coreAgents.close()
  const coreTypes = []
  for await (const stored of core.readEvents('core-ai-sdk')) coreTypes.push(stored.type)
  check(
    coreTypes.join(' ') === 'system/message turn/start user/message turn/end',
    `the core store holds the ai-sdk turn (${coreTypes.join(' ')})`,
  )
  await core.close()
  await store.close()
} finally {
  rmSync(root, { recursive: true, force: true })
}
{
  const claude = createClaudeSessionStore(
    createSessionStore({ backend: createMemoryBackend(), clock: clock.now }),
  )
  const key = { projectKey: 'consumer', sessionId: 'c-1', subpath: 'subagents/agent-1' }
  await claude.append(key, [{ type: 'user', uuid: 'u1', message: { role: 'user', content: 'hi' } }])
  check((await claude.load(key))?.[0]?.uuid === 'u1', 'claude-agent-sdk loads what it appended')
  check((await claude.listSubkeys(key))[0] === 'subagents/agent-1', 'claude-agent-sdk lists the subkey')
  await claude.close()
}
check(typeof cli.runCli === 'function', 'the cli exports runCli')

const rollout = [
  {
    timestamp: '2026-01-01T00:00:00.000Z',
    type: 'session_meta',
    payload: { id: 'r-1', cli_version: '0.1.0' },
  },
  {
    timestamp: '2026-01-01T00:00:01.000Z',
    type: 'response_item',
    payload: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] },
  },
].map((line) => JSON.stringify(line))
const imported = await importSource(
  (async function* () {
    yield* rollout
  })(),
  { file: 'rollout.jsonl', sha256: '0'.repeat(64) },
)
check(imported.sessions[0]?.id === 'codex-r-1', 'importSource imports a Codex rollout')
check(SCHEMA_VERSION >= 1, 'the postgres backend has a schema version')
check(describeConnection('postgres://u:pw@h:5/db') === 'u@h:5/db', 'describeConnection drops the password')
try {
  await openPostgresBackend({ connectionString: 'postgres://u:pw@127.0.0.1:1/db', connectTimeoutMs: 2000 })
  check(false, 'an unreachable postgres server is refused')
} catch (error) {
  check(
    error?.code === 'BACKEND_FAILED' && error.details?.reason === 'CONNECTION_FAILED',
    `an unreachable postgres server gives CONNECTION_FAILED (${error?.message})`,
  )
}
console.log('outside-consumer: ok')
