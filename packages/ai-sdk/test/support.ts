import { spawn } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

import type { LoggedEvent } from '@agent-ledger/session-events'
import type { MockLanguageModelV3 } from 'ai/test'

import type { LedgerStore } from '../src/index.ts'

type LanguageModelV3GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>

/** A fresh store root in the OS temp directory. */
export function tempRoot(): string {
  return mkdtempSync(join(tmpdir(), 'agent-ledger-ai-sdk-'))
}

/** Every event of a session, in seq order. */
export async function allEvents(store: LedgerStore, id: string): Promise<LoggedEvent[]> {
  const events: LoggedEvent[] = []
  for await (const event of store.readEvents(id)) events.push(event)
  return events
}

const usage = (input: number, output: number): LanguageModelV3GenerateResult['usage'] => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
})

/** A model response that calls one tool. */
export function toolCallResponse(call: {
  id: string
  name: string
  input: unknown
}): LanguageModelV3GenerateResult {
  return {
    content: [
      { type: 'text', text: `Calling ${call.name}.` },
      { type: 'tool-call', toolCallId: call.id, toolName: call.name, input: JSON.stringify(call.input) },
    ],
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage: usage(10, 5),
    warnings: [],
  }
}

/** A model response with text only. */
export function textResponse(text: string): LanguageModelV3GenerateResult {
  return {
    content: [{ type: 'text', text }],
    finishReason: { unified: 'stop', raw: 'stop' },
    usage: usage(20, 3),
    warnings: [],
  }
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
  /** Resolves when stdout holds `marker`; rejects when the child exits first. */
  const waitFor = (marker: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        if (stdout.includes(marker)) {
          child.stdout.off('data', check)
          resolve()
        }
      }
      child.stdout.on('data', check)
      check()
      void exited.then(({ code, signal }) => {
        if (!stdout.includes(marker))
          reject(new Error(`child exited (${code ?? signal}) before "${marker}": ${stderr}`))
      })
    })
  return { child, exited, waitFor, output: () => ({ stdout, stderr }) }
}
