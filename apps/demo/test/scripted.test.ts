import { placeholderText, RepairCode } from '@agent-ledger/loop-repair'
import type { AssistantMessage, WireMessage } from '@agent-ledger/session-events'
import { describe, expect, it } from 'vitest'

import { createScriptedProvider, scriptedReply, summarize } from '../src/providers/scripted.ts'

const system: WireMessage = { role: 'system', content: 'You are mini-agent.' }
const listing = 'notes.md\nsrc/\ntodo.txt'
const files: Record<string, string> = {
  'notes.md': '# Notes\n\nShip on Friday.\n',
  'todo.txt': 'buy milk\nfix bug\n',
}

/** Plays the script against a fake workspace until it answers without a tool call. */
function play(start: WireMessage[], workspace: Record<string, string> = { ...files }) {
  const messages = [...start]
  const calls: string[] = []
  for (let step = 0; step < 10; step += 1) {
    const { message } = scriptedReply(messages)
    messages.push(message)
    const call = message.tool_calls?.[0]
    if (call === undefined) return { messages, calls, answer: message.content ?? '', workspace }
    const args = JSON.parse(call.function.arguments) as { path?: string; content?: string }
    calls.push(`${call.function.name} ${args.path ?? ''}`.trim())
    let content: string
    if (call.function.name === 'list_dir') content = listing
    else if (call.function.name === 'read_file') {
      content =
        workspace[args.path!] ?? `Error: ${JSON.stringify(args.path)} does not exist in the workspace.`
    } else {
      workspace[args.path!] = args.content!
      content = `Wrote ${args.content!.length} bytes to ${JSON.stringify(args.path)}.`
    }
    messages.push({ role: 'tool', tool_call_id: call.id, content })
  }
  throw new Error('the script did not finish in 10 steps')
}

describe('scriptedReply', () => {
  it('lists, reads the first file, writes its summary, then answers', () => {
    const run = play([system, { role: 'user', content: 'Summarize the workspace' }])
    expect(run.calls).toEqual(['list_dir .', 'read_file notes.md', 'write_file notes.md.summary.md'])
    expect(run.answer).toBe('Done: the summary is in notes.md.summary.md.')
    expect(run.workspace['notes.md.summary.md']).toBe(summarize('notes.md', files['notes.md']!))
  })

  it('reads the file the prompt names', () => {
    const run = play([system, { role: 'user', content: 'Summarize todo.txt please' }])
    expect(run.calls).toEqual(['list_dir .', 'read_file todo.txt', 'write_file todo.txt.summary.md'])
  })

  it('is deterministic: the same conversation gives the same answer, call ids included', () => {
    const conversation: WireMessage[] = [system, { role: 'user', content: 'Summarize' }]
    expect(scriptedReply(conversation)).toEqual(scriptedReply(conversation))
    const first = play(conversation).messages
    const second = play(conversation).messages
    expect(second).toEqual(first)
    const ids = first.flatMap((message) =>
      message.role === 'assistant' ? (message.tool_calls ?? []).map((call) => call.id) : [],
    )
    expect(new Set(ids).size).toBe(ids.length)
  })

  it('reports usage and the finish reason', () => {
    const reply = scriptedReply([system, { role: 'user', content: 'Summarize' }])
    expect(reply.finishReason).toBe('tool_calls')
    expect(reply.usage?.total_tokens).toBe(
      (reply.usage?.prompt_tokens ?? 0) + (reply.usage?.completion_tokens ?? 0),
    )
  })

  it('runs a "run:" prompt as one command and reports its output', () => {
    const first = scriptedReply([{ role: 'user', content: 'run: echo hi' }]).message
    expect(first.tool_calls?.[0]?.function).toEqual({
      name: 'run_command',
      arguments: '{"command":"echo hi"}',
    })
    const second = scriptedReply([
      { role: 'user', content: 'run: echo hi' },
      first,
      { role: 'tool', tool_call_id: first.tool_calls![0]!.id, content: 'exit code 0\nhi\n' },
    ])
    expect(second.message.content).toBe('The command finished:\nexit code 0\nhi\n')
    expect(second.finishReason).toBe('stop')
  })
})

describe('scriptedReply after a resume (reading the loop-repair placeholder)', () => {
  function interrupted(name: string, args: object, code: RepairCode): WireMessage[] {
    const call: AssistantMessage = {
      role: 'assistant',
      content: 'Writing.',
      tool_calls: [{ id: 'call_1', type: 'function', function: { name, arguments: JSON.stringify(args) } }],
    }
    return [
      system,
      { role: 'user', content: 'Summarize todo.txt' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'r', type: 'function', function: { name: 'read_file', arguments: '{"path":"todo.txt"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'r', content: files['todo.txt']! },
      call,
      { role: 'tool', tool_call_id: 'call_1', content: placeholderText(code, { callId: 'call_1', name }) },
      { role: 'user', content: 'Continue where you left off.' },
    ]
  }

  it('TOOL_OUTCOME_UNKNOWN on write_file: checks the file first, then rewrites it because it is missing', () => {
    const run = play(
      interrupted(
        'write_file',
        { path: 'todo.txt.summary.md', content: 'x' },
        RepairCode.TOOL_OUTCOME_UNKNOWN,
      ),
    )
    expect(run.calls).toEqual(['read_file todo.txt.summary.md', 'write_file todo.txt.summary.md'])
    expect(
      run.messages.find(
        (message) => message.role === 'assistant' && message.content?.includes('may or may not'),
      ),
    ).toBeDefined()
    expect(run.workspace['todo.txt.summary.md']).toBe(summarize('todo.txt', files['todo.txt']!))
  })

  it('TOOL_OUTCOME_UNKNOWN on write_file: stops when the check shows the write happened', () => {
    const run = play(
      interrupted(
        'write_file',
        { path: 'todo.txt.summary.md', content: 'x' },
        RepairCode.TOOL_OUTCOME_UNKNOWN,
      ),
      { ...files, 'todo.txt.summary.md': 'already there' },
    )
    expect(run.calls).toEqual(['read_file todo.txt.summary.md'])
    expect(run.answer).toContain('the interrupted write had happened')
  })

  it('TOOL_NOT_STARTED: retries the same call', () => {
    const run = play(
      interrupted('write_file', { path: 'todo.txt.summary.md', content: 'x' }, RepairCode.TOOL_NOT_STARTED),
    )
    expect(run.calls[0]).toBe('write_file todo.txt.summary.md')
  })

  it('TOOL_OUTCOME_UNKNOWN on run_command: does not repeat the command', () => {
    const run = play(interrupted('run_command', { command: 'rm -rf build' }, RepairCode.TOOL_OUTCOME_UNKNOWN))
    expect(run.calls).toEqual([])
    expect(run.answer).toContain('not safe to repeat blindly')
  })
})

describe('createScriptedProvider', () => {
  it('rejects with an AbortError when the signal already fired', async () => {
    const controller = new AbortController()
    controller.abort()
    await expect(
      createScriptedProvider().complete({ messages: [], tools: [], signal: controller.signal }),
    ).rejects.toMatchObject({ name: 'AbortError' })
  })
})
