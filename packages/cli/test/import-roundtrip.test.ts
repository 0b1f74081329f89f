/**
 * import -> export openai -> compare with the source's own messages, for the shared Claude
 * Code and Codex recordings. The expected messages are read from the source files here, by a
 * reader written from the mapping table of the project guide (IMPORT-FORMATS.md), not by the
 * importer.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { cli, makeRoot } from './support/sessions.ts'

const shared = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  '..',
  '..',
  'shared',
  'fixtures',
  'import',
)
const available = ((): boolean => {
  if (existsSync(shared)) return true
  if (process.env['CI'] === 'true') throw new Error(`shared import fixtures missing at ${shared}`)
  console.log(`skipping the round-trip tests: ${shared} does not exist`)
  return false
})()

type Json = Record<string, unknown>
type Message = Record<string, unknown>

function records(path: string): Json[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Json)
}

function texts(content: unknown): string[] {
  if (typeof content === 'string') return [content]
  return (content as Json[])
    .filter((part) => typeof part['text'] === 'string')
    .map((part) => part['text'] as string)
}

/** The conversation of a linear Claude Code transcript, as its records state it. */
function claudeMessages(lines: readonly Json[]): Message[] {
  const out: Message[] = []
  let assistant: { id: string; text: string[]; calls: Json[] } | null = null
  let results: Json[] = []
  const flush = (): void => {
    if (assistant !== null) {
      const message: Message = {
        role: 'assistant',
        content: assistant.text.length > 0 ? assistant.text.join('\n') : null,
      }
      if (assistant.calls.length > 0) message['tool_calls'] = assistant.calls
      out.push(message)
      // Results in the order of the calls they answer.
      for (const call of assistant.calls) {
        const result = results.find((item) => item['tool_use_id'] === call['id'])
        if (result !== undefined)
          out.push({ role: 'tool', tool_call_id: call['id'], content: texts(result['content']).join('\n') })
      }
    }
    assistant = null
    results = []
  }
  for (const record of lines) {
    const message = record['message'] as Json | undefined
    if (message === undefined || record['isMeta'] === true) continue
    if (record['type'] === 'assistant') {
      if (assistant !== null && assistant.id !== message['id']) flush()
      assistant ??= { id: message['id'] as string, text: [], calls: [] }
      for (const block of message['content'] as Json[]) {
        if (block['type'] === 'text' && (block['text'] as string).trim() !== '')
          assistant.text.push(block['text'] as string)
        if (block['type'] === 'tool_use')
          assistant.calls.push({
            id: block['id'],
            type: 'function',
            function: { name: block['name'], arguments: JSON.stringify(block['input']) },
          })
      }
      continue
    }
    const content = message['content']
    const blocks = typeof content === 'string' ? [] : (content as Json[])
    if (blocks.some((block) => block['type'] === 'tool_result')) {
      results.push(...blocks)
      continue
    }
    const text = texts(content).join('\n')
    if (text.startsWith('<command-') || text.startsWith('<local-command-')) continue
    flush()
    out.push({ role: 'user', content: text })
  }
  flush()
  return out
}

/** The conversation of a Codex rollout, as its response items state it. */
function codexMessages(lines: readonly Json[]): Message[] {
  const out: Message[] = []
  let assistant: { text: string[]; calls: Json[] } | null = null
  const flush = (): void => {
    if (assistant === null) return
    const message: Message = {
      role: 'assistant',
      content: assistant.text.length > 0 ? assistant.text.join('\n') : null,
    }
    if (assistant.calls.length > 0) message['tool_calls'] = assistant.calls
    out.push(message)
    assistant = null
  }
  for (const line of lines) {
    const payload = line['payload'] as Json
    if (line['type'] === 'session_meta') {
      out.push({ role: 'system', content: (payload['base_instructions'] as Json)['text'] })
      continue
    }
    if (line['type'] !== 'response_item') continue
    if (payload['type'] === 'message' && payload['role'] !== 'assistant') {
      flush()
      const text = texts(payload['content']).join('\n')
      out.push(
        payload['role'] === 'developer'
          ? { role: 'system', content: text, name: 'developer' }
          : { role: 'user', content: text },
      )
    } else if (payload['type'] === 'message') {
      assistant ??= { text: [], calls: [] }
      assistant.text.push(...texts(payload['content']))
    } else if (payload['type'] === 'function_call') {
      assistant ??= { text: [], calls: [] }
      assistant.calls.push({
        id: payload['call_id'],
        type: 'function',
        function: { name: payload['name'], arguments: payload['arguments'] },
      })
    } else if (payload['type'] === 'function_call_output') {
      flush()
      out.push({ role: 'tool', tool_call_id: payload['call_id'], content: payload['output'] })
    }
  }
  flush()
  return out
}

let root: string
let cleanup: () => void
beforeEach(() => {
  ;({ root, cleanup } = makeRoot('al-roundtrip-'))
})
afterEach(() => cleanup())

async function exported(source: string, id: string): Promise<Message[]> {
  const run = await cli(['import', source, '--root', root, '--no-progress'])
  expect(run.code, run.stderr).toBe(0)
  const out = await cli(['export', join(root, id), '--format', 'openai'])
  expect(out.code, out.stderr).toBe(0)
  return JSON.parse(out.stdout) as Message[]
}

describe.skipIf(!available)('import -> export openai = the source conversation (shared recordings)', () => {
  it('claude-code/short.jsonl: the prompt, the merged response with its two calls, the two rejected results, the interrupt', async () => {
    const source = join(shared, 'claude-code', 'short.jsonl')
    const expected = claudeMessages(records(source))
    // By hand: line 4 (prompt), lines 5-8 and 10 (one response: text of 7, calls of 8 and 10),
    // lines 11-12 (results), line 13 (interrupt); lines 14-15 are a slash command.
    expect(expected.map((message) => message['role'])).toEqual(['user', 'assistant', 'tool', 'tool', 'user'])
    expect(await exported(source, 'claude-55604662-cf2a-4331-851a-ec234028f8ca')).toEqual(expected)
  })

  it('codex rollout: instructions, developer context, prompts and the grouped response; the dangling call gets the repair placeholder', async () => {
    const dir = join(shared, 'codex')
    const source = join(
      dir,
      readdirSync(dir).find((name) => name.endsWith('.jsonl'))!,
    )
    const expected = codexMessages(records(source))
    // By hand: base_instructions, developer 2-3, user 4-5, developer 6-7, user 9 and 11, then
    // the reasoning, message and function_call of lines 15, 17, 18 as one response.
    expect(expected.map((message) => message['role'])).toEqual([
      'system',
      'system',
      'system',
      'user',
      'user',
      'system',
      'system',
      'user',
      'user',
      'assistant',
    ])
    const messages = await exported(source, 'codex-019c8a70-dda7-7f33-98ea-f30553347322')
    expect(messages.slice(0, -1)).toEqual(expected)
    // Line 18's call never got an output: the placeholder a resume gives, not in the source.
    const call = (expected.at(-1)!['tool_calls'] as Json[])[0]!
    expect(messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: call['id'] })
    expect(messages.at(-1)!['content']).toMatch(/TOOL_OUTCOME_UNKNOWN|outcome is unknown|unknown/i)
  })
})
