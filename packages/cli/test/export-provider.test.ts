import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { z } from 'zod'

import { toAnthropic } from '@agent-ledger/loop-repair'
import { cli, makeRoot } from './support/sessions.ts'

const synthetic = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'import', 'test', 'fixtures')

// The Anthropic Messages API request shape (messages part), written from its documentation:
// roles alternate starting with user; tool_result blocks only in user turns, each answering a
// tool_use of the assistant turn right before it.
const block = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string().min(1) }).strict(),
  z
    .object({
      type: z.literal('image'),
      source: z.union([
        z
          .object({ type: z.literal('base64'), media_type: z.string().regex(/^image\//), data: z.string() })
          .strict(),
        z.object({ type: z.literal('url'), url: z.string() }).strict(),
      ]),
    })
    .strict(),
  z
    .object({
      type: z.literal('tool_use'),
      id: z.string().min(1),
      name: z.string().min(1),
      input: z.record(z.string(), z.unknown()),
    })
    .strict(),
  z.object({ type: z.literal('tool_result'), tool_use_id: z.string().min(1), content: z.string() }).strict(),
])
const anthropicRequest = z
  .object({
    system: z.string().optional(),
    messages: z
      .array(z.object({ role: z.enum(['user', 'assistant']), content: z.array(block).min(1) }).strict())
      .min(1),
  })
  .strict()
  .superRefine((request, context) => {
    request.messages.forEach((message, index) => {
      const expected = index % 2 === 0 ? 'user' : 'assistant'
      if (message.role !== expected)
        context.addIssue({ code: 'custom', message: `message ${index} should be ${expected}` })
      const previous = request.messages[index - 1]
      const calls = new Set(
        (previous?.content ?? []).flatMap((item) => (item.type === 'tool_use' ? [item.id] : [])),
      )
      for (const item of message.content) {
        if (item.type === 'tool_result' && !calls.has(item.tool_use_id)) {
          context.addIssue({
            code: 'custom',
            message: `message ${index}: tool_result ${item.tool_use_id} answers no tool_use before it`,
          })
        }
      }
      if (message.role === 'user') {
        const pending = [...calls].filter(
          (id) => !message.content.some((item) => item.type === 'tool_result' && item.tool_use_id === id),
        )
        if (pending.length > 0)
          context.addIssue({ code: 'custom', message: `message ${index}: unanswered ${pending.join(', ')}` })
      }
    })
  })

let root: string
let cleanup: () => void
beforeEach(() => {
  ;({ root, cleanup } = makeRoot('al-export-provider-'))
})
afterEach(() => cleanup())

describe('export --format anthropic|openai', () => {
  it('every synthetic import exports to a valid Anthropic request and to the OpenAI projection', async () => {
    const sources = [
      join('codex', 'compacted.jsonl'),
      join('claude-code', 'branches.jsonl'),
      join('pi', 'v3-tree.jsonl'),
      join('pi', 'v1.jsonl'),
      join('openhands', 'v1-events.jsonl'),
    ]
    for (const source of sources)
      expect((await cli(['import', join(synthetic, source), '--root', root])).code).toBe(0)
    const list = JSON.parse((await cli(['list', root, '--json'])).stdout) as { sessions: { id: string }[] }
    expect(list.sessions.length).toBeGreaterThanOrEqual(7)
    for (const { id } of list.sessions) {
      const anthropic = await cli(['export', join(root, id), '--format', 'anthropic'])
      expect(anthropic.code).toBe(0)
      const parsed = anthropicRequest.safeParse(JSON.parse(anthropic.stdout))
      expect(parsed.success ? [] : parsed.error.issues.map((issue) => `${id}: ${issue.message}`)).toEqual([])
      const openai = await cli(['export', join(root, id), '--format', 'openai'])
      const messages = await cli(['messages', join(root, id), '--json', '--repaired'])
      const stripped = (JSON.parse(messages.stdout) as Record<string, unknown>[]).map(
        ({ reasoning_content: _r, ...rest }) => rest,
      )
      expect(JSON.parse(openai.stdout)).toEqual(stripped)
    }
  })

  it('joins system messages, merges consecutive roles, and opens with a user turn', () => {
    const { request, loss } = toAnthropic([
      { role: 'system', content: 'be brief' },
      { role: 'assistant', content: 'hello', reasoning_content: 'think' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'ls', arguments: 'not json' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'a b' },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
      { role: 'system', content: 'late rule' },
    ])
    expect(request.system).toBe('be brief\n\nlate rule')
    expect(
      request.messages.map((message) => [message.role, message.content.map((item) => item.type)]),
    ).toEqual([
      ['user', ['text']],
      ['assistant', ['text', 'tool_use']],
      ['user', ['tool_result', 'image']],
    ])
    expect(loss).toEqual({ reasoning: 1, systemMoved: 1, unparsableArguments: 1, insertedFirstUser: 1 })
    expect(anthropicRequest.safeParse(request).success).toBe(true)
  })
})
