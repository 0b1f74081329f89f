/**
 * The chaos worker of `@agent-ledger/claude-agent-sdk`: ONE child process that runs its
 * sessions through the real Claude Agent SDK (`query()`, which starts the SDK's bundled CLI)
 * against a scripted Anthropic Messages API on loopback in this process (no network; a dummy
 * key), with our store as the SDK's `sessionStore`. The journaled tools are in-process MCP
 * tools (`createSdkMcpServer`, `tool`). Its line protocol and faults are the other worker's
 * (`worker-kit.ts`).
 *
 * Write-ahead (the default here): `sessionStoreFlush: 'eager'`, and each tool waits until the
 * store has acknowledged (durably appended) the assistant entry holding its `tool_use` before
 * it journals `started` and does its side effect, so a resumed session always knows the call
 * was made. `sdkDefaults` runs the SDK's defaults instead (batched mirroring at the end of a
 * turn, tools run at once): the comparison `test/claude.crash.test.ts` keeps.
 *
 * A stopped worker's first append after a takeover rejects (`FENCED`, or `SESSION_LOCKED`):
 * the SDK would report `mirror_error` and let the turn go on, so the worker aborts the query
 * and reports the store's error instead.
 */
import { mkdirSync, realpathSync } from 'node:fs'
import { createServer } from 'node:http'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { dirname, join } from 'node:path'

import { createClaudeSessionStore } from '@agent-ledger/claude-agent-sdk'
import type { SessionStore, SessionWriter } from '@agent-ledger/session-store'
import { createSdkMcpServer, query, tool } from '@anthropic-ai/claude-agent-sdk'
import type { Options, SessionKey, SessionStore as SdkSessionStore } from '@anthropic-ai/claude-agent-sdk'
import { z } from 'zod'

import { claudeKey } from './claude-key.ts'
import { DONE_TEXT, nextStep } from './plan.ts'
import type { ToolName } from './plan.ts'
import {
  atFault,
  beginResume,
  config,
  faultHere,
  modelRequestReady,
  openLeased,
  openStore,
  owner,
  respond,
  runSessions,
  runTool,
  say,
} from './worker-kit.ts'

const TOOLS: readonly ToolName[] = ['write_record', 'send_notice']
/** The MCP server's name: the CLI calls its tools `mcp__chaos__<tool>`. */
const SERVER = 'chaos'
const MODEL = 'claude-sonnet-4-5'
const writeAhead = config.sdkDefaults !== true

/** The CLI's working directory (the round's effects directory: the driver derives the same key). */
const cwd = realpathSync(config.effectsDir)
/** The CLI's own config and local transcripts: this process's alone, so a resume reads the store. */
const configDir = join(dirname(config.journalDir), `claude-${config.name}`)
mkdirSync(configDir, { recursive: true })

/** The session this process runs now (one at a time), and what its store said. */
let current = ''
let writer: SessionWriter | undefined
/** `tool_use` ids whose assistant entry the store acknowledged. */
const acked = new Set<string>()
/** The store's first refusal in the current session; the query is aborted. */
let failure: Error | undefined
/** Read through a call: a closure sets it while a query runs (no narrowing from the reset). */
const refusal = (): Error | undefined => failure
let abort = new AbortController()
/** Tools waiting for their `tool_use` to be acknowledged (or for a refusal). */
let waiters: (() => void)[] = []
const wake = (): void => {
  const woken = waiters
  waiters = []
  for (const resolve of woken) resolve()
}

/** The core store, its writers opened as the other worker opens them (a dead holder's lease taken over). */
function leasedStore(core: SessionStore): SessionStore {
  return new Proxy(core, {
    get(target, property) {
      if (property === 'openWriter')
        return async (id: string, options: Parameters<SessionStore['openWriter']>[1]) => {
          const { opened } = await openLeased((takeover) =>
            target.openWriter(id, { ...options, takeover: takeover || options?.takeover === true }),
          )
          return (writer = opened)
        }
      if (property === 'create')
        return async (request: Parameters<SessionStore['create']>[0]) =>
          (writer = await target.create(request))
      const value: unknown = Reflect.get(target, property)
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    },
  })
}

