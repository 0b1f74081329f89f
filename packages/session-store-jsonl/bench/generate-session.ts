/**
 * A deterministic, seeded generator of realistic agent sessions for benchmarks: a system
 * prompt, user turns, assistant messages with reasoning and tool calls, and tool results from
 * a few bytes to a few hundred KB (file reads of a synthetic repository, grep hits, build and
 * test logs, directory listings, edits).
 *
 * Events are plain objects valid for `parseEvent` of `@agent-ledger/session-events` (seq dense
 * from 0); the header is a v4 header without `integrity`. No checksums: a store's encoder adds
 * them, so the same events serve the plain and the compressed benchmarks.
 */

/** Options of the generators. */
export interface GenerateSessionOptions {
  /** Seed of the pseudo-random generator: the same seed gives the same bytes. */
  readonly seed: number
  /**
   * Approximate total size of the JSON lines (header included, one `\n` per line counted).
   * Generation stops at the first turn boundary at or past it.
   */
  readonly targetBytes: number
}

/** One generated event, shaped as the v4 line format's event object without `crc`. */
export interface GeneratedEvent {
  readonly seq: number
  readonly time: string
  readonly type: string
  readonly data: Record<string, unknown>
  readonly surfaceOp?: 'append'
  readonly sourceEventSeqs?: readonly number[]
}

/** The generated header object (v4, no `integrity`: the store adds it). */
export interface GeneratedHeader {
  readonly format: 'agent-ledger.session'
  readonly version: 4
  readonly id: string
  readonly createdAt: string
  readonly cwd: string
  readonly metadata: Record<string, unknown>
}

const START_TIME = Date.UTC(2025, 0, 6, 9, 30, 0)

/** mulberry32: small, fast, good enough for synthetic data. */
function createRandom(seed: number): Random {
  let state = seed >>> 0
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const random: Random = {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick: (items) => items[Math.floor(next() * items.length)] as (typeof items)[number],
    chance: (probability) => next() < probability,
    // log-normal-ish size between min and max, median near `median`
    size: (min, median, max) => {
      const u = (next() + next() + next() + next() - 2) / 2
      const value = Math.round(median * Math.exp(u * 2.2))
      return Math.max(min, Math.min(max, value))
    },
  }
  return random
}

interface Random {
  next(): number
  int(min: number, max: number): number
  pick<TItem>(items: readonly TItem[]): TItem
  chance(probability: number): boolean
  size(min: number, median: number, max: number): number
}

const WORDS = (
  'the a to of and in is it that for on with as this be are we can not by at or from you an if will ' +
  'have which but all so should when there function file test error value type change need use first ' +
  'then now check make run into case call return would one also code path new update fix build ' +
  'log line event session store read write flush lock state result tool message user assistant seq ' +
  'because before after instead still only each every other same more less last next both where why ' +
  'looks like seems expected found failing passes works missing handle add remove keep move rename ' +
  'import export module package config option default limit size offset buffer stream frame header ' +
  'let me look at see try again think about what how current previous method class interface schema ' +
  'parse validate serialize checksum replay projection repair crash recovery truncate quarantine ' +
  'directory temp generation version migrate compress decode encode window block bytes lines count'
).split(' ')

const IDENTIFIER_ROOTS = (
  'session event store log line frame buffer reader writer lock header state result tool call message ' +
  'turn seq offset size limit error code path file dir temp flush sync open close append read write ' +
  'parse check validate encode decode scan repair replay project fold apply build create load save ' +
  'options config context handle entry record index count bytes chunk block window stream queue'
).split(' ')

const TYPE_NAMES = [
  'string',
  'number',
  'boolean',
  'Uint8Array',
  'SessionEvent',
  'LoggedEvent',
  'Promise<void>',
]

const SYLLABLES = (
  'ka lo mi ne ru sa te vi do pe ar en is on ul ex im co re de pro tion ment able ing er ly al ous ' +
  'st tr pl gr br cl fl sp ch th sh wh qu bl cr dr fr pr sc sk sl sm sn sw tw'
).split(' ')

/** A long tail of pseudo-words, so prose has the entropy of real text rather than of a 300-word list. */
const RARE_WORDS: readonly string[] = (() => {
  const random = createRandom(0xc0ffee)
  const words: string[] = []
  for (let index = 0; index < 6000; index++) {
    let word = ''
    const syllables = random.int(1, 4)
    for (let part = 0; part < syllables; part++) word += random.pick(SYLLABLES)
    words.push(word)
  }
  return words
})()

/** A word with a Zipf-like frequency: common words often, the long tail sometimes. */
function word(random: Random): string {
  if (random.chance(0.55)) return random.pick(WORDS)
  const rank = Math.floor(Math.exp(random.next() * Math.log(RARE_WORDS.length))) - 1
  return RARE_WORDS[rank] ?? 'word'
}

