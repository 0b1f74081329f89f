/**
 * A deterministic agent session for benchmarks, shared by the modules that need a long,
 * realistic log (the JSONL checkpoint benches, the PostgreSQL cold open): a seeded random
 * source, filler text, and the session itself as event inputs.
 *
 * The session: a system prompt, then turns of turn/start, user message, assistant message
 * with one tool call, tool/call, tool/result, assistant answer, turn/end; every
 * `compactEvery` turns (0: never) a compaction folding everything after the system prompt
 * into a summary (what the model sees stays bounded, as in a real long session).
 */
/** What the generator makes: structurally an `EventInput` of `@agent-ledger/session-events` (not a dependency of `tooling/`). */
export interface BenchEventInput {
  readonly type: string
  readonly data: Readonly<Record<string, unknown>>
}

/** What a compaction needs, as `planCompaction` of `@agent-ledger/session-projection` takes it. */
interface BenchCompactionRequest {
  readonly compactionId: string
  readonly startSeq: number
  readonly endSeq: number
  readonly summary: string
  readonly reason: 'context-window'
}

/**
 * mulberry32: small, fast, deterministic.
 *
 * @param seed - Any integer.
 * @returns Numbers in [0, 1).
 */
export function createRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let mixed = state
    mixed = Math.imul(mixed ^ (mixed >>> 15), mixed | 1)
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61)
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296
  }
}

/** Words of the filler text (code-like, so compressors see realistic text). */
const BENCH_WORDS: readonly string[] = [
  'const',
  'return',
  'await',
  'function',
  'import',
  'export',
  'session',
  'event',
  'projection',
  'checkpoint',
  'offset',
  'buffer',
  'flush',
  'writer',
  'reader',
  'turn',
  'message',
  'tool',
  'result',
  'error',
  'test',
  'expect',
  'value',
  'index',
  'length',
  'file',
  'line',
  'seq',
  'header',
  'crc',
]

/** How filler text is made. */
export interface TextStyle {
  /** The words to draw from; default {@link BENCH_WORDS}. */
  readonly words?: readonly string[] | undefined
  /** Chance that a word is followed by `\n` instead of a space; default 0. */
  readonly newlines?: number | undefined
}

/**
 * At least `length` characters of words drawn from `random`.
 *
 * @param random - The random source.
 * @param length - The minimum length.
 * @param style - Words and line breaks.
 * @returns The text.
 */
export function benchText(random: () => number, length: number, style: TextStyle = {}): string {
  const words = style.words ?? BENCH_WORDS
  const newlines = style.newlines ?? 0
  let out = ''
  while (out.length < length) {
    out += words[Math.floor(random() * words.length)]!
    out += newlines > 0 && random() < newlines ? '\n' : ' '
  }
  return out
}

/** Sizes (characters) of the generated texts: `[min, spread]` draws `min + random() * spread`. */
export interface AgentSessionSizes {
  readonly system: number
  readonly user: readonly [number, number]
  /** Most results (80%) are `small`, the rest `large`. */
  readonly toolResultSmall: readonly [number, number]
  readonly toolResultLarge: readonly [number, number]
  readonly answer: readonly [number, number]
  readonly summary: number
}

/** Options of {@link agentSessionInputs}. */
export interface AgentSessionOptions<TInput> {
  /** The surface nodes' seqs of the projection the events are folded into, as it is now. */
  readonly surface: () => readonly { readonly seq: number }[]
  /** `(request) => planCompaction(projection, request)` on that projection. */
  readonly compact: (request: BenchCompactionRequest) => Iterable<TInput>
  readonly seed: number
  /** A compaction every this many turns; 0: never. */
  readonly compactEvery: number
  readonly sizes: AgentSessionSizes
  readonly text?: TextStyle | undefined
}

/**
 * The session described in the module comment, as event inputs, endlessly (the caller
 * stops). The caller folds each input into its projection before asking for the next one:
 * compactions are planned on it (`options.surface`, `options.compact`).
 *
 * @param options - The projection's surface and compaction planner, seed, compaction period, text sizes.
 * @returns The inputs (`TInput`: the caller's `EventInput`).
 */
export function* agentSessionInputs<TInput = BenchEventInput>(
  options: AgentSessionOptions<TInput>,
): Generator<TInput> {
  const input = (value: BenchEventInput): TInput => value as unknown as TInput
  const random = createRandom(options.seed)
  const { sizes } = options
  const text = (size: number): string => benchText(random, size, options.text)
  const draw = ([min, spread]: readonly [number, number]): number => min + random() * spread
  yield input({
    type: 'system/message',
    data: { message: { role: 'system', content: `You are a coding agent. ${text(sizes.system)}` } },
  })
  for (let turn = 1; ; turn += 1) {
    const callId = `call_${turn}`
    const args = JSON.stringify({ path: `src/module-${turn % 97}.ts` })
    yield input({ type: 'turn/start', data: { turn } })
    yield input({
      type: 'user/message',
      data: { message: { role: 'user', content: text(draw(sizes.user)) } },
    })
    yield input({
      type: 'assistant/message',
      data: {
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: callId, type: 'function', function: { name: 'read_file', arguments: args } }],
        },
      },
    })
    yield input({ type: 'tool/call', data: { callId, name: 'read_file', arguments: args } })
    const resultSize = random() < 0.8 ? draw(sizes.toolResultSmall) : draw(sizes.toolResultLarge)
    yield input({
      type: 'tool/result',
      data: { message: { role: 'tool', tool_call_id: callId, content: text(resultSize) } },
    })
    yield input({
      type: 'assistant/message',
      data: { message: { role: 'assistant', content: text(draw(sizes.answer)) } },
    })
    yield input({ type: 'turn/end', data: { turn, reason: 'completed' } })
    if (options.compactEvery > 0 && turn % options.compactEvery === 0) {
      const surface = options.surface()
      yield* options.compact({
        compactionId: `compaction-${turn}`,
        startSeq: surface[1]!.seq,
        endSeq: surface.at(-1)!.seq,
        summary: text(sizes.summary),
        reason: 'context-window',
      })
    }
  }
}