const core = await openStore()
const claude = createClaudeSessionStore(leasedStore(core), { owner, leaseMs: config.leaseMs })

/** `tool_use` ids in transcript entries (assistant entries' content blocks). */
function toolUseIds(entries: readonly unknown[]): string[] {
  return entries.flatMap((entry) => {
    const { type, message } = entry as { type?: unknown; message?: { content?: unknown } }
    if (type !== 'assistant' || !Array.isArray(message?.content)) return []
    return (message.content as { type?: unknown; id?: unknown }[]).flatMap((block) =>
      block.type === 'tool_use' && typeof block.id === 'string' ? [block.id] : [],
    )
  })
}

/** The SDK's view of our store: appends report `ACK` and release the tools waiting on them; a refusal aborts the turn. */
const mirror: SdkSessionStore = {
  append: async (key, entries) => {
    try {
      await claude.append(key, entries)
    } catch (error) {
      failure ??= error instanceof Error ? error : new Error(String(error))
      abort.abort()
      wake()
      throw error
    }
    for (const id of toolUseIds(entries)) acked.add(id)
    if (writer !== undefined) say(`ACK ${current} ${writer.durableSeq}`)
    wake()
  },
  load: (key) => claude.load(key),
  listSubkeys: (key) => claude.listSubkeys(key),
  listSessions: (projectKey) => claude.listSessions(projectKey),
  listSessionSummaries: (projectKey) => claude.listSessionSummaries(projectKey),
  delete: (key) => claude.delete(key),
}

/** Write-ahead: resolves once the store acknowledged the entry of `callId`'s `tool_use`; rejects after a refusal. */
async function toolUseAcked(callId: string): Promise<void> {
  while (!acked.has(callId)) {
    if (failure !== undefined) throw new Error(`the store refused the transcript before ${callId} ran`)
    await new Promise<void>((resolve) => waiters.push(resolve))
  }
}

const tools = createSdkMcpServer({
  name: SERVER,
  tools: TOOLS.map((name) =>
    tool(name, `Does ${name}`, { ref: z.string() }, async ({ ref }) => {
      if (writeAhead) await toolUseAcked(ref)
      return { content: [{ type: 'text' as const, text: await runTool(current, ref, name) }] }
    }),
  ),
})

/** The scripted model's reply to one request body: the next plan step's `tool_use`s, or the final answer. */
async function reply(body: string): Promise<{ blocks: Record<string, unknown>[]; stop: string }> {
  const request = JSON.parse(body) as {
    tools?: { name?: string }[]
    messages?: { role: string; content: unknown }[]
  }
  // A request without the chaos tools is the CLI's own (a title, a check): a plain answer.
  if (!(request.tools ?? []).some((entry) => entry.name?.startsWith(`mcp__${SERVER}__`) === true))
    return { blocks: [{ type: 'text', text: 'ok' }], stop: 'end_turn' }
  const ids = (request.messages ?? []).flatMap((message) =>
    message.role === 'assistant' && Array.isArray(message.content)
      ? (message.content as { type?: string; id?: string }[]).flatMap((block) =>
          block.type === 'tool_use' && block.id !== undefined ? [block.id] : [],
        )
      : [],
  )
  modelRequestReady(current)
  if (faultHere('model', current, nextStep(current, ids))) await atFault('model', current)
  const next = respond(current, ids)
  if (next === null) return { blocks: [{ type: 'text', text: DONE_TEXT }], stop: 'end_turn' }
  return {
    blocks: next.map((call) => ({
      type: 'tool_use',
      id: call.id,
      name: `mcp__${SERVER}__${call.tool}`,
      input: { ref: call.id },
    })),
    stop: 'tool_use',
  }
}