function sentence(random: Random): string {
  const length = random.int(5, 22)
  const words: string[] = []
  for (let index = 0; index < length; index++) words.push(word(random))
  const text = words.join(' ')
  return text.charAt(0).toUpperCase() + text.slice(1) + random.pick(['.', '.', '.', '?', ':'])
}

function prose(random: Random, sentences: number): string {
  const parts: string[] = []
  for (let index = 0; index < sentences; index++) {
    parts.push(sentence(random))
    if (random.chance(0.15)) parts.push('\n\n')
  }
  return parts.join(' ').replace(/ \n\n /g, '\n\n')
}

function identifier(random: Random): string {
  const first = random.pick(IDENTIFIER_ROOTS)
  const second = random.pick(IDENTIFIER_ROOTS)
  return random.chance(0.3) ? first : first + second.charAt(0).toUpperCase() + second.slice(1)
}

/** A synthetic repository: files are generated on demand from (seed, index), so re-reads repeat bytes. */
class SyntheticRepository {
  readonly paths: string[] = []
  readonly #seed: number
  readonly #cache = new Map<number, string>()

  constructor(seed: number) {
    this.#seed = seed
    const random = createRandom(seed ^ 0x5eed)
    const dirs = ['src', 'src/store', 'src/zstd', 'src/lock', 'test', 'test/fixtures', 'scripts', 'docs']
    for (let index = 0; index < 72; index++) {
      const dir = random.pick(dirs)
      const ext = dir.startsWith('docs') ? '.md' : dir.includes('fixtures') ? '.jsonl' : '.ts'
      this.paths.push(`${dir}/${identifier(random).replace(/[A-Z]/g, (c) => '-' + c.toLowerCase())}${ext}`)
    }
  }

  file(index: number): string {
    const cached = this.#cache.get(index)
    if (cached !== undefined) return cached
    const random = createRandom(this.#seed * 31 + index * 7919)
    const path = this.paths[index] ?? 'src/index.ts'
    const target = random.size(300, 9000, 90_000)
    const lines: string[] = []
    let bytes = 0
    if (path.endsWith('.md')) {
      while (bytes < target) {
        const line = random.chance(0.1) ? `## ${sentence(random)}` : prose(random, random.int(1, 4))
        lines.push(line, '')
        bytes += line.length + 2
      }
    } else if (path.endsWith('.jsonl')) {
      let seq = 0
      while (bytes < target) {
        const line = JSON.stringify({
          seq: seq++,
          type: random.pick(['user/message', 'tool/call', 'tool/result']),
          data: { text: sentence(random) },
        })
        lines.push(line)
        bytes += line.length + 1
      }
    } else {
      lines.push(`import { ${identifier(random)}, ${identifier(random)} } from './${identifier(random)}.ts'`)
      lines.push(`import type { ${random.pick(TYPE_NAMES)} } from '@agent-ledger/session-events'`, '')
      while (bytes < target) {
        const name = identifier(random)
        const block = [
          '/**',
          ` * ${sentence(random)}`,
          ' */',
          `export function ${name}(${identifier(random)}: ${random.pick(TYPE_NAMES)}, options: { ${identifier(random)}?: number } = {}): ${random.pick(TYPE_NAMES)} {`,
        ]
        const statements = random.int(2, 14)
        for (let index = 0; index < statements; index++) {
          const kind = random.int(0, 4)
          if (kind === 0)
            block.push(
              `  const ${identifier(random)} = ${identifier(random)}(${identifier(random)}, ${random.int(0, 4096)})`,
            )
          else if (kind === 1)
            block.push(
              `  if (${identifier(random)} > ${identifier(random)}.length) throw new Error('${sentence(random)}')`,
            )
          else if (kind === 2)
            block.push(
              `  for (const ${identifier(random)} of ${identifier(random)}) ${identifier(random)}.push(${identifier(random)})`,
            )
          else if (kind === 3) block.push(`  // ${sentence(random)}`)
          else
            block.push(
              `  await ${identifier(random)}.${identifier(random)}({ ${identifier(random)}: ${identifier(random)} })`,
            )
        }
        block.push(`  return ${identifier(random)}`, '}', '')
        for (const line of block) {
          lines.push(line)
          bytes += line.length + 1
        }
      }
    }
    const text = lines.join('\n')
    this.#cache.set(index, text)
    return text
  }
}

function callId(random: Random): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
  let id = 'call_'
  for (let index = 0; index < 24; index++) id += alphabet.charAt(random.int(0, alphabet.length - 1))
  return id
}

function numbered(text: string, firstLine: number): string {
  return text
    .split('\n')
    .map((line, index) => `${String(firstLine + index).padStart(6, ' ')}\t${line}`)
    .join('\n')
}

