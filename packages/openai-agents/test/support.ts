import { spawn } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

import type { LoggedEvent } from '@agent-ledger/session-events'
import { Usage } from '@openai/agents-core'
import type { AgentOutputItem, Model, ModelRequest, ModelResponse, StreamEvent } from '@openai/agents-core'

import type { LedgerStore } from '../src/index.ts'

/** A fresh store root in the OS temp directory. */
export function tempRoot(): string {
  return mkdtempSync(join(tmpdir(), 'agent-ledger-agents-'))
}

/** Every event of a session, in seq order. */
export async function allEvents(store: LedgerStore, id: string): Promise<LoggedEvent[]> {
  const events: LoggedEvent[] = []
  for await (const event of store.readEvents(id)) events.push(event)
  return events
}

/** A scripted `Model`: answers each request with the next response and records every request. */
export class ScriptedModel implements Model {
  readonly requests: ModelRequest[] = []
  readonly #responses: AgentOutputItem[][]

  constructor(responses: AgentOutputItem[][]) {
    this.#responses = [...responses]
  }

  getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(structuredClone(request))
    const output = this.#responses.shift()
    if (output === undefined)
      throw new Error(`ScriptedModel: no response left for request ${this.requests.length}`)
    return Promise.resolve({
      usage: new Usage({ requests: 1, inputTokens: 10, outputTokens: 4, totalTokens: 14 }),
      output,
    })
  }

  /** Streams the next response: `response_started`, a text delta per output text, `response_done`. */
  async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    const response = await this.getResponse(request)
    yield { type: 'response_started' }
    for (const item of response.output) {
      if (item.type === 'message' && item.role === 'assistant') {
        for (const part of item.content)
          if (part.type === 'output_text') yield { type: 'output_text_delta', delta: part.text }
      }
    }
    yield {
      type: 'response_done',
      response: {
        id: `response-${this.requests.length}`,
        usage: { requests: 1, inputTokens: 10, outputTokens: 4, totalTokens: 14 },
        // The stream event's output type is narrower than AgentOutputItem; the scripted items fit it.
        output: response.output as Extract<StreamEvent, { type: 'response_done' }>['response']['output'],
      },
    }
  }
}

/** An assistant text message item. */
export function say(text: string): AgentOutputItem {
  return { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }
}

/** A function call item. */
export function call(callId: string, name: string, input: unknown): AgentOutputItem {
  return { type: 'function_call', callId, name, arguments: JSON.stringify(input), status: 'completed' }
}

const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
/**
 * Under tooling/frameworks-next.ts, children resolve the framework to the copy under test,
 * as the test process does through its vitest aliases.
 */
const frameworkAliases =
  (process.env['AGENT_LEDGER_FRAMEWORK_ALIASES'] ?? '') === ''
    ? []
    : ['--import', new URL('../../../tooling/next/framework-aliases.mjs', import.meta.url).href]

/** Runs a TypeScript child in one node process (so SIGKILL hits the process holding the files). */
export function spawnTsChild(script: string, args: readonly string[]) {
  const child = spawn(
    process.execPath,
    [
      '--conditions=@agent-ledger/source',
      ...frameworkAliases,
      '--import',
      tsxLoader,
      fileURLToPath(new URL(script, import.meta.url)),
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  )
  const waitFor = (marker: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        if (stdout.includes(marker)) resolve()
      }
      child.stdout.on('data', check)
      check()
      void exited.then(({ code, signal }) => {
        if (!stdout.includes(marker))
          reject(new Error(`child exited (${code ?? signal}) before "${marker}": ${stderr}`))
      })
    })
  return { child, exited, waitFor }
}