/** `POST /v1/messages` (streamed or not); `count_tokens` answered; anything else 404. */
async function serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
  let body = ''
  for await (const chunk of request) body += String(chunk)
  const url = request.url ?? ''
  if (request.method !== 'POST' || !url.startsWith('/v1/messages')) {
    response.writeHead(404, { 'content-type': 'application/json' })
    response.end('{"type":"error","error":{"type":"not_found_error","message":"not scripted"}}')
    return
  }
  if (url.includes('count_tokens')) {
    response.writeHead(200, { 'content-type': 'application/json' })
    response.end('{"input_tokens":10}')
    return
  }
  const { blocks, stop } = await reply(body)
  const message = {
    id: `msg_${Date.now().toString(36)}`,
    type: 'message',
    role: 'assistant',
    model: MODEL,
    content: [] as unknown[],
    stop_reason: null as string | null,
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 5 },
  }
  if (!body.includes('"stream":true')) {
    response.writeHead(200, { 'content-type': 'application/json' })
    response.end(JSON.stringify({ ...message, content: blocks, stop_reason: stop }))
    return
  }
  response.writeHead(200, { 'content-type': 'text/event-stream' })
  const send = (event: string, data: Record<string, unknown>): void =>
    void response.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`)
  send('message_start', { message })
  blocks.forEach((block, index) => {
    if (block['type'] === 'text') {
      send('content_block_start', { index, content_block: { type: 'text', text: '' } })
      send('content_block_delta', { index, delta: { type: 'text_delta', text: block['text'] } })
    } else {
      send('content_block_start', { index, content_block: { ...block, input: {} } })
      send('content_block_delta', {
        index,
        delta: { type: 'input_json_delta', partial_json: JSON.stringify(block['input']) },
      })
    }
    send('content_block_stop', { index })
  })
  send('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } })
  send('message_stop', {})
  response.end()
}

const server = createServer((request, response) => {
  serve(request, response).catch((error: unknown) => {
    response.writeHead(500, { 'content-type': 'application/json' })
    response.end(JSON.stringify({ type: 'error', error: { type: 'api_error', message: String(error) } }))
  })
})
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
const apiUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`

/** Whether a transcript's last conversation entry is the final answer. */
function transcriptDone(entries: readonly unknown[]): boolean {
  const last = entries.findLast((entry) => {
    const { type } = entry as { type?: unknown }
    return type === 'user' || type === 'assistant'
  }) as { type: string; message?: { content?: unknown } } | undefined
  if (last?.type !== 'assistant' || !Array.isArray(last.message?.content)) return false
  return (last.message.content as { type?: string; text?: string }[]).some(
    (block) => block.type === 'text' && block.text === DONE_TEXT,
  )
}

function options(key: SessionKey, resume: boolean): Options {
  return {
    cwd,
    model: MODEL,
    maxTurns: 14,
    tools: [],
    mcpServers: { [SERVER]: tools },
    allowedTools: TOOLS.map((name) => `mcp__${SERVER}__${name}`),
    settingSources: [],
    sessionStore: mirror,
    ...(writeAhead ? { sessionStoreFlush: 'eager' as const } : {}),
    ...(resume ? { resume: key.sessionId } : { sessionId: key.sessionId }),
    abortController: abort,
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: configDir,
      CLAUDE_CONFIG_DIR: configDir,
      ANTHROPIC_BASE_URL: apiUrl,
      ANTHROPIC_API_KEY: 'offline-chaos-key',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_AUTOUPDATER: '1',
    },
  }
}

/** One session: loaded from the store (a resume when an earlier worker wrote it), then one `query()` turn. */
async function runClaude(id: string): Promise<void> {
  current = id
  writer = undefined
  failure = undefined
  abort = new AbortController()
  const key = claudeKey(cwd, id)
  const started = performance.now()
  const entries = await claude.load(key)
  say(`OPENED ${id}`)
  beginResume(id, started, entries?.length ?? 0)
  if (entries !== null && transcriptDone(entries)) return
  const prompt = entries === null ? `Run the plan of ${id}.` : 'Continue.'
  let result: { subtype: string } | undefined
  try {
    for await (const message of query({ prompt, options: options(key, entries !== null) }))
      if (message.type === 'result') result = message
  } catch (error) {
    if (refusal() === undefined) throw error
  }
  const refused = refusal()
  if (refused !== undefined) throw refused
  if (result?.subtype !== 'success')
    throw new Error(`session ${id}: expected a successful turn, found ${result?.subtype ?? 'no result'}`)
}

await runSessions(
  {
    close: async () => {
      await claude.close()
      await core.close()
      server.close()
    },
  },
  runClaude,
)