function toolCall(
  random: Random,
  repository: SyntheticRepository,
): { name: string; arguments: string; result: (r: Random) => string } {
  const kind = random.int(0, 99)
  const fileIndex = random.int(0, repository.paths.length - 1)
  const path = repository.paths[fileIndex] ?? 'src/index.ts'
  if (kind < 38) {
    return {
      name: 'read_file',
      arguments: JSON.stringify({ path }),
      result: () => numbered(repository.file(fileIndex), 1),
    }
  }
  if (kind < 55) {
    const pattern = identifier(random)
    return {
      name: 'grep',
      arguments: JSON.stringify({ pattern, path: 'src', flags: '-n' }),
      result: (r) => {
        const hits: string[] = []
        const count = r.size(0, 12, 400)
        for (let index = 0; index < count; index++) {
          const file = r.int(0, repository.paths.length - 1)
          const lines = repository.file(file).split('\n')
          const line = r.int(0, lines.length - 1)
          hits.push(`${repository.paths[file] ?? ''}:${line + 1}:${lines[line] ?? ''}`)
        }
        return hits.length === 0 ? 'No matches found.' : hits.join('\n')
      },
    }
  }
  if (kind < 80) {
    const command = r0(random, [
      'pnpm test',
      'pnpm vitest run test/store.test.ts',
      'pnpm tsc -p tsconfig.json',
      'git status',
      'git diff --stat',
      'ls -la src',
    ])
    return {
      name: 'bash',
      arguments: JSON.stringify({ command, timeout: 120000 }),
      result: (r) => buildLog(r, repository, command),
    }
  }
  if (kind < 88) {
    return {
      name: 'list_dir',
      arguments: JSON.stringify({ path: path.split('/')[0] ?? '.' }),
      result: () => repository.paths.filter((p) => p.startsWith(path.split('/')[0] ?? '')).join('\n'),
    }
  }
  if (kind < 97) {
    const old = identifier(random)
    const replacement = identifier(random)
    return {
      name: 'edit_file',
      arguments: JSON.stringify({
        path,
        old_string: `const ${old} = ${old}(options)`,
        new_string: `const ${replacement} = ${replacement}(options, ${old})`,
      }),
      result: (r) =>
        r.chance(0.1) ? `Error: old_string not found in ${path}` : `Applied 1 edit to ${path}.`,
    }
  }
  return {
    name: 'write_file',
    arguments: JSON.stringify({
      path,
      content: repository.file(fileIndex).slice(0, random.size(50, 2000, 20_000)),
    }),
    result: (r) => `Wrote ${r.int(50, 20_000)} bytes to ${path}.`,
  }
}

function r0<TItem>(random: Random, items: readonly TItem[]): TItem {
  return random.pick(items)
}

function buildLog(random: Random, repository: SyntheticRepository, command: string): string {
  if (command.startsWith('git status')) {
    const changed = random.int(0, 8)
    const lines = [
      'On branch main',
      "Your branch is up to date with 'origin/main'.",
      '',
      'Changes not staged for commit:',
    ]
    for (let index = 0; index < changed; index++) lines.push(`\tmodified:   ${random.pick(repository.paths)}`)
    return lines.join('\n')
  }
  if (command.startsWith('ls') || command.startsWith('git diff')) {
    return repository.paths
      .slice(0, random.int(5, repository.paths.length))
      .map(
        (p) =>
          `-rw-r--r-- 1 dev dev ${String(random.int(100, 90_000)).padStart(6)} Jan  6 09:${String(random.int(10, 59))} ${p}`,
      )
      .join('\n')
  }
  const lines: string[] = [`> ${command}`, '']
  // mostly small outputs, sometimes a huge log (a few hundred KB)
  const target = random.chance(0.04) ? random.int(100_000, 400_000) : random.size(80, 3000, 60_000)
  let bytes = 0
  let passed = 0
  while (bytes < target) {
    const file = random.pick(repository.paths)
    let line: string
    const kind = random.int(0, 9)
    if (kind < 6) {
      passed += 1
      line = ` ✓ ${file} > ${identifier(random)} > ${sentence(random).toLowerCase()} ${random.int(1, 900)}ms`
    } else if (kind < 8) {
      line = `${file}(${random.int(1, 900)},${random.int(1, 80)}): error TS${random.int(2000, 2999)}: ${sentence(random)}`
    } else {
      line = `    at ${identifier(random)} (${file}:${random.int(1, 900)}:${random.int(1, 80)})`
    }
    lines.push(line)
    bytes += line.length + 1
  }
  lines.push(
    '',
    ` Test Files  ${random.int(1, 40)} passed`,
    `      Tests  ${passed} passed`,
    `   Duration  ${random.int(300, 90_000)}ms`,
  )
  return lines.join('\n')
}

const SYSTEM_PROMPT_TOOLS = ['read_file', 'grep', 'bash', 'list_dir', 'edit_file', 'write_file']

