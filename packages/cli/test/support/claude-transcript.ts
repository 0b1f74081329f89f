/**
 * A generated Claude Code–shaped transcript (synthetic, shaped like the shared `short.jsonl`
 * recording): a `parentUuid` chain of turns, each a prompt, one response split over three
 * records sharing `message.id` (thinking, text, tool_use), a hook progress record, the
 * tool_result, and a closing answer; a compaction every `compactEvery` turns.
 */
export const TRANSCRIPT_SESSION_ID = '5e55a0b1-7c2d-4e3f-9a1b-2c3d4e5f6a7b'

/** Records per turn (without compactions). */
export const RECORDS_PER_TURN = 7

/**
 * The lines of a transcript of `turns` turns (1-based turn numbers `from`..`from + turns - 1`),
 * chained after `parent` (the uuid of the last record of an earlier part, or null).
 */
export function transcriptLines(options: {
  readonly turns: number
  readonly from?: number
  readonly outputBytes?: number
  readonly compactEvery?: number
  /** End with a tool_use that has no result yet (an agent still running the tool). */
  readonly danglingCall?: boolean
}): string[] {
  const from = options.from ?? 1
  const output = 'ok '.repeat(Math.ceil((options.outputBytes ?? 600) / 3))
  const compactEvery = options.compactEvery ?? 25
  const lines: string[] = []
  let parent: string | null = from === 1 ? null : uuidOf(from - 1, 6)
  const time = (turn: number, step: number): string =>
    new Date(Date.UTC(2026, 1, 1) + turn * 60_000 + step * 1000).toISOString()
  const push = (turn: number, step: number, record: Record<string, unknown>): void => {
    const id = uuidOf(turn, step)
    lines.push(
      JSON.stringify({
        parentUuid: parent,
        isSidechain: false,
        userType: 'external',
        cwd: '/home/dev/project',
        sessionId: TRANSCRIPT_SESSION_ID,
        version: '2.1.38',
        gitBranch: 'main',
        ...record,
        uuid: id,
        timestamp: time(turn, step),
      }),
    )
    parent = id
  }
  const last = from + options.turns - 1
  for (let turn = from; turn <= last; turn += 1) {
    if (turn % compactEvery === 0) {
      push(turn, 7, {
        parentUuid: null,
        logicalParentUuid: parent,
        type: 'system',
        subtype: 'compact_boundary',
        content: 'Conversation compacted',
        compactMetadata: { trigger: 'auto', preTokens: 120_000 },
      })
      push(turn, 8, {
        type: 'user',
        isCompactSummary: true,
        message: { role: 'user', content: `Summary up to turn ${turn}: the tests pass.` },
      })
    }
    push(turn, 0, { type: 'user', message: { role: 'user', content: `Turn ${turn}: run the tests.` } })
    const usage = { input_tokens: 4, cache_read_input_tokens: 900, output_tokens: 40 + (turn % 7) }
    const assistant = (step: number, id: string, content: unknown): void =>
      push(turn, step, {
        type: 'assistant',
        message: {
          model: 'claude-opus-4-6',
          id,
          type: 'message',
          role: 'assistant',
          content: [content],
          usage,
        },
      })
    const call = `toolu_gen_${turn}`
    assistant(1, `msg_gen_${turn}`, { type: 'thinking', thinking: 'Run them.', signature: 'sig' })
    assistant(2, `msg_gen_${turn}`, { type: 'text', text: 'Running the tests.' })
    assistant(3, `msg_gen_${turn}`, {
      type: 'tool_use',
      id: call,
      name: 'Bash',
      input: { command: `npm test -- ${turn}` },
    })
    if (turn === last && options.danglingCall === true) break
    push(turn, 4, {
      type: 'progress',
      data: { type: 'hook_progress', hookEvent: 'PostToolUse' },
      toolUseID: call,
    })
    push(turn, 5, {
      type: 'user',
      message: {
        role: 'user',
        content: [{ tool_use_id: call, type: 'tool_result', content: output, is_error: turn % 9 === 0 }],
      },
    })
    assistant(6, `msg_gen_${turn}_b`, { type: 'text', text: `Turn ${turn} done.` })
  }
  return lines
}

export function uuidOf(turn: number, step: number): string {
  return `00000000-0000-4000-8000-${(turn * 10 + step).toString(16).padStart(12, '0')}`
}