function systemPrompt(random: Random): string {
  const parts = [
    'You are a coding agent working in a TypeScript monorepo. Follow the repository conventions.',
    prose(random, 30),
    '# Tools',
  ]
  for (const tool of SYSTEM_PROMPT_TOOLS) {
    parts.push(
      `## ${tool}`,
      prose(random, 6),
      JSON.stringify({
        name: tool,
        parameters: { type: 'object', properties: { path: { type: 'string' }, command: { type: 'string' } } },
      }),
    )
  }
  parts.push('# Rules', prose(random, 25))
  return parts.join('\n\n')
}

/**
 * Generates the header object of a session (deterministic in `seed`).
 *
 * @param options - The seed (the target size is ignored).
 * @returns The header.
 */
export function generateSessionHeader(options: Pick<GenerateSessionOptions, 'seed'>): GeneratedHeader {
  return {
    format: 'agent-ledger.session',
    version: 4,
    id: `bench-${options.seed}`,
    createdAt: new Date(START_TIME).toISOString(),
    cwd: '/home/dev/agent-ledger',
    metadata: { model: 'deepseek-chat', title: 'Synthetic benchmark session' },
  }
}

/**
 * Generates the events of a realistic session, deterministic in `options.seed`.
 *
 * @param options - Seed and approximate size (header line included in the count).
 * @returns A generator of events with `seq` dense from 0.
 */
export function* generateSessionEvents(options: GenerateSessionOptions): Generator<GeneratedEvent> {
  const random = createRandom(options.seed)
  const repository = new SyntheticRepository(options.seed)
  let bytes = JSON.stringify(generateSessionHeader(options)).length + 1
  let seq = 0
  let clock = START_TIME
  const emit = (
    type: string,
    data: Record<string, unknown>,
    extra: Partial<GeneratedEvent> = {},
  ): GeneratedEvent => {
    clock += random.int(1, 4000)
    const event: GeneratedEvent = { seq: seq++, time: new Date(clock).toISOString(), type, data, ...extra }
    bytes += JSON.stringify(event).length + 1
    return event
  }
  yield emit(
    'system/message',
    { message: { role: 'system', content: systemPrompt(random) } },
    { surfaceOp: 'append' },
  )
  for (let turn = 1; bytes < options.targetBytes; turn++) {
    yield emit('turn/start', { turn })
    const pasted = random.chance(0.15)
      ? `\n\n\`\`\`\n${buildLog(random, repository, 'pnpm test')}\n\`\`\``
      : ''
    yield emit(
      'user/message',
      { message: { role: 'user', content: prose(random, random.int(1, 6)) + pasted } },
      { surfaceOp: 'append' },
    )
    const steps = random.int(1, 12)
    for (let step = 0; step < steps; step++) {
      const calls = Array.from({ length: random.chance(0.2) ? random.int(2, 3) : 1 }, () => ({
        id: callId(random),
        ...toolCall(random, repository),
      }))
      const assistant = emit(
        'assistant/message',
        {
          message: {
            role: 'assistant',
            content: random.chance(0.4) ? prose(random, random.int(1, 3)) : null,
            reasoning_content: prose(random, random.int(1, 12)),
            tool_calls: calls.map((call) => ({
              id: call.id,
              type: 'function',
              function: { name: call.name, arguments: call.arguments },
            })),
          },
          usage: {
            prompt_tokens: random.int(2000, 120_000),
            completion_tokens: random.int(20, 2000),
            cached_tokens: random.int(0, 100_000),
          },
        },
        { surfaceOp: 'append' },
      )
      yield assistant
      for (const call of calls) {
        yield emit('tool/call', { callId: call.id, name: call.name, arguments: call.arguments })
        yield emit(
          'tool/result',
          { message: { role: 'tool', tool_call_id: call.id, content: call.result(random) } },
          { surfaceOp: 'append', sourceEventSeqs: [assistant.seq] },
        )
      }
    }
    yield emit(
      'assistant/message',
      {
        message: {
          role: 'assistant',
          content: prose(random, random.int(2, 10)),
          reasoning_content: prose(random, random.int(1, 5)),
        },
        usage: { prompt_tokens: random.int(2000, 120_000), completion_tokens: random.int(20, 2000) },
      },
      { surfaceOp: 'append' },
    )
    yield emit('turn/end', { turn, reason: 'completed' })
  }
}

/**
 * Generates a realistic session as JSON lines: the header first, then one line per event.
 * Each string is one line WITHOUT its `\n` and without a checksum.
 *
 * @param options - Seed and approximate size.
 * @returns A generator of JSON texts.
 */
export function* generateSessionLines(options: GenerateSessionOptions): Generator<string> {
  yield JSON.stringify(generateSessionHeader(options))
  for (const event of generateSessionEvents(options)) yield JSON.stringify(event)
}
